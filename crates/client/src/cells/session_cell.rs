//! One session cell (METHOD.md, "Sessions"): conversations from a history of C tokens. The cache
//! is flushed first where asked; every session's history is built and counted. A closed loop
//! of S sessions sends every history once together as turn 0 (the unmeasured warm-up: its
//! answer joins the history); once every warm-up is done the window opens and each session
//! sends its measured turns, one after another with its think time between, until its turns
//! are done or the window closes (a turn in flight then runs to its end, within a drain
//! limit). An open loop starts sessions at a rate (`--session-rate`, Poisson arrivals over the
//! window): each warms its own history at its arrival and runs its turns. Each session runs as
//! a task of its own (`session_turns`), so one session's reads never wait on another's. The
//! row is `llmib_core::session_result`'s. On a shard the cell runs its sessions j ≡ I (mod N)
//! in its slot of the timetable, and saves what `merge` needs (`session_shard`).
//!
//! While it runs, the cell publishes a live window ([`announce`]): one stream per session, the
//! measured turns as they end, and the gauges its queue sampler reads, so a dashboard shows
//! the session cell's own figures and the server's gauges as it does a decode window's.

use crate::cells::context::MatrixRun;
use crate::cells::inputs::CellFailure;
use crate::cells::outlet::{finished_records, report_errors};
use crate::cells::session_shard::{self, SessionShare};
use crate::cells::session_turns::{
    Clock, Sent, SessionJob, TurnSpec, answer_tokens, run_session, send_turn, session_stream,
};
use crate::progress::events::{ProgressEvent, Stage};
use crate::progress::live::LiveWindow;
use crate::prompts::conversation::{Conversation, history};
use crate::prompts::filler::TextMaker;
use crate::prompts::prompt::PromptBuilder;
use crate::server::engine::Engine;
use crate::wire::stream::{Counting, Measured};
use llmib_core::{
    CellResult, Outcome, PlannedCell, SessionLoop, SessionObservation, SessionSettings, SplitMix64,
    TurnMeta, TurnRecord, session_limits, session_result_at, session_slot_kind,
};
use std::sync::Arc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// What every session cell of a context shares.
pub(crate) struct SessionContext<'a> {
    /// The section's settings.
    pub settings: &'a SessionSettings,
    /// The system prompt of each group (one per session where none is shared).
    pub systems: &'a [String],
    /// The cache block size of the prediction.
    pub block: u64,
    /// The context's measured prefill rate, tok/s.
    pub prefill_tok_per_s: Option<f64>,
    /// Makes each turn's new message.
    pub text: TextMaker,
}

/// Samples the server's queue gauge until `stop`: the highest it read (`None`: no gauge).
/// Every sample is also the live window's latest, so the dashboard shows the server's gauges
/// during a session cell as it does during a decode window (no request of its own).
fn sample_queue(
    engine: Arc<Engine>,
    every: Duration,
    stop: CancellationToken,
    live: Arc<LiveWindow>,
) -> tokio::task::JoinHandle<Option<f64>> {
    tokio::spawn(async move {
        let mut max: Option<f64> = None;
        loop {
            if let Ok(g) = engine.gauges().await {
                live.set_gauges(g, std::time::Instant::now());
                if let Some(w) = g.waiting {
                    max = Some(max.map_or(w, |m: f64| m.max(w)));
                }
            }
            tokio::select! {
                () = stop.cancelled() => return max,
                () = tokio::time::sleep(every) => {}
            }
        }
    })
}

/// The cell's live window, announced to the displays: `sessions` streams, `planned` measured
/// turns where known.
pub(crate) fn announce(m: &MatrixRun<'_>, sessions: u32, planned: Option<u64>) -> Arc<LiveWindow> {
    let live = Arc::new(LiveWindow::for_sessions(
        sessions,
        Duration::from_secs_f64(m.plan.settings.duration_s.max(0.0)),
        m.engine.counting() == Counting::UsagePerChunk,
        planned,
    ));
    m.progress.event(ProgressEvent::WindowLive(live.clone()));
    live
}

/// The server's cumulative cached-prompt-token counter, where it has one.
pub(crate) async fn cached_counter(engine: &Engine) -> Option<f64> {
    engine.gauges().await.ok()?.cached_prompt_tokens_total
}

