//! The open-loop section of each context, run after the matrix (METHOD.md, "Open-loop rate
//! cells"): the rate cells of `--request-rate` (a list, or `auto[:K]` placed between the
//! measured synchronous rate and saturation throughput), then with `--find-capacity` the
//! capacity search (`llmib_core::next_step`) and the context's capacity row. Every decision is
//! a pure function of `llmib_core`; this module builds prompts, sends and saves.
//!
//! Every request of every cell has a prompt of its own (exactly C tokens, a stream index no
//! other request of the run uses), so no prefix cache serves one request from another: open
//! load is cold prefills, as real traffic is. The prompts of a cell are built before its
//! schedule starts, so building them is never part of a figure.
//!
//! Varying lengths and workloads (`crate::cells::varying`): with `--input-len` or `--workload` one
//! section labelled by them replaces the per-context ones; a trace (Mooncake, Azure) replays
//! whole at `--time-scale` K as one rate row (the rate is K times the trace's), and with
//! `--time-scale auto` the capacity search runs over K × the trace's rate.

use crate::cells::driver::{
    DriverError, MatrixEnd, MatrixRun, finished_records_as, limits, not_run_reason,
    prompt_tolerance, save,
};
use crate::cells::open_loop::{OpenLoopRun, OpenLoopSpec, run_open_loop, send_each};
use crate::cells::shard::{instant_at, late_for, mine};
use crate::cells::varying::{Varying, build_requests, fixed_scale};
use crate::progress::events::{ProgressEvent, Stage};
use crate::progress::live::OpenLoopLive;
use crate::prompts::prompt::PromptBuilder;
use crate::wire::stream::RequestSpec;
use llmib_core::{
    Capacity, CapacityInputs, CellResult, CellStatus, LoadSettings, PlannedCell, PlannedContext,
    RateObservation, RatePoint, RateSpec, SearchBounds, SearchStep, Slo, StopReason, auto_rates,
    bare_result, capacity_cell, capacity_result, cell_requests, cell_schedule, closed_batch_rate,
    duration_from_secs, failed_result, interrupted_result, next_step, now_rfc3339, rate_cell,
    rate_result, round_rate, trace_offsets,
};
use llmib_core::{ShardSchedule, Slot, SlotKind};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// Stream indices of open-load prompts start here (decode cells use 0..N, standalone prefills
/// count down from `u32::MAX`).
const OPEN_LOOP_STREAMS: u32 = 1 << 30;

/// The capacity search never measures more cells than this per context.
const MAX_SEARCH_STEPS: usize = 24;

/// What one context's section carries from cell to cell.
struct Section<'s> {
    /// Why the run stops before the next cell (Ctrl-C, the time budget), if it does.
    stop: &'s dyn Fn() -> MatrixEnd,
    /// Set when a cell of this section was stopped: how the run ended.
    ended: Option<MatrixEnd>,
    ctx: &'s PlannedContext,
    load: &'s LoadSettings,
    /// Every row saved before the open-load sections (the whole matrix, and resumed rows):
    /// the decode rows give the capacity concurrency.
    saved: &'s [CellResult],
    /// The next unused open-load stream index at this context.
    next_stream: u32,
    /// Every rate row of this context (resumed ones first).
    rate_rows: Vec<CellResult>,
    synchronous: Option<f64>,
    saturation: Option<f64>,
    /// Lengths that vary from request to request, when asked.
    varying: Option<&'s mut Varying>,
}

