//! The CPU reader on Linux: the kernel's files kept open — `/proc/stat`, each CPU's
//! `scaling_cur_freq`, `/proc/cpuinfo`, and the CPU temperature sensors' `tempN_input` — and
//! read again from offset 0 at each sample (procfs and sysfs write a file's text afresh for a
//! read from its start) into buffers kept between samples.
//!
//! The figures are those of `sysinfo`, which it replaces and whose rules it keeps (the usage
//! formula, its 200 ms minimum between two reads of `/proc/stat`, CPU `i`'s frequency from
//! `cpu{i}`'s `scaling_cur_freq`, else the first `cpu MHz` line of `/proc/cpuinfo`, one sensor
//! per label). `sysinfo` opened every file at every sample, walked `/sys/class/hwmon` again
//! (each sensor's name, model and label files) and, on machines without cpufreq, read the
//! whole of `/proc/cpuinfo` once per CPU. Here the sensors are found once, when the monitor
//! starts with the run.

use llmib_core::CpuReading;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `sysinfo`'s `MINIMUM_CPU_UPDATE_INTERVAL` on Linux: a read sooner than this after the
/// last one keeps the last usage.
pub(super) const MIN_USAGE_INTERVAL: Duration = Duration::from_millis(200);

/// The first read of `/proc/stat` (every CPU's line, then every IRQ's count): its CPU lines
/// on most machines.
const STAT_READ: usize = 4096;
/// The first read of `/proc/cpuinfo`: the kernel writes it CPU by CPU, as far as a read goes,
/// and the first frequency line is a few lines into the first CPU's record, so a short read
/// costs the kernel one CPU's record rather than all of them.
const CPUINFO_READ: usize = 512;

/// A kernel file kept open, read from its start into a buffer kept between reads.
struct Kept {
    file: File,
    buf: Vec<u8>,
}

impl Kept {
    fn open(path: &Path) -> Option<Kept> {
        let file = File::open(path).ok()?;
        Some(Kept {
            file,
            buf: Vec::new(),
        })
    }

    /// One read from offset 0 of at most `max` bytes: a sysfs attribute answers whole in
    /// one read.
    fn read_once(&mut self, max: usize) -> Option<&[u8]> {
        self.buf.resize(max, 0);
        let n = self.file.read_at(&mut self.buf, 0).ok()?;
        Some(&self.buf[..n])
    }

    /// Reads from offset 0, `first` bytes at first, until `enough` says the text so far holds
    /// what is wanted, or to the end; whether it ended there. The buffer keeps the size that
    /// sufficed, so a file of steady length takes one read, and the kernel writes no more of
    /// it than is read (`/proc/cpuinfo` is written CPU by CPU as it is read).
    fn read_until(
        &mut self,
        first: usize,
        enough: impl Fn(&[u8]) -> bool,
    ) -> Option<(&[u8], bool)> {
        if self.buf.len() < first {
            self.buf.resize(first, 0);
        }
        let mut n = 0;
        loop {
            if n == self.buf.len() {
                self.buf.resize(n * 2, 0);
            }
            let got = self.file.read_at(&mut self.buf[n..], n as u64).ok()?;
            n += got;
            if got == 0 {
                return Some((&self.buf[..n], true));
            }
            if enough(&self.buf[..n]) {
                return Some((&self.buf[..n], false));
            }
        }
    }
}

/// The complete lines of `text` (each ended by `\n`; a partial last line is left out).
fn complete_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let end = text.iter().rposition(|b| *b == b'\n');
    end.into_iter()
        .flat_map(move |i| text[..i].split(|b| *b == b'\n'))
}

/// The ten times of a `/proc/stat` line as `sysinfo` reads them (digits only, a missing
/// field 0).
fn ten_times(line: &[u8]) -> [u64; 10] {
    let to_u64 = |v: &[u8]| {
        v.iter().fold(0u64, |x, c| {
            x.wrapping_mul(10)
                .wrapping_add(u64::from(c.wrapping_sub(b'0')))
        })
    };
    let mut parts = line.split(|b| *b == b' ').filter(|p| !p.is_empty()).skip(1);
    let mut v = [0u64; 10];
    for x in &mut v {
        *x = parts.next().map_or(0, to_u64);
    }
    v
}