/// Empties the server's cache before the cell where asked: `Some(true)` flushed,
/// `Some(false)` asked but the engine has no endpoint, `None` not asked.
pub(crate) async fn flush(m: &MatrixRun<'_>, asked: bool) -> Result<Option<bool>, CellFailure> {
    if !asked {
        return Ok(None);
    }
    match m.engine.flush_prefix_cache().await {
        Ok(Some(_)) => Ok(Some(true)),
        Ok(None) => {
            m.progress.event(ProgressEvent::Note(
                "--flush-cache: this engine has no endpoint to flush its prefix cache; the cell runs on a warm cache".into(),
            ));
            Ok(Some(false))
        }
        Err(e) => Err(CellFailure::schedule(format!(
            "flushing the server's prefix cache failed: {e}"
        ))),
    }
}

/// The history of exactly C tokens of each session of `ids` (global indices), built and
/// counted.
async fn histories(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
    ids: &[u32],
) -> Result<Vec<Conversation>, CellFailure> {
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    let chat = m.engine.api().is_conversation();
    let st = sx.settings;
    let mut out = Vec::with_capacity(ids.len());
    for &i in ids {
        let system = &sx.systems[st.group_of(i).unwrap_or(i) as usize % sx.systems.len().max(1)];
        let stream = session_stream(cell.key, i);
        let hint = st.system_prompt_tokens;
        let c = history(
            builder,
            &m.engine,
            chat,
            system,
            hint,
            cell.key.context_tokens,
            stream,
        )
        .await
        .map_err(|e| CellFailure::from(&e))?;
        out.push(c);
    }
    Ok(out)
}

/// Every history sent once together (turn 0), from `origin`, each as its session's stream;
/// `in_flight` sessions run at once (every shard's).
async fn warm_ups(
    m: &MatrixRun<'_>,
    output: u32,
    convs: &[(u32, Conversation)],
    (origin, in_flight): (Instant, u32),
    live: &LiveWindow,
) -> Vec<Result<Measured, CellFailure>> {
    let limits = m.limits(convs.first().map_or(0, |c| c.1.tokens), in_flight);
    m.progress.event(ProgressEvent::Phase(Stage::WarmUp));
    futures_util::future::join_all(convs.iter().map(|(j, c)| {
        let at = Clock {
            origin,
            cancel: &m.cancel,
            limits,
            live: Some(live),
        };
        send_turn(&m.engine, &m.model, c, output, *j, at)
    }))
    .await
}

/// Runs the sessions' tasks until they end or `limit` cuts them; with the highest queue gauge
/// read meanwhile (each sample published on `live`).
pub(crate) async fn run_window(
    m: &MatrixRun<'_>,
    jobs: Vec<SessionJob>,
    limit: Instant,
    cut: &CancellationToken,
    live: &Arc<LiveWindow>,
) -> (Vec<Sent>, Option<f64>) {
    m.progress.event(ProgressEvent::Phase(Stage::OpenLoop));
    live.open_turns(std::time::Instant::now());
    let stop = CancellationToken::new();
    let every = Duration::from_millis(m.plan.settings.gauge_interval_ms.max(50));
    let sampler = sample_queue(m.engine.clone(), every, stop.clone(), live.clone());
    let tasks: Vec<_> = jobs
        .into_iter()
        .map(|j| tokio::spawn(run_session(j)))
        .collect();
    let limit = tokio::time::sleep_until(limit);
    tokio::pin!(limit);
    let all = futures_util::future::join_all(tasks);
    tokio::pin!(all);
    let done = tokio::select! {
        d = &mut all => d,
        () = &mut limit => { cut.cancel(); all.await }
    };
    stop.cancel();
    let max_waiting = sampler.await.ok().flatten();
    live.close(std::time::Instant::now());
    (done.into_iter().flatten().flatten().collect(), max_waiting)
}

/// Most turns a closed-loop session plans in one window.
const MAX_WINDOW_TURNS: u32 = 1000;