/// Runs the open-loop section of every context that has decode cells, in context order.
/// `end` is how the matrix ended: a stopped run writes the rest as Not run.
pub(crate) async fn run_load_sections(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    end: &mut MatrixEnd,
    stop: impl Fn() -> MatrixEnd,
) -> Result<(), DriverError> {
    let Some(load) = m.plan.settings.load.as_ref() else {
        return Ok(());
    };
    // The rows saved so far (a store that cannot be read stops the run: the capacity row's
    // concurrency and a resume's reuse would otherwise come from nothing).
    let (prior, _) = m.store.load_cells()?;
    let mut varying = match Varying::of(m, load).await {
        Ok(v) => v,
        Err(why) => {
            // The command checked the file before the run; it changed since.
            m.progress
                .event(ProgressEvent::Note(format!("open load not run: {why}")));
            return Ok(());
        }
    };
    let contexts: Vec<PlannedContext> = match (&varying, m.plan.contexts.iter().find(|c| c.decode))
    {
        (Some(v), Some(first)) if v.replaces_contexts() => vec![v.context(first)],
        _ => m
            .plan
            .contexts
            .iter()
            .filter(|c| c.decode)
            .cloned()
            .collect(),
    };
    for ctx in &contexts {
        if *end == MatrixEnd::Completed {
            *end = stop();
        }
        if *end != MatrixEnd::Completed {
            let cell = capacity_cell(ctx.tokens, &ctx.label);
            if load.find_capacity && !m.done.contains(&cell.key) {
                save(
                    m,
                    bare_result(&cell, CellStatus::NotRun, Some(not_run_reason(end))),
                )?;
            }
            continue;
        }
        let mut s = Section {
            stop: &stop,
            ended: None,
            ctx,
            load,
            saved: &prior,
            next_stream: OPEN_LOOP_STREAMS,
            // Resume: the rows `--resume` kept (a Not run row, or a Failed one with
            // --retry-failed, is measured again).
            rate_rows: prior
                .iter()
                .filter(|r| r.phase == llmib_core::Phase::Rate && r.context_tokens == ctx.tokens)
                .filter(|r| m.done.contains(&r.key()))
                .cloned()
                .collect(),
            synchronous: None,
            saturation: None,
            varying: varying.as_mut(),
        };
        run_section(m, builder, &mut s).await?;
        if let Some(e) = s.ended {
            let cell = capacity_cell(ctx.tokens, &ctx.label);
            if load.find_capacity && !m.done.contains(&cell.key) {
                save(
                    m,
                    bare_result(&cell, CellStatus::NotRun, Some(not_run_reason(&e))),
                )?;
            }
            *end = e;
        }
    }
    Ok(())
}

/// One context's sweep and search (`s.ended` says whether the run stopped it).
async fn run_section(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
) -> Result<(), DriverError> {
    if let Some(trace_rate) = trace_rate_of(s) {
        // A trace: one replay at the time scale asked, or the search over time scales.
        return match (fixed_scale(s.load), s.load.slo.as_ref()) {
            (Some(k), _) => measured_rate(m, builder, s, round_rate(k * trace_rate))
                .await
                .map(|_| ()),
            (None, Some(slo)) => search(m, builder, s, slo).await,
            (None, None) => Ok(()),
        };
    }
    let rates = match &s.load.rates {
        Some(RateSpec::List(v)) => v.iter().map(|r| round_rate(*r)).collect(),
        Some(RateSpec::Auto { points }) => {
            measure_span(m, builder, s).await;
            let span = s.synchronous.zip(s.saturation);
            match span.and_then(|(a, b)| auto_rates(a, b, *points)) {
                Some(v) => v,
                None => {
                    note_no_span(m, s);
                    Vec::new()
                }
            }
        }
        None => Vec::new(),
    };
    for rate in rates {
        if measured_rate(m, builder, s, rate).await?.is_none() {
            return Ok(());
        }
    }
    match (s.load.find_capacity, s.load.slo.as_ref()) {
        (true, Some(slo)) => search(m, builder, s, slo).await,
        _ => Ok(()),
    }
}

fn note_no_span(m: &MatrixRun<'_>, s: &Section<'_>) {
    let rate = |r: Option<f64>| r.map_or("not measured".to_string(), |r| format!("{r:.3}/s"));
    m.progress.event(ProgressEvent::Note(format!(
        "open load {}: no auto rates (synchronous rate {}, saturation {}: a request must finish in each)",
        s.ctx.label,
        rate(s.synchronous),
        rate(s.saturation)
    )));
}