fn is_cpu_line(line: &[u8]) -> bool {
    line.len() >= 3 && &line[..3] == b"cpu"
}

/// Whether `text` holds a complete line after the `cpu…` lines: all `sysinfo` read.
fn past_cpu_lines(text: &[u8]) -> bool {
    complete_lines(text).skip(1).any(|l| !is_cpu_line(l))
}

/// The machine's ten times (the `cpu ` line) and its CPUs (the `cpu…` lines after it);
/// `None` where the first line is not `cpu `.
pub(super) fn parse_stat(text: &[u8]) -> Option<([u64; 10], usize)> {
    let mut lines = text.split(|b| *b == b'\n');
    let first = lines.next()?;
    if first.len() < 4 || &first[..4] != b"cpu " {
        return None;
    }
    Some((
        ten_times(first),
        lines.take_while(|l| is_cpu_line(l)).count(),
    ))
}

/// One `/proc/stat` reading, as `sysinfo` keeps it: guest time is in user time (and
/// guest_nice in nice) already, so it is taken out.
#[derive(Debug, Clone, Copy, Default)]
struct Times {
    user: u64,
    nice: u64,
    system: u64,
    idle: u64,
    iowait: u64,
    irq: u64,
    softirq: u64,
    steal: u64,
    guest: u64,
    guest_nice: u64,
}

impl Times {
    fn new(v: [u64; 10]) -> Times {
        Times {
            user: v[0].saturating_sub(v[8]),
            nice: v[1].saturating_sub(v[9]),
            system: v[2],
            idle: v[3],
            iowait: v[4],
            irq: v[5],
            softirq: v[6],
            steal: v[7],
            guest: v[8],
            guest_nice: v[9],
        }
    }

    fn system_time(&self) -> u64 {
        self.system
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
    }

    fn virtual_time(&self) -> u64 {
        self.guest.saturating_add(self.guest_nice)
    }

    fn total_time(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system_time())
            .saturating_add(self.idle.saturating_add(self.iowait))
            .saturating_add(self.virtual_time())
            .saturating_add(self.steal)
    }
}

/// The machine's busy share between its last two readings, percent, as `sysinfo`'s
/// `global_cpu_usage` (in `f32`, at most 100).
#[derive(Debug, Default)]
struct Usage {
    old: Times,
    new: Times,
    percent: f32,
}

impl Usage {
    /// A new reading of the ten times.
    fn set(&mut self, v: [u64; 10]) {
        self.old = self.new;
        self.new = Times::new(v);
        let (new, old) = (&self.new, &self.old);
        let (total, old_total) = (new.total_time(), old.total_time());
        let total = if total > old_total {
            (total - old_total) as f32
        } else {
            1.
        };
        let period = |n: u64, o: u64| n.saturating_sub(o) as f32 / total;
        let nice = period(new.nice, old.nice);
        let user = period(new.user, old.user);
        let system = period(new.system_time(), old.system_time());
        let steal = new.steal.saturating_sub(old.steal);
        let guest = new.virtual_time().saturating_sub(old.virtual_time());
        let irq = (steal + guest) as f32 / total;
        self.percent = (nice + user + system + irq) * 100.;
        if self.percent > 100. {
            self.percent = 100.;
        }
    }
}

/// The frequency lines of `/proc/cpuinfo` `sysinfo` takes, by architecture.
const MHZ_KEYS: [&[u8]; 5] = [
    b"cpu MHz\t",
    b"CPU MHz\t",
    b"BogoMIPS",
    b"clock\t",
    b"bogomips per cpu",
];

fn is_mhz_line(line: &[u8]) -> bool {
    MHZ_KEYS
        .iter()
        .any(|k| line.len() > k.len() && line[..k.len()].eq_ignore_ascii_case(k))
}

/// Whether `text` holds a complete frequency line: the first one in the file.
fn has_mhz_line(text: &[u8]) -> bool {
    complete_lines(text).any(is_mhz_line)
}

