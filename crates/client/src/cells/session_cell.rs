//! One session cell (METHOD.md, "Sessions"): conversations from a history of C tokens. The cache
//! is flushed first where asked; every session's history is built and counted. A closed loop
//! of S sessions sends every history once together as turn 0 (the unmeasured warm-up: its
//! answer joins the history); once every warm-up is done the window opens and each session
//! sends its measured turns, one after another with its think time between, until its turns
//! are done or the window closes (a turn in flight then runs to its end, within a drain
//! limit). An open loop starts sessions at a rate (`--session-rate`, Poisson arrivals over the
//! window): each warms its own history at its arrival and runs its turns. Each session runs as
//! a task of its own (`session_turns`), so one session's reads never wait on another's. The
//! row is `llmib_core::session_result`'s.
//!
//! While it runs, the cell publishes a live window ([`announce`]): one stream per session, the
//! measured turns as they end, and the gauges its queue sampler reads, so a dashboard shows
//! the session cell's own figures and the server's gauges as it does a decode window's.

use crate::cells::context::MatrixRun;
use crate::cells::inputs::CellFailure;
use crate::cells::outlet::{finished_records, report_errors};
use crate::cells::session_turns::{
    Clock, Sent, SessionJob, TurnSpec, answer_tokens, run_session, send_turn, session_stream,
};
use crate::progress::events::{ProgressEvent, Stage};
use crate::progress::live::LiveWindow;
use crate::prompts::conversation::{Conversation, history};
use crate::prompts::prompt::{PromptBuilder, TextMaker};
use crate::server::engine::Engine;
use crate::wire::stream::{Counting, Measured};
use llmib_core::{
    CellResult, Outcome, PlannedCell, SessionObservation, SessionSettings, SplitMix64, TurnRecord,
    session_result,
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

/// Every session's history of exactly C tokens, built and counted.
async fn histories(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
    n: u32,
) -> Result<Vec<Conversation>, CellFailure> {
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    let chat = m.engine.api().is_conversation();
    let st = sx.settings;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
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

/// Every history sent once together (turn 0), from `origin`.
async fn warm_ups(
    m: &MatrixRun<'_>,
    output: u32,
    convs: &[Conversation],
    origin: Instant,
    live: &LiveWindow,
) -> Vec<Result<Measured, CellFailure>> {
    let limits = m.limits(convs.first().map_or(0, |c| c.tokens), convs.len() as u32);
    m.progress.event(ProgressEvent::Phase(Stage::WarmUp));
    futures_util::future::join_all(convs.iter().enumerate().map(|(i, c)| {
        let at = Clock {
            origin,
            cancel: &m.cancel,
            limits,
            live: Some(live),
        };
        send_turn(&m.engine, &m.model, c, output, i as u32, at)
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
    }
}

/// A closed loop of S sessions: the warm-ups together, then the window.
async fn closed_loop(
    m: &MatrixRun<'_>,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
    convs: Vec<Conversation>,
    live: &Arc<LiveWindow>,
) -> (Vec<Sent>, Option<f64>) {
    let origin = Instant::now();
    let s = convs.len() as u32;
    let warm = warm_ups(m, sx.settings.turn_output, &convs, origin, live).await;
    let d = m.plan.settings.duration_s;
    let window_end = Instant::now() + Duration::from_secs_f64(d);
    let cut = m.cancel.child_token();
    let (mut sent, mut jobs) = (Vec::new(), Vec::new());
    for (i, (conv, w)) in (0u32..).zip(convs.into_iter().zip(warm)) {
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
    let limit = window_end + Duration::from_secs_f64(d.max(30.0));
    let (turns, max_waiting) = run_window(m, jobs, limit, &cut, live).await;
    sent.extend(turns);
    (sent, max_waiting)
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

/// An open loop: each session starts at its arrival, warms its own history, then runs its
/// turns; the cell ends when every session has ended (within a drain limit).
async fn open_loop(
    m: &MatrixRun<'_>,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
    convs: Vec<Conversation>,
    due: &[u64],
    live: &Arc<LiveWindow>,
) -> (Vec<Sent>, Option<f64>) {
    let origin = Instant::now();
    let cut = m.cancel.child_token();
    let in_flight = convs.len() as u32;
    let jobs: Vec<SessionJob> = (0u32..)
        .zip(convs.into_iter().zip(due))
        .map(|(i, (conv, at))| {
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
    let d = m.plan.settings.duration_s;
    let limit = origin + Duration::from_secs_f64(d + d.max(120.0));
    run_window(m, jobs, limit, &cut, live).await
}

/// Measures one session cell.
pub(crate) async fn session_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    sx: &SessionContext<'_>,
    cell: &PlannedCell,
) -> CellResult {
    let flushed = match flush(m, sx.settings.flush_cache).await {
        Ok(f) => f,
        Err(e) => return e.row(cell),
    };
    let rate = cell.key.request_rate();
    let due = match rate.map(|r| arrivals(m, cell, r)).transpose() {
        Ok(d) => d,
        Err(e) => return e.row(cell),
    };
    let n = due
        .as_ref()
        .map_or(cell.key.concurrency, |d| d.len() as u32);
    let convs = match histories(m, builder, sx, cell, n).await {
        Ok(c) => c,
        Err(e) => return e.row(cell),
    };
    let before = cached_counter(&m.engine).await;
    // Every session runs `--turns` (an open loop's must end); without it a closed loop's
    // turns are as many as the window holds, not known before.
    let planned = sx.settings.turns.map(|t| u64::from(t) * u64::from(n));
    let live = announce(m, n, planned);
    let (sent, max_waiting) = match &due {
        Some(d) => open_loop(m, sx, cell, convs, d, &live).await,
        None => closed_loop(m, sx, cell, convs, &live).await,
    };
    let ran = Ran {
        sent,
        max_waiting,
        sessions: n,
        flushed,
        before,
    };
    finish_cell(m, sx, cell, ran).await
}

/// What a session cell's sessions did, for its row.
pub(crate) struct Ran {
    pub sent: Vec<Sent>,
    pub max_waiting: Option<f64>,
    pub sessions: u32,
    pub flushed: Option<bool>,
    /// The server's cached-token counter before the turns.
    pub before: Option<f64>,
}

/// The row of a session cell from what its sessions did: tokens counted, records saved (and
/// their errors reported), judged by `llmib_core::session_result`; Not run when Ctrl-C cut it.
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
    session_result(
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
    )
}
