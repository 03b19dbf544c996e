//! Burst / E2E cells: W warm-up requests, then R measured ones, at most N
//! in flight (slot i always sends stream i's prompt, so the prefix cache serves them as in
//! sustained decode). Every request runs to its end; nothing is cut. The row is built by
//! `llmib_core::burst`. The eval crate's long-answer task sends its closed batches through the
//! same function.

use crate::cells::context::MatrixRun;
use crate::cells::inputs::CellInputs;
use crate::cells::outlet::{finished_records, report_errors};
use crate::cells::window::into_records;
use crate::progress::events::{ProgressEvent, Stage};
use crate::server::engine::Engine;
use crate::wire::stream::{Measured, RequestSpec, measure};
use llmib_core::{CellResult, PlannedCell, burst_result, failed_result, interrupted_result};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A burst slot's task died (a panic or an abort): a fault, never a short burst reported as
/// whole.
#[derive(Debug, thiserror::Error)]
#[error("a burst slot died: {0}")]
pub struct BurstError(#[source] tokio::task::JoinError);

/// Sends `total` requests over `requests.len()` slots (N in flight), each slot taking the next
/// request as soon as its last one ends. Records share one clock, started here; they come back
/// slot by slot. Once `cancel` fires no slot takes another request, so fewer come back (the
/// caller checks it). An error when a slot's task died (a fault, never a short burst reported
/// as whole). Also the long-answer task's batch (`llmib-eval`): N copies of one request, N
/// slots, N in all.
pub async fn send_burst(
    engine: &Arc<Engine>,
    requests: &[RequestSpec],
    total: u32,
    cancel: &CancellationToken,
) -> Result<Vec<Measured>, BurstError> {
    let origin = Instant::now();
    let next = Arc::new(AtomicU32::new(0));
    let mut slots = Vec::with_capacity(requests.len());
    for (i, spec) in requests.iter().enumerate() {
        let (engine, spec, next, cancel) =
            (engine.clone(), spec.clone(), next.clone(), cancel.clone());
        slots.push(tokio::spawn(async move {
            let mut out = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total && !cancel.is_cancelled() {
                out.push(measure(engine.client(), &spec, i as u32, origin, &cancel, None).await);
            }
            out
        }));
    }
    let mut all = Vec::with_capacity(total as usize);
    for s in slots {
        all.extend(s.await.map_err(BurstError)?);
    }
    Ok(all)
}

/// A Burst / E2E cell, given its prompts warmed and its N requests: W warm-up requests, then R
/// measured ones with at most N in flight, counted and judged by `llmib_core::burst`.
pub(crate) async fn burst_cell(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    inputs: CellInputs,
) -> CellResult {
    let Some(b) = m.plan.settings.burst else {
        return failed_result(
            cell,
            "internal",
            "a burst cell without burst settings".into(),
        );
    };
    let n = cell.key.concurrency;
    let (requests, mut warmup_errors) = (inputs.requests, inputs.warmup_errors);
    let warmups = b.warmup_requests(n);
    if warmups > 0 {
        m.progress.event(ProgressEvent::Phase(Stage::BurstWarmUp));
        match send_burst(&m.engine, &requests, warmups, &m.cancel).await {
            Ok(w) => warmup_errors.add_records(&into_records(w), "warmup_"),
            Err(e) => return failed_result(cell, "fault", e.to_string()),
        }
    }
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    m.progress.event(ProgressEvent::Phase(Stage::Burst));
    let mut measured = match send_burst(&m.engine, &requests, b.requests(n), &m.cancel).await {
        Ok(v) => v,
        Err(e) => return failed_result(cell, "fault", e.to_string()),
    };
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    crate::server::counting::count_tokens(&m.engine, &mut measured).await;
    let records = finished_records(m, cell.key, measured);
    report_errors(m, Stage::Burst, &records);
    // Slot i sends stream `inputs.streams[i]`'s request; with images, the prompt check reads
    // each count less its image tokens.
    let streams = &inputs.streams;
    let (checked, images) = crate::cells::images::checked(
        m,
        cell.key.context_tokens,
        &records,
        &|_| inputs.prompt_tokens,
        &|r| streams.get(r.stream as usize).copied(),
    );
    let mut row = burst_result(
        cell,
        &checked,
        warmup_errors,
        inputs.prompt_tokens,
        m.prompt_tolerance(cell),
    );
    // Slot i sends stream `inputs.streams[i]`'s request, and its records say slot i.
    crate::cells::lora::cell_figures(m, &mut row, &records, &inputs.streams);
    crate::cells::structured::set(m, &mut row, &records);
    crate::cells::images::finish(&mut row, &records, images);
    row
}
