//! The Load section (open-loop load, METHOD.md "Open-loop rate cells"): the rate cells and the
//! capacity rows of each context, as tables every exporter prints the same way. The charts are
//! in `load_chart` and `pareto`; this module only decides what a row says.
//!
//! A rate row reuses the contract's columns (total tok/s = output tok/s, per request tok/s =
//! per-user tok/s p50, TBT = ITL p50, measured = span) and carries the rest in `rate`; a
//! capacity row carries its search in `capacity`. Null prints as `—`, never 0.

use crate::model::Report;
use crate::model::{is_load, requested};
use crate::number::{self, NULL};
use crate::table::Table;
use llmib_core::{CellResult, Phase, Summary};

/// One context's open-loop rows.
#[derive(Debug, Clone)]
pub(crate) struct LoadContext<'a> {
    /// Exact prompt tokens.
    pub tokens: u64,
    /// Its label (`8K`).
    pub label: String,
    /// Its rate cells, ascending by requested rate.
    pub rates: Vec<&'a CellResult>,
    /// Its capacity rows, one per search the run made (request rates; session counts; session
    /// rates).
    pub capacities: Vec<&'a CellResult>,
}

impl Report {
    /// Whether the run has rate cells or capacity rows (the Load section is shown).
    pub(crate) fn has_load(&self) -> bool {
        self.cells.iter().any(is_load)
    }

