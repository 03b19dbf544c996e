//! One session cell (METHOD.md, "Sessions"): S conversations from a history of C tokens. The
//! cache is flushed first where asked; every session's history is built and counted, then sent
//! once as turn 0 (the unmeasured warm-up: its answer joins the history); once every warm-up
//! is done the window opens and each session sends its measured turns, one after another with
//! its think time between, until its turns are done or the window closes (a turn in flight
//! then runs to its end, within a drain limit). Each session runs as a task of its own, so one
//! session's reads never wait on another's. The row is `llmib_core::session_result`'s.

use crate::cells::context::MatrixRun;
use crate::cells::inputs::CellFailure;
use crate::cells::outlet::{finished_records, report_errors};
use crate::progress::events::{ProgressEvent, Stage};
use crate::prompts::conversation::{Conversation, history};
use crate::prompts::prompt::{PromptBuilder, TextMaker};
use crate::server::engine::Engine;
use crate::wire::stream::{Measured, StreamLimits, measure};
use llmib_core::{
    CellResult, Outcome, PlannedCell, SessionObservation, SessionSettings, SplitMix64, TurnRecord,
    predicted_cached_prefix, session_result, turn_shared_prefix,
};
use std::sync::Arc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Sessions' stream indices start here, apart from the matrix's and open load's prompts.
pub(crate) const SESSION_STREAMS: u32 = 3_000_000;

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
}

/// One session's part of the window, sent to its task.
struct SessionJob {
    engine: Arc<Engine>,
    model: String,
    conv: Conversation,
    session: u32,
    /// The warm-up's answer and its tokens.
    answer: String,
    answer_tokens: u64,
    turns: Option<u32>,
    output: u32,
    block: u64,
    think: llmib_core::ThinkTime,
    text: TextMaker,
    user_tokens: Vec<u64>,
    window_end: Instant,
    origin: Instant,
    cancel: CancellationToken,
    limits: StreamLimits,
    seed: u64,
    /// The longest prompt a turn may have (the context length less the output).
    max_prompt: Option<u64>,
}

/// A turn sent: which, its built prompt and prediction, and what came back.
struct Sent {
    session: u32,
    turn: u32,
    prompt_tokens: u64,
    predicted: u64,
    measured: Measured,
}

/// Where a turn's instants are measured from, what stops it, and its silence limits.
#[derive(Clone, Copy)]
struct Clock<'a> {
    origin: Instant,
    cancel: &'a CancellationToken,
    limits: StreamLimits,
}

/// Sends one turn of `conv` as `stream` and keeps its answer.
async fn send_turn(
    engine: &Engine,
    model: &str,
    conv: &Conversation,
    output: u32,
    stream: u32,
    at: Clock<'_>,
) -> Result<Measured, CellFailure> {
    let mut spec = engine
        .stream_request(model, conv.input(), output, false, at.limits)
        .map_err(|e| CellFailure::request_body(e.to_string()))?;
    spec.keep_answer = true;
    Ok(measure(engine.client(), &spec, stream, at.origin, at.cancel, None).await)
}

/// Output tokens of a finished turn: the server's count, else the chunks'.
fn answer_tokens(m: &Measured) -> u64 {
    m.record
        .completion_tokens_reported
        .unwrap_or_else(|| m.record.tokens())
}

/// One session's measured turns, until its turns are done, the window closes or a turn fails
/// (a broken conversation cannot go on).
async fn run_session(mut j: SessionJob) -> Vec<Sent> {
    let mut out = Vec::new();
    let mut rng = SplitMix64::new(j.seed ^ u64::from(j.session).rotate_left(29));
    let (mut prev_prompt, mut prev_answer) = (j.conv.tokens, j.answer_tokens);
    let mut k = 1u32;
    while j.turns.is_none_or(|t| k <= t) && !j.cancel.is_cancelled() {
        let think = Duration::from_secs_f64(j.think.draw(rng.unit()).max(0.0));
        if Instant::now() + think >= j.window_end {
            break;
        }
        tokio::time::sleep(think).await;
        let want = j.user_tokens[(k as usize - 1) % j.user_tokens.len()];
        let user = j
            .text
            .text(want, u64::from(k), SESSION_STREAMS + j.session, "turn-");
        j.conv.push_turn(&j.answer, &user);
        if j.conv.count(&j.engine).await.is_err() {
            // Counting failed (the server went away): the turns so far stand.
            break;
        }
        if j.max_prompt.is_some_and(|max| j.conv.tokens > max) {
            // The conversation reached the model's context length: it ends here.
            break;
        }
        let predicted = predicted_cached_prefix(
            turn_shared_prefix(prev_prompt, prev_answer),
            j.conv.tokens,
            j.block,
        );
        let stream = j.session;
        let at = Clock {
            origin: j.origin,
            cancel: &j.cancel,
            limits: j.limits,
        };
        let sent = send_turn(&j.engine, &j.model, &j.conv, j.output, stream, at).await;
        let Ok(m) = sent else { break };
        let ok = matches!(m.record.outcome, Outcome::Finished { .. });
        (prev_prompt, prev_answer) = (j.conv.tokens, answer_tokens(&m));
        j.answer = m.answer.clone().unwrap_or_default();
        out.push(Sent {
            session: j.session,
            turn: k,
            prompt_tokens: j.conv.tokens,
            predicted,
            measured: m,
        });
        if !ok {
            break;
        }
        k += 1;
    }
    out
}

/// Samples the server's queue gauge until `stop`: the highest it read (`None`: no gauge).
fn sample_queue(
    engine: Arc<Engine>,
    every: Duration,
    stop: CancellationToken,
) -> tokio::task::JoinHandle<Option<f64>> {
    tokio::spawn(async move {
        let mut max: Option<f64> = None;
        loop {
            if let Ok(g) = engine.gauges().await
                && let Some(w) = g.waiting
            {
                max = Some(max.map_or(w, |m: f64| m.max(w)));
            }
            tokio::select! {
                () = stop.cancelled() => return max,
                () = tokio::time::sleep(every) => {}
            }
        }
    })
}

