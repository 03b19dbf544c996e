//! The steady-state sub-window of a Burst / E2E cell (docs/method-notes.md, "Burst steady
//! state"): a burst's throughput includes its ramp and its tail by definition, so beside it the
//! row gives the figures of the span in which at least 95 % of the cell's N requests were in
//! flight, as vLLM's own client reports them (vllm-bench's `steady_state` block, computed the
//! same way from the requests' send and end instants).
//!
//! The window: the finished requests' sends (+1) and ends (−1) in time order, an end first at
//! a tie; it opens at the first send that brings the count in flight up to
//! `max(1, ⌈0.95 · N⌉)` and closes at the last end that takes it below that, `[open, close)`.
//! Its figures: output tok/s (the tokens of the chunks that arrived inside it, by chunk
//! arrival as every figure here), input tok/s (the server-counted prompt tokens of the requests
//! sent inside it), requests/s (requests that ended inside it), and the TTFT and TPOT (METHOD.md's,
//! last token − first token over output tokens − 1) of the requests sent inside it. A window
//! shorter than 10 s or a tenth of the burst carries a note (vllm-bench's default warning).

use serde::{Deserialize, Serialize};

use crate::record::{Outcome, RequestRecord};
use crate::slo::RequestSample;
use crate::stats::Summary;

/// The share of N that must be in flight (vllm-bench's `--steady-state-threshold` default).
pub const STEADY_THRESHOLD: f64 = 0.95;
/// A window shorter than this (and a tenth of the burst) is noted as short, seconds.
pub const STEADY_MIN_WINDOW_S: f64 = 10.0;

const NS_PER_S: f64 = 1e9;

/// A burst's steady-state window and its figures (`burst.steady` in a row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyFigures {
    /// Window open, seconds from the burst's first send.
    pub start_s: f64,
    /// Window close, seconds from the burst's first send.
    pub end_s: f64,
    /// `end_s − start_s`.
    pub duration_s: f64,
    /// Requests in flight that open it: `max(1, ⌈0.95 · N⌉)`.
    pub threshold_requests: u32,
    /// The most requests in flight at once.
    pub peak_in_flight: u32,
    /// Requests sent inside the window.
    pub requests_started: u64,
    /// Requests that ended inside the window.
    pub requests_completed: u64,
    /// `requests_completed / duration_s`.
    pub requests_per_s: f64,
    /// Output tokens of the chunks that arrived inside the window / `duration_s`.
    pub output_tok_per_s: f64,
    /// Server-counted prompt tokens of the requests sent inside the window / `duration_s`;
    /// `None` where the server counted none of them.
    pub input_tok_per_s: Option<f64>,
    /// TTFT of the requests sent inside the window, ms.
    pub ttft_ms: Option<Summary>,
    /// TPOT of the requests sent inside the window (two tokens or more), ms.
    pub tpot_ms: Option<Summary>,
    /// Why the window may not be representative (shorter than 10 s, or than a tenth of the
    /// burst).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The window `[open, close)` and the peak, ns; `None` when the count never reached the
/// threshold.
fn window(done: &[&RequestRecord], threshold: u32) -> Option<(u64, u64, u32)> {
    // (instant, +1 send / −1 end); an end sorts before a send at the same instant.
    let mut events: Vec<(u64, i8)> = done
        .iter()
        .flat_map(|r| [(r.sent_ns, 1i8), (r.end_ns, -1i8)])
        .collect();
    events.sort_unstable();
    let (mut in_flight, mut peak) = (0u32, 0u32);
    let (mut open, mut close) = (None, None);
    for (t, d) in events {
        let before = in_flight;
        if d > 0 {
            in_flight += 1;
            peak = peak.max(in_flight);
            if before < threshold && in_flight >= threshold && open.is_none() {
                open = Some(t);
            }
        } else {
            in_flight = in_flight.saturating_sub(1);
            if before >= threshold && in_flight < threshold {
                close = Some(t);
            }
        }
    }
    Some((open?, close?, peak))
}

/// The steady-state figures of a burst of at most `n` requests in flight; `None` when no
/// window opened or nothing was sent or ended inside it.
pub fn steady_figures(records: &[RequestRecord], n: u32) -> Option<SteadyFigures> {
    let done: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Finished { .. }))
        .collect();
    let threshold = ((STEADY_THRESHOLD * f64::from(n)).ceil() as u32).max(1);
    let (open, close, peak) = window(&done, threshold)?;
    let inside = |t: u64| t >= open && t < close;
    let started: Vec<&&RequestRecord> = done.iter().filter(|r| inside(r.sent_ns)).collect();
    let completed = done.iter().filter(|r| inside(r.end_ns)).count() as u64;
    if started.is_empty() && completed == 0 {
        return None;
    }
    let secs = close.saturating_sub(open) as f64 / NS_PER_S;
    let per_s = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
    let tokens: u64 = done
        .iter()
        .flat_map(|r| &r.chunks)
        .filter(|c| inside(c.t_ns))
        .map(|c| u64::from(c.tokens))
        .sum();
    let prompts: Vec<u64> = started
        .iter()
        .filter_map(|r| r.prompt_tokens_reported)
        .collect();
    // TTFT and TPOT as every per-request figure here (`RequestSample`, METHOD.md's).
    let samples: Vec<RequestSample> = started
        .iter()
        .map(|r| RequestSample::of_record(r))
        .collect();
    let mut ttft: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.ttft_s)
        .map(|t| t * 1e3)
        .collect();
    let mut tpot: Vec<f64> = samples
        .iter()
        .filter_map(|s| s.tpot_s)
        .map(|t| t * 1e3)
        .collect();
    let first_send = done.iter().map(|r| r.sent_ns).min().unwrap_or(open);
    let last_end = done.iter().map(|r| r.end_ns).max().unwrap_or(close);
    let wall_s = last_end.saturating_sub(first_send) as f64 / NS_PER_S;
    let note = (secs < STEADY_MIN_WINDOW_S.max(0.1 * wall_s)).then(|| {
        format!(
            "the steady window is {secs:.1} s ({:.0} % of the burst): it may not be representative",
            100.0 * secs / wall_s.max(1e-9)
        )
    });
    Some(SteadyFigures {
        start_s: open.saturating_sub(first_send) as f64 / NS_PER_S,
        end_s: close.saturating_sub(first_send) as f64 / NS_PER_S,
        duration_s: secs,
        threshold_requests: threshold,
        peak_in_flight: peak,
        requests_started: started.len() as u64,
        requests_completed: completed,
        requests_per_s: per_s(completed as f64),
        output_tok_per_s: per_s(tokens as f64),
        input_tok_per_s: (!prompts.is_empty()).then(|| per_s(prompts.iter().sum::<u64>() as f64)),
        ttft_ms: Summary::of_vec(&mut ttft),
        tpot_ms: Summary::of_vec(&mut tpot),
        note,
    })
}

#[cfg(test)]
#[path = "tests/burst_steady.rs"]
mod tests;
