//! The session section of each context, run after the matrix and open load (METHOD.md,
//! "Sessions"): one session cell per `--sessions` S, each a row saved as soon as it is known.
//! A cell whose sessions' histories and first turns cannot fit in the server's KV cache at
//! once is predicted Over capacity and sends nothing (`llmib_core::session_kv_needed`); a run
//! that stops writes the rest as Not run; `--resume` skips the rows it keeps.

use crate::cells::context::{DriverError, MatrixEnd, MatrixRun};
use crate::cells::outlet::save;
use crate::cells::session_cell::{SessionContext, session_cell};
use crate::cells::session_turns::SESSION_STREAMS;
use crate::cells::telemetry::CellRecorder;
use crate::progress::events::ProgressEvent;
use crate::prompts::prompt::PromptBuilder;
use llmib_core::{
    Capacity, CellKey, CellResult, CellStatus, Phase, PlannedCell, PlannedContext, RatePoint,
    SESSIONS_CEILING, SearchBounds, SearchStep, SessionSettings, Slo, bare_result, capacity_cell,
    next_session_rate_step, next_session_step, now_rfc3339, session_capacity_result, session_holds,
    session_kv_needed, session_rate_bounds, session_rate_capacity_cell,
    session_rate_capacity_result, session_rate_points,
};

/// The capacity search never measures more cells than this per context.
const MAX_SEARCH_STEPS: usize = 24;

/// The planned session cell of (C, S).
pub(crate) fn session_planned(ctx: &PlannedContext, sessions: u32) -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase: Phase::Session,
            context_tokens: ctx.tokens,
            concurrency: sessions,
            rate_mrps: 0,
        },
        label: ctx.label.clone(),
        over_capacity: false,
    }
}

/// The planned open-loop session cell of (C, sessions per second).
pub(crate) fn session_rate_planned(ctx: &PlannedContext, rate: f64) -> PlannedCell {
    let mut cell = session_planned(ctx, 0);
    cell.key.rate_mrps = llmib_core::rate_mrps(rate);
    cell
}

/// The KV a cell needs against the server's capacity: `Some(reason)` when it cannot fit.
fn over_capacity(st: &SessionSettings, cell: &PlannedCell, kv: Option<u64>) -> Option<String> {
    let kv = kv?;
    let k = cell.key;
    let needs = session_kv_needed(
        k.concurrency,
        k.context_tokens,
        st.turn_input.max(),
        st.turn_output,
    );
    (needs > kv).then(|| {
        format!(
            "{} sessions × (history {} + turn {} + 2 × {} output) = {needs} KV tokens > capacity {kv}",
            k.concurrency,
            k.context_tokens,
            st.turn_input.max(),
            st.turn_output
        )
    })
}

/// The system prompt of each group, made once per run so that groups share them across cells
/// too, as an agent's system prompt stays cached between its sessions.
fn system_prompts(builder: &PromptBuilder, st: &SessionSettings) -> Vec<String> {
    let groups = match st.system_prompt_groups {
        0 => st.sessions.iter().copied().max().unwrap_or(1),
        g => g,
    };
    let text = builder.text_maker();
    (0..groups)
        .map(|g| {
            text.text(
                st.system_prompt_tokens,
                u64::from(g),
                SESSION_STREAMS - 1 - g,
                "system-",
            )
        })
        .collect()
}

/// The context's measured prefill rate (its prefill row), for the TTFT split.
fn prefill_rate(rows: &[CellResult], context: u64) -> Option<f64> {
    rows.iter()
        .filter(|r| r.phase == Phase::Prefill && r.status.has_figures())
        .filter(|r| r.context_tokens == context)
        .find_map(|r| r.prompt_tok_per_s)
}

/// What a context's session cells share while they run.
struct Section<'a, 'b> {
    m: &'a MatrixRun<'b>,
    sx: SessionContext<'a>,
    ctx: &'a PlannedContext,
    /// Rows of this context, saved before (resume) or now.
    rows: Vec<CellResult>,
    index: usize,
    total: usize,
}

