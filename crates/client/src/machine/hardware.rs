//! Facts for the Hardware card: GPUs (through `nvidia-smi`), OS and CPU of this machine, or a
//! `--hardware "8x RTX PRO 6000 96GB"` description for a remote server.
//!
//! `nvidia-smi` rather than NVML (the `nvml-wrapper` crate): the card needs four strings once
//! per run, and calling the tool keeps the build lean and free of a driver library that most
//! CI machines lack. It is only meaningful when the server runs on this machine; for a remote
//! server pass `--hardware`. Memory is kept in bytes, computed from MiB (`nvidia-smi`) or
//! from the `GB` of a description read as GiB, so an "RTX PRO 6000 96GB" (97,887 MiB) and its
//! description both print as 96 GB when rounded to GiB.

use std::process::Command;

use llmib_core::HardwareInfo;
use thiserror::Error;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// A `--hardware` value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "cannot read --hardware {0:?}: expected something like \"8x RTX PRO 6000 96GB\" or \"H100 80GB\""
)]
pub struct HardwareParseError(pub String);

/// This machine: GPUs from `nvidia-smi` when it is installed and answers, plus OS and CPU.
pub fn detect_local() -> HardwareInfo {
    let mut hw = HardwareInfo {
        os: Some(std::env::consts::OS.to_owned()),
        cpu: std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|s| parse_cpuinfo(&s)),
        device_type: Some("CPU".to_owned()),
        source: Some("local".to_owned()),
        ..HardwareInfo::default()
    };
    let query = run(&[
        "--query-gpu=name,memory.total,driver_version",
        "--format=csv,noheader",
    ]);
    if let Some(gpus) = query.as_deref().and_then(parse_gpu_query) {
        hw.device_type = Some("Discrete GPU".to_owned());
        hw.gpu_name = Some(gpus.name);
        hw.gpu_count = Some(gpus.count);
        hw.gpu_memory_bytes = gpus.memory_bytes;
        hw.driver_version = gpus.driver_version;
        hw.cuda_version = run(&[]).as_deref().and_then(parse_cuda_version);
        hw.source = Some("nvidia-smi".to_owned());
    }
    hw
}

/// GPUs as `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader`
/// lists them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuQuery {
    /// The GPU name (names joined with " + " when the machine mixes models).
    pub name: String,
    /// Number of GPUs.
    pub count: u32,
    /// Memory of one GPU (the first), in bytes.
    pub memory_bytes: Option<u64>,
    /// Driver version.
    pub driver_version: Option<String>,
}

/// Parses the CSV lines of the GPU query; `None` when no GPU is listed.
pub fn parse_gpu_query(out: &str) -> Option<GpuQuery> {
    let mut names: Vec<String> = Vec::new();
    let mut count = 0u32;
    let mut memory_bytes = None;
    let mut driver_version = None;
    for line in out.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        let [name, mem, driver, ..] = fields.as_slice() else {
            continue;
        };
        if name.is_empty() || name.starts_with("NVIDIA-SMI has failed") {
            continue;
        }
        count += 1;
        if !names.iter().any(|n| n == name) {
            names.push((*name).to_owned());
        }
        if memory_bytes.is_none() {
            memory_bytes = parse_mib(mem);
        }
        if driver_version.is_none() && !driver.is_empty() {
            driver_version = Some((*driver).to_owned());
        }
    }
    (count > 0).then(|| GpuQuery {
        name: names.join(" + "),
        count,
        memory_bytes,
        driver_version,
    })
}

/// `97887 MiB` → bytes.
fn parse_mib(s: &str) -> Option<u64> {
    let n: u64 = s.split_whitespace().next()?.parse().ok()?;
    n.checked_mul(1024 * 1024)
}

/// The `CUDA Version: 13.0` of `nvidia-smi`'s header.
pub fn parse_cuda_version(out: &str) -> Option<String> {
    llmib_core::parse_smi_header(out).cuda
}

/// The first `model name` of `/proc/cpuinfo`.
pub fn parse_cpuinfo(s: &str) -> Option<String> {
    s.lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == "model name")
        .map(|(_, v)| v.trim().to_owned())
        .filter(|v| !v.is_empty())
}

/// Parses a `--hardware` description: an optional count (`8x`, `8 x`, `8×`), a GPU name, and an
/// optional memory per GPU (`96GB`, `80 GiB`, `1.5TB`). "CPU" (or a name with "CPU") describes
/// a CPU server.
pub fn parse_hardware_override(s: &str) -> Result<HardwareInfo, HardwareParseError> {
    let err = || HardwareParseError(s.to_owned());
    let mut rest = s.trim();
    let mut count = None;
    // Leading count: digits, optional spaces, then x/X/×/*.
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 {
        let after = rest[digits..].trim_start();
        if let Some(a) = ["x", "X", "×", "*"]
            .iter()
            .find_map(|sep| after.strip_prefix(sep))
        {
            count = Some(rest[..digits].parse::<u32>().map_err(|_| err())?);
            rest = a.trim_start();
        }
    }
    // Trailing memory: a number followed by a unit, as the last word(s).
    let mut memory = None;
    let lower = rest.to_ascii_lowercase();
    for (unit, factor) in [
        ("tib", 1024.0 * GIB),
        ("tb", 1024.0 * GIB),
        ("gib", GIB),
        ("gb", GIB),
        ("g", GIB),
    ] {
        if let Some(head) = lower.strip_suffix(unit) {
            let head_trim = head.trim_end();
            let num_start = head_trim
                .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
                .map_or(0, |i| i + 1);
            let num = &head_trim[num_start..];
            if let Ok(v) = num.parse::<f64>() {
                if v > 0.0 && v.is_finite() {
                    memory = Some((v * factor).round() as u64);
                    rest = rest[..num_start].trim_end();
                }
                break;
            }
        }
    }
    let name = rest.trim();
    if name.is_empty() {
        return Err(err());
    }
    let cpu = name.to_ascii_lowercase().contains("cpu");
    Ok(HardwareInfo {
        device_type: Some(if cpu { "CPU" } else { "Discrete GPU" }.to_owned()),
        gpu_name: (!cpu).then(|| name.to_owned()),
        gpu_count: if cpu { None } else { Some(count.unwrap_or(1)) },
        gpu_memory_bytes: if cpu { None } else { memory },
        cpu: cpu.then(|| name.to_owned()),
        source: Some("--hardware".to_owned()),
        ..HardwareInfo::default()
    })
}

