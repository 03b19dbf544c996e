use super::*;

const SMI: &str = include_str!("fixtures/nvidia-smi-h200x2.csv");
const NVML: &str = include_str!("fixtures/nvml-h200x2.json");

#[test]
fn nvidia_smi_csv_is_read_with_units_and_gaps() {
    let g = parse_nvidia_smi(SMI).expect("fixture parses");
    assert_eq!(g.len(), 2);
    assert_eq!(g[0].name.as_deref(), Some("NVIDIA H200"));
    assert_eq!(g[0].util_pct, Some(97.0));
    assert_eq!(g[0].mem_util_pct, Some(41.0));
    assert_eq!(g[0].vram_used_bytes, Some(131_072 * 1024 * 1024));
    assert_eq!(g[0].vram_total_bytes, Some(143_771 * 1024 * 1024));
    assert_eq!(g[0].power_w, Some(612.48));
    assert_eq!(g[0].sm_clock_mhz, Some(1980));
    assert_eq!(g[1].power_w, None, "[N/A] is no reading, not 0");
    assert_eq!(g[1].pcie_rx_bytes_per_s, None);
    assert!(parse_nvidia_smi("0, NVIDIA H200, 97\n").is_err());
    assert!(parse_nvidia_smi("x, a, 1, 1, 1, 1, 1, 1, 1, 1, 1\n").is_err());
    assert_eq!(parse_nvidia_smi("\n"), Ok(vec![]));
}

#[test]
fn nvml_units_become_watts_and_bytes() {
    let raw: Vec<NvmlRaw> = serde_json::from_str(NVML).expect("fixture parses");
    let g: Vec<GpuReading> = raw.iter().map(GpuReading::from).collect();
    assert_eq!(g[0].power_w, Some(612.48));
    assert_eq!(g[0].power_limit_w, Some(700.0));
    assert_eq!(g[0].pcie_rx_bytes_per_s, Some(2_150_000.0));
    assert_eq!(g[0].vram_used_bytes, Some(137_438_953_472));
    assert_eq!(g[1].power_w, None);
    assert_eq!(g[1].pcie_tx_bytes_per_s, None);
}

#[test]
fn a_cells_summary_means_and_sums_over_gpus() {
    let raw: Vec<NvmlRaw> = serde_json::from_str(NVML).expect("fixture parses");
    let gpus: Vec<GpuReading> = raw.iter().map(GpuReading::from).collect();
    let busy = HwSample {
        gpus: gpus.clone(),
        cpu: Some(CpuReading {
            util_pct: Some(20.0),
            ..Default::default()
        }),
        gpu_source: "nvml".into(),
    };
    let mut idle = busy.clone();
    for g in &mut idle.gpus {
        g.util_pct = Some(0.0);
        g.power_w = Some(100.0);
    }
    idle.cpu = Some(CpuReading {
        util_pct: Some(10.0),
        ..Default::default()
    });
    let s = HwSummary::from_samples(&[busy, idle]).expect("summary");
    assert_eq!(s.samples, 2);
    assert_eq!(s.gpus, 2);
    assert_eq!(s.source, "nvml");
    // Busy sample: mean of 97 and 95 = 96; idle: 0.
    assert_eq!(s.gpu_util_pct_mean, Some(48.0));
    assert_eq!(s.gpu_util_pct_max, Some(96.0));
    // Busy: only GPU 0 reports power (612.48); idle: 2 × 100.
    assert_eq!(s.power_w_max, Some(612.48));
    assert!((s.power_w_mean.unwrap_or(0.0) - (612.48 + 200.0) / 2.0).abs() < 1e-9);
    assert_eq!(
        s.vram_used_bytes_max,
        Some(137_438_953_472 + 136_902_082_560)
    );
    assert_eq!(s.pcie_rx_bytes_per_s_mean, Some(4_000_000.0));
    assert_eq!(s.pcie_tx_bytes_per_s_mean, Some(1_830_000.0));
    assert_eq!(s.cpu_util_pct_mean, Some(15.0));
    assert_eq!(HwSummary::from_samples(&[]), None);
    assert_eq!(HwSummary::from_samples(&[HwSample::default()]), None);
}
