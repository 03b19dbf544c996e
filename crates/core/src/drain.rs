//! The drain barrier: a decode cell starts and ends with a look at the server's gauges.
//!
//! At the start the server must be idle (running and waiting both zero): a server still busy
//! with another client's requests, or with the last cell's leftovers, would make the cell
//! measure a higher concurrency than it says. The cell waits up to `--busy-timeout` for that
//! and then is **Failed: server busy** rather than measured. At the end the barrier records what
//! was still running once the window's streams were closed (and, on SGLang, aborted), so a
//! reader sees what the next cell's barrier had to wait for.

use serde::{Deserialize, Serialize};

/// The default `--busy-timeout`, seconds: long enough for an engine to free the KV of a
/// window's closed streams (an abort takes a scheduler step or two per request), short enough
/// that a server shared with another client fails its cells quickly.
pub const DEFAULT_BUSY_TIMEOUT_S: f64 = 30.0;

/// Error kind of a cell that never started because the server stayed busy.
pub const SERVER_BUSY_KIND: &str = "server_busy";

/// What the gauges said at one barrier.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BarrierCheck {
    /// Seconds spent waiting at the barrier (0 at the end barrier).
    pub waited_s: f64,
    /// The running gauge at the last read (`None`: not read).
    pub running: Option<f64>,
    /// The waiting gauge at the last read.
    pub waiting: Option<f64>,
    /// Whether the server was idle at the last read.
    pub idle: bool,
}

/// Whether gauges read `running` and `waiting` show an idle server. A gauge the engine does
/// not export counts as zero only when the other one was read (vLLM without a waiting gauge,
/// say); with neither there is no observation, and `None` says so.
pub fn gauges_idle(running: Option<f64>, waiting: Option<f64>) -> Option<bool> {
    if running.is_none() && waiting.is_none() {
        return None;
    }
    Some(running.unwrap_or(0.0) <= 0.0 && waiting.unwrap_or(0.0) <= 0.0)
}

impl BarrierCheck {
    /// One reading of the gauges, before any wait; `None` where neither was read
    /// ([`gauges_idle`]).
    pub fn read(running: Option<f64>, waiting: Option<f64>) -> Option<BarrierCheck> {
        Some(BarrierCheck {
            waited_s: 0.0,
            running,
            waiting,
            idle: gauges_idle(running, waiting)?,
        })
    }

    /// The start barrier's verdict: `Some(reason)` when the cell must fail as server busy.
    pub fn busy_reason(&self) -> Option<String> {
        if self.idle {
            return None;
        }
        let n = |v: Option<f64>| v.map_or_else(|| "?".to_string(), |v| format!("{v:.0}"));
        Some(format!(
            "server busy: {} running and {} waiting requests after {:.0} s of waiting for an idle \
             server (another client's load, or the last cell's leftovers); the cell was not \
             measured: stop the other load or raise --busy-timeout",
            n(self.running),
            n(self.waiting),
            self.waited_s
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_needs_both_gauges_at_zero_where_read() {
        assert_eq!(gauges_idle(Some(0.0), Some(0.0)), Some(true));
        assert_eq!(gauges_idle(Some(3.0), Some(0.0)), Some(false));
        assert_eq!(gauges_idle(Some(0.0), Some(1.0)), Some(false));
        assert_eq!(gauges_idle(Some(0.0), None), Some(true));
        assert_eq!(gauges_idle(None, Some(2.0)), Some(false));
        assert_eq!(gauges_idle(None, None), None);
        assert_eq!(BarrierCheck::read(None, None), None);
        let busy = BarrierCheck::read(Some(3.0), None).expect("read");
        assert_eq!(
            (busy.waited_s, busy.running, busy.idle),
            (0.0, Some(3.0), false)
        );
    }

    #[test]
    fn a_busy_start_says_what_ran_and_what_to_do() {
        let busy = BarrierCheck {
            waited_s: 30.02,
            running: Some(3.0),
            waiting: Some(0.0),
            idle: false,
        };
        let r = busy.busy_reason().expect("busy");
        assert!(
            r.starts_with("server busy: 3 running and 0 waiting requests after 30 s"),
            "{r}"
        );
        assert!(r.contains("--busy-timeout"));
        let idle = BarrierCheck { idle: true, ..busy };
        assert_eq!(idle.busy_reason(), None);
    }
}
