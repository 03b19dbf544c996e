//! The matrix's cells in plan order (prefill scout, then decode cells with N ascending, per
//! context), each row saved as soon as it is known; a failed cell asks whether the server is
//! gone. Each cell is given its inputs once (`crate::cells::inputs`: its prompts, warmed, and
//! its requests) and returns its row (`prefill`, `decode_cell`, `burst`), which is saved here
//! (`outlet`). On a shard every measured cell takes its slot of the timetable, in plan order,
//! so all shards agree on each cell's instants.

use crate::cells::burst::burst_cell;
use crate::cells::context::{DriverError, MatrixEnd, MatrixRun};
use crate::cells::decode_cell::decode_cell;
use crate::cells::inputs::{Wanted, prepare};
use crate::cells::outlet::save;
use crate::cells::prefill::{prefill_cell, prefill_inputs};
use crate::cells::shard::{
    NO_STREAMS, PREFILL_ON_SHARD_0, ShardRun, instant_at, mine, sleep_until_precise, unix_now_ns,
};
use crate::cells::skip::SKIPPED;
use crate::cells::state::{AtContext, RunState};
use crate::cells::telemetry::CellRecorder;
use crate::progress::events::ProgressEvent;
use llmib_core::{
    CellResult, CellStatus, MatrixSlotSettings, Phase, PlannedCell, Slot, SlotKind, bare_result,
    failed_result, interrupted_result, now_rfc3339, over_capacity_result,
};
use tokio::time::Instant;

/// Runs the matrix's planned cells in order (`crate::cells::run` runs the open-load sections after
/// them); returns how the matrix ended.
pub(crate) async fn run_cells(
    m: &MatrixRun<'_>,
    st: &mut RunState,
    started: Instant,
) -> Result<MatrixEnd, DriverError> {
    let mut end = MatrixEnd::Completed;
    let total = m.plan.cells.len();
    let mut recent: Vec<CellResult> = Vec::new();

    for (index, cell) in m.plan.cells.iter().enumerate() {
        if m.done.contains(&cell.key) {
            continue;
        }
        // Over capacity is a prediction, true whether or not the run goes on (unless the user
        // asked to measure such cells anyway).
        if !m.plan.measures(cell) {
            let (reason, row) = over_capacity_row(m, cell);
            m.progress.event(ProgressEvent::Skipped {
                cell: cell.clone(),
                reason,
            });
            save(m, row)?;
            continue;
        }
        if end == MatrixEnd::Completed {
            end = m.stop_reason(started);
        }
        if end != MatrixEnd::Completed {
            save(
                m,
                bare_result(cell, CellStatus::NotRun, Some(end.not_run_reason())),
            )?;
            continue;
        }
        m.progress.event(ProgressEvent::CellStarted {
            index,
            total,
            cell: cell.clone(),
        });
        let mut row = measure_cell(m, st, cell).await;
        if row.status == CellStatus::NotRun && m.cancel.is_cancelled() {
            end = MatrixEnd::Interrupted;
            row.status_reason = Some(end.not_run_reason());
        }
        let failed = row.status == CellStatus::Failed;
        recent.push(row.clone());
        if recent.len() > 4 {
            recent.remove(0);
        }
        save(m, row)?;
        if failed && let Some(gone) = server_gone(m, &recent).await {
            end = gone;
        }
    }
    Ok(end)
}

/// A cell predicted Over capacity: what the run prints of it (what it needs, what the server
/// has) and its row.
fn over_capacity_row(m: &MatrixRun<'_>, cell: &PlannedCell) -> (String, CellResult) {
    let max_output = m.plan.settings.max_output;
    let kv = m.plan.kv_capacity_tokens.unwrap_or(0);
    let k = cell.key;
    if let (Phase::MixedPrefill, Some(c)) = (k.phase, llmib_core::mixed_stream_context(m.plan)) {
        let row = llmib_core::mixed_over_capacity_result(cell, c, max_output, kv);
        return (row.status_reason.clone().unwrap_or_default(), row);
    }
    let needs = llmib_core::kv_tokens_needed(k.concurrency, k.context_tokens, max_output);
    let reason = format!("over KV capacity (needs {needs} tokens, has {kv})");
    (reason, over_capacity_result(cell, max_output, kv))
}

