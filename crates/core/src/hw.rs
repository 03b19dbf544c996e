//! Live hardware readings (GPUs and CPU of the machine the tool runs on) and their per-cell
//! summary. The monitor in `llmib-client` reads NVML or `nvidia-smi`; what it read is parsed
//! and summarised here, so both formats are tested on recorded outputs.
//!
//! A summary describes the server only when the server runs on this machine; the driver saves
//! it in a row only then.

use serde::{Deserialize, Serialize};

/// One GPU at one instant. A field the source does not report is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    /// Index as the driver numbers it.
    pub index: u32,
    /// Model name.
    pub name: Option<String>,
    /// SM utilisation, percent.
    pub util_pct: Option<f64>,
    /// Memory-controller utilisation, percent.
    pub mem_util_pct: Option<f64>,
    /// VRAM in use, bytes.
    pub vram_used_bytes: Option<u64>,
    /// VRAM in all, bytes.
    pub vram_total_bytes: Option<u64>,
    /// Board power draw, watts.
    pub power_w: Option<f64>,
    /// Enforced power limit, watts.
    pub power_limit_w: Option<f64>,
    /// Core temperature, °C.
    pub temp_c: Option<f64>,
    /// SM clock, MHz.
    pub sm_clock_mhz: Option<u32>,
    /// Memory clock, MHz.
    pub mem_clock_mhz: Option<u32>,
    /// PCIe receive throughput, bytes per second (NVML only).
    pub pcie_rx_bytes_per_s: Option<f64>,
    /// PCIe transmit throughput, bytes per second (NVML only).
    pub pcie_tx_bytes_per_s: Option<f64>,
}

/// The CPU at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuReading {
    /// Utilisation over all cores, percent.
    pub util_pct: Option<f64>,
    /// Mean core frequency, MHz.
    pub freq_mhz: Option<u64>,
    /// Package (or hottest) temperature, °C.
    pub temp_c: Option<f64>,
}

/// One reading of the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HwSample {
    /// Every visible GPU (empty: none visible).
    pub gpus: Vec<GpuReading>,
    /// The CPU, where it could be read.
    pub cpu: Option<CpuReading>,
    /// Where the GPU readings came from (`nvml`, `nvidia-smi`, `none`).
    pub gpu_source: String,
}

/// The raw values NVML returns for one GPU, in NVML's units (the monitor fills it, one call
/// each; a call that fails leaves `None`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NvmlRaw {
    /// `nvmlDeviceGetIndex`.
    pub index: u32,
    /// `nvmlDeviceGetName`.
    pub name: Option<String>,
    /// `nvmlDeviceGetUtilizationRates`: `gpu`, percent.
    pub util_gpu: Option<u32>,
    /// `nvmlDeviceGetUtilizationRates`: `memory`, percent.
    pub util_memory: Option<u32>,
    /// `nvmlDeviceGetMemoryInfo`: `used`, bytes.
    pub memory_used: Option<u64>,
    /// `nvmlDeviceGetMemoryInfo`: `total`, bytes.
    pub memory_total: Option<u64>,
    /// `nvmlDeviceGetPowerUsage`, milliwatts.
    pub power_usage_mw: Option<u32>,
    /// `nvmlDeviceGetEnforcedPowerLimit`, milliwatts.
    pub power_limit_mw: Option<u32>,
    /// `nvmlDeviceGetTemperature(GPU)`, °C.
    pub temperature_c: Option<u32>,
    /// `nvmlDeviceGetClockInfo(SM)`, MHz.
    pub clock_sm_mhz: Option<u32>,
    /// `nvmlDeviceGetClockInfo(MEM)`, MHz.
    pub clock_mem_mhz: Option<u32>,
    /// `nvmlDeviceGetPcieThroughput(RX_BYTES)`, KB/s.
    pub pcie_rx_kb_s: Option<u32>,
    /// `nvmlDeviceGetPcieThroughput(TX_BYTES)`, KB/s.
    pub pcie_tx_kb_s: Option<u32>,
    /// `nvmlDeviceGetCurrentClocksEventReasons` (formerly `…ThrottleReasons`): the bitmask of
    /// why the clocks are below their maximum ([`crate::ClockEvents`] names the bits).
    #[serde(default)]
    pub clocks_event_reasons: Option<u64>,
}

