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

use crate::driver::{
    DriverError, MatrixEnd, MatrixRun, finished_records, limits, not_run_reason, prompt_tolerance,
    save,
};
use crate::live::OpenLoopLive;
use crate::open_loop::{OpenLoopSpec, run_open_loop, send_each};
use crate::progress::{ProgressEvent, Stage};
use crate::prompt::PromptBuilder;
use crate::stream::RequestSpec;
use llmib_core::{
    Capacity, CapacityInputs, CellResult, CellStatus, LoadSettings, PlannedCell, PlannedContext,
    RateObservation, RatePoint, RateSpec, SearchBounds, SearchStep, Slo, auto_rates, bare_result,
    capacity_cell, capacity_result, cell_schedule, closed_batch_rate, duration_from_secs,
    failed_result, interrupted_result, next_step, now_rfc3339, rate_cell, rate_result, round_rate,
};
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
    for ctx in m.plan.contexts.iter().filter(|c| c.decode) {
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
    if s.synchronous.is_none() {
        measure_span(m, builder, s).await;
    }
    let start = s.synchronous.or(s.saturation).unwrap_or(1.0);
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

/// Builds `count` fresh prompts at this context and their streamed requests.
async fn fresh_requests(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    count: usize,
    max_tokens: u32,
) -> Result<(Vec<RequestSpec>, u64), (&'static str, String)> {
    let mut out = Vec::with_capacity(count);
    let mut tokens = s.ctx.tokens;
    // Open load queues behind as many prompts as the server admits at once.
    let lim = limits(m, s.ctx.tokens, saturation_slots(m, s));
    for _ in 0..count {
        if m.cancel.is_cancelled() {
            break;
        }
        let p = builder
            .build(s.ctx.tokens, s.next_stream)
            .await
            .map_err(|e| (e.kind(), e.to_string()))?;
        s.next_stream = s.next_stream.wrapping_add(1);
        tokens = p.tokens;
        let spec = m
            .engine
            .stream_request(&m.model, p.input, max_tokens, false, lim)
            .map_err(|e| ("request_body", e.to_string()))?;
        out.push(spec);
    }
    Ok((out, tokens))
}

/// Measures one rate cell: its schedule drawn, its prompts built, its requests sent on the
/// schedule and drained, its tokens counted, its row judged by `llmib_core::rate_result`.
async fn rate_cell_row(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    s: &mut Section<'_>,
    cell: &PlannedCell,
    rate: f64,
) -> CellResult {
    let st = &m.plan.settings;
    let seed = st.prompt_seed ^ s.ctx.tokens.rotate_left(20) ^ cell.key.rate_mrps;
    let due = match cell_schedule(s.load.arrival, rate, st.duration_s, seed, s.ctx.tokens) {
        Ok(d) => d,
        Err(why) => return failed_result(cell, "schedule", why),
    };
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    let (requests, prompt_tokens) =
        match fresh_requests(m, builder, s, due.len(), st.max_output).await {
            Ok(r) => r,
            Err((kind, e)) => return failed_result(cell, kind, e),
        };
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    m.progress.event(ProgressEvent::Phase(Stage::OpenLoop));
    let live = Arc::new(OpenLoopLive::default());
    live.rate_mrps.store(cell.key.rate_mrps, Ordering::Relaxed);
    let spec = OpenLoopSpec {
        due_ns: due.into(),
        max_concurrency: s.load.max_concurrency,
        drain: duration_from_secs(s.load.drain_s),
    };
    m.progress.event(ProgressEvent::OpenLoopLive(live.clone()));
    let slo = s.load.slo.clone();
    let mut run = run_open_loop(&m.engine, requests.into(), &spec, &m.cancel, live, slo).await;
    if run.interrupted {
        return interrupted_result(cell);
    }
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    let count = crate::counting::count_tokens(&m.engine, &mut run.measured).await;
    let records = finished_records(m, cell.key, std::mem::take(&mut run.measured));
    crate::driver::report_errors(m, Stage::OpenLoop, &records);
    rate_result(
        cell,
        RateObservation {
            records: &records,
            scheduled_ns: &spec.due_ns,
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
            expected_prompts: None,
            workload: None,
            stop_reason: None,
            fault: run.fault,
        },
    )
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
        let requests = match fresh_requests(m, builder, s, count, max).await {
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
