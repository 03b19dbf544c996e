//! One session's turns, as its own task: it waits for its start (an open loop's arrival), sends
//! its history first where it must warm it (turn 0, unmeasured), then each planned turn after
//! its think time: the model's last answer and a new message appended, the whole prompt counted
//! by the server, the prefix cache's prediction made, the turn sent and its answer kept. It ends
//! when its turns are done, a closed loop's window closes, the conversation reaches the model's
//! context length, or a turn fails (a broken conversation cannot go on). Where the cell
//! publishes a live window, each turn's reads count on its session's stream and each measured
//! turn's end is told to it (`SessionTurns`), for the dashboard. A replayed agent's session
//! (`session_agent`) appends each answer as text or a tool call and each message as a user's
//! or a tool's result, hands its conversation to the subagents forked after a turn, and, as a
//! subagent, starts from its parent's.

use crate::cells::inputs::CellFailure;
use crate::cells::session_agent::{AgentJob, wait_fork};
use crate::progress::live::LiveWindow;
use crate::prompts::conversation::Conversation;
use crate::prompts::filler::TextMaker;
use crate::server::engine::Engine;
use crate::wire::stream::{Measured, StreamLimits, measure};
use llmib_core::{AnswerKind, Outcome, PriorTurn, predicted_cached_prefix, replay_shared_prefix};
use std::sync::Arc;
use tokio::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Sessions' stream indices start here, apart from the matrix's and open load's prompts.
pub(crate) const SESSION_STREAMS: u32 = 3_000_000;

/// Most sessions in one cell, as far as their stream indices go.
const STREAMS_PER_CELL: u32 = 4096;

/// The stream index that tags session `i`'s history and messages in the cell keyed `key`:
/// apart from every other cell's, so that no two cells send the same conversation (a
/// deterministic server answers a repeat the same, and its cache would serve a later cell's
/// turns from an earlier cell's, beyond what the turn's own session predicts).
pub(crate) fn session_stream(key: llmib_core::CellKey, i: u32) -> u32 {
    let cell = llmib_core::fnv1a(format!("{key:?}").as_bytes()) % 100_000;
    SESSION_STREAMS + cell as u32 * STREAMS_PER_CELL + i % STREAMS_PER_CELL
}

/// One measured turn as planned: its new message, its output and the pause before it.
#[derive(Debug, Clone)]
pub(crate) struct TurnSpec {
    /// Tokens of the new message (about).
    pub input: u64,
    /// The new message's recorded text (a ShareGPT replay), instead of a filler.
    pub text: Option<std::sync::Arc<str>>,
    /// Output tokens asked for.
    pub output: u32,
    /// Seconds between the last turn's end and this turn's send.
    pub think_s: f64,
}

/// One session's part of a cell, sent to its task.
pub(crate) struct SessionJob {
    pub engine: Arc<Engine>,
    pub model: String,
    pub conv: Conversation,
    pub session: u32,
    /// The index that tags its messages ([`session_stream`]).
    pub tag: u32,
    /// When it starts, after the cell's origin.
    pub start: Duration,
    /// Send the history first, unmeasured (turn 0), asking this many tokens; `None`: it was
    /// sent already (`answer` is its answer).
    pub warm_output: Option<u32>,
    /// The last answer and its tokens.
    pub answer: String,
    pub answer_tokens: u64,
    /// The measured turns.
    pub specs: Vec<TurnSpec>,
    /// The conversation as built is the first measured turn's prompt (a replay's opening,
    /// sent cold as recorded), not a history to append to.
    pub first_as_is: bool,
    pub block: u64,
    pub text: TextMaker,
    /// No turn starts after this (a closed loop's window).
    pub window_end: Option<Instant>,
    pub origin: Instant,
    pub cancel: CancellationToken,
    pub limits: StreamLimits,
    /// The longest prompt a turn may have (the context length less the output).
    pub max_prompt: Option<u64>,
    /// The cell's live window, where it publishes one.
    pub live: Option<Arc<LiveWindow>>,
    /// A replayed agent's parts (tool turns, subagents); the default for a plain session.
    pub agent: AgentJob,
}

/// A turn sent: which, its built prompt and prediction, and what came back.
pub(crate) struct Sent {
    pub session: u32,
    pub turn: u32,
    pub prompt_tokens: u64,
    pub predicted: u64,
    pub measured: Measured,
}

/// Where a turn's instants are measured from, what stops it, and its silence limits.
#[derive(Clone, Copy)]
pub(crate) struct Clock<'a> {
    pub origin: Instant,
    pub cancel: &'a CancellationToken,
    pub limits: StreamLimits,
    /// The cell's live window: the turn's reads count on its stream's atomics.
    pub live: Option<&'a LiveWindow>,
}

/// Sends one turn of `conv` as `stream` and keeps its answer.
pub(crate) async fn send_turn(
    engine: &Engine,
    model: &str,
    conv: &Conversation,
    output: u32,
    stream: u32,
    at: Clock<'_>,
) -> Result<Measured, CellFailure> {
    let built = match conv.tools() {
        Some(t) => {
            engine.stream_request_with_tools(model, conv.input(), output, at.limits, Some(t))
        }
        None => engine.stream_request(model, conv.input(), output, false, at.limits),
    };
    let mut spec = built.map_err(|e| CellFailure::request_body(e.to_string()))?;
    spec.keep_answer = true;
    let live = at.live.and_then(|l| l.stream(stream as usize));
    Ok(measure(engine.client(), &spec, stream, at.origin, at.cancel, live).await)
}

