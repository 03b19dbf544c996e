//! The hardware monitor: a background thread that reads this machine's GPUs (NVML, loaded at
//! run time so the binary runs where there is no NVIDIA driver; else `nvidia-smi`; else none)
//! and CPU twice a second by default. Live views read the latest sample; the driver gathers a
//! cell's samples into its row's summary ([`HwSummary`]) and its time series ([`HwSeries`],
//! with each GPU's clock event reasons, for `telemetry.jsonl` and the row's hardware verdict).
//!
//! The thread never touches the measurement: it shares only mutex-guarded slots, taken once
//! per sample by the thread and on demand by readers. It is a fixed cost of every second of a
//! run (issue 44), so a sample opens nothing: on Linux the CPU's kernel files are opened once
//! and read again from their start (`hwmon_kernel.rs`), NVML keeps its library loaded, and the
//! thread sleeps until the next sample or a stop, never polling. Only the `nvidia-smi`
//! fallback (no NVML library) still starts a process per sample.

#[cfg(not(target_os = "linux"))]
use llmib_core::CpuReading;
use llmib_core::{
    GpuReading, HwSample, HwSeries, HwSummary, NVIDIA_SMI_QUERIES, NvmlRaw, parse_nvidia_smi_events,
};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Where GPU readings come from.
enum GpuReader {
    Nvml(Box<Nvml>),
    /// `nvidia-smi`, with the first of `NVIDIA_SMI_QUERIES` it answered.
    Smi(&'static str),
    None,
}

/// Every GPU's reading, and its clock event reasons in the same order.
type GpuRead = (Vec<GpuReading>, Vec<Option<u64>>);

impl GpuReader {
    /// NVML if the library loads and sees a GPU, else `nvidia-smi` if it answers (with the
    /// clock event reasons under their name, their older name, or not at all), else none.
    fn detect() -> GpuReader {
        if let Ok(n) = Nvml::init()
            && n.device_count().is_ok_and(|c| c > 0)
        {
            return GpuReader::Nvml(Box::new(n));
        }
        NVIDIA_SMI_QUERIES
            .into_iter()
            .find(|q| read_smi(q).is_some_and(|(g, _)| !g.is_empty()))
            .map_or(GpuReader::None, GpuReader::Smi)
    }

    fn name(&self) -> &'static str {
        match self {
            GpuReader::Nvml(_) => "nvml",
            GpuReader::Smi(_) => "nvidia-smi",
            GpuReader::None => "none",
        }
    }

    fn read(&self) -> GpuRead {
        match self {
            GpuReader::Nvml(n) => {
                let raw = read_nvml(n);
                let reasons = raw.iter().map(|r| r.clocks_event_reasons).collect();
                (raw.iter().map(GpuReading::from).collect(), reasons)
            }
            GpuReader::Smi(q) => read_smi(q).unwrap_or_default(),
            GpuReader::None => (Vec::new(), Vec::new()),
        }
    }
}

/// Every GPU's raw NVML values; a call that fails leaves its field empty.
fn read_nvml(n: &Nvml) -> Vec<NvmlRaw> {
    let count = n.device_count().unwrap_or(0);
    (0..count)
        .filter_map(|i| n.device_by_index(i).ok().map(|d| (i, d)))
        .map(|(i, d)| {
            let util = d.utilization_rates().ok();
            let mem = d.memory_info().ok();
            NvmlRaw {
                index: d.index().unwrap_or(i),
                name: d.name().ok(),
                util_gpu: util.as_ref().map(|u| u.gpu),
                util_memory: util.as_ref().map(|u| u.memory),
                memory_used: mem.as_ref().map(|m| m.used),
                memory_total: mem.as_ref().map(|m| m.total),
                power_usage_mw: d.power_usage().ok(),
                power_limit_mw: d.enforced_power_limit().ok(),
                temperature_c: d.temperature(TemperatureSensor::Gpu).ok(),
                clock_sm_mhz: d.clock_info(Clock::SM).ok(),
                clock_mem_mhz: d.clock_info(Clock::Memory).ok(),
                pcie_rx_kb_s: d.pcie_throughput(PcieUtilCounter::Receive).ok(),
                pcie_tx_kb_s: d.pcie_throughput(PcieUtilCounter::Send).ok(),
                // nvml-wrapper's name for nvmlDeviceGetCurrentClocksEventReasons.
                clocks_event_reasons: d.current_throttle_reasons().ok().map(|r| r.bits()),
            }
        })
        .collect()
}

