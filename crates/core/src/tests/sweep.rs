//! Known answers of a sweep's plan: grids, links, placeholders, names and refusals.

use super::*;

fn grid(specs: &[&str]) -> Vec<GridParam> {
    specs.iter().map(|s| parse_grid(s).expect("grid")).collect()
}

fn names(c: &[Combination]) -> Vec<&str> {
    c.iter().map(|c| c.name.as_str()).collect()
}

#[test]
fn a_grid_is_a_product_with_the_first_parameter_slowest() {
    let g = grid(&["seqs=64,128", "mbt=2048,8192"]);
    let c = combinations(&g, &[]).expect("combinations");
    assert_eq!(
        names(&c),
        [
            "seqs-64_mbt-2048",
            "seqs-64_mbt-8192",
            "seqs-128_mbt-2048",
            "seqs-128_mbt-8192"
        ]
    );
    assert_eq!(c[2].params["seqs"], "128");
    assert_eq!(c[2].params["mbt"], "2048");
}

#[test]
fn linked_parameters_move_together() {
    let g = grid(&["tp=1,2,4", "dp=4,2,1", "seqs=64,256"]);
    let c = combinations(&g, &[vec!["tp".into(), "dp".into()]]).expect("combinations");
    assert_eq!(
        names(&c),
        [
            "tp-1_dp-4_seqs-64",
            "tp-1_dp-4_seqs-256",
            "tp-2_dp-2_seqs-64",
            "tp-2_dp-2_seqs-256",
            "tp-4_dp-1_seqs-64",
            "tp-4_dp-1_seqs-256"
        ]
    );
    assert_eq!(
        combinations(&g[..2], &[vec!["tp".into(), "seqs".into()]]),
        Err(SweepError::LinkUnknown("seqs".into()))
    );
    let uneven = grid(&["tp=1,2", "dp=4,2,1"]);
    assert!(matches!(
        combinations(&uneven, &[vec!["tp".into(), "dp".into()]]),
        Err(SweepError::LinkLengths { .. })
    ));
    assert_eq!(
        combinations(&g, &[vec!["tp".into()], vec!["tp".into(), "dp".into()]]),
        Err(SweepError::LinkTwice("tp".into()))
    );
}

#[test]
fn bad_grids_are_refused_with_what_to_write() {
    for bad in ["seqs", "=1,2", "seqs=", "seqs=1,,2", "se qs=1"] {
        assert_eq!(
            parse_grid(bad),
            Err(SweepError::BadGrid(bad.into())),
            "{bad}"
        );
    }
    assert_eq!(
        parse_grid("port=1,2"),
        Err(SweepError::OwnInGrid("port".into()))
    );
    assert_eq!(
        parse_grid("host=a"),
        Err(SweepError::OwnInGrid("host".into()))
    );
    let twice = grid(&["a=1", "a=2"]);
    assert_eq!(
        combinations(&twice, &[]),
        Err(SweepError::DuplicateParameter("a".into()))
    );
}

#[test]
fn a_command_is_rendered_with_every_placeholder_filled() {
    let g = grid(&["seqs=64"]);
    let c = &combinations(&g, &[]).expect("c")[0];
    let cmd = "vllm serve m --max-num-seqs {seqs} --port {port}";
    assert_eq!(
        render(cmd, &c.params, Some(8123), None).expect("render"),
        "vllm serve m --max-num-seqs 64 --port 8123"
    );
    assert_eq!(
        render(cmd, &c.params, None, None),
        Err(SweepError::UnfilledPlaceholder("port".into()))
    );
    assert_eq!(
        render("x {a", &c.params, None, None),
        Err(SweepError::Unclosed("x {a".into()))
    );
    assert!(check_templates(cmd, "http://127.0.0.1:{port}", &g, &Launcher::Local).is_ok());
    assert_eq!(
        check_templates("serve --x {y}", "http://h:1", &g, &Launcher::Local),
        Err(SweepError::UnfilledPlaceholder("y".into()))
    );
    assert_eq!(
        check_templates("serve", "http://h:1", &g, &Launcher::Local),
        Err(SweepError::UnusedParameter("seqs".into()))
    );
    assert!(wants_port("http://127.0.0.1:{port}/v1"));
    assert!(!wants_port("http://127.0.0.1:8000"));
}

#[test]
fn directory_names_are_safe_whatever_the_values() {
    let g = grid(&["model=org/name:v1", "x=../.."]);
    let c = combinations(&g, &[]).expect("c");
    assert_eq!(c[0].name, "model-org+name+v1_x-v..+..");
    assert!(!c[0].name.contains('/'));
}