/// The row of (C, S): kept from before, predicted Over capacity, Not run (the run stopped), or
/// measured now; saved and kept in the section's rows. `Ok(false)`: the run stopped.
async fn cell_row(
    sec: &mut Section<'_, '_>,
    builder: &mut PromptBuilder,
    end: &mut MatrixEnd,
    stop: &impl Fn() -> MatrixEnd,
    cell: PlannedCell,
) -> Result<bool, DriverError> {
    let m = sec.m;
    sec.index += 1;
    if sec.rows.iter().any(|r| r.key() == cell.key) {
        return Ok(true);
    }
    if let Some(why) = over_capacity(sec.sx.settings, &cell, m.plan.kv_capacity_tokens)
        && !m.plan.settings.measure_over_capacity
    {
        let row = bare_result(&cell, CellStatus::OverCapacity, Some(why));
        save(m, row.clone())?;
        sec.rows.push(row);
        return Ok(true);
    }
    if *end == MatrixEnd::Completed {
        *end = stop();
    }
    if *end != MatrixEnd::Completed {
        save(
            m,
            bare_result(&cell, CellStatus::NotRun, Some(end.not_run_reason())),
        )?;
        return Ok(false);
    }
    m.progress.event(ProgressEvent::CellStarted {
        index: sec.index - 1,
        total: sec.total.max(sec.index),
        cell: cell.clone(),
    });
    let rec = CellRecorder::start(m, Phase::Session);
    let mut row = session_cell(&rec.run(m), builder, &sec.sx, &cell).await;
    if row.status == CellStatus::NotRun && m.cancel.is_cancelled() {
        *end = MatrixEnd::Interrupted;
        row.status_reason = Some(end.not_run_reason());
    }
    row.started_at = Some(rec.started_at());
    row.finished_at = Some(now_rfc3339());
    rec.finish(m, &mut row).await;
    save(m, row.clone())?;
    if *end != MatrixEnd::Completed {
        return Ok(false);
    }
    sec.rows.push(row);
    Ok(true)
}

/// What a context's capacity search runs over: concurrent sessions from a first count
/// (`llmib_core::next_session_step`), or session rates within bounds
/// (`llmib_core::next_session_rate_step`); each has its own capacity row.
#[derive(Debug, Clone, Copy)]
enum Over {
    Sessions(u32),
    Rates(SearchBounds),
}

impl Over {
    /// The context's capacity row of this search.
    fn capacity_cell(self, ctx: &PlannedContext) -> PlannedCell {
        match self {
            Over::Sessions(_) => capacity_cell(ctx.tokens, &ctx.label),
            Over::Rates(_) => session_rate_capacity_cell(ctx.tokens, &ctx.label),
        }
    }

    /// The next step from the context's rows so far.
    fn step(self, rows: &[CellResult], ctx: &PlannedContext, precision: f64) -> SearchStep {
        match self {
            Over::Sessions(start) => {
                let points: Vec<RatePoint> = rows
                    .iter()
                    .filter(|r| r.phase == Phase::Session && r.key().rate_mrps == 0)
                    .map(|r| RatePoint {
                        rate: f64::from(r.concurrency),
                        holds: session_holds(r),
                    })
                    .collect();
                next_session_step(&points, start, SESSIONS_CEILING, precision)
            }
            Over::Rates(bounds) => {
                next_session_rate_step(&session_rate_points(rows, ctx.tokens), bounds)
            }
        }
    }

    /// The session cell at a point of the search.
    fn point(self, ctx: &PlannedContext, x: f64) -> PlannedCell {
        match self {
            Over::Sessions(_) => session_planned(ctx, x as u32),
            Over::Rates(_) => session_rate_planned(ctx, x),
        }
    }
}

/// A capacity search (`over`), every point a session row; then the context's capacity row
/// (unless the run stopped first).
async fn search(
    sec: &mut Section<'_, '_>,
    builder: &mut PromptBuilder,
    (end, stop): (&mut MatrixEnd, &impl Fn() -> MatrixEnd),
    slo: &Slo,
    over: Over,
) -> Result<(), DriverError> {
    let st = sec.sx.settings;
    let cell = over.capacity_cell(sec.ctx);
    if sec.m.done.contains(&cell.key) {
        return Ok(());
    }
    let mut answer = Capacity::None;
    for _ in 0..MAX_SEARCH_STEPS {
        match over.step(&sec.rows, sec.ctx, st.precision) {
            SearchStep::Done(c) => {
                answer = c;
                break;
            }
            SearchStep::Measure(x) => {
                let point = over.point(sec.ctx, x);
                if !cell_row(sec, builder, end, stop, point).await? {
                    return Ok(());
                }
            }
        }
    }
    let mut row = match over {
        Over::Sessions(_) => session_capacity_result(&cell, slo, st.precision, answer, &sec.rows),
        Over::Rates(_) => session_rate_capacity_result(&cell, slo, st.precision, answer, &sec.rows),
    };
    row.finished_at = Some(now_rfc3339());
    save(sec.m, row)
}