/// `nvidia-smi`'s readings for `query`, or `None` when it is not installed or fails (a query
/// naming a field this `nvidia-smi` does not know fails whole).
fn read_smi(query: &str) -> Option<GpuRead> {
    let out = std::process::Command::new("nvidia-smi")
        .arg(format!("--query-gpu={query}"))
        .arg("--format=csv,noheader,nounits")
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let gpus = parse_nvidia_smi_events(&String::from_utf8_lossy(&out.stdout)).ok()?;
    Some(gpus.into_iter().unzip())
}

#[cfg(target_os = "linux")]
use kernel_cpu::KernelCpu as CpuReader;

/// The CPU reader off Linux (`sysinfo`): `None` parts where this OS gives no access (the panel
/// then says so).
#[cfg(not(target_os = "linux"))]
struct CpuReader {
    sys: Option<sysinfo::System>,
    components: Option<sysinfo::Components>,
}

#[cfg(not(target_os = "linux"))]
impl CpuReader {
    fn new() -> Self {
        let mut sys = sysinfo::System::new().ok();
        // Usage is a difference between two reads: prime the first.
        if let Some(s) = sys.as_mut() {
            s.refresh_cpu_usage();
        }
        CpuReader {
            sys,
            components: sysinfo::Components::new_with_refreshed_list().ok(),
        }
    }

    fn read(&mut self) -> Option<CpuReading> {
        let sys = self.sys.as_mut()?;
        sys.refresh_cpu_usage();
        sys.refresh_cpu_frequency();
        if let Some(c) = self.components.as_mut() {
            c.refresh(false);
        }
        let sys = self.sys.as_ref()?;
        let cpus = sys.cpus();
        let freq = (!cpus.is_empty())
            .then(|| cpus.iter().map(sysinfo::Cpu::frequency).sum::<u64>() / cpus.len() as u64)
            .filter(|f| *f > 0);
        // The package sensor where there is one, else the hottest CPU-like sensor.
        let temp = self
            .components
            .iter()
            .flat_map(|c| c.iter())
            .filter(|c| {
                let l = c.label().to_ascii_lowercase();
                l.contains("package")
                    || l.contains("tctl")
                    || l.contains("cpu")
                    || l.contains("core")
            })
            .filter_map(sysinfo::Component::temperature)
            .map(f64::from)
            .reduce(f64::max);
        Some(CpuReading {
            util_pct: (!cpus.is_empty()).then(|| f64::from(sys.global_cpu_usage())),
            freq_mhz: freq,
            temp_c: temp,
        })
    }
}

/// Shared between the thread and readers.
#[derive(Default)]
struct Slots {
    latest: Option<HwSample>,
    cell: Vec<HwSample>,
    /// The cell's start, while one runs: its series' clock.
    origin: Option<Instant>,
    series: HwSeries,
}

impl Slots {
    /// Keeps a sample read at `at`: the latest, the cell's summary and its series.
    fn keep(&mut self, sample: HwSample, reasons: &[Option<u64>], at: Instant) {
        if let Some(origin) = self.origin {
            let t = at.saturating_duration_since(origin).as_secs_f64();
            self.series.push(t, &sample, reasons);
        }
        self.cell.push(sample.clone());
        self.latest = Some(sample);
    }
}