impl From<&NvmlRaw> for GpuReading {
    fn from(r: &NvmlRaw) -> Self {
        GpuReading {
            index: r.index,
            name: r.name.clone(),
            util_pct: r.util_gpu.map(f64::from),
            mem_util_pct: r.util_memory.map(f64::from),
            vram_used_bytes: r.memory_used,
            vram_total_bytes: r.memory_total,
            power_w: r.power_usage_mw.map(|m| f64::from(m) / 1000.0),
            power_limit_w: r.power_limit_mw.map(|m| f64::from(m) / 1000.0),
            temp_c: r.temperature_c.map(f64::from),
            sm_clock_mhz: r.clock_sm_mhz,
            mem_clock_mhz: r.clock_mem_mhz,
            pcie_rx_bytes_per_s: r.pcie_rx_kb_s.map(|k| f64::from(k) * 1000.0),
            pcie_tx_bytes_per_s: r.pcie_tx_kb_s.map(|k| f64::from(k) * 1000.0),
        }
    }
}

/// The fields `nvidia-smi` is asked for, in order ([`parse_nvidia_smi`] reads them back); the
/// last is the clock event reasons' bitmask, by its name since driver 535.
pub const NVIDIA_SMI_QUERY: &str = "index,name,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.mem,clocks_event_reasons.active";

/// The queries to try in order: [`NVIDIA_SMI_QUERY`], then the same with the bitmask's older
/// name (`clocks_throttle_reasons.active`, drivers before 535), then without it. `nvidia-smi`
/// refuses a whole query that names a field it does not know, so the monitor keeps the first
/// one that answers.
pub const NVIDIA_SMI_QUERIES: [&str; 3] = [
    NVIDIA_SMI_QUERY,
    "index,name,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.mem,clocks_throttle_reasons.active",
    "index,name,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.limit,temperature.gpu,clocks.sm,clocks.mem",
];

/// Reads `nvidia-smi`'s clock event reasons field (`0x0000000000000004`); `None` for `[N/A]`,
/// `[Not Supported]` or anything else that is not a hexadecimal bitmask.
pub fn parse_clock_event_reasons(field: &str) -> Option<u64> {
    let f = field.trim();
    let hex = f.strip_prefix("0x").or_else(|| f.strip_prefix("0X"))?;
    u64::from_str_radix(hex, 16).ok()
}

/// `nvidia-smi` output that is not the answer to [`NVIDIA_SMI_QUERY`] (a different
/// `nvidia-smi`, or not its output).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmiParseError {
    /// A line has fewer fields than the query asks for.
    #[error("nvidia-smi line {line}: {fields} fields, expected at least 11")]
    TooFewFields {
        /// 1-based line number.
        line: usize,
        /// Fields found.
        fields: usize,
    },
    /// The first field is not a GPU index.
    #[error("nvidia-smi line {line}: index `{index}`")]
    BadIndex {
        /// 1-based line number.
        line: usize,
        /// What stood there.
        index: String,
    },
}

/// Parses `nvidia-smi --query-gpu=<NVIDIA_SMI_QUERY> --format=csv,noheader,nounits`: one GPU
/// per line, memory in MiB, power in W. `[N/A]`, `[Not Supported]` and other non-numbers give
/// `None`; a line with too few fields is an error (a different `nvidia-smi`, or not its output).
pub fn parse_nvidia_smi(text: &str) -> Result<Vec<GpuReading>, SmiParseError> {
    Ok(parse_nvidia_smi_events(text)?
        .into_iter()
        .map(|(g, _)| g)
        .collect())
}

/// [`parse_nvidia_smi`] with each GPU's clock event reasons: the twelfth field of any query
/// of [`NVIDIA_SMI_QUERIES`] (`None` where the query had no such field or it read `[N/A]`).
pub fn parse_nvidia_smi_events(
    text: &str,
) -> Result<Vec<(GpuReading, Option<u64>)>, SmiParseError> {
    const MIB: f64 = 1024.0 * 1024.0;
    let mut gpus = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() < 11 {
            return Err(SmiParseError::TooFewFields {
                line: i + 1,
                fields: f.len(),
            });
        }
        let num = |s: &str| s.parse::<f64>().ok().filter(|v| v.is_finite() && *v >= 0.0);
        let index = f[0].parse::<u32>().map_err(|_| SmiParseError::BadIndex {
            line: i + 1,
            index: f[0].to_string(),
        })?;
        let reasons = f.get(11).and_then(|r| parse_clock_event_reasons(r));
        let reading = GpuReading {
            index,
            name: (!f[1].is_empty()).then(|| f[1].to_string()),
            util_pct: num(f[2]),
            mem_util_pct: num(f[3]),
            vram_used_bytes: num(f[4]).map(|m| (m * MIB) as u64),
            vram_total_bytes: num(f[5]).map(|m| (m * MIB) as u64),
            power_w: num(f[6]),
            power_limit_w: num(f[7]),
            temp_c: num(f[8]),
            sm_clock_mhz: num(f[9]).map(|v| v as u32),
            mem_clock_mhz: num(f[10]).map(|v| v as u32),
            pcie_rx_bytes_per_s: None,
            pcie_tx_bytes_per_s: None,
        };
        gpus.push((reading, reasons));
    }
    Ok(gpus)
}

