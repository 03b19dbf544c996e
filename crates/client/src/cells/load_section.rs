//! The open-loop section of each context, run after the matrix (METHOD.md, "Open-loop rate
//! cells"): the rate cells of `--request-rate` (a list, or `auto[:K]` placed between the
//! measured synchronous rate and saturation throughput), then with `--find-capacity` the
//! capacity search (`llmib_core::next_step`) and the context's capacity row. Every decision is
//! a pure function of `llmib_core`; this module builds prompts, sends and saves.
//!
//! One section's state is `crate::cells::section`'s, each rate cell `crate::cells::rate_cell`'s.
//!
//! Varying lengths and workloads (`crate::cells::varying`): with `--input-len` or `--workload` one
//! section labelled by them replaces the per-context ones; a trace (Mooncake, Azure) replays
//! whole at `--time-scale` K as one rate row (the rate is K times the trace's), and with
//! `--time-scale auto` the capacity search runs over K × the trace's rate.

use crate::cells::context::{DriverError, MatrixEnd, MatrixRun};
use crate::cells::open_loop::send_each;
use crate::cells::outlet::save;
use crate::cells::rate_cell::rate_cell_row;
use crate::cells::section::{
    OPEN_LOOP_STREAMS, Section, fresh_requests, saturation_slots, take_streams, trace_rate_of,
};
use crate::cells::telemetry::CellRecorder;
use crate::cells::varying::{Varying, fixed_scale};
use crate::progress::events::{ProgressEvent, Stage};
use crate::prompts::prompt::PromptBuilder;
use llmib_core::{
    Capacity, CapacityInputs, CellResult, CellStatus, PlannedContext, RatePoint, RateSpec,
    SearchBounds, SearchStep, Slo, auto_rates, bare_result, capacity_cell, capacity_result,
    closed_batch_rate, duration_from_secs, next_step, now_rfc3339, rate_cell, round_rate,
};

/// The capacity search never measures more cells than this per context.
const MAX_SEARCH_STEPS: usize = 24;

/// The contexts an open-load section runs at: the plan's decode contexts, or the one a trace
/// or a length distribution brings (it runs even where every planned context was dropped).
/// None is a note, never a silent skip: the plan listed why each context was dropped.
fn load_contexts(m: &MatrixRun<'_>, varying: Option<&Varying>) -> Vec<PlannedContext> {
    let first = m.plan.contexts.iter().find(|c| c.decode);
    let contexts: Vec<PlannedContext> = match varying {
        Some(v) if v.replaces_contexts() => v.context(first).into_iter().collect(),
        _ => m
            .plan
            .contexts
            .iter()
            .filter(|c| c.decode)
            .cloned()
            .collect(),
    };
    if contexts.is_empty() {
        m.progress.event(ProgressEvent::Note(
            "open load not run: no planned context has room for decode on this server (see the dropped contexts above)".into(),
        ));
    }
    contexts
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
    let contexts = load_contexts(m, varying.as_ref());
    for ctx in &contexts {
        if *end == MatrixEnd::Completed {
            *end = stop();
        }
        if *end != MatrixEnd::Completed {
            let cell = capacity_cell(ctx.tokens, &ctx.label);
            if load.find_capacity && !m.done.contains(&cell.key) {
                save(
                    m,
                    bare_result(&cell, CellStatus::NotRun, Some(end.not_run_reason())),
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
                    bare_result(&cell, CellStatus::NotRun, Some(e.not_run_reason())),
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
            bare_result(&cell, CellStatus::NotRun, Some(stop.not_run_reason())),
        )?;
        s.ended = Some(stop);
        return Ok(None);
    }
    m.progress.event(ProgressEvent::CellStarted {
        index: m.plan.cells.len() + s.rate_rows.len(),
        total: m.plan.cells.len() + s.rate_rows.len() + 1,
        cell: cell.clone(),
    });
    let rec = CellRecorder::start(m, llmib_core::Phase::Rate);
    let mut row = rate_cell_row(&rec.run(m), builder, s, &cell, rate).await;
    row.started_at = Some(rec.started_at());
    row.finished_at = Some(now_rfc3339());
    rec.finish(m, &mut row).await;
    let interrupted = row.status == CellStatus::NotRun;
    if interrupted {
        row.status_reason = Some(MatrixEnd::Interrupted.not_run_reason());
    }
    save(m, row.clone())?;
    if interrupted {
        s.ended = Some(MatrixEnd::Interrupted);
        return Ok(None);
    }
    s.rate_rows.push(row);
    Ok(Some(()))
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
            Err(e) => {
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