/// The capacity search: bracket and bisect with `next_step`, every point saved; then the
/// context's capacity row (`s.ended` says whether the run stopped it first).
async fn search(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    slo: &Slo,
) -> Result<(), DriverError> {
    let cell = capacity_cell(s.ctx.tokens, &s.ctx.label);
    if m.done.contains(&cell.key) {
        return Ok(());
    }
    let trace = trace_rate_of(s);
    if s.synchronous.is_none() && trace.is_none() {
        measure_span(m, builder, s).await;
    }
    // A trace's search starts at its own speed (K = 1).
    let start = trace.or(s.synchronous).or(s.saturation).unwrap_or(1.0);
    let bounds = SearchBounds {
        start,
        precision: s.load.precision,
        // Far past saturation every cell fails; past the pacer's limit the client is the
        // bottleneck (docs/benchmarks.md).
        ceiling: s.saturation.map_or(start * 64.0, |x| x * 4.0).min(5000.0),
        floor: start / 64.0,
    };
    let mut answer = Capacity::None;
    for _ in 0..MAX_SEARCH_STEPS {
        let points: Vec<RatePoint> = s.rate_rows.iter().filter_map(point).collect();
        match next_step(&points, bounds) {
            SearchStep::Done(c) => {
                answer = c;
                break;
            }
            SearchStep::Measure(rate) => {
                let before = s.rate_rows.len();
                if measured_rate(m, builder, s, round_rate(rate))
                    .await?
                    .is_none()
                {
                    return Ok(());
                }
                if s.rate_rows.len() == before {
                    // The rate rounds to one measured already (or its cell could not be
                    // judged): the bracket is as narrow as rates are written.
                    answer = settle(&s.rate_rows, bounds);
                    break;
                }
            }
        }
    }
    let mut row = capacity_result(
        &cell,
        CapacityInputs {
            slo,
            precision: s.load.precision,
            answer,
            rate_rows: &s.rate_rows,
            rows: s.saved,
            synchronous_rate: s.synchronous,
            saturation_rate: s.saturation,
        },
    );
    if let (Some(tr), Some(f)) = (trace_rate_of(s), row.capacity.as_mut()) {
        f.time_scale = row.capacity_request_rate.flatten().map(|r| r / tr);
    }
    row.finished_at = Some(now_rfc3339());
    save(m, row)
}

/// The search's answer from the points it has, whatever the bracket's width.
fn settle(rows: &[CellResult], bounds: SearchBounds) -> Capacity {
    let points: Vec<RatePoint> = rows.iter().filter_map(point).collect();
    let loose = SearchBounds {
        precision: f64::INFINITY,
        ..bounds
    };
    match next_step(&points, loose) {
        SearchStep::Done(c) => c,
        SearchStep::Measure(_) => Capacity::None,
    }
}

/// A rate row as a point of the search.
fn point(r: &CellResult) -> Option<RatePoint> {
    let holds = r.rate.as_ref()?.slo.as_ref()?.holds;
    Some(RatePoint {
        rate: r.request_rate?,
        holds,
    })
}

