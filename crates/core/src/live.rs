//! What a live view computes while a run works: the token rate of the last seconds from a
//! cumulative counter, and the time left from the plan. Pure functions over observations the
//! driver publishes, so the dashboard shows numbers with known-answer tests, never guesses.

use crate::cell::Phase;
use crate::plan::PlannedCell;
use std::collections::{HashMap, VecDeque};

/// Token rate over a trailing span, from samples of a cumulative token counter taken by the
/// view (a few per second). The counter counts content tokens as the client receives them;
/// this is a live indication, not the cell's figure (that is computed from the records).
#[derive(Debug, Clone)]
pub struct RateMeter {
    span_s: f64,
    samples: VecDeque<(f64, u64)>,
}

impl RateMeter {
    /// A meter over the last `span_s` seconds.
    pub fn new(span_s: f64) -> Self {
        RateMeter {
            span_s: span_s.max(0.1),
            samples: VecDeque::new(),
        }
    }

    /// Adds a sample: `total` tokens counted at `t_s` (seconds on any monotonic clock). A
    /// counter that goes back (a new window) restarts the meter.
    pub fn push(&mut self, t_s: f64, total: u64) {
        if self
            .samples
            .back()
            .is_some_and(|&(t, n)| total < n || t_s < t)
        {
            self.samples.clear();
        }
        self.samples.push_back((t_s, total));
        // Keep one sample older than the span, so the rate covers the whole span.
        while self.samples.len() > 2 && self.samples[1].0 <= t_s - self.span_s {
            self.samples.pop_front();
        }
    }

    /// Tokens per second between the oldest kept sample and the newest; `None` before two
    /// samples at least 100 ms apart.
    pub fn rate(&self) -> Option<f64> {
        let (&(t0, n0), &(t1, n1)) = (self.samples.front()?, self.samples.back()?);
        let dt = t1 - t0;
        (dt >= 0.1).then(|| (n1 - n0) as f64 / dt)
    }

    /// Forgets every sample (a new cell).
    pub fn reset(&mut self) {
        self.samples.clear();
    }
}

/// What the time left is estimated from.
#[derive(Debug, Clone, PartialEq)]
pub struct EtaInputs {
    /// The decode window, seconds.
    pub window_s: f64,
    /// Prefill throughput measured so far (the latest prefill cell), prompt tokens per second;
    /// `None` before the first prefill: [`DEFAULT_PREFILL_TOK_PER_S`] is assumed.
    pub prefill_tok_per_s: Option<f64>,
    /// Mean seconds a decode cell took beyond its window and its cold prefills (readiness,
    /// counting, request set-up), measured so far; `None`: [`DEFAULT_CELL_OVERHEAD_S`].
    pub decode_overhead_s: Option<f64>,
}

/// Prefill rate assumed before any was measured (a modest single-GPU figure): the first ETA is
/// a rough one, corrected after the first prefill cell.
pub const DEFAULT_PREFILL_TOK_PER_S: f64 = 5_000.0;
/// Overhead of a decode cell assumed before any was measured.
pub const DEFAULT_CELL_OVERHEAD_S: f64 = 2.0;

/// Seconds left to measure `remaining` cells (in run order; Over capacity cells cost nothing).
/// `warmed` holds, per context, how many distinct prompts the server has already prefilled
/// (the concurrency of the last decode cell there, or 1 after the prefill cell): only prompts
/// above it cost a cold prefill. A prefill cell costs its context at the prefill rate; a
/// decode cell costs its cold prefills, the window and the overhead.
pub fn eta_s(remaining: &[PlannedCell], warmed: &HashMap<u64, u32>, inp: &EtaInputs) -> f64 {
    let rate = inp
        .prefill_tok_per_s
        .filter(|r| r.is_finite() && *r > 0.0)
        .unwrap_or(DEFAULT_PREFILL_TOK_PER_S);
    let overhead = inp
        .decode_overhead_s
        .filter(|o| o.is_finite() && *o >= 0.0)
        .unwrap_or(DEFAULT_CELL_OVERHEAD_S);
    let mut warmed = warmed.clone();
    let mut total = 0.0;
    for c in remaining.iter().filter(|c| !c.over_capacity) {
        let ctx = c.key.context_tokens as f64;
        let seen = warmed.entry(c.key.context_tokens).or_insert(0);
        match c.key.phase {
            Phase::Prefill => {
                total += ctx / rate;
                *seen = (*seen).max(1);
            }
            // A burst's length is not known before it runs: a window's worth is the guess.
            Phase::Decode | Phase::Burst => {
                let cold = c.key.concurrency.saturating_sub(*seen);
                total += f64::from(cold) * ctx / rate + inp.window_s + overhead;
                *seen = (*seen).max(c.key.concurrency);
            }
            // A rate cell is its window plus the drain; a capacity row measures nothing.
            Phase::Rate => total += inp.window_s + overhead,
            // A session cell prefills every session's history cold, then runs its window.
            Phase::Session => {
                total += f64::from(c.key.concurrency) * ctx / rate + inp.window_s + overhead;
            }
            // Standalone prefills of P, the injected one, and the spans around it (the
            // streams' prompts were warmed by the context's decode cells).
            Phase::MixedPrefill => {
                let sends = f64::from(crate::mixed_plan::DEFAULT_STANDALONE_REPEATS + 1);
                total +=
                    sends * ctx / rate + 2.0 * crate::mixed_plan::DEFAULT_MIXED_SPAN_S + overhead;
            }
            Phase::Capacity => {}
        }
    }
    total
}

/// `1h02m`, `4m05s`, `12s`: a duration for a footer.
pub fn short_duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "–".into();
    }
    let s = s.round() as u64;
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, sec) => format!("{sec}s"),
        (0, m, sec) => format!("{m}m{sec:02}s"),
        (h, m, _) => format!("{h}h{m:02}m"),
    }
}

#[cfg(test)]
#[path = "tests/live.rs"]
mod tests;