/// What the machine did during one cell, saved in its row (`hardware` in `cells.jsonl`).
/// GPU utilisation is the mean over GPUs; power, VRAM and PCIe are summed over GPUs (the
/// server's whole draw). Means are over samples; a figure no sample had is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HwSummary {
    /// Samples summarised.
    pub samples: u32,
    /// GPUs seen.
    pub gpus: u32,
    /// Where the GPU readings came from.
    pub source: String,
    /// Mean GPU utilisation, percent.
    pub gpu_util_pct_mean: Option<f64>,
    /// Highest GPU utilisation of a sample, percent.
    pub gpu_util_pct_max: Option<f64>,
    /// Mean power of all GPUs, W.
    pub power_w_mean: Option<f64>,
    /// Highest power of all GPUs in a sample, W.
    pub power_w_max: Option<f64>,
    /// Highest VRAM in use over all GPUs, bytes.
    pub vram_used_bytes_max: Option<u64>,
    /// Mean PCIe receive over all GPUs, bytes per second.
    pub pcie_rx_bytes_per_s_mean: Option<f64>,
    /// Mean PCIe transmit over all GPUs, bytes per second.
    pub pcie_tx_bytes_per_s_mean: Option<f64>,
    /// Mean CPU utilisation, percent.
    pub cpu_util_pct_mean: Option<f64>,
}

impl HwSummary {
    /// Summarises `samples`; `None` when there are none, or none saw a GPU or the CPU.
    pub fn from_samples(samples: &[HwSample]) -> Option<HwSummary> {
        let useful: Vec<&HwSample> = samples
            .iter()
            .filter(|s| !s.gpus.is_empty() || s.cpu.is_some())
            .collect();
        let first = useful.first()?;
        // Per sample: the GPUs' mean (utilisation) or sum (power, VRAM, PCIe).
        let per = |f: &dyn Fn(&GpuReading) -> Option<f64>, mean: bool| -> Vec<f64> {
            useful
                .iter()
                .filter_map(|s| {
                    let v: Vec<f64> = s.gpus.iter().filter_map(f).collect();
                    (!v.is_empty()).then(|| {
                        let sum: f64 = v.iter().sum();
                        if mean { sum / v.len() as f64 } else { sum }
                    })
                })
                .collect()
        };
        let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
        let max = |v: &[f64]| v.iter().copied().reduce(f64::max);
        let util = per(&|g| g.util_pct, true);
        let power = per(&|g| g.power_w, false);
        let vram = per(&|g| g.vram_used_bytes.map(|b| b as f64), false);
        let rx = per(&|g| g.pcie_rx_bytes_per_s, false);
        let tx = per(&|g| g.pcie_tx_bytes_per_s, false);
        let cpu: Vec<f64> = useful
            .iter()
            .filter_map(|s| s.cpu.as_ref()?.util_pct)
            .collect();
        Some(HwSummary {
            samples: useful.len() as u32,
            gpus: useful.iter().map(|s| s.gpus.len()).max().unwrap_or(0) as u32,
            source: first.gpu_source.clone(),
            gpu_util_pct_mean: mean(&util),
            gpu_util_pct_max: max(&util),
            power_w_mean: mean(&power),
            power_w_max: max(&power),
            vram_used_bytes_max: max(&vram).map(|b| b as u64),
            pcie_rx_bytes_per_s_mean: mean(&rx),
            pcie_tx_bytes_per_s_mean: mean(&tx),
            cpu_util_pct_mean: mean(&cpu),
        })
    }
}

#[cfg(test)]
#[path = "tests/hw.rs"]
mod tests;
