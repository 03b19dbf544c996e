//! One open-loop rate cell (METHOD.md, "Open-loop rate cells"): its schedule drawn (or a
//! trace's replay at a time scale), its prompts built before the schedule starts (so building
//! them is never part of a figure), its requests sent on the schedule by the pacer and
//! drained, its tokens counted, its row judged by `llmib_core::rate_result`. On a shard, its
//! share of the schedule at the timetable's instants.

use crate::cells::context::MatrixRun;
use crate::cells::inputs::CellFailure;
use crate::cells::open_loop::{OpenLoopRun, OpenLoopSpec, run_open_loop};
use crate::cells::outlet::{finished_records_as, report_errors};
use crate::cells::section::{
    Section, fresh_requests, scale_at, take_streams, trace_rate_of, varying_requests,
};
use crate::cells::shard::{instant_at, mine};
use crate::progress::events::{ProgressEvent, Stage};
use crate::progress::live::OpenLoopLive;
use crate::prompts::prompt::PromptBuilder;
use crate::wire::stream::RequestSpec;
use llmib_core::{
    CellResult, LoadSettings, PlannedCell, RateObservation, StopReason, cell_requests,
    cell_schedule, duration_from_secs, failed_result, interrupted_result, rate_result_at,
    trace_offsets,
};
use llmib_core::{ShardSchedule, Slot, SlotKind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// What a rate cell sends: each request's due instant and, where lengths vary, its lengths.
struct CellPlan {
    due: Vec<u64>,
    requests: Option<Vec<llmib_core::CellRequest>>,
    /// A replay's time scale.
    scale: Option<f64>,
}

/// `plan`, where its requests' images fit in memory: every request, images included, is built
/// before the schedule starts (`llmib_core::ImageSettings::cell_memory`).
fn images_fit(m: &MatrixRun<'_>, plan: CellPlan) -> Result<CellPlan, CellFailure> {
    match m
        .plan
        .settings
        .images
        .as_ref()
        .map(|i| i.cell_memory(plan.due.len()))
    {
        Some(Err(e)) => Err(CellFailure::schedule(e.to_string())),
        _ => Ok(plan),
    }
}

/// The plan of the cell at `rate`: a seeded schedule (and lengths), or a trace's replay.
fn cell_plan(
    m: &MatrixRun<'_>,
    s: &Section<'_>,
    cell: &PlannedCell,
    rate: f64,
) -> Result<CellPlan, CellFailure> {
    let st = &m.plan.settings;
    // `--seed`, where given, fixes the schedule and the lengths too, so that two runs (two
    // servers) are sent the same requests; else the run's own prompt seed does.
    let base = st.request.seed.unwrap_or(st.prompt_seed);
    let seed = base ^ s.ctx.tokens.rotate_left(20) ^ cell.key.rate_mrps;
    let Some(v) = s.varying.as_deref() else {
        let due = cell_schedule(s.load.arrival, rate, st.duration_s, seed, s.ctx.tokens)
            .map_err(|e| CellFailure::schedule(e.to_string()))?;
        return Ok(CellPlan {
            due,
            requests: None,
            scale: None,
        });
    };
    if let (Some(w), Some(tr)) = (v.trace(), trace_rate_of(s)) {
        let k = scale_at(s, tr, rate);
        let due = trace_offsets(w, k).map_err(|e| CellFailure::schedule(e.to_string()))?;
        let requests = cell_requests(v.source(s.ctx.tokens, st.max_output), due.len(), seed);
        let tokens: u64 = requests.iter().map(|r| r.input_tokens).sum();
        if due.len() > llmib_core::MAX_REQUESTS_PER_CELL
            || tokens > llmib_core::MAX_PROMPT_TOKENS_PER_CELL
        {
            return Err(CellFailure::schedule(format!(
                "the trace has {} requests and {tokens} prompt tokens, more than one cell holds ({} requests, {} M tokens): cut the trace",
                due.len(),
                llmib_core::MAX_REQUESTS_PER_CELL,
                llmib_core::MAX_PROMPT_TOKENS_PER_CELL >> 20
            )));
        }
        return Ok(CellPlan {
            due,
            requests: Some(requests),
            scale: Some(k),
        });
    }
    let due = cell_schedule(s.load.arrival, rate, st.duration_s, seed, s.ctx.tokens)
        .map_err(|e| CellFailure::schedule(e.to_string()))?;
    let requests = cell_requests(v.source(s.ctx.tokens, st.max_output), due.len(), seed);
    Ok(CellPlan {
        due,
        requests: Some(requests),
        scale: None,
    })
}

/// On a shard: the cell's slot of the timetable (sized by the whole schedule and every
/// request's prompt, the same on every shard), once its preparation starts. `Err`: Ctrl-C
/// while waiting.
async fn rate_slot(
    m: &MatrixRun<'_>,
    s: &Section<'_>,
    plan: &CellPlan,
) -> Result<Option<Slot>, ()> {
    let Some(shard) = &m.shard else {
        return Ok(None);
    };
    let build_tokens = match &plan.requests {
        Some(r) => r.iter().map(|q| q.input_tokens).sum(),
        None => (plan.due.len() as u64).saturating_mul(s.ctx.tokens),
    };
    let kind = SlotKind::Rate {
        build_tokens,
        span_s: plan.due.last().copied().unwrap_or(0) as f64 / 1e9,
        drain_s: s.load.drain_s,
    };
    match shard.next_slot(kind, m.progress, &m.cancel).await {
        Some(slot) => Ok(Some(slot)),
        None => Err(()),
    }
}

/// What a rate cell sends: this process's requests of the cell's plan, with their due
/// instants, lengths and stream indices.
struct MyPart {
    /// Global indices in the cell's schedule.
    mine: Vec<u32>,
    due: Vec<u64>,
    requests: Option<Vec<llmib_core::CellRequest>>,
    streams: Vec<u32>,
}

impl MyPart {
    fn of(m: &MatrixRun<'_>, s: &mut Section<'_>, plan: &CellPlan) -> MyPart {
        let mine = mine(m.shard.as_deref(), plan.due.len() as u32);
        let pick = |i: &u32| *i as usize;
        MyPart {
            due: mine.iter().map(|i| plan.due[pick(i)]).collect(),
            requests: plan
                .requests
                .as_ref()
                .map(|r| mine.iter().map(|i| r[pick(i)].clone()).collect()),
            streams: take_streams(s, plan.due.len(), &mine),
            mine,
        }
    }
}

/// Sends this process's part of a rate cell on `spec` and counts its tokens; its records are
/// saved (by global index on a shard). `None`: Ctrl-C stopped it.
async fn send_part(
    m: &MatrixRun<'_>,
    s: &Section<'_>,
    cell: &PlannedCell,
    spec: &OpenLoopSpec,
    requests: Vec<RequestSpec>,
    part: &MyPart,
) -> Option<(
    OpenLoopRun,
    llmib_core::CountReport,
    Vec<llmib_core::RequestRecord>,
)> {
    m.progress.event(ProgressEvent::Phase(Stage::OpenLoop));
    let live = Arc::new(OpenLoopLive::default());
    live.rate_mrps.store(cell.key.rate_mrps, Ordering::Relaxed);
    m.progress.event(ProgressEvent::OpenLoopLive(live.clone()));
    let slo = s.load.slo.clone();
    let mut run = run_open_loop(&m.engine, requests.into(), spec, &m.cancel, live, slo).await;
    if run.interrupted {
        return None;
    }
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    let count = crate::server::counting::count_tokens(&m.engine, &mut run.measured).await;
    let ids = m.shard.as_ref().map(|_| part.mine.as_slice());
    let records = finished_records_as(m, cell.key, std::mem::take(&mut run.measured), ids);
    report_errors(m, Stage::OpenLoop, &records);
    Some((run, count, records))
}

/// The prompts and requests of this process's part of a rate cell, and the prompt tokens
/// built (one per request where lengths vary, else the one C).
async fn build_part(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    part: &MyPart,
) -> Result<(Vec<RequestSpec>, Vec<u64>), CellFailure> {
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    match &part.requests {
        Some(reqs) => varying_requests(m, builder, s, reqs, &part.streams).await,
        None => fresh_requests(m, builder, s, &part.streams, m.plan.settings.max_output)
            .await
            .map(|(r, t)| (r, vec![t])),
    }
}

/// Measures one rate cell: its schedule drawn, its prompts built, its requests sent on the
/// schedule and drained, its tokens counted, its row judged by `llmib_core::rate_result`.
/// On a shard, its share of the schedule (request i ≡ I mod N) at the timetable's instants.
pub(crate) async fn rate_cell_row(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    cell: &PlannedCell,
    rate: f64,
) -> CellResult {
    let plan = match cell_plan(m, s, cell, rate).and_then(|p| images_fit(m, p)) {
        Ok(p) => p,
        Err(e) => return e.row(cell),
    };
    let part = MyPart::of(m, s, &plan);
    let Ok(slot) = rate_slot(m, s, &plan).await else {
        return interrupted_result(cell);
    };
    let (requests, built) = match build_part(m, builder, s, &part).await {
        Ok(r) => r,
        Err(e) => return e.row(cell),
    };
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    let shard = m.shard.as_deref();
    if let Some(late) = slot.zip(shard).and_then(|(x, s)| s.late_for(&x, false)) {
        return failed_result(cell, "shard_late", late);
    }
    let mut spec = open_loop_spec(s.load, part.due.clone(), plan.scale, &m.plan.settings);
    spec.origin = slot.map(|x| instant_at(x.origin_unix_ns));
    let Some((mut run, count, records)) = send_part(m, s, cell, &spec, requests, &part).await
    else {
        return interrupted_result(cell);
    };
    let built = lengths_sent(&part, built, &records);
    let prompt_tokens = built.last().copied().unwrap_or(s.ctx.tokens);
    let workload = workload_of(m, s, &part, &records, plan.scale);
    let (checked, images) =
        crate::cells::images::checked_part(m, s.ctx.tokens, &records, &built, &part.streams);
    let mut row = rate_result_at(
        cell,
        RateObservation {
            records: &checked,
            // Stopped when stable: the schedule is what was sent of it.
            scheduled_ns: &spec.due_ns[..run.fired.min(spec.due_ns.len())],
            waited: &run.waited,
            requested_rate: rate,
            arrival: s.load.arrival,
            max_concurrency: s.load.max_concurrency,
            max_in_flight: run.max_in_flight,
            slo: s.load.slo.as_ref(),
            count,
            nominal_source: m.engine.counting().nominal_source(),
            expected_prompt_tokens: prompt_tokens,
            prompt_tolerance: m.prompt_tolerance(cell),
            expected_prompts: part.requests.is_some().then_some(&built[..]),
            workload,
            stop_reason: stop_reason(plan.scale, &spec, &run),
            fault: run.fault.take(),
        },
        &m.plan.settings.percentiles,
    );
    // Record k is the request of stream `part.streams[k]` (saved by global index on a shard,
    // returned as measured).
    crate::cells::lora::cell_figures(m, &mut row, &records, &part.streams);
    crate::cells::structured::set(m, &mut row, &records);
    crate::cells::images::finish(&mut row, &records, images);
    if let Some(slot) = &slot {
        let prompts = part.requests.is_some().then(|| built.clone());
        shard_part(
            m,
            cell,
            slot,
            plan.due,
            part.mine,
            prompts,
            prompt_tokens,
            &mut row,
        );
    }
    row
}

/// The prompt lengths each request is checked against: those built, or for the user's own
/// prompts (nothing built to a length) the server's counts (`llmib_core::server_counted_prompts`).
fn lengths_sent(part: &MyPart, built: Vec<u64>, records: &[llmib_core::RequestRecord]) -> Vec<u64> {
    let own = part
        .requests
        .as_ref()
        .is_some_and(|r| r.iter().any(|q| q.prompt.is_some()));
    if own {
        llmib_core::server_counted_prompts(records, built.len())
    } else {
        built
    }
}

/// The row's account of a cell whose requests varied: what it asked and sent.
fn workload_of(
    m: &MatrixRun<'_>,
    s: &Section<'_>,
    part: &MyPart,
    records: &[llmib_core::RequestRecord],
    scale: Option<f64>,
) -> Option<llmib_core::WorkloadFigures> {
    let v = s.varying.as_deref()?;
    let src = v.source(s.ctx.tokens, m.plan.settings.max_output);
    v.figures(src, part.requests.as_ref()?, records, scale)
}

/// A shard's rate row: the cell's whole schedule and this shard's part of it saved for the
/// merge (`schedules.jsonl`), and the row's record of the slot. Without its schedule a merge
/// cannot judge the cell: the row fails.
#[allow(clippy::too_many_arguments)]
fn shard_part(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    slot: &Slot,
    due_ns: Vec<u64>,
    mine: Vec<u32>,
    prompt_tokens: Option<Vec<u64>>,
    expected_prompt_tokens: u64,
    row: &mut CellResult,
) {
    let Some(shard) = &m.shard else {
        return;
    };
    let requests = mine.len() as u64;
    let line = ShardSchedule {
        cell: cell.key,
        due_ns,
        mine,
        prompt_tokens,
        expected_prompt_tokens,
        slot: shard.record(),
        session: None,
    };
    if let Err(e) = m.store.append_schedule(&line) {
        *row = failed_result(cell, "store", format!("could not save the schedule: {e}"));
    }
    // The schedule's offsets count from the slot's origin itself (converted once to this
    // process's clock): lateness shows in the row's pacing, not as a shifted origin.
    row.shard = Some(shard.cell(slot, slot.origin_unix_ns, requests));
}

/// How a rate cell sends `due`: the section's cap and drain; with `--until-stable`, stopping
/// once settled (a trace, `scale`, replays whole).
fn open_loop_spec(
    load: &LoadSettings,
    due: Vec<u64>,
    scale: Option<f64>,
    st: &llmib_core::Settings,
) -> OpenLoopSpec {
    OpenLoopSpec {
        origin: None,
        due_ns: due.into(),
        max_concurrency: load.max_concurrency,
        drain: duration_from_secs(load.drain_s),
        until_stable: st
            .until_stable
            .filter(|_| scale.is_none())
            .map(|t| (t.fraction, st.duration_s)),
    }
}

/// Why a rate cell's schedule stopped, where that is news: a trace's end, or with
/// `--until-stable` its settling or its full window.
fn stop_reason(scale: Option<f64>, spec: &OpenLoopSpec, run: &OpenLoopRun) -> Option<StopReason> {
    if scale.is_some() {
        Some(StopReason::TraceEnd)
    } else if run.stable {
        Some(StopReason::Stable)
    } else {
        spec.until_stable.map(|_| StopReason::Duration)
    }
}
