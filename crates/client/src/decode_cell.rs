//! One decode cell (C × N) as the driver runs it: its prompts built and warmed, its window
//! measured (`crate::window`), its tokens counted and its row judged by
//! `llmib_core::decode_result`. On a shard (`run --shard I/N`) the cell runs this shard's
//! streams (i ≡ I mod N) in the timetable's slot: the streams start at the slot's origin and
//! the window opens at its fixed instant, whatever this shard's readiness judge said by then
//! (the row records whether it was ready).

use crate::driver::{
    ContextPrompts, MatrixRun, ensure_prompts, finished_records, prompt_tolerance, requests_for,
    warm_cold_prompts,
};
use crate::live::LiveWindow;
use crate::progress::{ProgressEvent, Stage};
use crate::prompt::PromptBuilder;
use crate::stream::{Counting, RequestSpec};
use crate::window::{WindowRun, WindowSpec, run_window};
use llmib_core::{
    CellKey, CellResult, CellStatus, CountReport, DecodeObservation, PlannedCell, RequestRecord,
    bare_result, decode_result, duration_from_secs, failed_result, interrupted_result,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A decode window's settings at N = `n`.
pub(crate) fn window_spec(m: &MatrixRun<'_>, n: u32) -> WindowSpec {
    let s = &m.plan.settings;
    WindowSpec {
        concurrency: n,
        // From run.json when resuming: clamped, never a panic on a hand-edited file.
        duration: duration_from_secs(s.duration_s),
        readiness_timeout: duration_from_secs(s.readiness_timeout_s),
        gauge_interval: Duration::from_millis(s.gauge_interval_ms.clamp(10, 60_000)),
        serial_server: s.serial_server,
        warm_ttft: None,
        until_stable: s.until_stable.map(|t| t.fraction),
        respect_eos: s.respect_eos,
    }
}

/// A decode cell's window, its live state announced first: the closed loop run, its tokens
/// counted, its records finished. `None`: the run was interrupted.
async fn measure_window(
    m: &MatrixRun<'_>,
    key: CellKey,
    requests: &[RequestSpec],
    warm_ttft_ms: Option<f64>,
) -> Option<(WindowRun, Vec<RequestRecord>, CountReport)> {
    let mut spec = window_spec(m, key.concurrency);
    spec.warm_ttft = warm_ttft_ms.map(|ms| duration_from_secs(ms / 1000.0));
    let live = Arc::new(LiveWindow::new(
        key.concurrency,
        spec.duration,
        m.engine.counting() == Counting::UsagePerChunk,
    ));
    m.progress.event(ProgressEvent::Phase(Stage::Window));
    m.progress.event(ProgressEvent::WindowLive(live.clone()));
    let mut w = run_window(
        m.engine.clone(),
        requests,
        &spec,
        &m.cancel,
        live,
        m.progress,
    )
    .await;
    if w.interrupted {
        return None;
    }
    m.progress.event(ProgressEvent::Window {
        origin: w.origin,
        window: w.window,
    });
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    let count = crate::counting::count_tokens(&m.engine, &mut w.records).await;
    let records = finished_records(m, key, std::mem::take(&mut w.records));
    Some((w, records, count))
}

/// A decode cell: its prompts built and warmed, its window measured, its row judged by
/// `llmib_core::verdict` (the N = 1 row gives the context its warm TTFT baseline).
pub(crate) async fn decode_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    cell: &PlannedCell,
    warm_ttft_ms: &mut HashMap<u64, f64>,
) -> CellResult {
    let s = &m.plan.settings;
    let k = cell.key;
    let n = k.concurrency;
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    if let Err((kind, e)) = ensure_prompts(builder, cp, n).await {
        return failed_result(cell, kind, e);
    }
    let warmup_errors = match warm_cold_prompts(m, cp, n).await {
        Ok(e) => e,
        Err(e) => return failed_result(cell, "request_body", e),
    };
    if m.cancel.is_cancelled() {
        return bare_result(cell, CellStatus::NotRun, None);
    }
    let requests: Vec<RequestSpec> = match requests_for(m, cp, 0..n, s.max_output, false) {
        Ok(v) => v.into_iter().map(|(_, r)| r).collect(),
        Err(e) => return failed_result(cell, "request_body", e),
    };
    let warm = warm_ttft_ms.get(&k.context_tokens).copied();
    let Some((mut w, records, count)) = measure_window(m, k, &requests, warm).await else {
        return interrupted_result(cell);
    };
    let row = decode_result(
        cell,
        DecodeObservation {
            records: records.as_slice(),
            window: w.window,
            readiness: w.readiness,
            queue: w.queue,
            queued_samples: w.queued_samples,
            readiness_timeout_s: s.readiness_timeout_s,
            warm_ttft_ms: warm_ttft_ms.get(&k.context_tokens).copied(),
            warmup_errors,
            expected_prompt_tokens: cp.prompts.get(&0).map_or(k.context_tokens, |p| p.tokens),
            prompt_tolerance: prompt_tolerance(m, cell),
            count,
            nominal_source: m.engine.counting().nominal_source(),
            server_generation_tokens: w.server_generation_tokens,
            fault: w.fault,
            client_delay_ms: std::mem::take(&mut w.client_delay_ms),
            speculative: w.speculative.take(),
        },
    );
    let mut row = row;
    if let Some(slo) = s.load.as_ref().and_then(|l| l.slo.as_ref())
        && row.status.has_figures()
    {
        row.slo = Some(llmib_core::closed_loop_slo(slo, &records, w.window));
    }
    if n == 1
        && row.status == CellStatus::Valid
        && let Some(t) = &row.ttft_ms
    {
        warm_ttft_ms.entry(k.context_tokens).or_insert(t.p50);
    }
    row
}