/// The row at `rate`: already measured (resume, or the sweep measured it), or measured now.
/// `None` when Ctrl-C stopped it.
async fn measured_rate(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    rate: f64,
) -> Result<Option<()>, DriverError> {
    let cell = rate_cell(s.ctx.tokens, &s.ctx.label, rate);
    if s.rate_rows.iter().any(|r| r.key() == cell.key) {
        return Ok(Some(()));
    }
    let stop = (s.stop)();
    if stop != MatrixEnd::Completed {
        save(
            m,
            bare_result(&cell, CellStatus::NotRun, Some(not_run_reason(&stop))),
        )?;
        s.ended = Some(stop);
        return Ok(None);
    }
    m.progress.event(ProgressEvent::CellStarted {
        index: m.plan.cells.len() + s.rate_rows.len(),
        total: m.plan.cells.len() + s.rate_rows.len() + 1,
        cell: cell.clone(),
    });
    if let Some(hw) = m.hardware {
        hw.begin_cell();
    }
    let t0 = now_rfc3339();
    let mut row = rate_cell_row(m, builder, s, &cell, rate).await;
    row.started_at = Some(t0);
    row.finished_at = Some(now_rfc3339());
    if let Some(hw) = m.hardware {
        row.hardware = hw.end_cell();
    }
    let interrupted = row.status == CellStatus::NotRun;
    if interrupted {
        row.status_reason = Some(not_run_reason(&MatrixEnd::Interrupted));
    }
    save(m, row.clone())?;
    if interrupted {
        s.ended = Some(MatrixEnd::Interrupted);
        return Ok(None);
    }
    s.rate_rows.push(row);
    Ok(Some(()))
}

/// Builds fresh prompts at this context, one per stream index of `streams` (indices no other
/// request of the run uses), and their streamed requests.
async fn fresh_requests(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &Section<'_>,
    streams: &[u32],
    max_tokens: u32,
) -> Result<(Vec<RequestSpec>, u64), (&'static str, String)> {
    let mut out = Vec::with_capacity(streams.len());
    let mut tokens = s.ctx.tokens;
    // Open load queues behind as many prompts as the server admits at once.
    let lim = limits(m, s.ctx.tokens, saturation_slots(m, s));
    for &stream in streams {
        if m.cancel.is_cancelled() {
            break;
        }
        let p = builder
            .build(s.ctx.tokens, stream)
            .await
            .map_err(|e| (e.kind(), e.to_string()))?;
        tokens = p.tokens;
        let spec = m
            .engine
            .stream_request(&m.model, p.input, max_tokens, false, lim)
            .map_err(|e| ("request_body", e.to_string()))?;
        out.push(spec);
    }
    Ok((out, tokens))
}

/// The stream indices of a cell of `total` requests of which this process sends `mine`
/// (global indices): the next `total` unused ones, so that every shard gives request i the
/// prompt one process would.
fn take_streams(s: &mut Section<'_>, total: usize, mine: &[u32]) -> Vec<u32> {
    let base = s.next_stream;
    s.next_stream = base.wrapping_add(total as u32);
    mine.iter().map(|i| base.wrapping_add(*i)).collect()
}

/// The trace's mean rate, when the section replays a trace (1/s for a trace whose rows share
/// one instant: its replay is then one burst, keyed as if at K/s).
fn trace_rate_of(s: &Section<'_>) -> Option<f64> {
    let v = s.varying.as_deref()?;
    v.trace().map(|w| w.trace_rate().unwrap_or(1.0))
}

/// The time scale whose replay runs at `rate`: the one asked where it rounds to this rate, so
/// a replay at `--time-scale 2` runs at exactly 2.
fn scale_at(s: &Section<'_>, trace_rate: f64, rate: f64) -> f64 {
    match fixed_scale(s.load) {
        Some(k) if round_rate(k * trace_rate) == rate => k,
        _ => rate / trace_rate,
    }
}

/// What a rate cell sends: each request's due instant and, where lengths vary, its lengths.
struct CellPlan {
    due: Vec<u64>,
    requests: Option<Vec<llmib_core::CellRequest>>,
    /// A replay's time scale.
    scale: Option<f64>,
}