/// The MHz of the first frequency line of `/proc/cpuinfo` (`whole`: the text is the whole
/// file, so its last line counts though no newline ends it); 0 where there is none.
pub(super) fn cpuinfo_mhz(text: &[u8], whole: bool) -> u64 {
    let line = if whole {
        text.split(|b| *b == b'\n').find(|l| is_mhz_line(l))
    } else {
        complete_lines(text).find(|l| is_mhz_line(l))
    };
    line.and_then(|l| std::str::from_utf8(l).ok())
        .and_then(|l| l.split(':').next_back())
        .and_then(|v| v.replace("MHz", "").trim().parse::<f64>().ok())
        .map_or(0, |mhz| mhz as u64)
}

/// A CPU temperature sensor: its label (`sysinfo`'s) and its `tempN_input`, with the last
/// temperature read (kept when a read fails, as `sysinfo` kept it).
pub(super) struct Sensor {
    pub(super) label: String,
    input: Kept,
    last: Option<f32>,
}

impl Sensor {
    fn read(&mut self) -> Option<f32> {
        let now = self
            .input
            .read_once(32)
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| t.trim().parse::<i32>().ok())
            .map(|milli| milli as f32 / 1000.);
        self.last = now.or(self.last);
        self.last
    }
}

/// A sysfs text file's content without its trailing whitespace.
fn file_line(path: &Path) -> Option<String> {
    let mut s = std::fs::read_to_string(path).ok()?;
    s.truncate(s.trim_end().len());
    Some(s)
}

/// Whether a sensor's label names a CPU package or core (`tctl`: AMD's control sensor).
pub(super) fn is_cpu_label(label: &str) -> bool {
    let l = label.to_ascii_lowercase();
    ["package", "tctl", "cpu", "core"]
        .iter()
        .any(|k| l.contains(k))
}

/// The `tempN_input` channels of one hwmon folder, by `N`.
fn channels(folder: &Path) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut ids: Vec<u32> = dir
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
        .filter_map(|e| {
            let name = e.file_name();
            let (id, item) = name.to_str()?.strip_prefix("temp")?.split_once('_')?;
            (item == "input").then(|| id.parse().ok()).flatten()
        })
        .collect();
    ids.sort_unstable();
    ids
}

/// The CPU sensors under `sys`'s `class/hwmon`, each opened once. A label is `sysinfo`'s:
/// the chip's `name`, then the channel's `tempN_label` or `tempN`, then `device/model`.
/// Two channels of one label are one sensor to `sysinfo` (which of them it kept followed
/// a hash map's order); here the first in path order.
pub(super) fn cpu_sensors(sys: &Path) -> Vec<Sensor> {
    let Ok(dir) = std::fs::read_dir(sys.join("class/hwmon")) else {
        return Vec::new();
    };
    let mut folders: Vec<PathBuf> = dir
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("hwmon"))
        })
        .map(|e| e.path())
        .filter(|p| !p.is_file())
        .collect();
    folders.sort();
    let mut sensors: Vec<Sensor> = Vec::new();
    for folder in folders {
        let name = file_line(&folder.join("name")).unwrap_or_default();
        let model = file_line(&folder.join("device/model"));
        for id in channels(&folder) {
            let own = file_line(&folder.join(format!("temp{id}_label"))).unwrap_or_default();
            let label = match (own.is_empty(), &model) {
                (false, Some(m)) => format!("{name} {own} {m}"),
                (false, None) => format!("{name} {own}"),
                (true, Some(m)) => format!("{name} {m}"),
                (true, None) => format!("{name} temp{id}"),
            };
            if !is_cpu_label(&label) || sensors.iter().any(|s| s.label == label) {
                continue;
            }
            if let Some(input) = Kept::open(&folder.join(format!("temp{id}_input"))) {
                let mut s = Sensor {
                    label,
                    input,
                    last: None,
                };
                s.read();
                sensors.push(s);
            }
        }
    }
    sensors
}