/// The context's capacity searches over what was given: session counts (`--sessions`),
/// session rates (`--session-rate`, from its first), or both, each with its own capacity row.
async fn searches(
    sec: &mut Section<'_, '_>,
    builder: &mut PromptBuilder,
    end: &mut MatrixEnd,
    stop: &impl Fn() -> MatrixEnd,
    slo: &Slo,
) -> Result<(), DriverError> {
    let st = sec.sx.settings;
    let first_rate = st.session_rates.as_ref().and_then(|r| r.first().copied());
    if !st.sessions.is_empty() || first_rate.is_none() {
        let start = st.sessions.first().copied().unwrap_or(1);
        search(sec, builder, (end, stop), slo, Over::Sessions(start)).await?;
    }
    match (first_rate, &*end) {
        (Some(r), MatrixEnd::Completed) => {
            let over = Over::Rates(session_rate_bounds(r, st.precision));
            search(sec, builder, (end, stop), slo, over).await
        }
        _ => Ok(()),
    }
}

/// Runs the session section of every context that has decode cells, in context order: the
/// cells of `--sessions`, then with `--find-capacity` the search. `end` is how the run so far
/// ended: a stopped run writes the rest as Not run.
pub(crate) async fn run_session_sections(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    end: &mut MatrixEnd,
    stop: impl Fn() -> MatrixEnd,
) -> Result<(), DriverError> {
    let Some(st) = m.plan.settings.sessions.as_ref() else {
        return Ok(());
    };
    let (prior, _) = m.store.load_cells()?;
    builder.learn_word_rate().await;
    let systems = system_prompts(builder, st);
    let block = st
        .cache_block_tokens
        .or_else(|| m.engine.cache_block_tokens())
        .unwrap_or(1);
    // A session's room comes from its own lengths, not `--max-output` (`session_contexts`).
    let (contexts, no_room) = llmib_core::session_contexts(m.plan);
    if let Some(spec) = &st.replay {
        let sx = SessionContext {
            settings: st,
            systems: &systems,
            block,
            // A replay has no one context: the first context's prefill rate splits its TTFTs.
            prefill_tok_per_s: contexts
                .first()
                .and_then(|c| prefill_rate(&prior, c.tokens)),
            text: builder.text_maker(),
        };
        return crate::cells::session_replay::run_replays(m, builder, &sx, spec, end, &stop).await;
    }
    // Never dropped without a word: each context without room says why, and the contexts the
    // plan dropped were said at the run's start.
    for why in &no_room {
        m.progress.event(ProgressEvent::Note(why.to_string()));
    }
    if contexts.is_empty() {
        m.progress.event(ProgressEvent::Note(
            "sessions not run: no planned context has room for a conversation on this server (see the notes above)".into(),
        ));
    }
    let rates = st.session_rates.as_ref().map_or(0, Vec::len);
    let total = contexts.len() * (st.sessions.len() + rates);
    let mut index = 0;
    for ctx in contexts {
        let mut sec = Section {
            m,
            sx: SessionContext {
                settings: st,
                systems: &systems,
                block,
                prefill_tok_per_s: prefill_rate(&prior, ctx.tokens),
                text: builder.text_maker(),
            },
            ctx,
            rows: prior
                .iter()
                .filter(|r| r.phase == Phase::Session && r.context_tokens == ctx.tokens)
                .filter(|r| m.done.contains(&r.key()))
                .cloned()
                .collect(),
            index,
            total,
        };
        let mut stopped = false;
        let rates = st.session_rates.iter().flatten();
        let cells = st.sessions.iter().map(|s| session_planned(ctx, *s));
        for cell in cells.chain(rates.map(|r| session_rate_planned(ctx, *r))) {
            if !cell_row(&mut sec, builder, end, &stop, cell).await? {
                stopped = true;
            }
        }
        if let (false, true, Some(slo)) = (stopped, st.find_capacity, st.slo.as_ref()) {
            searches(&mut sec, builder, end, &stop, slo).await?;
        }
        index = sec.index;
    }
    Ok(())
}
