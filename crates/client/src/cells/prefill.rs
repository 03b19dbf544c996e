//! The prefill cell of a context: one cold prefill (or `--prefill-repeats` R of them, each
//! with a prompt of its own so none is served from the prefix cache), timed by the client and,
//! where the engine exports prefill counters, by the server (`--prefill-metric`). Its inputs
//! are built before the first request is sent, so building a prompt is never between two
//! measured prefills.

use crate::cells::context::MatrixRun;
use crate::cells::inputs::{CellFailure, CellInputs, Wanted, prepare};
use crate::cells::state::AtContext;
use crate::progress::events::{ProgressEvent, Stage};
use crate::wire::stream::{RequestSpec, measure};
use llmib_core::server_prefill_rate;
use llmib_core::{
    CellResult, CellStatus, Outcome, PlannedCell, PrefillMetric, RequestRecord, interrupted_result,
    prefill_result, prefill_series_result,
};
use std::time::Duration;
use tokio::time::Instant;

/// A prefill cell's inputs: stream 0's request (the context's first prompt, which the decode
/// cells reuse) and one request per further repeat, each with a cold prompt of its own.
pub(crate) struct PrefillInputs {
    first: CellInputs,
    repeats: Vec<RequestSpec>,
}

/// Builds a prefill cell's inputs. The repeats' prompts take stream indices no decode cell
/// uses (counting down from `u32::MAX`).
pub(crate) async fn prefill_inputs(
    m: &MatrixRun<'_>,
    at: &mut AtContext<'_>,
    cell: &PlannedCell,
) -> Result<PrefillInputs, CellFailure> {
    let want = Wanted {
        streams: vec![0],
        max_tokens: 1,
        deferred: true,
        warm: false,
        stage: Stage::Prompt,
    };
    let first = prepare(m, at.builder, at.prompts, want).await?;
    let mut repeats = Vec::new();
    for r in 1..m.plan.settings.prefill_repeats.max(1) {
        let stream = u32::MAX - r;
        let prompt = at
            .builder
            .build(cell.key.context_tokens, stream)
            .await
            .map_err(|e| CellFailure::from(&e))?;
        let lim = m.limits(prompt.tokens, 1);
        let context = cell.key.context_tokens;
        let spec =
            crate::cells::images::request(m, &m.model, prompt.input, 1, true, lim, context, stream)
                .map_err(|e| CellFailure::request_body(e.to_string()))?;
        repeats.push(spec);
    }
    Ok(PrefillInputs { first, repeats })
}

/// The prefill cell: its first cold prefill, then the repeats; the row by
/// `llmib_core::prefill_result` (one) or `prefill_series_result` (the median of several).
pub(crate) async fn prefill_cell(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    inputs: PrefillInputs,
) -> CellResult {
    let expected = inputs.first.prompt_tokens;
    let Some(spec) = inputs.first.requests.first() else {
        return CellFailure::request_body("no prompt".into()).row(cell);
    };
    m.progress.event(ProgressEvent::Phase(Stage::Prefill));
    let (record, server_rate) = timed_prefill(m, spec, 0).await;
    if server_rate.is_none() && m.plan.settings.prefill_metric == PrefillMetric::Server {
        m.progress.event(ProgressEvent::Note(format!(
            "prefill {}: the server's prefill rate is not available (its metrics export no prefill counters, or they did not move)",
            cell.label
        )));
    }
    let tolerance = m.prompt_tolerance(cell);
    if inputs.repeats.is_empty() || matches!(record.outcome, Outcome::Cancelled) {
        let mut row = judged(m, cell, std::slice::from_ref(&record), expected, tolerance);
        if row.status == CellStatus::Valid {
            row.server_prompt_tok_per_s = server_rate;
        }
        return row;
    }
    let mut records = vec![record];
    let mut server_rates: Vec<f64> = server_rate.into_iter().collect();
    for (r, spec) in (1..).zip(&inputs.repeats) {
        if m.cancel.is_cancelled() {
            return interrupted_result(cell);
        }
        let (record, server_rate) = timed_prefill(m, spec, r).await;
        records.push(record);
        server_rates.extend(server_rate);
    }
    let mut row = judged(m, cell, &records, expected, tolerance);
    if row.status == CellStatus::Valid {
        // The server's rate of the same cold prefills, median like the client's.
        row.server_prompt_tok_per_s = llmib_core::Summary::of_vec(&mut server_rates).map(|s| s.p50);
    }
    row
}

/// The prefill row of `records` (one: `prefill_result`; several: `prefill_series_result`),
/// with images the prompt check reading each count less its image tokens. Record i is the
/// request of stream 0 (i = 0) or `u32::MAX − i` (a repeat, as `prefill_inputs` numbers them).
fn judged(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    records: &[RequestRecord],
    expected: u64,
    tolerance: u64,
) -> CellResult {
    let stream = |r: &RequestRecord| {
        Some(if r.stream == 0 {
            0
        } else {
            u32::MAX - r.stream
        })
    };
    let context = cell.key.context_tokens;
    let (checked, images) =
        crate::cells::images::checked(m, context, records, &|_| expected, &stream);
    let mut row = match &checked[..] {
        [one] => prefill_result(cell, one, expected, tolerance),
        all => prefill_series_result(cell, all, expected, tolerance),
    };
    crate::cells::images::finish(&mut row, records, images);
    row
}

/// One timed prefill request (`index` in the cell), with the server's own prefill rate from
/// its counters read around it where `--prefill-metric` asks for it and the engine has them.
async fn timed_prefill(
    m: &MatrixRun<'_>,
    spec: &RequestSpec,
    index: u32,
) -> (RequestRecord, Option<f64>) {
    let before = if m.plan.settings.prefill_metric != PrefillMetric::Client {
        prefill_counters(m).await
    } else {
        None
    };
    let meas = measure(
        m.engine.client(),
        spec,
        index,
        Instant::now(),
        &m.cancel,
        None,
    )
    .await;
    let rate = match before {
        Some(b) => server_rate_after(m, b).await,
        None => None,
    };
    (meas.record, rate)
}

/// The server's cumulative (prompt tokens, prefill seconds), where it exports both.
async fn prefill_counters(m: &MatrixRun<'_>) -> Option<(f64, f64)> {
    let g = m.engine.gauges().await.ok()?;
    g.prompt_tokens_total.zip(g.prompt_seconds_total)
}

/// The server's prefill rate since `before`. llama.cpp adds a request to its counters when its
/// slot is released, just after the stream ends: one more read 100 ms later covers that.
async fn server_rate_after(m: &MatrixRun<'_>, before: (f64, f64)) -> Option<f64> {
    for attempt in 0..2 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if let Some(r) = prefill_counters(m)
            .await
            .and_then(|after| server_prefill_rate(before, after))
        {
            return Some(r);
        }
    }
    None
}