/// Output tokens of a finished turn: the server's count, else the chunks'.
pub(crate) fn answer_tokens(m: &Measured) -> u64 {
    m.record
        .completion_tokens_reported
        .unwrap_or_else(|| m.record.tokens())
}

fn finished(m: &Measured) -> bool {
    matches!(m.record.outcome, Outcome::Finished { .. })
}

impl SessionJob {
    fn clock(&self) -> Clock<'_> {
        Clock {
            origin: self.origin,
            cancel: &self.cancel,
            limits: self.limits,
            live: self.live.as_deref(),
        }
    }

    /// Tells the live view, if any, that measured turn `turn` ended.
    fn told(&self, turn: u32, m: &Measured, predicted: u64) {
        if let Some(live) = &self.live {
            live.turn_ended(
                (self.session, turn),
                m.record.ttft_ns().map(|ns| ns as f64 / 1e6),
                !finished(m),
                (self.conv.tokens, predicted, m.record.cached_tokens_reported),
            );
        }
    }

    /// Turn 0 where this session warms its own history: `false` when it failed.
    async fn warm(&mut self, out: &mut Vec<Sent>) -> bool {
        let Some(o) = self.warm_output else {
            return true;
        };
        let sent = send_turn(
            &self.engine,
            &self.model,
            &self.conv,
            o,
            self.session,
            self.clock(),
        );
        let Ok(m) = sent.await else { return false };
        let ok = finished(&m);
        self.answer = m.answer.clone().unwrap_or_default();
        self.answer_tokens = answer_tokens(&m);
        out.push(Sent {
            session: self.session,
            turn: 0,
            prompt_tokens: self.conv.tokens,
            predicted: 0,
            measured: m,
        });
        ok
    }
}

/// Where a session's turns start from: the turn before its first (a plain session's history
/// and warm-up answer, or a subagent's parent's fork turn), and whether its first turn's
/// prediction is 0 (a subagent whose tools differ from its parent's). `None`: a subagent whose
/// parent never reached its fork turn, or a cut cell.
async fn starting_point(j: &mut SessionJob) -> Option<(PriorTurn, bool)> {
    let own = PriorTurn {
        prompt_tokens: j.conv.tokens,
        answer_tokens: j.answer_tokens,
        answer: AnswerKind::Text,
    };
    let Some(f) = j.agent.fork_in.take() else {
        return Some((own, false));
    };
    let p = wait_fork(f.from, &j.cancel).await?;
    j.conv = p.conv;
    j.conv.set_tools(f.tools);
    j.answer = p.answer;
    Some((p.prior, !f.shares))
}

/// One session's turns (module docs).
pub(crate) async fn run_session(mut j: SessionJob) -> Vec<Sent> {
    let mut out = Vec::new();
    let at = j.origin + j.start;
    tokio::select! {
        () = j.cancel.cancelled() => return out,
        () = tokio::time::sleep_until(at) => {}
    }
    if !j.warm(&mut out).await {
        return out;
    }
    let Some((mut prev, cold_first)) = starting_point(&mut j).await else {
        return out;
    };
    let specs = std::mem::take(&mut j.specs);
    for (i, spec) in specs.iter().enumerate() {
        let k = i as u32 + 1;
        let think = Duration::from_secs_f64(spec.think_s.max(0.0));
        if j.cancel.is_cancelled() || j.window_end.is_some_and(|w| Instant::now() + think >= w) {
            break;
        }
        tokio::time::sleep(think).await;
        let opening = j.first_as_is && i == 0;
        if !opening {
            let user = match &spec.text {
                Some(t) => t.to_string(),
                None => j.text.text(spec.input, u64::from(k), j.tag, "turn-"),
            };
            j.conv.push_answer(&j.answer, prev.answer);
            j.conv.push_message(&user, j.agent.message(i));
            // Counting failed (the server went away), or the conversation reached the model's
            // context length: the turns so far stand.
            if j.conv.count(&j.engine).await.is_err()
                || j.max_prompt.is_some_and(|max| j.conv.tokens > max)
            {
                break;
            }
        }
        // A replay's opening shares nothing of its own session yet (its group's system prompt
        // may be served, which this prediction leaves out).
        let predicted = if opening || (i == 0 && cold_first) {
            0
        } else {
            predicted_cached_prefix(replay_shared_prefix(Some(prev)), j.conv.tokens, j.block)
        };
        let sent = send_turn(
            &j.engine,
            &j.model,
            &j.conv,
            spec.output,
            j.session,
            j.clock(),
        );
        let Ok(m) = sent.await else { break };
        let ok = finished(&m);
        j.told(k, &m, predicted);
        prev = PriorTurn {
            prompt_tokens: j.conv.tokens,
            answer_tokens: answer_tokens(&m),
            answer: j.agent.answer(i),
        };
        j.answer = m.answer.clone().unwrap_or_default();
        if ok {
            j.agent.hand(k, &j.conv, &j.answer, prev);
        }
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
    }
    out
}