/// The server's cumulative cached-prompt-token counter, where it has one.
async fn cached_counter(engine: &Engine) -> Option<f64> {
    engine.gauges().await.ok()?.cached_prompt_tokens_total
}

/// Empties the server's cache before the cell where asked: `Some(true)` flushed,
/// `Some(false)` asked but the engine has no endpoint, `None` not asked.
async fn flush(m: &MatrixRun<'_>, asked: bool) -> Result<Option<bool>, CellFailure> {
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
) -> Result<Vec<Conversation>, CellFailure> {
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    let chat = m.engine.api() == llmib_core::Api::Chat;
    let st = sx.settings;
    let mut out = Vec::with_capacity(cell.key.concurrency as usize);
    for i in 0..cell.key.concurrency {
        let system = &sx.systems[st.group_of(i).unwrap_or(i) as usize % sx.systems.len().max(1)];
        let stream = SESSION_STREAMS + i;
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
) -> Vec<Result<Measured, CellFailure>> {
    let limits = m.limits(convs.first().map_or(0, |c| c.tokens), convs.len() as u32);
    m.progress.event(ProgressEvent::Phase(Stage::WarmUp));
    futures_util::future::join_all(convs.iter().enumerate().map(|(i, c)| {
        let at = Clock {
            origin,
            cancel: &m.cancel,
            limits,
        };
        send_turn(&m.engine, &m.model, c, output, i as u32, at)
    }))
    .await
}

/// Runs the sessions' tasks until they end or the drain limit after `window_end` cuts them;
/// with the highest queue gauge read meanwhile.
async fn run_window(
    m: &MatrixRun<'_>,
    jobs: Vec<SessionJob>,
    window_end: Instant,
    cut: &CancellationToken,
) -> (Vec<Sent>, Option<f64>) {
    m.progress.event(ProgressEvent::Phase(Stage::OpenLoop));
    let stop = CancellationToken::new();
    let every = Duration::from_millis(m.plan.settings.gauge_interval_ms.max(50));
    let sampler = sample_queue(m.engine.clone(), every, stop.clone());
    let tasks: Vec<_> = jobs
        .into_iter()
        .map(|j| tokio::spawn(run_session(j)))
        .collect();
    // A turn in flight at the window's close runs to its end, within this limit.
    let drain = Duration::from_secs_f64(m.plan.settings.duration_s.max(30.0));
    let limit = tokio::time::sleep_until(window_end + drain);
    tokio::pin!(limit);
    let all = futures_util::future::join_all(tasks);
    tokio::pin!(all);
    let done = tokio::select! {
        d = &mut all => d,
        () = &mut limit => { cut.cancel(); all.await }
    };
    stop.cancel();
    let max_waiting = sampler.await.ok().flatten();
    (done.into_iter().flatten().flatten().collect(), max_waiting)
}

/// The turns of every session: the warm-ups together, then the window.
async fn send_all(
    m: &MatrixRun<'_>,
    sx: &SessionContext<'_>,
    convs: Vec<Conversation>,
    text: TextMaker,
) -> (Vec<Sent>, Option<f64>) {
    let st = sx.settings;
    let origin = Instant::now();
    let s = convs.len() as u32;
    let warm = warm_ups(m, st.turn_output, &convs, origin).await;
    let mut sent = Vec::new();
    let mut jobs = Vec::new();
    let window_end = Instant::now() + Duration::from_secs_f64(m.plan.settings.duration_s);
    let cut = m.cancel.child_token();
    let seed = m
        .plan
        .settings
        .request
        .seed
        .unwrap_or(m.plan.settings.prompt_seed);
    let mut rng = SplitMix64::new(seed ^ 0x5e55_1015);
    let user_tokens: Vec<u64> = (0..64)
        .map(|_| st.turn_input.sample(&mut rng).max(1))
        .collect();
    let max_prompt = m
        .plan
        .context_length
        .map(|l| l.saturating_sub(u64::from(st.turn_output)));
    for (i, (conv, w)) in convs.into_iter().zip(warm).enumerate() {
        let Ok(w) = w else { continue };
        let ok = matches!(w.record.outcome, Outcome::Finished { .. });
        let job = SessionJob {
            engine: m.engine.clone(),
            model: m.model.clone(),
            answer: w.answer.clone().unwrap_or_default(),
            answer_tokens: answer_tokens(&w),
            session: i as u32,
            turns: st.turns,
            output: st.turn_output,
            block: sx.block,
            think: st.think_time,
            text,
            user_tokens: user_tokens.clone(),
            window_end,
            origin,
            cancel: cut.clone(),
            limits: m.limits(conv.tokens, s),
            seed,
            max_prompt,
            conv,
        };
        sent.push(Sent {
            session: i as u32,
            turn: 0,
            prompt_tokens: job.conv.tokens,
            predicted: 0,
            measured: w,
        });
        if ok {
            jobs.push(job);
        }
    }
    let (turns, max_waiting) = run_window(m, jobs, window_end, &cut).await;
    sent.extend(turns);
    (sent, max_waiting)
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
    let convs = match histories(m, builder, sx, cell).await {
        Ok(c) => c,
        Err(e) => return e.row(cell),
    };
    let before = cached_counter(&m.engine).await;
    let (sent, max_waiting) = send_all(m, sx, convs, builder.text_maker()).await;
    if m.cancel.is_cancelled() {
        return llmib_core::interrupted_result(cell);
    }
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
            sessions: cell.key.concurrency,
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