/// The CPU reader's files and state.
pub(super) struct KernelCpu {
    stat: Option<Kept>,
    usage: Usage,
    /// When `/proc/stat` was last read (or tried).
    last_update: Option<Instant>,
    /// CPUs, as counted at the first good read (`sysinfo` fixed its list then).
    cpus: usize,
    /// CPU `i`'s `scaling_cur_freq`, where it has one.
    freq: Vec<Option<Kept>>,
    cpuinfo: Option<Kept>,
    pub(super) sensors: Vec<Sensor>,
    sys: PathBuf,
}

impl KernelCpu {
    /// Opens this machine's files and primes the usage (a difference between two reads).
    pub(super) fn new() -> KernelCpu {
        KernelCpu::under(Path::new("/proc"), Path::new("/sys"), Instant::now())
    }

    /// [`KernelCpu::new`] on the trees `proc` and `sys` (tests: a fixture), primed at `now`.
    pub(super) fn under(proc: &Path, sys: &Path, now: Instant) -> KernelCpu {
        let mut r = KernelCpu {
            stat: Kept::open(&proc.join("stat")),
            usage: Usage::default(),
            last_update: None,
            cpus: 0,
            freq: Vec::new(),
            cpuinfo: Kept::open(&proc.join("cpuinfo")),
            sensors: cpu_sensors(sys),
            sys: sys.to_path_buf(),
        };
        r.refresh_usage(now);
        r
    }

    /// Reads `/proc/stat` unless the last read was under [`MIN_USAGE_INTERVAL`] ago.
    fn refresh_usage(&mut self, now: Instant) {
        if self
            .last_update
            .is_some_and(|t| now.saturating_duration_since(t) < MIN_USAGE_INTERVAL)
        {
            return;
        }
        self.last_update = Some(now);
        let Some((text, _)) = self
            .stat
            .as_mut()
            .and_then(|f| f.read_until(STAT_READ, past_cpu_lines))
        else {
            return;
        };
        let Some((times, cpus)) = parse_stat(text) else {
            return;
        };
        self.usage.set(times);
        if self.cpus == 0 {
            self.cpus = cpus;
            self.freq = (0..cpus)
                .map(|i| {
                    let f = format!("devices/system/cpu/cpu{i}/cpufreq/scaling_cur_freq");
                    Kept::open(&self.sys.join(f))
                })
                .collect();
        }
    }

    /// The mean of the CPUs' frequencies in MHz (`None`: no CPU, or 0).
    fn mean_freq(&mut self) -> Option<u64> {
        let mut cpuinfo: Option<u64> = None;
        let mut sum = 0u64;
        for f in &mut self.freq {
            let khz = f
                .as_mut()
                .and_then(|f| f.read_once(64))
                .and_then(|t| std::str::from_utf8(t).ok())
                .and_then(|t| t.trim().split('\n').next()?.parse::<u64>().ok());
            sum += match khz {
                Some(khz) => khz / 1000,
                // One read of `/proc/cpuinfo` per sample at most: its first frequency line
                // is what `sysinfo` took for every CPU without `scaling_cur_freq`.
                None => *cpuinfo.get_or_insert_with(|| {
                    self.cpuinfo
                        .as_mut()
                        .and_then(|c| c.read_until(CPUINFO_READ, has_mhz_line))
                        .map_or(0, |(t, whole)| cpuinfo_mhz(t, whole))
                }),
            };
        }
        (self.cpus > 0)
            .then(|| sum / self.cpus as u64)
            .filter(|f| *f > 0)
    }

    /// A sample at `now`.
    pub(super) fn read_at(&mut self, now: Instant) -> Option<CpuReading> {
        self.refresh_usage(now);
        let freq_mhz = self.mean_freq();
        let temp_c = self
            .sensors
            .iter_mut()
            .filter_map(Sensor::read)
            .map(f64::from)
            .reduce(f64::max);
        Some(CpuReading {
            util_pct: (self.cpus > 0).then(|| f64::from(self.usage.percent)),
            freq_mhz,
            temp_c,
        })
    }

    /// A sample now.
    pub(super) fn read(&mut self) -> Option<CpuReading> {
        self.read_at(Instant::now())
    }

    /// CPUs counted.
    #[cfg(test)]
    pub(super) fn cpus(&self) -> usize {
        self.cpus
    }
}