/// The plan of the cell at `rate`: a seeded schedule (and lengths), or a trace's replay.
fn cell_plan(
    m: &MatrixRun<'_>,
    s: &Section<'_>,
    cell: &PlannedCell,
    rate: f64,
) -> Result<CellPlan, String> {
    let st = &m.plan.settings;
    // `--seed`, where given, fixes the schedule and the lengths too, so that two runs (two
    // servers) are sent the same requests; else the run's own prompt seed does.
    let base = st.request.seed.unwrap_or(st.prompt_seed);
    let seed = base ^ s.ctx.tokens.rotate_left(20) ^ cell.key.rate_mrps;
    let Some(v) = s.varying.as_deref() else {
        let due = cell_schedule(s.load.arrival, rate, st.duration_s, seed, s.ctx.tokens)
            .map_err(|e| e.to_string())?;
        return Ok(CellPlan {
            due,
            requests: None,
            scale: None,
        });
    };
    if let (Some(w), Some(tr)) = (v.trace(), trace_rate_of(s)) {
        let k = scale_at(s, tr, rate);
        let due = trace_offsets(w, k).map_err(|e| e.to_string())?;
        let requests = cell_requests(v.source(s.ctx.tokens, st.max_output), due.len(), seed);
        let tokens: u64 = requests.iter().map(|r| r.input_tokens).sum();
        if due.len() > llmib_core::MAX_REQUESTS_PER_CELL
            || tokens > llmib_core::MAX_PROMPT_TOKENS_PER_CELL
        {
            return Err(format!(
                "the trace has {} requests and {tokens} prompt tokens, more than one cell holds ({} requests, {} M tokens): cut the trace",
                due.len(),
                llmib_core::MAX_REQUESTS_PER_CELL,
                llmib_core::MAX_PROMPT_TOKENS_PER_CELL >> 20
            ));
        }
        return Ok(CellPlan {
            due,
            requests: Some(requests),
            scale: Some(k),
        });
    }
    let due = cell_schedule(s.load.arrival, rate, st.duration_s, seed, s.ctx.tokens)
        .map_err(|e| e.to_string())?;
    let requests = cell_requests(v.source(s.ctx.tokens, st.max_output), due.len(), seed);
    Ok(CellPlan {
        due,
        requests: Some(requests),
        scale: None,
    })
}