/// The measured turns of session `i`: `--turns` of them (a closed loop without it: as many as
/// the window holds), each message's length and think time drawn from the run's seed.
fn turn_specs(m: &MatrixRun<'_>, st: &SessionSettings, i: u32, key: u64) -> Vec<TurnSpec> {
    let seed = m
        .plan
        .settings
        .request
        .seed
        .unwrap_or(m.plan.settings.prompt_seed);
    let mut rng = SplitMix64::new(seed ^ key.rotate_left(17) ^ u64::from(i).rotate_left(40));
    (0..st.turns.unwrap_or(MAX_WINDOW_TURNS))
        .map(|_| TurnSpec {
            text: None,
            input: st.turn_input.sample(&mut rng).max(1),
            output: st.turn_output,
            think_s: st.think_time.draw(rng.unit()),
        })
        .collect()
}

/// One session's job: its conversation and plan, starting `start` after `origin`.
struct JobParts {
    /// The cell's key (its sessions' tags are its own).
    key: llmib_core::CellKey,
    conv: Conversation,
    session: u32,
    start: Duration,
    warm_output: Option<u32>,
    /// The warm-up's answer and its tokens, where it was sent already.
    answer: (String, u64),
    window_end: Option<Instant>,
    /// The conversation is the first measured turn (a replay's opening).
    first_as_is: bool,
}

fn job(
    m: &MatrixRun<'_>,
    sx: &SessionContext<'_>,
    p: JobParts,
    specs: Vec<TurnSpec>,
    clock: (Instant, &CancellationToken, u32, &Arc<LiveWindow>),
) -> SessionJob {
    let st = sx.settings;
    let (origin, cut, in_flight, live) = clock;
    SessionJob {
        engine: m.engine.clone(),
        model: m.model.clone(),
        session: p.session,
        tag: session_stream(p.key, p.session),
        start: p.start,
        warm_output: p.warm_output,
        answer: p.answer.0,
        answer_tokens: p.answer.1,
        specs,
        first_as_is: p.first_as_is,
        block: sx.block,
        text: sx.text,
        window_end: p.window_end,
        origin,
        cancel: cut.clone(),
        limits: m.limits(p.conv.tokens, in_flight),
        max_prompt: m
            .plan
            .context_length
            .map(|l| l.saturating_sub(u64::from(st.turn_output))),
        conv: p.conv,
        live: Some(live.clone()),
        agent: Default::default(),
    }
}

