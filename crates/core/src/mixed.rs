//! Mixed prefill (`--mixed-prefill`): how long a long prompt freezes running decode streams,
//! and how much slower that prompt's own first token is than alone. The numbers a serving
//! engineer sets a chunked-prefill budget with (docs/method-notes.md, "Mixed prefill").
//!
//! A cell (P × N): N closed-loop decode streams at the stream context C run until they are
//! ready (the decode cell's readiness rule); the window opens; after `span_s` one fresh prompt
//! of P tokens is sent with `max_tokens = 1`; the window closes `span_s` after its first token.
//! Before the streams start, the same kind of prompt is sent alone on the idle server
//! (`standalone_repeats` times, each fresh): its TTFT is the standalone baseline.
//!
//! Everything here is pure: the plan of the cells (`crate::mixed_plan`) and the figures of one
//! cell from its records ([`mixed_figures`], [`mixed_result`]), on the cell's clock:
//! - decode tok/s **before** (window open → the injected send), **during** (send → its first
//!   token) and **after** (first token → window close): the streams' tokens by chunk arrival;
//! - each stream's **longest gap**: the longest time between two consecutive chunks of one of
//!   its requests whose span overlaps the during interval (the stall it saw), summarised across
//!   streams (p50, p99, max); beside it the **baseline gap**, every chunk-to-chunk gap that lies
//!   inside the before interval;
//! - the injected prompt's TTFT, the standalone TTFT (median) and their ratio.

use crate::cell::{CellResult, CellStatus, MixedFigures};
use crate::figures::Window;
use crate::mixed_plan::mixed_kv_needed;
use crate::plan::PlannedCell;
use crate::record::RequestRecord;
use crate::stats::Summary;
use crate::verdict::{ErrorTally, bare_result, prompt_check, tally_mismatch};

const NS_PER_MS: f64 = 1e6;
const NS_PER_S: f64 = 1e9;

/// The Over capacity row of a mixed cell at streams' context `c`, with what it would need.
pub fn mixed_over_capacity_result(
    cell: &PlannedCell,
    c: u64,
    max_output: u32,
    kv_capacity: u64,
) -> CellResult {
    let (n, p) = (cell.key.concurrency, cell.key.context_tokens);
    let needs = mixed_kv_needed(n, c, max_output, p);
    bare_result(
        cell,
        CellStatus::OverCapacity,
        Some(format!(
            "{n} × ({c} + {max_output}) + {p} + 1 = {needs} tokens exceeds the KV capacity of {kv_capacity}"
        )),
    )
}

/// The decode streams' context C of a planned run's mixed-prefill cells: the one asked for,
/// else the smallest planned decode context (as `crate::mixed_plan` chose it).
pub fn mixed_stream_context(plan: &crate::plan::Plan) -> Option<u64> {
    let s = plan.settings.mixed_prefill.as_ref()?;
    s.stream_context
        .or_else(|| plan.contexts.iter().find(|c| c.decode).map(|c| c.tokens))
}

/// One mixed-prefill cell's observations, on the cell's clock.
#[derive(Debug, Clone, Copy)]
pub struct MixedObservation<'a> {
    /// The decode streams' records.
    pub streams: &'a [RequestRecord],
    /// The window: opened once the streams were ready, closed `span_s` after the injected
    /// first token (or when the run stopped it).
    pub window: Window,
    /// The injected request.
    pub injected: &'a RequestRecord,
    /// The standalone sends' TTFTs, ms.
    pub standalone_ttft_ms: &'a [f64],
    /// The streams' context C.
    pub stream_context_tokens: u64,
    /// The injected prompt's built tokens P.
    pub prompt_tokens: u64,
}

/// Tokens of the streams' chunks that arrived in `(a, b]` per second of it (`None`: empty).
fn rate_in(streams: &[RequestRecord], a: u64, b: u64) -> Option<f64> {
    if b <= a {
        return None;
    }
    let tokens: u64 = streams
        .iter()
        .flat_map(|r| &r.chunks)
        .filter(|c| c.t_ns > a && c.t_ns <= b)
        .map(|c| u64::from(c.tokens))
        .sum();
    Some(tokens as f64 / ((b - a) as f64 / NS_PER_S))
}

/// Each stream's longest gap overlapping `(a, b)`, ms, and the gaps inside `[w0, a]`.
fn gaps(streams: &[RequestRecord], w0: u64, a: u64, b: u64) -> (Vec<f64>, Vec<f64>) {
    let mut longest: std::collections::BTreeMap<u32, f64> = Default::default();
    let mut baseline = Vec::new();
    for r in streams {
        for w in r.chunks.windows(2) {
            let (x, y) = (w[0].t_ns, w[1].t_ns);
            let ms = y.saturating_sub(x) as f64 / NS_PER_MS;
            if y > a && x < b {
                let e = longest.entry(r.stream).or_insert(0.0);
                *e = e.max(ms);
            }
            if x >= w0 && y <= a {
                baseline.push(ms);
            }
        }
    }
    (longest.into_values().collect(), baseline)
}