/// On a shard: the cell's slot of the timetable (sized by the whole schedule, the same on
/// every shard), once its preparation starts. `Err`: Ctrl-C while waiting.
async fn rate_slot(m: &MatrixRun<'_>, s: &Section<'_>, due: &[u64]) -> Result<Option<Slot>, ()> {
    let Some(shard) = &m.shard else {
        return Ok(None);
    };
    let kind = SlotKind::Rate {
        span_s: due.last().copied().unwrap_or(0) as f64 / 1e9,
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
    crate::cells::driver::report_errors(m, Stage::OpenLoop, &records);
    Some((run, count, records))
}

/// The prompts and requests of this process's part of a rate cell, and the prompt tokens
/// built (one per request where lengths vary, else the one C).
async fn build_part(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    part: &MyPart,
) -> Result<(Vec<RequestSpec>, Vec<u64>), (&'static str, String)> {
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
async fn rate_cell_row(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    cell: &PlannedCell,
    rate: f64,
) -> CellResult {
    let st = &m.plan.settings;
    let plan = match cell_plan(m, s, cell, rate) {
        Ok(p) => p,
        Err(why) => return failed_result(cell, "schedule", why),
    };
    let part = MyPart::of(m, s, &plan);
    let Ok(slot) = rate_slot(m, s, &plan.due).await else {
        return interrupted_result(cell);
    };
    let (requests, built) = match build_part(m, builder, s, &part).await {
        Ok(r) => r,
        Err((kind, e)) => return failed_result(cell, kind, e),
    };
    let prompt_tokens = built.last().copied().unwrap_or(s.ctx.tokens);
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    if let Some(late) = slot.as_ref().and_then(|x| late_for(x, false)) {
        return failed_result(cell, "shard_late", late);
    }
    let mut spec = open_loop_spec(s.load, part.due.clone(), plan.scale, st);
    spec.origin = slot.map(|x| instant_at(x.origin_unix_ns));
    let Some((mut run, count, records)) = send_part(m, s, cell, &spec, requests, &part).await
    else {
        return interrupted_result(cell);
    };
    let varying = s.varying.as_deref();
    let workload = part.requests.as_ref().zip(varying).and_then(|(reqs, v)| {
        v.figures(
            v.source(s.ctx.tokens, st.max_output),
            reqs,
            &records,
            plan.scale,
        )
    });
    let mut row = rate_result(
        cell,
        RateObservation {
            records: &records,
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
            prompt_tolerance: prompt_tolerance(m, cell),
            expected_prompts: part.requests.is_some().then_some(&built[..]),
            workload,
            stop_reason: stop_reason(plan.scale, &spec, &run),
            fault: run.fault.take(),
        },
    );
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

/// Builds the prompts of a cell whose lengths vary (`crate::cells::varying::build_requests`).
async fn varying_requests(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    reqs: &[llmib_core::CellRequest],
    streams: &[u32],
) -> Result<(Vec<RequestSpec>, Vec<u64>), (&'static str, String)> {
    let longest = s
        .varying
        .as_deref()
        .map_or(s.ctx.tokens, |v| v.max_input(s.ctx.tokens));
    let lim = limits(m, longest, saturation_slots(m, s));
    let blocks = s.varying.as_deref_mut().and_then(|v| v.blocks.as_mut());
    build_requests(m, builder, blocks, reqs, streams, lim).await
}

/// How many requests the saturation batch keeps in flight: the cap, else as many as the KV
/// cache holds at this context (the server's own admission limit, where it reports its
/// capacity) or the matrix's largest concurrency, whichever is larger; at most 256.
fn saturation_slots(m: &MatrixRun<'_>, s: &Section<'_>) -> u32 {
    if let Some(cap) = s.load.max_concurrency {
        return cap;
    }
    let st = &m.plan.settings;
    let per_request = s.ctx.tokens + u64::from(st.max_output);
    let by_kv = m
        .plan
        .kv_capacity_tokens
        .map(|kv| kv / per_request.max(1))
        .map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    let by_matrix = st.concurrency.iter().copied().max();
    by_kv.max(by_matrix).unwrap_or(16).clamp(1, 256)
}

/// Measures the context's synchronous rate (one request at a time) and saturation
/// throughput (a closed batch at [`saturation_slots`]), which place the auto sweep and start
/// the search. Failures leave them unknown (a note says so).
async fn measure_span(m: &MatrixRun<'_>, builder: &mut PromptBuilder, s: &mut Section<'_>) {
    let max = m.plan.settings.max_output;
    let slots = saturation_slots(m, s);
    for (stage, count, in_flight) in [
        (Stage::Synchronous, 4usize, 1u32),
        (Stage::Saturation, (2 * slots as usize).max(8), slots),
    ] {
        if m.cancel.is_cancelled() {
            return;
        }
        m.progress.event(ProgressEvent::Phase(Stage::Prompts));
        let all: Vec<u32> = (0..count as u32).collect();
        let streams = take_streams(s, count, &all);
        let requests = match fresh_requests(m, builder, s, &streams, max).await {
            Ok((r, _)) => r,
            Err((_, e)) => {
                m.progress.event(ProgressEvent::Note(format!(
                    "open load {}: {stage} not measured: {e}",
                    s.ctx.label
                )));
                return;
            }
        };
        m.progress.event(ProgressEvent::Phase(stage));
        let within = duration_from_secs(m.plan.settings.duration_s);
        let measured = send_each(&m.engine, requests.into(), in_flight, within, &m.cancel).await;
        let records: Vec<_> = measured.into_iter().map(|x| x.record).collect();
        let rate = closed_batch_rate(&records);
        if stage == Stage::Synchronous {
            s.synchronous = rate;
        } else {
            s.saturation = rate;
        }
        m.progress.event(ProgressEvent::Note(format!(
            "open load {}: {stage} {}",
            s.ctx.label,
            rate.map_or("not measured (no request finished)".into(), |r| format!(
                "{r:.3} requests/s"
            ))
        )));
    }
}