    /// The open-loop rows by context, ascending.
    pub(crate) fn load_contexts(&self) -> Vec<LoadContext<'_>> {
        let mut out: Vec<LoadContext<'_>> = Vec::new();
        for c in self.cells.iter().filter(|c| is_load(c)) {
            let i = match out.iter().position(|l| l.tokens == c.context_tokens) {
                Some(i) => i,
                None => {
                    out.push(LoadContext {
                        tokens: c.context_tokens,
                        label: Report::context_label(c),
                        rates: Vec::new(),
                        capacities: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            match c.phase {
                Phase::Capacity => out[i].capacities.push(c),
                _ => out[i].rates.push(c),
            }
        }
        out.sort_by_key(|l| l.tokens);
        for l in &mut out {
            l.rates.sort_by_key(|c| c.key());
        }
        out
    }
}

/// A share as a percentage with one decimal (`96.7%`).
pub(crate) fn percent(v: f64) -> String {
    if v.is_finite() {
        format!("{}%", number::grouped(v * 100.0, 1))
    } else {
        NULL.to_string()
    }
}

/// Microseconds, whole (`1,250 µs`).
pub(crate) fn micros(v: f64) -> String {
    if v.is_finite() {
        format!("{} µs", number::grouped(v, 0))
    } else {
        NULL.to_string()
    }
}

/// A latency in ms as TTFT prints (`888 ms`, `3.4 ms`).
fn ms(s: Option<&Summary>, at: fn(&Summary) -> f64) -> String {
    s.map_or_else(|| NULL.to_string(), |s| number::ttft_ms(at(s)))
}

/// A figure that is `Some(None)` on a row of its phase when null, `None` on other rows.
pub(crate) fn flat<T>(v: Option<Option<T>>) -> Option<T> {
    v.flatten()
}

/// The achieved rate, with `(of X/s)` omitted: the table has the requested rate beside it.
pub(crate) fn achieved(c: &CellResult) -> String {
    number::or_null(flat(c.achieved_request_rate), number::req_rate)
}

/// Whether the achieved rate is off the requested one by more than 2 %.
pub(crate) fn off_pace(c: &CellResult) -> bool {
    match (c.request_rate, flat(c.achieved_request_rate)) {
        (Some(r), Some(a)) if r > 0.0 => ((a - r) / r).abs() > 0.02,
        _ => false,
    }
}

/// The rate-cell table's columns.
const RATE_COLS: [(&str, bool); 22] = [
    ("Context", false),
    ("Requested rate", true),
    ("Achieved rate", true),
    ("Sent", true),
    ("Completed", true),
    ("Failed", true),
    ("Output tok/s", true),
    ("Peak 1-s tok/s", true),
    ("TTFT p50", true),
    ("TTFT p99", true),
    ("TPOT p50", true),
    ("ITL p50", true),
    ("E2E p50", true),
    ("E2E p90", true),
    ("E2E p99", true),
    ("Queue p50", true),
    ("Pacing error p99", true),
    ("SLO attainment", true),
    ("Goodput req/s", true),
    ("Goodput tok/s", true),
    ("Status", false),
    ("Pacing warning", false),
];

/// The texts of one rate row, in [`RATE_COLS`] order.
fn rate_texts(c: &CellResult) -> Vec<String> {
    let f = c.rate.as_deref();
    let s = |pick: fn(&llmib_core::RateFigures) -> Option<&Summary>| f.and_then(pick);
    let count = |v: Option<u64>| number::or_null(v, number::count);
    vec![
        Report::context_label(c),
        requested(c),
        achieved(c),
        count(c.requests_sent),
        count(c.completed_requests),
        count(flat(c.failed_requests)),
        number::or_null(c.total_tok_per_s, number::rate),
        number::or_null(f.and_then(|f| f.peak_output_tok_per_s), number::rate),
        ms(s(|f| f.ttft_ms.as_ref()), |s| s.p50),
        ms(s(|f| f.ttft_ms.as_ref()), |s| s.p99),
        s(|f| f.tpot_ms.as_ref()).map_or_else(|| NULL.into(), |s| number::tbt_ms(s.p50)),
        s(|f| f.itl_ms.as_ref()).map_or_else(|| NULL.into(), |s| number::tbt_ms(s.p50)),
        ms(s(|f| f.e2e_ms.as_ref()), |s| s.p50),
        ms(s(|f| f.e2e_ms.as_ref()), |s| s.p90),
        ms(s(|f| f.e2e_ms.as_ref()), |s| s.p99),
        ms(s(|f| f.queue_ms.as_ref()), |s| s.p50),
        s(|f| f.pacing_error_us.as_ref()).map_or_else(|| NULL.into(), |s| micros(s.p99)),
        number::or_null(flat(c.slo_attainment), percent),
        number::or_null(flat(c.goodput_rps), number::req_rate),
        number::or_null(flat(c.goodput_tok_per_s), number::rate),
        c.status.label().to_string(),
        f.and_then(|f| f.pacing_warning.clone())
            .unwrap_or_else(|| NULL.to_string()),
    ]
}

/// The outcome of a capacity row's rate: `12.5/s`, `≥ 32/s` (every rate up to the ceiling held),
/// `no rate meets the SLO` (the figure is null), or the status of a row without a search
/// (`Not run`).
pub(crate) fn capacity_rate_text(c: &CellResult) -> String {
    let at_least = c.capacity.as_ref().is_some_and(|f| f.outcome == "at_least");
    let ge = if at_least { "≥ " } else { "" };
    // A session search's answer is in sessions or sessions per second, never requests.
    if let Some(s) = c.session.capacity_sessions {
        return s.map_or("no number of sessions meets the SLO".into(), |s| {
            format!("{ge}{s} sessions")
        });
    }
    if let Some(r) = c.session.capacity_session_rate {
        return r.map_or("no session rate meets the SLO".into(), |r| {
            format!("{ge}{} sessions", number::req_rate(r))
        });
    }
    match c.capacity_request_rate {
        Some(Some(r)) if at_least => format!("≥ {}", number::req_rate(r)),
        Some(Some(r)) => number::req_rate(r),
        Some(None) => "no rate meets the SLO".to_string(),
        None => c.status.label().to_string(),
    }
}

/// The capacity table's columns.
const CAPACITY_COLS: [(&str, bool); 9] = [
    ("Context", false),
    ("Max request rate", true),
    ("Max concurrency", true),
    ("Goodput at max rate", true),
    ("Goodput tok/s at max rate", true),
    ("SLO attainment there", true),
    ("Goodput at max concurrency", true),
    ("SLO", false),
    ("Measured points", true),
];

/// The texts of one capacity row, in [`CAPACITY_COLS`] order.
fn capacity_texts(c: &CellResult) -> Vec<String> {
    let f = c.capacity.as_deref();
    vec![
        Report::context_label(c),
        capacity_rate_text(c),
        number::or_null(flat(c.capacity_concurrency), |n| n.to_string()),
        number::or_null(flat(c.goodput_rps), number::req_rate),
        number::or_null(flat(c.goodput_tok_per_s), number::rate),
        number::or_null(flat(c.slo_attainment), percent),
        number::or_null(f.and_then(|f| f.concurrency_goodput_rps), number::req_rate),
        f.map_or_else(|| NULL.to_string(), |f| f.slo.clone()),
        number::or_null(f.map(|f| f.points.len() as u64), number::count),
    ]
}

impl Table {
    /// Every rate cell, by context then requested rate; `None` when the run has none.
    pub fn rates(report: &Report) -> Option<Table> {
        let rows = report
            .load_contexts()
            .into_iter()
            .flat_map(|l| l.rates)
            .map(|c| (c, rate_texts(c)))
            .collect();
        Table::of_texts(&RATE_COLS, rows)
    }

    /// Each context's capacity under the SLO; `None` when the run searched none.
    pub fn capacity(report: &Report) -> Option<Table> {
        let rows = report
            .load_contexts()
            .into_iter()
            .flat_map(|l| l.capacities)
            .map(|c| (c, capacity_texts(c)))
            .collect();
        Table::of_texts(&CAPACITY_COLS, rows)
    }
}

/// The rate cells whose client could not keep the schedule: `8K at 20/s: <warning>`.
pub(crate) fn pacing_warnings(report: &Report) -> Vec<String> {
    report
        .load_contexts()
        .iter()
        .flat_map(|l| l.rates.iter())
        .filter_map(|c| {
            let w = c.rate.as_ref()?.pacing_warning.as_ref()?;
            Some(format!(
                "{} at {} (achieved {}): {w}",
                Report::context_label(c),
                requested(c),
                achieved(c)
            ))
        })
        .collect()
}

/// The caption of the Load section, shared by the page and the Markdown.
pub(crate) const LOAD_CAPTION: &str = "Open-loop load: requests arrive at a request rate on a \
    seeded schedule, whatever is still running. Per context, the largest rate and the largest \
    closed-loop concurrency that hold the SLO; then every rate cell. Output tok/s is over the \
    span from the first send to the last end; per-user tok/s is 1 / TPOT.";
