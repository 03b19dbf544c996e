use super::*;

const ENV: &str = include_str!("fixtures/diag-env.txt");
const TOPO: &str = include_str!("fixtures/nvidia-smi-topo-rtxpro6000x4.txt");
const PARAMS: &str = include_str!("fixtures/nvidia-params-p2p.txt");
const VERSION: &str = include_str!("fixtures/nvidia-version.txt");
const SMI: &str = include_str!("fixtures/nvidia-smi-header.txt");

fn env_pairs() -> Vec<(String, String)> {
    ENV.lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

fn value<'a>(env: &'a [EnvVar], name: &str) -> &'a str {
    &env.iter().find(|v| v.name == name).expect(name).value
}

fn inputs() -> DiagInputs {
    DiagInputs {
        env: env_pairs(),
        uname: Ok("Linux 6.8.0-45-generic x86_64\n".into()),
        nvidia_smi: Ok(SMI.into()),
        proc_version: Ok(VERSION.into()),
        topology: Ok(TOPO.into()),
        proc_params: Ok(PARAMS.into()),
        sys_registry_dwords: Ok(String::new()),
    }
}

#[test]
fn env_keeps_the_prefixes_sorted_and_redacts_what_looks_secret() {
    let (env, omitted) = diagnostic_env(env_pairs());
    assert_eq!(omitted, 0);
    let names: Vec<&str> = env.iter().map(|v| v.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    assert!(!names.contains(&"PATH") && !names.contains(&"HF_TOKEN"));
    assert_eq!(names.len(), 17);
    // Plain settings stay as they are.
    assert_eq!(value(&env, "NCCL_P2P_DISABLE"), "0");
    assert_eq!(value(&env, "NCCL_IB_HCA"), "mlx5_0,mlx5_1");
    assert_eq!(
        value(&env, "NVIDIA_VISIBLE_DEVICES"),
        "GPU-8d3cb2d4-1f0e-6a7b-9c2d-0e1f2a3b4c5d"
    );
    assert_eq!(value(&env, "VLLM_ATTENTION_BACKEND"), "FLASHINFER");
    assert_eq!(value(&env, "TORCH_CUDA_ARCH_LIST"), "12.0");
    // A secret's name, a token's look, a random key: the whole value goes.
    assert_eq!(value(&env, "VLLM_API_KEY"), REDACTED);
    assert_eq!(value(&env, "NVIDIA_NGC_CLI"), REDACTED);
    assert_eq!(value(&env, "TORCH_DIST_INIT"), REDACTED);
    // A URL's password and a flag's key go; the rest of the value stays.
    assert_eq!(
        value(&env, "VLLM_CACHE_URL"),
        "https://bench:<redacted>@cache.internal:8443/v1"
    );
    assert_eq!(
        value(&env, "SGLANG_EXTRA_ARGS"),
        "--tp 4 --api-key <redacted>"
    );
    let all = serde_json::to_string(&env).expect("serialises");
    for secret in [
        "s3cr3tpass",
        "k3y-from-args",
        "sk-local",
        "nvapi-",
        "Zx9Qw3",
    ] {
        assert!(!all.contains(secret), "{secret} leaked: {all}");
    }
}

#[test]
fn env_is_bounded_in_count_and_length() {
    let many = (0..MAX_ENV_VARS + 5).map(|i| (format!("NCCL_X{i:04}"), "1".to_owned()));
    let (env, omitted) = diagnostic_env(many);
    assert_eq!((env.len(), omitted), (MAX_ENV_VARS, 5));
    let long = "a b ".repeat(MAX_ENV_VALUE_BYTES);
    let v = redact_env_value("VLLM_NOTE", &long);
    assert!(v.len() <= MAX_ENV_VALUE_BYTES + '…'.len_utf8() && v.ends_with('…'));
}

#[test]
fn secret_looking_values() {
    for s in [
        "hf_AbCdEfGhIjKlMnOpQrStUvWx",
        "sk-proj-0123456789abcdefghij",
        "nvapi-0123456789abcdefghijkl",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "Zx9Qw3Er7Ty1Ui5Op2As8Df4Gh6Jk0LzXcVbNm",
    ] {
        assert!(looks_like_secret(s), "{s}");
    }
    for s in [
        "",
        "0,1,2,3",
        "GPU-8d3cb2d4-1f0e-6a7b-9c2d-0e1f2a3b4c5d",
        "MIG-8d3cb2d4-1f0e-6a7b-9c2d-0e1f2a3b4c5d",
        "/usr/local/cuda-13.0/targets/x86_64-linux/lib",
        "FLASHINFER",
        "sk-",
        "hf_transfer",
        "compute,utility",
        "PCI_BUS_ID",
    ] {
        assert!(!looks_like_secret(s), "{s}");
    }
}

#[test]
fn uname_and_versions() {
    let u = parse_uname("Linux 6.8.0-45-generic x86_64\n").expect("parses");
    assert_eq!(
        (u.system.as_str(), u.kernel.as_str(), u.arch.as_str()),
        ("Linux", "6.8.0-45-generic", "x86_64")
    );
    assert_eq!(parse_uname("Linux"), None);
    assert_eq!(parse_uname("Linux a b c"), None);
    let h = parse_smi_header(SMI);
    assert_eq!(h.driver.as_deref(), Some("580.95.05"));
    assert_eq!(h.cuda.as_deref(), Some("13.0"));
    assert_eq!(parse_smi_header("no header"), SmiHeader::default());
    assert_eq!(
        parse_proc_driver_version(VERSION).as_deref(),
        Some("580.95.05")
    );
    assert_eq!(
        parse_proc_driver_version(
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03  Tue Jun  6 22:20:39 UTC 2023\n"
        )
        .as_deref(),
        Some("535.54.03")
    );
    assert_eq!(parse_proc_driver_version("GCC version: 12.3.0"), None);
}

#[test]
fn p2p_override_from_the_loaded_params() {
    let p = parse_nvidia_params(PARAMS);
    assert!(p.on);
    assert_eq!(
        p.registry_dwords.as_deref(),
        Some(
            "ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=2;GrdmaPciTopoCheckOverride=1;EnableResizableBar=1"
        )
    );
    let named: Vec<(&str, &str)> = p
        .settings
        .iter()
        .map(|s| (s.name.as_str(), s.value.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("ForceP2P", "0x11"),
            ("RMForceP2PType", "1"),
            ("RMPcieP2PType", "2"),
            ("EnableResizableBar", "1"),
            ("DmaRemapPeerMmio", "1"),
            ("GrdmaPciTopoCheckOverride", "1"),
        ]
    );
    // The stock driver: no registry keys, so no override.
    let stock = PARAMS.replace(
        "RegistryDwords: \"ForceP2P=0x11;RMForceP2PType=1;RMPcieP2PType=2;GrdmaPciTopoCheckOverride=1;EnableResizableBar=1\"",
        "RegistryDwords: \"\"",
    );
    let p = parse_nvidia_params(&stock);
    assert!(!p.on);
    assert_eq!(p.registry_dwords, None);
    // Set to zero is the default (automatic), not an override.
    assert!(!p2p_from_registry_dwords("RMForceP2PType=0", vec![]).on);
    assert!(p2p_from_registry_dwords("forcep2p=17", vec![]).on);
    assert!(!p2p_from_registry_dwords("(null)", vec![]).on);
    assert!(!p2p_from_registry_dwords("RmLogonRC=1", vec![]).on);
}

#[test]
fn topology_is_kept_verbatim_but_bounded() {
    let t = bounded_text(TOPO, MAX_TOPOLOGY_BYTES);
    assert_eq!((t.text.as_str(), t.truncated), (TOPO, false));
    let big = TOPO.repeat(MAX_TOPOLOGY_BYTES / TOPO.len() + 2);
    let t = bounded_text(&big, MAX_TOPOLOGY_BYTES);
    assert!(t.truncated && t.text.len() <= MAX_TOPOLOGY_BYTES);
    assert!(t.text.ends_with('\n'), "cut at a line end");
    let t = bounded_text("\u{1b}[1mGPU0\u{1b}[0m\r\nGPU1\té", 100);
    assert_eq!(t.text, "?[1mGPU0?[0m\nGPU1\té");
    let t = bounded_text("éééé", 3);
    assert_eq!((t.text.as_str(), t.truncated), ("é", true));
}

#[test]
fn everything_read_from_the_machine() {
    let d = Diagnostics::from_inputs(inputs());
    assert_eq!(d.uname.source.as_deref(), Some(source::UNAME));
    assert_eq!(
        d.uname.value.as_ref().map(|u| u.arch.as_str()),
        Some("x86_64")
    );
    assert_eq!(d.driver_version.value.as_deref(), Some("580.95.05"));
    assert_eq!(d.driver_version.source.as_deref(), Some(source::NVIDIA_SMI));
    assert_eq!(d.cuda_version.value.as_deref(), Some("13.0"));
    let topo = d.topology.value.as_ref().expect("topology");
    assert!(topo.text.contains("GPU0\t X \tNODE") && !topo.truncated);
    assert_eq!(d.p2p_override.source.as_deref(), Some(source::PROC_PARAMS));
    assert!(d.p2p_override.value.as_ref().is_some_and(|p| p.on));
    // It survives run.json: serialise, read back, same record.
    let json = serde_json::to_string(&d).expect("serialises");
    let back: Diagnostics = serde_json::from_str(&json).expect("reads back");
    assert_eq!(back, d);
}

#[test]
fn a_machine_without_nvidia_gives_reasons_not_errors() {
    let gone = |what: &str| Err(ProbeError::Other(format!("{what} not found")));
    let d = Diagnostics::from_inputs(DiagInputs {
        env: vec![],
        uname: Ok("Darwin 24.1.0 arm64".into()),
        nvidia_smi: gone("nvidia-smi"),
        proc_version: gone("file"),
        topology: gone("nvidia-smi"),
        proc_params: gone("file"),
        sys_registry_dwords: gone("file"),
    });
    assert!(d.env.is_empty());
    assert_eq!(
        d.uname.value.as_ref().map(|u| u.system.as_str()),
        Some("Darwin")
    );
    for (value, reason) in [
        (d.driver_version.value.is_some(), &d.driver_version.reason),
        (d.cuda_version.value.is_some(), &d.cuda_version.reason),
        (d.topology.value.is_some(), &d.topology.reason),
        (d.p2p_override.value.is_some(), &d.p2p_override.reason),
    ] {
        assert!(!value);
        assert!(
            reason.as_deref().is_some_and(|r| r.contains("not found")),
            "{reason:?}"
        );
    }
    // The driver version falls back on the kernel module; P2P on sysfs, which it names.
    let d = Diagnostics::from_inputs(DiagInputs {
        nvidia_smi: gone("nvidia-smi"),
        proc_params: gone("file"),
        sys_registry_dwords: Ok("ForceP2P=0x11\n".into()),
        topology: Ok("  \n".into()),
        uname: Err(ProbeError::Other("timed out after 5 s".into())),
        ..inputs()
    });
    assert_eq!(
        d.driver_version.source.as_deref(),
        Some(source::PROC_VERSION)
    );
    assert_eq!(d.driver_version.value.as_deref(), Some("580.95.05"));
    assert_eq!(
        d.p2p_override.source.as_deref(),
        Some(source::SYS_REGISTRY_DWORDS)
    );
    assert!(d.p2p_override.value.as_ref().is_some_and(|p| p.on));
    assert!(d.topology.value.is_none() && d.topology.reason.is_some());
    assert_eq!(
        d.uname.reason.as_deref(),
        Some("uname -srm: timed out after 5 s")
    );
}

/// The words of a failed source are the ones the client wrote before they were a type: the
/// record's reasons (`uname -srm: timed out after 5.0 s`) read the same.
#[test]
fn probe_errors_keep_their_words() {
    let t = ProbeError::TimedOut(std::time::Duration::from_secs(5));
    assert_eq!(t.to_string(), "timed out after 5.0 s");
    assert_eq!(ProbeError::NotFound.to_string(), "not found");
    assert_eq!(
        ProbeError::PermissionDenied.to_string(),
        "permission denied"
    );
    assert_eq!(ProbeError::Other("gone".into()).to_string(), "gone");
}
