//! Live latency histograms of the cell in progress (TTFT and time per output token), filled as
//! each request ends, for `run --metrics-listen` (Prometheus histograms). One relaxed atomic
//! add per bucket and per sum, once per request: never per chunk.
//!
//! Nothing here feeds a figure: the row's TTFT and TPOT come from the records, by METHOD.md's
//! rules. These are the client's running view: a request's TTFT from its send to its first
//! content chunk, its TPOT from its first to its last chunk over its tokens after the first
//! (the records' own counts, which a deferred count may still correct).

use llmib_core::RequestRecord;
use std::sync::atomic::{AtomicU64, Ordering};

/// The histograms' upper bounds, seconds (Prometheus `le`), from a decode step to a queued
/// request's wait.
pub const LATENCY_BOUNDS_S: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// One latency's histogram: a count per bound and one past the last, the sum and the count.
#[derive(Debug, Default)]
pub struct LiveLatency {
    counts: [AtomicU64; LATENCY_BOUNDS_S.len() + 1],
    sum_ns: AtomicU64,
    count: AtomicU64,
}

/// A histogram read at once: cumulative counts per bound (`le`), then +Inf, the sum in seconds
/// and the count.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencySnapshot {
    /// (bound in seconds, observations at or below it), ascending, cumulative.
    pub buckets: Vec<(f64, u64)>,
    /// Sum of the observations, seconds.
    pub sum_s: f64,
    /// Observations (the +Inf bucket).
    pub count: u64,
}

impl LiveLatency {
    /// Adds one observation of `ns` nanoseconds.
    pub fn observe_ns(&self, ns: u64) {
        let s = ns as f64 / 1e9;
        let i = LATENCY_BOUNDS_S
            .iter()
            .position(|b| s <= *b)
            .unwrap_or(LATENCY_BOUNDS_S.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// The histogram as Prometheus reads it (cumulative buckets).
    pub fn snapshot(&self) -> LatencySnapshot {
        let mut below = 0;
        let buckets = LATENCY_BOUNDS_S
            .iter()
            .zip(&self.counts)
            .map(|(b, c)| {
                below += c.load(Ordering::Relaxed);
                (*b, below)
            })
            .collect();
        let count = below + self.counts[LATENCY_BOUNDS_S.len()].load(Ordering::Relaxed);
        LatencySnapshot {
            buckets,
            sum_s: self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
            count,
        }
    }
}

/// A cell's live TTFT and TPOT histograms.
#[derive(Debug, Default)]
pub struct LiveLatencies {
    /// Time to first token.
    pub ttft: LiveLatency,
    /// Time per output token after the first.
    pub tpot: LiveLatency,
}

impl LiveLatencies {
    /// Adds an ended request: its TTFT where it had a content chunk, its TPOT where it had two
    /// tokens or more. An errored request adds nothing (what it got was not served); one the
    /// window's end cancelled adds what it was served until then.
    pub fn observe(&self, r: &RequestRecord) {
        if r.is_error() {
            return;
        }
        if let Some(t) = r.ttft_ns() {
            self.ttft.observe_ns(t);
        }
        let tokens = r.tokens();
        if let (Some(first), Some(last), true) = (r.chunks.first(), r.chunks.last(), tokens >= 2) {
            self.tpot
                .observe_ns(last.t_ns.saturating_sub(first.t_ns) / (tokens - 1));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_fall_in_their_buckets_cumulatively() {
        let h = LiveLatency::default();
        for ns in [500_000, 1_000_000, 20_000_000, 40_000_000_000] {
            h.observe_ns(ns);
        }
        let s = h.snapshot();
        // 0.5 ms and exactly 1 ms are at or below 1 ms; 20 ms below 25 ms; 40 s past 30 s.
        assert_eq!(s.buckets[0], (0.001, 2));
        assert_eq!(s.buckets[3], (0.01, 2));
        assert_eq!(s.buckets[4], (0.025, 3));
        assert_eq!(s.buckets.last(), Some(&(30.0, 3)));
        assert_eq!(s.count, 4);
        assert!((s.sum_s - 40.0215).abs() < 1e-9, "{}", s.sum_s);
    }
}