/// A closed loop of S sessions (`convs`: this process's, by their global index) from
/// `origin`: the warm-ups together, then the window (on a shard, at its slot's instants; with
/// whether this shard's warm-ups were done when it opened).
async fn closed_loop(
    m: &MatrixRun<'_>,
    (sx, cell): (&SessionContext<'_>, &PlannedCell),
    convs: Vec<(u32, Conversation)>,
    (origin, share): (Instant, &SessionShare),
    live: &Arc<LiveWindow>,
) -> ((Vec<Sent>, Option<f64>), Option<bool>) {
    // Every shard's sessions run at once: the server holds all S.
    let s = share.starts.len() as u32;
    let warm = warm_ups(m, sx.settings.turn_output, &convs, (origin, s), live).await;
    let d = m.plan.settings.duration_s;
    let (window_end, ready) = session_shard::window(m, share, d).await;
    let cut = m.cancel.child_token();
    let (mut sent, mut jobs) = (Vec::new(), Vec::new());
    for ((i, conv), w) in convs.into_iter().zip(warm) {
        let Ok(w) = w else { continue };
        let specs = turn_specs(m, sx.settings, i, cell.key.context_tokens);
        let ok = matches!(w.record.outcome, Outcome::Finished { .. });
        let parts = JobParts {
            key: cell.key,
            session: i,
            start: Duration::ZERO,
            warm_output: None,
            answer: (w.answer.clone().unwrap_or_default(), answer_tokens(&w)),
            window_end: Some(window_end),
            first_as_is: false,
            conv,
        };
        sent.push(Sent {
            session: i,
            turn: 0,
            prompt_tokens: parts.conv.tokens,
            predicted: 0,
            measured: w,
        });
        if ok {
            jobs.push(job(m, sx, parts, specs, (origin, &cut, s, live)));
        }
    }
    // A turn in flight at the window's close runs to its end, within this limit.
    let (_, drain) = session_limits(SessionLoop::Closed, d, 0.0);
    let limit = window_end + Duration::from_secs_f64(drain);
    let (turns, max_waiting) = run_window(m, jobs, limit, &cut, live).await;
    sent.extend(turns);
    ((sent, max_waiting), ready)
}

/// Most sessions one open-loop cell may start (rate × window).
const MAX_SESSIONS_PER_CELL: usize = 4096;

/// The arrival instants of an open loop's sessions at `rate` per second over the window
/// (`--arrival`, Poisson unless asked; seeded from the run's seed).
fn arrivals(m: &MatrixRun<'_>, cell: &PlannedCell, rate: f64) -> Result<Vec<u64>, CellFailure> {
    let st = &m.plan.settings;
    let seed = st.request.seed.unwrap_or(st.prompt_seed) ^ cell.key.rate_mrps ^ 0x5e55;
    let pattern = st
        .sessions
        .as_ref()
        .map_or(llmib_core::ArrivalPattern::Poisson, |s| s.arrival);
    let due =
        llmib_core::cell_schedule(pattern, rate, st.duration_s, seed, cell.key.context_tokens)
            .map_err(|e| CellFailure::schedule(e.to_string()))?;
    if due.len() > MAX_SESSIONS_PER_CELL {
        return Err(CellFailure::schedule(format!(
            "{} sessions arrive in the window, more than one cell holds ({MAX_SESSIONS_PER_CELL}): lower --session-rate or --duration",
            due.len()
        )));
    }
    Ok(due)
}

/// An open loop from `origin`: each session (`convs`: this process's, by their global index)
/// starts at its arrival, warms its own history, then runs its turns; the cell ends when
/// every session has ended (within a drain limit).
async fn open_loop(
    m: &MatrixRun<'_>,
    (sx, cell): (&SessionContext<'_>, &PlannedCell),
    convs: Vec<(u32, Conversation)>,
    (origin, share): (Instant, &SessionShare),
    live: &Arc<LiveWindow>,
) -> (Vec<Sent>, Option<f64>) {
    let cut = m.cancel.child_token();
    let in_flight = share.starts.len() as u32;
    let jobs: Vec<SessionJob> = convs
        .into_iter()
        .zip(&share.mine)
        .map(|((i, conv), (_, at))| {
            let specs = turn_specs(m, sx.settings, i, cell.key.context_tokens);
            let parts = JobParts {
                key: cell.key,
                session: i,
                start: Duration::from_nanos(*at),
                warm_output: Some(sx.settings.turn_output),
                answer: (String::new(), 0),
                window_end: None,
                first_as_is: false,
                conv,
            };
            job(m, sx, parts, specs, (origin, &cut, in_flight, live))
        })
        .collect();
    let (span, drain) = session_limits(SessionLoop::Open, m.plan.settings.duration_s, 0.0);
    let limit = origin + Duration::from_secs_f64(span + drain);
    run_window(m, jobs, limit, &cut, live).await
}

/// Measures one session cell: on a shard, its sessions j ≡ I (mod N) in its slot of the
/// timetable (`session_shard`).
pub(crate) async fn session_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
) -> CellResult {
    let rate = cell.key.request_rate();
    let due = match rate.map(|r| arrivals(m, cell, r)).transpose() {
        Ok(d) => d,
        Err(e) => return e.row(cell),
    };
    let kind = if due.is_some() {
        SessionLoop::Open
    } else {
        SessionLoop::Closed
    };
    let starts = due.unwrap_or_else(|| vec![0; cell.key.concurrency as usize]);
    let build = (starts.len() as u64).saturating_mul(cell.key.context_tokens);
    let slot = session_slot_kind(kind, build, m.plan.settings.duration_s, 0.0);
    let Some(share) = session_shard::share(m, starts, slot).await else {
        return llmib_core::interrupted_result(cell);
    };
    if share.mine.is_empty() && share.slot.is_some() {
        return session_shard::idle_row(m, cell, &share);
    }
    match measure(m, builder, (sx, cell), &share, kind).await {
        Ok(ran) => finish_cell(m, sx, cell, ran).await,
        Err(row) => session_shard::finish(m, cell, &share, Vec::new(), (None, None), row),
    }
}

/// This process's sessions of a cell run (`Err`: the row of a cell that failed before its
/// turns): the cache flushed where asked, the histories built, then the loop from the origin.
async fn measure(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    (sx, cell): (&SessionContext<'_>, &PlannedCell),
    share: &SessionShare,
    kind: SessionLoop,
) -> Result<Ran, CellResult> {
    let asked = sx.settings.flush_cache && share.flushes(m);
    let flushed = flush(m, asked).await.map_err(|e| e.row(cell))?;
    let ids = share.ids();
    let convs = histories(m, builder, sx, cell, &ids)
        .await
        .map_err(|e| e.row(cell))?;
    let before = cached_counter(&m.engine).await;
    let closed = kind == SessionLoop::Closed;
    let origin = session_shard::origin(m, share, closed)
        .await
        .map_err(|late| llmib_core::failed_result(cell, "shard_late", late.to_string()))?;
    // Every session runs `--turns` (an open loop's must end); without it a closed loop's
    // turns are as many as the window holds, not known before.
    let planned = sx.settings.turns.map(|t| u64::from(t) * ids.len() as u64);
    // The live window holds every session's stream: a shard's are its global indices.
    let live = announce(m, share.starts.len() as u32, planned);
    let sessions = ids.len() as u32;
    let convs: Vec<(u32, Conversation)> = ids.into_iter().zip(convs).collect();
    let ((sent, max_waiting), ready) = if closed {
        closed_loop(m, (sx, cell), convs, (origin, share), &live).await
    } else {
        let ran = open_loop(m, (sx, cell), convs, (origin, share), &live).await;
        (ran, None)
    };
    Ok(Ran {
        sent,
        max_waiting,
        sessions,
        flushed,
        before,
        share: share.clone(),
        ready,
    })
}

/// What a session cell's sessions did, for its row.
pub(crate) struct Ran {
    pub sent: Vec<Sent>,
    pub max_waiting: Option<f64>,
    /// Sessions this process ran.
    pub sessions: u32,
    pub flushed: Option<bool>,
    /// The server's cached-token counter before the turns.
    pub before: Option<f64>,
    /// Which sessions were this process's, and on a shard its slot.
    pub share: SessionShare,
    /// A closed loop on a shard: its warm-ups were done when the window opened.
    pub ready: Option<bool>,
}

/// The row of a session cell from what its sessions did: tokens counted, records saved (and
/// their errors reported), judged by `llmib_core::session_result`; Not run when Ctrl-C cut it.
/// On a shard, with what `merge` needs (`session_shard::finish`).
pub(crate) async fn finish_cell(
    m: &MatrixRun<'_>,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
    ran: Ran,
) -> CellResult {
    if m.cancel.is_cancelled() {
        return llmib_core::interrupted_result(cell);
    }
    let Ran {
        sent,
        max_waiting,
        sessions: n,
        flushed,
        before,
        share,
        ready,
    } = ran;
    let after = cached_counter(&m.engine).await;
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    let mut measured: Vec<Measured> = Vec::with_capacity(sent.len());
    let mut meta = Vec::with_capacity(sent.len());
    for s in sent {
        meta.push((s.session, s.turn, s.prompt_tokens, s.predicted));
        measured.push(s.measured);
    }
    let count = crate::server::counting::count_tokens(&m.engine, &mut measured).await;
    let records = finished_records(m, cell.key, measured);
    report_errors(m, Stage::OpenLoop, &records);
    let turns: Vec<TurnRecord> = meta
        .into_iter()
        .zip(records)
        .map(
            |((session, turn, prompt_tokens, predicted), record)| TurnRecord {
                session,
                turn,
                prompt_tokens,
                predicted_cached_tokens: predicted,
                record,
            },
        )
        .collect();
    let metas: Vec<TurnMeta> = match m.shard {
        Some(_) => turns.iter().map(TurnMeta::of).collect(),
        None => Vec::new(),
    };
    let row = session_result_at(
        cell,
        SessionObservation {
            turns: &turns,
            sessions: n,
            max_waiting,
            prefill_tok_per_s: sx.prefill_tok_per_s,
            cache_block_tokens: sx.block,
            kv_capacity: m.plan.kv_capacity_tokens,
            cache_flushed: flushed,
            server_cached_tokens: before.zip(after).map(|(b, a)| a - b),
            slo: sx.settings.slo.as_ref(),
            count,
            nominal_source: m.engine.counting().nominal_source(),
            prompt_tolerance: 0,
            fault: None,
        },
        &m.plan.settings.percentiles,
    );
    session_shard::finish(m, cell, &share, metas, (max_waiting, ready), row)
}