#[test]
fn the_sweeps_own_flags_are_refused_among_the_run_flags() {
    let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(own_run_flag(&args(&["--contexts", "8K"])), None);
    assert_eq!(own_run_flag(&args(&["--url", "x"])), Some("--url"));
    assert_eq!(own_run_flag(&args(&["--output=x"])), Some("--output"));
}

#[test]
fn a_stored_command_has_its_secrets_redacted_and_a_log_tail_its_last_lines() {
    let c = stored_command("vllm serve m --api-key sk-12345678 --port 1");
    assert!(!c.contains("sk-12345678"), "{c}");
    assert!(c.contains("<redacted>"), "{c}");
    assert_eq!(log_tail("a\n\nb\nc\n", 2, &[]), ["b", "c"]);
    assert!(ComboState::Measured.finished() && !ComboState::Interrupted.finished());
}

#[test]
fn the_run_flags_are_kept_with_their_secrets_redacted() {
    let args: Vec<String> = [
        "--api-key",
        "sk-abc",
        "--contexts",
        "8K",
        "--upload-token=t0k",
        "--x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let r = redact_args(&args);
    assert_eq!(
        r,
        [
            "--api-key",
            "<redacted>",
            "--contexts",
            "8K",
            "--upload-token=<redacted>",
            "--x"
        ]
    );
    assert!(holds_redacted(&r.join(" ")));
    assert!(!holds_redacted("--contexts 8K"));
}

#[test]
fn host_is_the_sweeps_own_and_a_slurm_command_cannot_use_it() {
    let g = grid(&["seqs=64"]);
    let c = &combinations(&g, &[]).expect("c")[0];
    assert_eq!(
        render("http://{host}:{port}", &c.params, Some(9), Some("10.0.0.7")).expect("url"),
        "http://10.0.0.7:9"
    );
    let slurm = Launcher::Slurm {
        sbatch_args: Vec::new(),
    };
    assert!(
        check_templates(
            "s --n {seqs} --port {port}",
            "http://{host}:{port}",
            &g,
            &slurm
        )
        .is_ok()
    );
    assert_eq!(
        check_templates("s --n {seqs} --host {host}", "http://{host}:1", &g, &slurm),
        Err(SweepError::HostInSlurmCommand)
    );
    assert!(
        check_templates(
            "s --n {seqs} --host {host}",
            "http://{host}:1",
            &g,
            &Launcher::Local
        )
        .is_ok()
    );
}

#[test]
fn a_log_tail_never_shows_a_secret_the_command_held() {
    let cmd: Vec<String> = "sglang serve --api-key 'sk-live-123' --hf-token=hf_abc; --port 1"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let secrets = secret_values(&cmd);
    assert_eq!(secrets, ["sk-live-123", "hf_abc"]);
    let s: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let log = "server_args=ServerArgs(api_key='sk-live-123', hf='hf_abc')\nready\n";
    let tail = log_tail(log, 5, &s).join("\n");
    assert!(
        !tail.contains("sk-live-123") && !tail.contains("hf_abc"),
        "{tail}"
    );
    assert!(tail.contains("<redacted>"), "{tail}");
}

#[test]
fn a_sweep_id_sorts_by_its_start_and_differs_between_sweeps_of_one_second() {
    // 2026-12-06T19:51:46.5Z in ns since the epoch.
    let ns = 1_796_586_706_500_000_000;
    let a = crate::sweep_id(ns);
    let b = crate::sweep_id(ns);
    assert!(a.starts_with("20261206T195146Z-"), "{a}");
    let tail = &a["20261206T195146Z-".len()..];
    assert_eq!(tail.len(), 8, "{a}");
    assert!(tail.chars().all(|c| c.is_ascii_hexdigit()), "{a}");
    assert_ne!(
        a, b,
        "two sweeps started in the same instant share no identity"
    );
    assert!(crate::sweep_id(ns - 86_400_000_000_000) < a);
}

#[test]
fn a_run_json_without_a_sweep_reads_and_one_with_it_keeps_it() {
    let member = crate::SweepMember {
        id: "20261206T195146Z-0badcafe".into(),
        combination: "seqs=64".into(),
        params: [("seqs".to_string(), "64".to_string())].into(),
    };
    let text = serde_json::to_string(&member).expect("json");
    assert_eq!(
        serde_json::from_str::<crate::SweepMember>(&text).expect("reads"),
        member
    );
    let old = r#"{"id":"x","combination":"a"}"#;
    let read: crate::SweepMember = serde_json::from_str(old).expect("old reads");
    assert!(read.params.is_empty());
}