/// One cell measured, its row stamped with its times, hardware and verdict (its telemetry
/// recorded: `crate::cells::telemetry`); Not run, "skipped", when the dashboard's `s` stopped
/// it.
async fn measure_cell(m: &MatrixRun<'_>, st: &mut RunState, cell: &PlannedCell) -> CellResult {
    let rec = CellRecorder::start(m, cell.key.phase);
    let cm = MatrixRun {
        progress: &rec,
        ..m.for_cell()
    };
    let mut row = run_cell(&cm, st, cell).await;
    m.skip.disarm();
    let skipped = cm.cancel.is_cancelled() && !m.cancel.is_cancelled();
    drop(cm);
    if skipped {
        // Whatever the cell got to, its row measures nothing.
        m.progress.event(ProgressEvent::Note(format!(
            "{} {} × {} skipped",
            cell.key.phase.label(),
            cell.label,
            cell.key.concurrency
        )));
        row = bare_result(cell, CellStatus::NotRun, Some(SKIPPED.to_string()));
    }
    if cell.over_capacity {
        mark_capacity_limited(m, cell, &mut row);
    }
    row.started_at = Some(rec.started_at());
    row.finished_at = Some(now_rfc3339());
    rec.finish(m, &mut row).await;
    row
}

/// A cell predicted Over capacity and measured anyway (`--show-capacity-limited-values`): the
/// row says so, with the prediction, so no figure of it is read as a fitting cell's.
fn mark_capacity_limited(m: &MatrixRun<'_>, cell: &PlannedCell, row: &mut CellResult) {
    let k = cell.key;
    let s = &m.plan.settings;
    let kv = m.plan.kv_capacity_tokens.unwrap_or(0);
    let needs = llmib_core::kv_tokens_needed(k.concurrency, k.context_tokens, s.max_output);
    let mark = format!(
        "predicted over KV capacity (needs {needs} tokens, has {kv}), measured anyway (--show-capacity-limited-values)"
    );
    row.capacity_limited = true;
    row.status_reason = Some(match row.status_reason.take() {
        Some(r) => format!("{mark}; {r}"),
        None => mark,
    });
}

/// After a failed cell: whether the server is gone, so the run ends (every later cell would
/// fail the same way) — it no longer answers at all, or it accepts requests and never answers
/// them (`llmib_core::first_token_stall`: two cells in a row without a first token).
async fn server_gone(m: &MatrixRun<'_>, recent: &[CellResult]) -> Option<MatrixEnd> {
    if !m.engine.alive().await {
        return Some(MatrixEnd::ServerGone(format!(
            "the server at {} stopped answering",
            m.engine.base_url()
        )));
    }
    llmib_core::first_token_stall(recent).then(|| {
        MatrixEnd::ServerGone(format!(
            "the server at {} accepts requests but sent no first token in two cells in a row (raise --first-token-timeout if its prefill is that slow)",
            m.engine.base_url()
        ))
    })
}

/// Measures one cell: its context's prompt state, its inputs, then the cell
/// (`crate::cells::warm` ran the run's one-off warm-ups before the first).
async fn run_cell(m: &MatrixRun<'_>, st: &mut RunState, cell: &PlannedCell) -> CellResult {
    let key = cell.key;
    let mut at = st.at_context(key.context_tokens);
    let slot = match &m.shard {
        Some(shard) => {
            let kind = slot_kind(m, cell);
            let Some(slot) = shard.next_slot(kind, m.progress, &m.cancel).await else {
                return interrupted_result(cell);
            };
            Some(slot)
        }
        None => None,
    };
    match key.phase {
        Phase::Prefill => match (&m.shard, slot) {
            (Some(shard), Some(slot)) => shard_prefill(m, &mut at, cell, shard, slot).await,
            _ => prefill(m, &mut at, cell).await,
        },
        Phase::Decode => {
            let mut row = decode(m, &mut at, cell, slot).await;
            // A shard's row always says which shard and slot it is (a failure before the
            // window, or no streams here, too).
            if let (Some(shard), Some(slot), None) = (&m.shard, slot, &row.shard) {
                // Nothing ran here: no origin was taken, none is late.
                row.shard = Some(shard.cell(&slot, slot.origin_unix_ns, 0));
            }
            row
        }
        Phase::Burst => {
            let want = Wanted::warmed(m, (0..key.concurrency).collect());
            match prepare(m, at.builder, at.prompts, want).await {
                Ok(inputs) => burst_cell(m, cell, inputs).await,
                Err(e) => e.row(cell),
            }
        }
        Phase::MixedPrefill => crate::cells::mixed_cell::mixed_cell(m, st, cell).await,
        // The open-loop and session sections run after the matrix (`crate::cells::load_section`,
        // `crate::cells::session_section`), never as planned cells.
        Phase::Rate | Phase::Capacity | Phase::Session => failed_result(
            cell,
            "internal",
            "an open-loop cell in the matrix's plan".into(),
        ),
    }
}