/// The running monitor; dropping it stops the thread.
pub struct HwMonitor {
    slots: Arc<Mutex<Slots>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HwMonitor {
    /// Starts reading every `interval` (the run's default is half a second, so a clock that
    /// drops for a second shows in a cell's series; NVML's utilisation is itself an average
    /// over its last sample period), the first `gpu_limit` GPUs only where given
    /// (`--hw-gpu-limit`: the server's GPUs on a machine that has more).
    pub fn start(interval: Duration, gpu_limit: Option<usize>) -> Self {
        let slots = Arc::new(Mutex::new(Slots::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, stop2) = (slots.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("hw-monitor".into())
            .spawn(move || {
                let gpu = GpuReader::detect();
                let mut cpu = CpuReader::new();
                while !stop2.load(Ordering::Relaxed) {
                    let (mut gpus, mut reasons) = gpu.read();
                    if let Some(n) = gpu_limit {
                        gpus.truncate(n);
                        reasons.truncate(n);
                    }
                    let sample = HwSample {
                        gpus,
                        cpu: cpu.read(),
                        gpu_source: gpu.name().into(),
                    };
                    // Stamped when read: the series places each sample where it was taken.
                    let at = Instant::now();
                    if let Ok(mut s) = s2.lock() {
                        s.keep(sample, &reasons, at);
                    }
                    // Asleep until the next sample: a stop unparks the thread, so nothing
                    // wakes it to poll (a wake-up every 50 ms cost more than a sample's reads).
                    let next = at + interval;
                    while !stop2.load(Ordering::Relaxed) {
                        let now = Instant::now();
                        if now >= next {
                            break;
                        }
                        std::thread::park_timeout(next - now);
                    }
                }
            })
            .ok();
        HwMonitor {
            slots,
            stop,
            thread,
        }
    }

    /// The latest reading (`None` before the first, or if the thread could not start).
    pub fn latest(&self) -> Option<HwSample> {
        self.slots.lock().ok().and_then(|s| s.latest.clone())
    }

    /// A cell starts: its summary covers samples from now.
    pub fn begin_cell(&self) {
        self.begin_cell_at(Instant::now());
    }

    /// A cell starts at `origin`: its summary covers samples from now, and its series counts
    /// seconds from `origin` (the cell's other series share it).
    pub fn begin_cell_at(&self, origin: Instant) {
        if let Ok(mut s) = self.slots.lock() {
            s.cell.clear();
            s.origin = Some(origin);
            s.series = HwSeries::default();
        }
    }

    /// A cell ended: the summary of its samples.
    pub fn end_cell(&self) -> Option<HwSummary> {
        self.end_cell_series().0
    }

    /// A cell ended: the summary of its samples and their series (`None` without a sample).
    pub fn end_cell_series(&self) -> (Option<HwSummary>, Option<HwSeries>) {
        let Ok(mut s) = self.slots.lock() else {
            return (None, None);
        };
        let samples = std::mem::take(&mut s.cell);
        s.origin = None;
        let series = std::mem::take(&mut s.series);
        (
            HwSummary::from_samples(&samples),
            (!series.t.is_empty()).then_some(series),
        )
    }
}

impl Drop for HwMonitor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = &self.thread {
            t.thread().unpark();
        }
        if let Some(Err(panic)) = self.thread.take().map(JoinHandle::join) {
            // Dropped at the end of a run, after the dashboard gave the terminal back: one
            // line, so a monitor that died is never mistaken for a machine that was idle.
            let _ = writeln!(
                std::io::stderr(),
                "warning: the hardware monitor stopped early after a panic ({}); the rows' hardware figures end there, the measurements are unaffected",
                panic_text(panic.as_ref())
            );
        }
    }
}

/// A panic's message, where it is text (for the one-line report of a thread that died; the
/// dashboard's thread uses it too).
pub fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message")
}

#[cfg(target_os = "linux")]
#[path = "hwmon_kernel.rs"]
mod kernel_cpu;

#[cfg(test)]
#[path = "hwmon_tests.rs"]
mod tests;