/// Runs `nvidia-smi` with `args`; `None` when it is missing or fails.
fn run(args: &[&str]) -> Option<String> {
    let out = Command::new("nvidia-smi").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    // Recorded on an 8-GPU RTX PRO 6000 server and an H100 box (nvidia-smi 580).
    const QUERY_8: &str = "NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n\
NVIDIA RTX PRO 6000 Blackwell Server Edition, 97887 MiB, 580.95.05\n";
    const HEADER: &str = "Tue Dec  1 10:00:00 2026       \n\
+-----------------------------------------------------------------------------------------+\n\
| NVIDIA-SMI 580.95.05              Driver Version: 580.95.05      CUDA Version: 13.0     |\n\
|-----------------------------------------+------------------------+----------------------+\n";

    #[test]
    fn gpu_query() {
        let q = parse_gpu_query(QUERY_8).expect("gpus");
        assert_eq!(q.count, 8);
        assert_eq!(q.name, "NVIDIA RTX PRO 6000 Blackwell Server Edition");
        assert_eq!(q.memory_bytes, Some(97887 * 1024 * 1024));
        assert_eq!(q.driver_version.as_deref(), Some("580.95.05"));
        let mixed = parse_gpu_query("NVIDIA H100 80GB HBM3, 81559 MiB, 550.54.15\nNVIDIA A100-SXM4-40GB, 40960 MiB, 550.54.15\n")
            .expect("gpus");
        assert_eq!(mixed.name, "NVIDIA H100 80GB HBM3 + NVIDIA A100-SXM4-40GB");
        assert_eq!(mixed.count, 2);
        assert_eq!(parse_gpu_query(""), None);
        assert_eq!(
            parse_gpu_query(
                "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
            ),
            None
        );
        assert_eq!(
            parse_gpu_query("NVIDIA L4, [N/A], 535.1\n").map(|q| q.memory_bytes),
            Some(None)
        );
    }

    #[test]
    fn cuda_version_and_cpu() {
        assert_eq!(parse_cuda_version(HEADER).as_deref(), Some("13.0"));
        assert_eq!(parse_cuda_version("no header"), None);
        let cpuinfo = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Platinum 8480+\n";
        assert_eq!(
            parse_cpuinfo(cpuinfo).as_deref(),
            Some("Intel(R) Xeon(R) Platinum 8480+")
        );
        assert_eq!(parse_cpuinfo(""), None);
    }

    #[test]
    fn hardware_overrides() {
        let h = parse_hardware_override("8x RTX PRO 6000 96GB").expect("parses");
        assert_eq!(h.gpu_count, Some(8));
        assert_eq!(h.gpu_name.as_deref(), Some("RTX PRO 6000"));
        assert_eq!(h.gpu_memory_bytes, Some(96 * 1024 * 1024 * 1024));
        assert_eq!(h.source.as_deref(), Some("--hardware"));
        assert_eq!(h.device_type.as_deref(), Some("Discrete GPU"));

        let h = parse_hardware_override("2 × H100 SXM 80 GiB").expect("parses");
        assert_eq!(
            (h.gpu_count, h.gpu_name.as_deref()),
            (Some(2), Some("H100 SXM"))
        );
        let h = parse_hardware_override("H100").expect("parses");
        assert_eq!((h.gpu_count, h.gpu_memory_bytes), (Some(1), None));
        let h = parse_hardware_override("4*MI300X 192G").expect("parses");
        assert_eq!(h.gpu_memory_bytes, Some(192 * 1024 * 1024 * 1024));
        let h = parse_hardware_override("1.5TB box").expect("parses");
        assert_eq!(h.gpu_name.as_deref(), Some("1.5TB box"));
        let h = parse_hardware_override("CPU Xeon 8480").expect("parses");
        assert_eq!(h.device_type.as_deref(), Some("CPU"));
        assert_eq!(h.gpu_count, None);
        assert!(parse_hardware_override("8x 96GB").is_err());
        assert!(parse_hardware_override("  ").is_err());
    }

    #[test]
    fn local_detection_never_panics() {
        let h = detect_local();
        assert_eq!(h.os.as_deref(), Some(std::env::consts::OS));
        assert!(h.source.is_some());
    }
}
