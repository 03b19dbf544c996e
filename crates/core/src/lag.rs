//! The client's own lateness during a window, and what it means for the figures.
//!
//! A chunk is stamped when the client's task reads it, not when it reached the socket. When the
//! client's process is short of CPU (a loaded host, a server on the same cores, too many
//! streams for the client's threads) a woken stream waits for its turn, and its stamp is late
//! by that wait. Rates over many tokens (total and per-request tok/s) barely move, since the
//! error is one wait at each end of a long span; a single time between tokens moves by the whole
//! difference of two waits, and its median can shift by a large part of that. So the client
//! measures its own scheduling delay through the window (a probe that yields and times how long
//! it waits to run again) and says so when that delay is large against the TBT it measured.

use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// The scheduling-delay samples of one window, summarised, and the verdict on them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientLag {
    /// The client's scheduling delay, ms: how long a task that was ready waited to run.
    pub delay_ms: Summary,
    /// Why the cell's time-between-token figures may carry the client's lateness (`None`: the
    /// delay was small against them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// The share of the TBT median above which the client's p90 delay is worth a warning: when one
/// stamp in ten is late by a tenth of a gap or more, the gaps on either side of it move by as
/// much, and the TBT tail (and, on a noisy host, the median by a part of it) with them. Bursts
/// of chunks from one server step are read one after another, so some delay is normal at high
/// concurrency; a tenth of a gap is where it starts to show in the figures.
pub const WARN_SHARE_OF_TBT: f64 = 0.10;

/// Below this p90 delay (ms) no warning is given whatever the TBT: a sub-millisecond wait is
/// below what a TBT is read to.
pub const WARN_FLOOR_MS: f64 = 0.5;

/// Summarises `samples_ms` (the probe's delays) and judges them against the cell's TBT median;
/// `None` without samples.
pub fn client_lag(samples_ms: &mut Vec<f64>, tbt_p50_ms: Option<f64>) -> Option<ClientLag> {
    let delay_ms = Summary::of_vec(samples_ms)?;
    let warning = lag_warning(delay_ms.p90, tbt_p50_ms);
    Some(ClientLag { delay_ms, warning })
}

/// The warning for a p90 scheduling delay of `p90_ms` against a TBT median of `tbt_p50_ms`:
/// given when the delay passes both [`WARN_FLOOR_MS`] and [`WARN_SHARE_OF_TBT`] of the TBT (a
/// cell without a TBT is judged by the floor alone).
pub fn lag_warning(p90_ms: f64, tbt_p50_ms: Option<f64>) -> Option<String> {
    let tbt = tbt_p50_ms.filter(|t| t.is_finite() && *t > 0.0);
    let limit = tbt.map_or(WARN_FLOOR_MS, |t| {
        (t * WARN_SHARE_OF_TBT).max(WARN_FLOOR_MS)
    });
    if !p90_ms.is_finite() || p90_ms <= limit {
        return None;
    }
    let against = match tbt {
        Some(t) => format!(
            " against a TBT median of {t:.2} ms ({:.0} %)",
            p90_ms / t * 100.0
        ),
        None => String::new(),
    };
    Some(format!(
        "the client ran late: one ready task in ten waited {p90_ms:.2} ms or more (p90) for its turn{against}, \
         so its time-between-token figures carry that error (rates over whole requests much less); \
         give the client more CPU (fewer other jobs, or run it on another host)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_delays_against_the_tbt_give_no_warning() {
        // 2 ms against 24 ms is 8.3 %: under the 10 % share.
        assert_eq!(lag_warning(2.0, Some(24.0)), None);
        // Against 4 ms the floor of 0.5 ms decides (10 % would be 0.4 ms).
        assert_eq!(lag_warning(0.45, Some(4.0)), None);
        assert_eq!(lag_warning(0.45, None), None);
    }

    #[test]
    fn large_delays_warn_and_say_by_how_much() {
        let w = lag_warning(3.6, Some(24.0)).expect("a warning");
        assert!(w.contains("3.60 ms or more (p90)"), "{w}");
        assert!(w.contains("24.00 ms (15 %)"), "{w}");
        assert!(
            lag_warning(0.6, Some(4.0)).is_some(),
            "over the floor and the share"
        );
        assert!(lag_warning(0.6, None).is_some());
        assert_eq!(lag_warning(f64::NAN, Some(5.0)), None);
    }

    #[test]
    fn the_summary_keeps_the_distribution_and_judges_its_p90() {
        // 85 short waits and 15 of 9 ms: the p90 is 9 ms, 37 % of a 24 ms gap.
        let mut v: Vec<f64> = (0..100).map(|i| if i < 85 { 0.1 } else { 9.0 }).collect();
        let l = client_lag(&mut v, Some(24.0)).expect("samples");
        assert_eq!(l.delay_ms.n, 100);
        assert!((l.delay_ms.p50 - 0.1).abs() < 1e-9);
        assert!((l.delay_ms.p90 - 9.0).abs() < 1e-9, "{:?}", l.delay_ms);
        assert!(l.warning.is_some());
        // 95 short waits: the p90 is short, the 9 ms tail alone is no warning.
        let mut v: Vec<f64> = (0..100).map(|i| if i < 95 { 0.1 } else { 9.0 }).collect();
        assert_eq!(
            client_lag(&mut v, Some(24.0)).expect("samples").warning,
            None
        );
        assert_eq!(client_lag(&mut Vec::new(), Some(24.0)), None);
    }
}