/// The figures of one mixed-prefill cell; `None` when the injected request has no first token
/// (its send and first token bound the during interval).
pub fn mixed_figures(o: MixedObservation<'_>) -> Option<MixedFigures> {
    let send = o.injected.sent_ns;
    let first = o.injected.first_token_ns()?;
    let (w0, w1) = (o.window.start_ns, o.window.end_ns);
    let secs = |a: u64, b: u64| b.saturating_sub(a) as f64 / NS_PER_S;
    let (mut longest, mut baseline) = gaps(o.streams, w0, send, first);
    let standalone = Summary::of(o.standalone_ttft_ms);
    let injected_ttft_ms = first.saturating_sub(send) as f64 / NS_PER_MS;
    Some(MixedFigures {
        stream_context_tokens: o.stream_context_tokens,
        prompt_tokens: o.prompt_tokens,
        before_s: secs(w0, send),
        during_s: secs(send, first),
        after_s: secs(first, w1),
        before_tok_per_s: rate_in(o.streams, w0, send),
        during_tok_per_s: rate_in(o.streams, send, first),
        after_tok_per_s: rate_in(o.streams, first, w1),
        longest_gap_ms: Summary::of_vec(&mut longest),
        baseline_gap_ms: Summary::of_vec(&mut baseline),
        injected_ttft_ms,
        ttft_slowdown: standalone
            .as_ref()
            .filter(|s| s.p50 > 0.0)
            .map(|s| injected_ttft_ms / s.p50),
        standalone_ttft_ms: standalone,
    })
}

/// How a mixed cell's window went, beside its records.
#[derive(Debug, Clone, Default)]
pub struct MixedJudgement {
    /// Errors before the window (warm-ups, standalone sends).
    pub errors: ErrorTally,
    /// The streams were not all running when the window opened (readiness timed out): the
    /// stall is measured over fewer streams, so the row is Requests queued.
    pub queued: bool,
    /// The prompt-length tolerance of the streams' context (0 for exact prompts).
    pub stream_tolerance: u64,
    /// The tolerance of the injected prompt's length.
    pub prompt_tolerance: u64,
}

/// The row of a mixed-prefill cell: Failed on any request error, a prompt whose length the
/// server counted otherwise, or an injected prompt without a first token; Requests queued
/// when the streams were not all running; else Valid.
pub fn mixed_result(
    cell: &PlannedCell,
    o: MixedObservation<'_>,
    judged: MixedJudgement,
) -> CellResult {
    let mut errors = judged.errors;
    errors.add_records(o.streams, "");
    errors.add_records(std::slice::from_ref(o.injected), "injected_");
    for (what, expected, tolerance, records) in [
        (
            "stream ",
            o.stream_context_tokens,
            judged.stream_tolerance,
            o.streams,
        ),
        (
            "injected ",
            o.prompt_tokens,
            judged.prompt_tolerance,
            std::slice::from_ref(o.injected),
        ),
    ] {
        let pc = prompt_check(expected, tolerance, records);
        tally_mismatch(&mut errors, &pc, what);
    }
    let figures = mixed_figures(o);
    if figures.is_none() && errors.by_kind.is_empty() {
        errors.add("no_first_token", 1, || {
            format!(
                "the injected prompt of {} tokens had no first token inside the window",
                o.prompt_tokens
            )
        });
    }
    let mut row = match (&figures, errors.by_kind.is_empty()) {
        (Some(_), true) if judged.queued => bare_result(
            cell,
            CellStatus::RequestsQueued,
            Some("the streams were not all running when the window opened".into()),
        ),
        (Some(_), true) => bare_result(cell, CellStatus::Valid, None),
        _ => bare_result(cell, CellStatus::Failed, None),
    };
    row.requests_sent = Some(o.streams.len() as u64 + 1);
    row.measured_s = Some(o.window.secs());
    if row.status == CellStatus::Failed {
        row.errors = errors.by_kind;
        row.first_error = errors.first;
        return row;
    }
    if let Some(f) = figures {
        // The row's common columns hold what they mean on every row; the stall's own
        // figures (tok/s before, during, after) are in `mixed` only, so no reader takes a
        // stalled window's throughput for a decode cell's.
        row.ttft_ms_p50 = Some(f.injected_ttft_ms);
        row.tbt_ms_p50 = f.baseline_gap_ms.as_ref().map(|s| s.p50);
        row.mixed = Some(Box::new(f));
    }
    row
}

#[cfg(test)]
#[path = "tests/mixed.rs"]
mod tests;
