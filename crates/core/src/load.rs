//! Open-loop load (METHOD.md, "Open-loop rate cells"): what a run is asked to measure (rates,
//! arrivals, the SLO, the capacity search), and the rows of rate cells and capacity rows as
//! pure functions of what the driver observed. The driver only sends on the schedule and
//! gathers records; every figure, status and warning is decided here.
//!
//! Refinements of METHOD.md (docs/method-notes.md says the same):
//! - A request still running at the drain limit is cut and counts as failed (it met nothing).
//! - Output tokens are every content token the cell's requests received, failed ones included
//!   (the server did that work); goodput counts only the tokens of requests that met the SLO.
//! - The client is late when its pacing error p99 passes the larger of 1 ms and a tenth of the
//!   schedule's mean gap, or when it sent below 95 % of the schedule's own rate without a cap
//!   to wait for: the row carries a warning with the achieved rate.

/// Rates spanning the synchronous rate and the saturation throughput: `points` of them,
/// evenly spaced from the first to the second (both included). `None` when either is not a
/// positive rate; where saturation is not above the synchronous rate (a server that runs one
/// request at a time), the span is from half the synchronous rate to it, so the sweep still
/// shows the knee.
pub fn auto_rates(synchronous: f64, saturation: f64, points: u32) -> Option<Vec<f64>> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if !ok(synchronous) || !ok(saturation) || points < 2 {
        return None;
    }
    let (lo, hi) = if saturation > synchronous {
        (synchronous, saturation)
    } else {
        (synchronous / 2.0, synchronous)
    };
    let step = (hi - lo) / f64::from(points - 1);
    Some(
        (0..points)
            .map(|i| round_rate(lo + step * f64::from(i)))
            .collect(),
    )
}

/// A rate as the tool measures and prints it: four significant digits (and never below
/// 0.001/s), so a key, a table and the schedule agree on the rate.
pub fn round_rate(rate: f64) -> f64 {
    if !rate.is_finite() || rate <= 0.0 {
        return rate;
    }
    let digits = 3 - rate.log10().floor() as i32;
    let scale = 10f64.powi(digits.clamp(-6, 3));
    ((rate * scale).round() / scale).max(0.001)
}

#[cfg(test)]
#[path = "tests/load.rs"]
mod tests;

mod rows;
pub(crate) use rows::input_throughputs;
pub use rows::{
    CapacityInputs, RateObservation, capacity_concurrency, capacity_result, closed_loop_slo,
    peak_output_tok_per_s, rate_result, rate_result_at,
};

/// The planned cell of an open-loop cell at `rate` requests per second.
pub fn rate_cell(context_tokens: u64, label: &str, rate: f64) -> crate::plan::PlannedCell {
    crate::plan::PlannedCell {
        key: crate::cell::CellKey {
            phase: crate::cell::Phase::Rate,
            context_tokens,
            concurrency: 0,
            rate_mrps: crate::cell::rate_mrps(rate),
        },
        label: label.to_string(),
        over_capacity: false,
    }
}

/// The planned cell of a context's capacity row.
pub fn capacity_cell(context_tokens: u64, label: &str) -> crate::plan::PlannedCell {
    crate::plan::PlannedCell {
        key: crate::cell::CellKey {
            phase: crate::cell::Phase::Capacity,
            context_tokens,
            concurrency: 0,
            rate_mrps: 0,
        },
        label: label.to_string(),
        over_capacity: false,
    }
}

/// Most requests one rate cell may schedule (rate × duration): beyond it the prompts alone
/// would take longer to build than any window is worth.
pub const MAX_REQUESTS_PER_CELL: usize = 50_000;

/// Most prompt tokens one rate cell may hold (every request has its own prompt, built before
/// the schedule starts): about half a gigabyte of text.
pub const MAX_PROMPT_TOKENS_PER_CELL: u64 = 128 << 20;

/// Why a rate cell's schedule cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// The arrival schedule cannot be drawn (a rate or duration that is not positive).
    #[error(transparent)]
    Arrival(#[from] crate::arrival::ArrivalError),
    /// No request falls in the window.
    #[error("no request falls in a {duration_s} s window at {rate}/s: lengthen --duration")]
    Empty {
        /// Requests per second.
        rate: f64,
        /// The window, seconds.
        duration_s: f64,
    },
    /// More requests than [`MAX_REQUESTS_PER_CELL`].
    #[error(
        "{n} requests at {rate}/s over {duration_s} s is more than {MAX_REQUESTS_PER_CELL} per cell: shorten --duration"
    )]
    TooMany {
        /// Requests scheduled.
        n: usize,
        /// Requests per second.
        rate: f64,
        /// The window, seconds.
        duration_s: f64,
    },
    /// Prompts that would hold more than [`MAX_PROMPT_TOKENS_PER_CELL`] in memory.
    #[error(
        "{n} prompts of {context_tokens} tokens at {rate}/s over {duration_s} s would hold more than {} M prompt tokens in memory: lower the rate or shorten --duration",
        MAX_PROMPT_TOKENS_PER_CELL >> 20
    )]
    TooMuchMemory {
        /// Requests scheduled.
        n: usize,
        /// Prompt tokens of each.
        context_tokens: u64,
        /// Requests per second.
        rate: f64,
        /// The window, seconds.
        duration_s: f64,
    },
}

/// A rate cell's due instants (`crate::schedule`), or why the cell cannot run: no request
/// falls in the window, more requests than [`MAX_REQUESTS_PER_CELL`], or prompts of
/// `context_tokens` that would hold more than [`MAX_PROMPT_TOKENS_PER_CELL`] in memory.
pub fn cell_schedule(
    arrival: crate::arrival::ArrivalPattern,
    rate: f64,
    duration_s: f64,
    seed: u64,
    context_tokens: u64,
) -> Result<Vec<u64>, ScheduleError> {
    let due = crate::arrival::schedule(arrival, rate, duration_s, seed)?;
    let n = due.len();
    if n == 0 {
        return Err(ScheduleError::Empty { rate, duration_s });
    }
    if n > MAX_REQUESTS_PER_CELL {
        return Err(ScheduleError::TooMany {
            n,
            rate,
            duration_s,
        });
    }
    if (n as u64).saturating_mul(context_tokens) > MAX_PROMPT_TOKENS_PER_CELL {
        return Err(ScheduleError::TooMuchMemory {
            n,
            context_tokens,
            rate,
            duration_s,
        });
    }
    Ok(due)
}

/// The request rate of a closed batch (the synchronous rate with one request at a time, the
/// saturation throughput with many): requests the server finished / (last end − first send).
/// `None` when none finished or there is no span.
pub fn closed_batch_rate(records: &[crate::record::RequestRecord]) -> Option<f64> {
    let finished = records
        .iter()
        .filter(|r| matches!(r.outcome, crate::record::Outcome::Finished { .. }))
        .count();
    let first = records.iter().map(|r| r.sent_ns).min()?;
    let last = records.iter().map(|r| r.end_ns).max()?;
    let span = last.saturating_sub(first) as f64 / 1e9;
    (finished > 0 && span > 0.0).then(|| finished as f64 / span)
}
