//! One decode cell (C × N) as the driver runs it: its prompts built and warmed, its window
//! measured (`crate::cells::window`), its tokens counted and its row judged by
//! `llmib_core::decode_result`. On a shard (`run --shard I/N`) the cell runs this shard's
//! streams (i ≡ I mod N) in the timetable's slot: the streams start at the slot's origin and
//! the window opens at its fixed instant, whatever this shard's readiness judge said by then
//! (the row records whether it was ready).

use crate::cells::context::MatrixRun;
use crate::cells::inputs::{CellFailure, CellInputs};
use crate::cells::outlet::finished_records;
use crate::cells::shard::instant_at;
use crate::cells::window::{WindowAt, WindowRun, WindowSpec, run_window};
use crate::progress::events::{ProgressEvent, Stage};
use crate::progress::live::LiveWindow;
use crate::wire::stream::{Counting, RequestSpec};
use llmib_core::{
    CellKey, CellResult, CellStatus, CountReport, DecodeObservation, PlannedCell, RequestRecord,
    Slot, bare_result, decode_result_at, duration_from_secs, interrupted_result,
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
        stream_ids: None,
        at: None,
        busy_timeout: duration_from_secs(s.busy_timeout_s),
        inject: None,
    }
}

/// A decode cell's window, its live state announced first: the closed loop run, its tokens
/// counted, its records finished. `None`: the run was interrupted.
pub(crate) async fn measure_window(
    m: &MatrixRun<'_>,
    key: CellKey,
    requests: &[RequestSpec],
    spec: WindowSpec,
) -> Option<(WindowRun, Vec<RequestRecord>, CountReport)> {
    let live = Arc::new(LiveWindow::new(
        spec.concurrency,
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
    let count = crate::server::counting::count_tokens(&m.engine, &mut w.records).await;
    let records = finished_records(m, key, std::mem::take(&mut w.records));
    Some((w, records, count))
}

/// The window of an N-stream cell run on `streams`, with the context's warm TTFT; on a
/// shard, at the slot's instants (`Err`: this shard is too late for them, and why).
fn cell_window(
    m: &MatrixRun<'_>,
    n: u32,
    warm_ttft_ms: Option<f64>,
    streams: &[u32],
    slot: Option<&Slot>,
) -> Result<WindowSpec, CellFailure> {
    let mut spec = window_spec(m, n);
    spec.warm_ttft = warm_ttft_ms.map(|ms| duration_from_secs(ms / 1000.0));
    if let Some(slot) = slot {
        // Ready now: the shard's row records how long its preparation took.
        if let Some(late) = m.shard.as_deref().and_then(|s| s.late_for(slot, true)) {
            return Err(CellFailure {
                kind: "shard_late",
                message: late,
            });
        }
        spec.stream_ids = Some(streams.to_vec().into());
        spec.at = Some(WindowAt {
            origin: instant_at(slot.origin_unix_ns),
            open: instant_at(slot.open_unix_ns),
        });
    }
    Ok(spec)
}

/// A decode cell, given its streams' prompts warmed and their requests: its window measured, its row judged by
/// `llmib_core::verdict` (the N = 1 row gives the context its warm TTFT baseline). On a
/// shard, `slot` is the cell's place in the timetable.
pub(crate) async fn decode_cell(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    inputs: CellInputs,
    warm_ttft_ms: &mut HashMap<u64, f64>,
    slot: Option<Slot>,
) -> CellResult {
    let s = &m.plan.settings;
    let k = cell.key;
    if m.cancel.is_cancelled() {
        return bare_result(cell, CellStatus::NotRun, None);
    }
    let streams = &inputs.streams;
    let warm = warm_ttft_ms.get(&k.context_tokens).copied();
    // The window judges the streams this process runs (a shard's share of N).
    let n = streams.len() as u32;
    let spec = match cell_window(m, n, warm, streams, slot.as_ref()) {
        Ok(spec) => spec,
        Err(late) => return late.row(cell),
    };
    let Some((mut w, records, count)) = measure_window(m, k, &inputs.requests, spec).await else {
        return interrupted_result(cell);
    };
    // On a shard the server's counter counts every shard's tokens: the shard row keeps it
    // for the merge instead of checking its own share against it.
    let server_tokens = w.server_generation_tokens.take();
    // With images, the prompt check reads each count less its image tokens.
    let text = inputs.prompt_tokens;
    let (checked, images) =
        crate::cells::images::checked(m, k.context_tokens, &records, &|_| text, &|r| {
            Some(r.stream)
        });
    let mut row = decode_result_at(
        cell,
        DecodeObservation {
            records: &checked,
            window: w.window,
            readiness: w.readiness,
            queue: w.queue.clone(),
            queued_samples: w.queued_samples,
            readiness_timeout_s: s.readiness_timeout_s,
            warm_ttft_ms: warm_ttft_ms.get(&k.context_tokens).copied(),
            warmup_errors: inputs.warmup_errors,
            expected_prompt_tokens: inputs.prompt_tokens,
            prompt_tolerance: m.prompt_tolerance(cell),
            count,
            nominal_source: m.engine.counting().nominal_source(),
            server_generation_tokens: server_tokens.filter(|_| slot.is_none()),
            fault: w.fault.take(),
            client_delay_ms: std::mem::take(&mut w.client_delay_ms),
            kernel_stamps: w.kernel_stamps,
            speculative: w.speculative.take(),
        },
        &m.plan.settings.percentiles,
    );
    if let Some(slo) = s.load.as_ref().and_then(|l| l.slo.as_ref())
        && row.status.has_figures()
    {
        row.slo = Some(llmib_core::closed_loop_slo(slo, &records, w.window));
    }
    crate::cells::lora::window_figures(m, &mut row, &records, w.window);
    crate::cells::structured::set(m, &mut row, &records);
    crate::cells::images::finish(&mut row, &records, images);
    if let (Some(shard), Some(slot)) = (&m.shard, &slot) {
        let mut c = shard.cell(slot, w.origin_unix_ns, streams.len() as u64);
        c.open_ns = Some(slot.open_unix_ns.saturating_sub(slot.origin_unix_ns));
        c.close_ns = Some(slot.close_unix_ns.saturating_sub(slot.origin_unix_ns));
        (c.ready_at_open, c.server_generation_tokens) = (w.ready_at_open, server_tokens);
        row.shard = Some(c);
    }
    if k.concurrency == 1
        && row.status == CellStatus::Valid
        && let Some(t) = &row.ttft_ms
    {
        warm_ttft_ms.entry(k.context_tokens).or_insert(t.p50);
    }
    row
}
