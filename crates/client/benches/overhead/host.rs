//! What the benchmark reads of the host: a shared realtime/monotonic clock pair, CPU time of
//! a process, its memory, and the load average.

use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A monotonic `Instant` and the realtime clock read at (nearly) the same moment: the pair
/// with the shortest bracket out of many tries. Both processes read the same kernel clocks, so
/// mapping their instants through their own pair puts them on one time line; the mapping's
/// error is half the bracket (typically tens of ns). NTP slewing moves both clocks alike; only
/// a clock step during the run would show, as a constant offset.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClockPair {
    instant: Instant,
    unix_ns: i128,
}

impl ClockPair {
    pub(crate) fn now() -> ClockPair {
        let mut best: Option<(Duration, ClockPair)> = None;
        for _ in 0..1000 {
            let a = Instant::now();
            let unix_ns = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128);
            let b = Instant::now();
            let gap = b - a;
            if best.as_ref().is_none_or(|(g, _)| gap < *g) {
                let instant = a + gap / 2;
                best = Some((gap, ClockPair { instant, unix_ns }));
            }
        }
        best.map_or(
            ClockPair {
                instant: Instant::now(),
                unix_ns: 0,
            },
            |(_, p)| p,
        )
    }

    /// `t` in ns since the Unix epoch.
    pub(crate) fn unix_ns(&self, t: Instant) -> i128 {
        if t >= self.instant {
            self.unix_ns + (t - self.instant).as_nanos() as i128
        } else {
            self.unix_ns - (self.instant - t).as_nanos() as i128
        }
    }
}

/// User + system CPU seconds of a process (all its threads, live and exited).
pub(crate) fn cpu_seconds(pid: &str, ticks_per_s: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which may contain spaces: state is field 3, utime 14,
    // stime 15.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / ticks_per_s)
}

pub(crate) fn ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// A `kB` line of `/proc/self/status` (`VmRSS`, `VmHWM`).
pub(crate) fn status_kb(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}