/// A prefill cell given its inputs; stream 0's prompt is then in the server's cache.
async fn prefill(m: &MatrixRun<'_>, at: &mut AtContext<'_>, cell: &PlannedCell) -> CellResult {
    match prefill_inputs(m, at, cell).await {
        Ok(inputs) => {
            at.prompts.warmed.insert(0);
            prefill_cell(m, cell, inputs).await
        }
        Err(e) => e.row(cell),
    }
}

/// A decode cell on this process's streams (a shard's share of N), given its inputs.
async fn decode(
    m: &MatrixRun<'_>,
    at: &mut AtContext<'_>,
    cell: &PlannedCell,
    slot: Option<Slot>,
) -> CellResult {
    let streams = mine(m.shard.as_deref(), cell.key.concurrency);
    if streams.is_empty() {
        return bare_result(cell, CellStatus::NotRun, Some(NO_STREAMS.into()));
    }
    match prepare(m, at.builder, at.prompts, Wanted::warmed(m, streams)).await {
        Ok(inputs) => decode_cell(m, cell, inputs, at.warm_ttft_ms, slot).await,
        Err(e) => e.row(cell),
    }
}

/// The timetable's slot of a matrix cell, from the plan alone (`llmib_core::matrix_slot_kind`:
/// its prompt tokens, the readiness limit, the window).
fn slot_kind(m: &MatrixRun<'_>, cell: &PlannedCell) -> SlotKind {
    let s = &m.plan.settings;
    let cells = &m.plan.cells;
    let keys: Vec<_> = cells.iter().map(|c| c.key).collect();
    let index = cells.iter().position(|c| c.key == cell.key).unwrap_or(0);
    let measured = |i: usize| cells.get(i).is_some_and(|c| m.plan.measures(c));
    let settings = MatrixSlotSettings {
        prefill_repeats: s.prefill_repeats,
        readiness_limit_s: s.readiness_timeout_s,
        window_s: s.duration_s,
        cached_prompt_block_tokens: s
            .timetable
            .as_ref()
            .and_then(|t| t.cached_prompt_block_tokens),
    };
    llmib_core::matrix_slot_kind(&keys, index, &measured, settings)
}

/// A prefill cell on a shard: shard 0 measures it (one cold prefill at a time is what the
/// cell measures; two machines would measure each other's queue), the others say so. Shard
/// 0 builds its prompts in the preparation and measures from the slot's origin, when every
/// shard's previous cell has stopped; a measurement that ends past the slot's close fails
/// (the next cell's warm-ups may have run beside it).
async fn shard_prefill(
    m: &MatrixRun<'_>,
    at: &mut AtContext<'_>,
    cell: &PlannedCell,
    shard: &ShardRun,
    slot: Slot,
) -> CellResult {
    if shard.spec.index != 0 {
        let why = Some(PREFILL_ON_SHARD_0.to_string());
        let mut row = bare_result(cell, CellStatus::NotRun, why);
        row.shard = Some(shard.cell(&slot, slot.origin_unix_ns, 0));
        return row;
    }
    let inputs = prefill_inputs(m, at, cell).await;
    shard.mark_ready(unix_now_ns());
    let inputs = match inputs {
        Ok(inputs) => inputs,
        Err(e) => {
            let mut row = e.row(cell);
            row.shard = Some(shard.cell(&slot, slot.origin_unix_ns, 0));
            return row;
        }
    };
    if !sleep_until_precise(instant_at(slot.origin_unix_ns), &m.cancel).await {
        return interrupted_result(cell);
    }
    let started = unix_now_ns();
    at.prompts.warmed.insert(0);
    let mut row = prefill_cell(m, cell, inputs).await;
    if row.status.has_figures()
        && let Some(over) = llmib_core::prefill_overrun(unix_now_ns(), &slot)
    {
        row = failed_result(cell, "shard_late", over);
    }
    row.shard = Some(shard.cell(&slot, started, 1));
    row
}
