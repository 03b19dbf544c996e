//! One mixed-prefill cell (P into N streams; `llmib_core::mixed`), the gathering half: the
//! streams' prompts at the streams' context C (built and warmed as a decode cell's, so they
//! are the context's own and cached), P's standalone sends on the idle server, then the
//! decode window with P injected `span` after it opens (`crate::cells::inject`); the row is
//! judged by `llmib_core::mixed_result`.
//!
//! Every P prompt is fresh (a stream index no other request of the run uses), so the prefix
//! cache serves none of them: the standalone and the injected prefill are the same cold work.

use crate::cells::context::MatrixRun;
use crate::cells::decode_cell::{measure_window, window_spec};
use crate::cells::inputs::{CellFailure, CellInputs, Wanted, prepare};
use crate::cells::outlet::finished_records;
use crate::cells::state::RunState;
use crate::cells::window::Injection;
use crate::progress::events::{ProgressEvent, Stage};
use crate::wire::stream::{RequestSpec, measure};
use llmib_core::{
    CellResult, ErrorTally, MixedJudgement, MixedObservation, Outcome, PlannedCell, ReadinessBy,
    duration_from_secs, interrupted_result, mixed_result,
};
use tokio::time::Instant;

/// Stream indices of the P prompts start here (decode cells use 0..N, open load from 2^30,
/// sessions count down from 3,000,000, standalone prefills from `u32::MAX`).
const MIXED_STREAMS: u32 = 1_000_000;

/// The P requests of one cell: the standalone ones, then the injected one, each fresh.
struct PromptRequests {
    standalone: Vec<RequestSpec>,
    injected: RequestSpec,
    /// P as built.
    tokens: u64,
}

/// Builds the cell's P prompts: `repeats` standalone and one injected, on stream indices
/// that belong to this cell alone (its place among the plan's mixed cells).
async fn prompt_requests(
    m: &MatrixRun<'_>,
    st: &mut RunState,
    cell: &PlannedCell,
    repeats: u32,
) -> Result<PromptRequests, CellFailure> {
    let index = m
        .plan
        .cells
        .iter()
        .filter(|c| c.key.phase == llmib_core::Phase::MixedPrefill)
        .position(|c| c.key == cell.key)
        .unwrap_or(0) as u32;
    let base = MIXED_STREAMS.saturating_add(index.saturating_mul(repeats + 1));
    let (p, n) = (cell.key.context_tokens, cell.key.concurrency);
    let mut specs = Vec::new();
    let mut tokens = p;
    for j in 0..=repeats {
        let prompt = st
            .builder
            .build(p, base + j)
            .await
            .map_err(|e| CellFailure::from(&e))?;
        tokens = prompt.tokens;
        // N streams run beside the injected one.
        let lim = m.limits(prompt.tokens, n + 1);
        let spec = m
            .engine
            .stream_request(&m.model, prompt.input, 1, true, lim)
            .map_err(|e| CellFailure::request_body(e.to_string()))?;
        specs.push(spec);
    }
    let injected = specs
        .pop()
        .ok_or_else(|| CellFailure::request_body("no prompt".into()))?;
    Ok(PromptRequests {
        standalone: specs,
        injected,
        tokens,
    })
}

/// P alone on the idle server, `standalone` times in a row: the TTFTs (ms) of those that had
/// a first token; the errors of those that failed go to `errors`.
async fn standalone(m: &MatrixRun<'_>, specs: &[RequestSpec], errors: &mut ErrorTally) -> Vec<f64> {
    let mut ttft = Vec::new();
    for (j, spec) in specs.iter().enumerate() {
        if m.cancel.is_cancelled() {
            break;
        }
        let r = measure(
            m.engine.client(),
            spec,
            j as u32,
            Instant::now(),
            &m.cancel,
            None,
        )
        .await
        .record;
        if let Outcome::Error { .. } = r.outcome {
            errors.add_records(std::slice::from_ref(&r), "standalone_");
        } else if let Some(t) = r.ttft_ns() {
            ttft.push(t as f64 / 1e6);
        }
    }
    ttft
}

/// One mixed-prefill cell: P's standalone TTFT, then N streams at C with P injected.
pub(crate) async fn mixed_cell(
    m: &MatrixRun<'_>,
    st: &mut RunState,
    cell: &PlannedCell,
) -> CellResult {
    let (Some(mp), Some(c)) = (
        m.plan.settings.mixed_prefill.as_ref(),
        llmib_core::mixed_stream_context(m.plan),
    ) else {
        return CellFailure::request_body("a mixed-prefill cell without its settings".into())
            .row(cell);
    };
    let n = cell.key.concurrency;
    let inputs = {
        let at = st.at_context(c);
        prepare(
            m,
            at.builder,
            at.prompts,
            Wanted::warmed(m, (0..n).collect()),
        )
        .await
    };
    let mut inputs = match inputs {
        Ok(i) => i,
        Err(e) => return e.row(cell),
    };
    let p = match prompt_requests(m, st, cell, mp.standalone_repeats.max(1)).await {
        Ok(p) => p,
        Err(e) => return e.row(cell),
    };
    m.progress.event(ProgressEvent::Phase(Stage::Prefill));
    let mut errors = std::mem::take(&mut inputs.warmup_errors);
    let standalone_ttft = standalone(m, &p.standalone, &mut errors).await;
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    injected_window(m, cell, inputs, p, (standalone_ttft, errors)).await
}

/// The cell's window with P injected, and its row.
async fn injected_window(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    inputs: CellInputs,
    p: PromptRequests,
    (standalone_ttft, mut errors): (Vec<f64>, ErrorTally),
) -> CellResult {
    let s = &m.plan.settings;
    let span_s = s.mixed_prefill.as_ref().map_or(2.0, |mp| mp.span_s);
    let span = duration_from_secs(span_s);
    let mut spec = window_spec(m, cell.key.concurrency);
    // Long enough for the injected prompt's first token at its own limit; the injection
    // closes the window `span` after it.
    let limit_s = s.first_token_limit_s(p.tokens, cell.key.concurrency + 1);
    spec.duration = duration_from_secs(2.0 * span_s + limit_s);
    spec.until_stable = None;
    spec.inject = Some(Injection {
        request: p.injected,
        before: span,
        after: span,
    });
    let Some((mut w, records, _count)) = measure_window(m, cell.key, &inputs.requests, spec).await
    else {
        return interrupted_result(cell);
    };
    let Some(injected) = w.injected.take() else {
        let why = w.fault.take().unwrap_or_else(|| "no window opened".into());
        return llmib_core::failed_result(cell, "fault", why);
    };
    let injected = finished_records(m, cell.key, vec![injected]);
    let Some(injected) = injected.first() else {
        return interrupted_result(cell);
    };
    if let Some(f) = w.fault.take() {
        errors.add("fault", 1, || f);
    }
    let c = inputs.prompt_tokens;
    let obs = MixedObservation {
        streams: &records,
        window: w.window,
        injected,
        standalone_ttft_ms: &standalone_ttft,
        stream_context_tokens: c,
        prompt_tokens: p.tokens,
    };
    let judged = MixedJudgement {
        errors,
        queued: matches!(
            w.readiness,
            ReadinessBy::Timeout | ReadinessBy::QueueStalled
        ),
        stream_tolerance: llmib_core::prompt_tolerance(s.token_targeting, c),
        prompt_tolerance: m.prompt_tolerance(cell),
    };
    mixed_result(cell, obs, judged)
}
