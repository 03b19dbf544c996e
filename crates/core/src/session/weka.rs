//! Weka agentic coding traces (`--workload weka:FILE`): the public corpus of Claude Code
//! sessions recorded by Weka's KV-cache tester (github.com/callanjfox/kv-cache-tester,
//! `docs/trace_replay_tester.md`, "Trace Format") and replayed by NVIDIA AIPerf
//! (docs.nvidia.com/aiperf, "Replaying Agentic Coding Sessions with Weka Traces"; ai-dynamo/aiperf
//! `docs/tutorials/weka-trace.md` and `src/aiperf/dataset/loader/weka_trace_models.py`) and by
//! SemiAnalysis's InferenceX AgentX (the `semianalysisai/cc-traces-weka-*` datasets), imported as
//! this tool's session trace (`replay.rs`): the same sessions, checked by the same rules, so the
//! replay, the cache prediction and the per-turn figures are those of `sessions:FILE`.
//!
//! **The format.** A trace is one JSON object per conversation (a file may hold several, one
//! after another: JSONL): `{"id", "models", "block_size", "hash_id_scope", "tool_tokens",
//! "system_tokens", "requests": [...]}`. Each request is an API call, `{"t", "type": "n" | "s",
//! "model", "in", "out", "hash_ids", "input_types", "output_types", "stop", "api_time",
//! "think_time", "ttft"}` (`t` seconds from the conversation's start, `in`/`out` its prompt's and
//! answer's tokens, `stop` `""`, `"tool_use"` or `"end_turn"`, `api_time` the server's time,
//! `think_time` the client's wait before it), or a subagent marker, `{"t", "type": "subagent",
//! "agent_id", "subagent_type", "status", "duration_ms", "requests": [...], "models",
//! "tool_tokens", "system_tokens"}`, whose own requests (calls and further markers) are the
//! subagent's conversation. Raw kv-cache-tester traces give a subagent's request `t` relative
//! to its marker; AgentX's give them on the root's clock.
//!
//! **The mapping** (`parse_weka_trace`; docs/sessions.md, "Weka traces", has it as a table):
//! - a conversation is a session named by its `id`; its calls in order are turns 1, 2, …;
//!   `in` of turn 1 is its whole first prompt, a later turn's new message is `in` less the
//!   previous turn's `in` and `out` (at least 1 token: where the recorded prompt dropped part
//!   of the previous answer, as Claude Code drops its thinking, the replayed prompt is longer
//!   than the recorded one by at most that answer); `out` is its output tokens (at least 1:
//!   a call recorded with 0 asks 1, as AIPerf sends it);
//! - a call whose prompt does not continue the previous one (its `in` is no larger, or the
//!   previous call's `hash_ids` but the last block are not a prefix of its own: a compaction)
//!   starts a new session, `ID::ctx:N`, forked at 0 from the agent's first (its own system
//!   prompt and tools, starting when the call did), as the cache starts over there too;
//! - a call with the same `in` and `hash_ids` as the previous one (the streaming and
//!   non-streaming pair the tester replays once) is the same turn and is dropped;
//! - a subagent marker is a session `PARENT::sa:AGENT_ID` with `parent` the session whose call
//!   came last before the marker and `fork_turn` 0: a Claude Code subagent opens a context of
//!   its own, so its first call's `in` is its whole opening; its `tool_tokens` (when above 0,
//!   else its parent's) are its `tools_tokens`; a marker before any call of its parent opens
//!   a session of its own. The parent's next turn waits its recorded pause, not the
//!   subagent's end, whether or not the marker's `status` is `async_launched`;
//! - times: turn 1's `delay_s` is its `t` (from the conversation's start; a subagent's or a
//!   restart's counts from its parent's start, never before it); a later turn's is its
//!   `think_time` where recorded, else `t` less the previous call's `t` and `api_time` (at
//!   least 0), else the gap between the two `t`s. A subagent's times are relative to its
//!   marker unless every subagent of the conversation has every request at or after its
//!   marker's `t`, when they are read as the root's clock (AgentX: AIPerf's loader tells the
//!   two the same way, a request before its marker being relative); `--time-scale K`
//!   divides them all;
//! - `stop: "tool_use"` answers as a tool call (`answer: tool_call`) and the next turn is its
//!   `tool_result`, unless the call is its session's last;
//! - the trace's `tool_tokens` are the session's `tools_tokens`.
//!
//! **Dropped**: `hash_ids` content (prompts are this tool's filler; the prediction is the
//! perfect cache of each session's own conversation, `agentic.rs`, so reuse between traces or
//! subagents that `hash_id_scope: "global"` records is not predicted), `system_tokens` (the
//! system prompt is `--system-prompt-len`), `model` and `models` (every request goes to the
//! run's model), `ttft`, `duration_ms`, `total_tokens`, `tool_use_count`, `subagent_type`,
//! `input_types` and `output_types` (tool results follow `stop`: AIPerf reads `input_types`
//! first and falls back on `stop`, a `tool_use` always answered by a tool's result; here the
//! session trace's rule, a tool call's next turn is its result, needs the two to agree),
//! `block_size` (the server's own block size sets the prediction) and unknown fields.

use crate::session::agentic::{AnswerKind, MessageKind};
use crate::session::replay::{ReplaySession, SessionReplay, TraceRow, finish, read_row};
use crate::workload::WorkloadError;
use serde::Deserialize;

/// One conversation (a trace file's object).
#[derive(Deserialize)]
struct Trace {
    id: String,
    requests: Vec<Request>,
    #[serde(default)]
    tool_tokens: u64,
}

/// An entry of `requests`, by its `type`.
#[derive(Deserialize)]
#[serde(tag = "type")]
enum Request {
    /// A non-streaming call.
    #[serde(rename = "n")]
    Normal(Call),
    /// A streaming call.
    #[serde(rename = "s")]
    Streaming(Call),
    /// A subagent's marker and its conversation.
    #[serde(rename = "subagent")]
    Subagent(Subagent),
}

/// An API call: the fields the import reads.
#[derive(Deserialize)]
struct Call {
    t: f64,
    #[serde(rename = "in")]
    input: u64,
    out: u64,
    #[serde(default)]
    hash_ids: Vec<u64>,
    #[serde(default)]
    stop: String,
    #[serde(default)]
    api_time: Option<f64>,
    #[serde(default)]
    think_time: Option<f64>,
}

/// A subagent marker: the fields the import reads.
#[derive(Deserialize)]
struct Subagent {
    t: f64,
    agent_id: String,
    requests: Vec<Request>,
    #[serde(default)]
    tool_tokens: u64,
}

/// A call placed on the conversation's clock, with where it is in the file (`requests[3]`).
struct Placed<'a> {
    at: f64,
    call: &'a Call,
    path: String,
}

/// One session to be: a run of calls that continue each other.
struct Segment<'a> {
    id: String,
    /// Its parent's id and start (a subagent's, a restart's).
    parent: Option<(String, f64)>,
    /// Its tools (`None`: its parent's).
    tools: Option<u64>,
    calls: Vec<Placed<'a>>,
}

impl Segment<'_> {
    fn start(&self) -> f64 {
        self.calls.first().map_or(0.0, |c| c.at)
    }
}

/// A subagent marker waiting for its parent's sessions to be read.
struct Pending<'a> {
    parent: Option<(String, f64)>,
    id: String,
    at: f64,
    path: String,
    sub: &'a Subagent,
}

/// Where the import is: the file, the conversation and its line, the clock convention.
struct Ctx<'f> {
    file: &'f str,
    line: usize,
    conversation: String,
    /// Subagents' `t` on the root's clock (AgentX) rather than relative to their marker.
    absolute: bool,
}

impl Ctx<'_> {
    fn bad(&self, what: impl std::fmt::Display) -> WorkloadError {
        WorkloadError::BadRow {
            file: self.file.to_string(),
            line: self.line,
            what: format!("conversation {}: {what}", self.conversation),
        }
    }
}

/// Parses a Weka trace file (one or more conversation objects) into the sessions a session
/// trace would give (module docs). Errors name the file, the line where the conversation
/// starts, the conversation and the request (`requests[2].requests[0]`).
pub fn parse_weka_trace(file: &str, text: &str) -> Result<SessionReplay, WorkloadError> {
    let mut sessions: Vec<ReplaySession> = Vec::new();
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Trace>();
    let mut seen: Vec<String> = Vec::new();
    loop {
        let from = stream.byte_offset();
        let Some(next) = stream.next() else { break };
        let trace = next.map_err(|e| WorkloadError::BadRow {
            file: file.to_string(),
            line: e.line(),
            what: format!("not a Weka trace (a JSON object per conversation: {{\"id\", \"requests\": [{{\"t\", \"type\": \"n\", \"in\", \"out\"}}, …]}}): {e}"),
        })?;
        let skipped = text[from..].len() - text[from..].trim_start().len();
        let line = 1 + text[..from + skipped].matches('\n').count();
        let cx = Ctx {
            file,
            line,
            conversation: trace.id.clone(),
            absolute: all_after_markers(&trace.requests),
        };
        if seen.contains(&trace.id) {
            return Err(cx.bad("a second conversation with this id: give each its own id"));
        }
        seen.push(trace.id.clone());
        let before = sessions.len();
        agent(
            &cx,
            &mut sessions,
            (trace.id.clone(), None, Some(trace.tool_tokens)),
            &trace.requests,
            (0.0, "requests"),
        )?;
        if sessions.len() == before {
            return Err(cx.bad("has no request (type \"n\" or \"s\"): drop it from the file"));
        }
    }
    finish(file, sessions, 0)
}

/// Slack on "at or after its marker" for times rounded when the trace was written (AIPerf's
/// loader allows a microsecond).
const MARKER_SLACK_S: f64 = 1e-6;

/// Whether every subagent's requests (at every depth) are at or after its marker's `t`: the
/// trace keeps them on the root's clock (AgentX); otherwise they count from their marker.
fn all_after_markers(requests: &[Request]) -> bool {
    let after = |t: f64, marker: f64| t + MARKER_SLACK_S >= marker;
    requests.iter().all(|r| match r {
        Request::Subagent(s) => {
            s.requests.iter().all(|q| match q {
                Request::Normal(c) | Request::Streaming(c) => after(c.t, s.t),
                Request::Subagent(n) => after(n.t, s.t),
            }) && all_after_markers(&s.requests)
        }
        _ => true,
    })
}

/// Whether `next` continues `prev`'s conversation: a longer prompt that, where both give
/// blocks, starts with `prev`'s blocks but its last (which `prev` may have ended inside).
fn continues(prev: &Call, next: &Call) -> bool {
    let blocks = match prev.hash_ids.split_last() {
        Some((_, full)) if !next.hash_ids.is_empty() => next.hash_ids.starts_with(full),
        _ => true,
    };
    next.input > prev.input && blocks
}

/// Whether `next` repeats `prev` (the streaming and non-streaming pair of one turn).
fn repeats(prev: &Call, next: &Call) -> bool {
    !next.hash_ids.is_empty() && next.input == prev.input && next.hash_ids == prev.hash_ids
}

/// Checks a time field: finite and 0 or more.
fn time(cx: &Ctx, path: &str, name: &str, v: f64) -> Result<f64, WorkloadError> {
    if v.is_finite() && v >= 0.0 {
        return Ok(v);
    }
    Err(cx.bad(format!("{path}: {name} {v} must be 0 or more seconds")))
}

/// One agent's requests (`who`: its first session's id, parent and tools; `clock`: the
/// instant its `t`s count from and its requests' path) as sessions, its subagents after it.
fn agent(
    cx: &Ctx,
    sessions: &mut Vec<ReplaySession>,
    who: (String, Option<(String, f64)>, Option<u64>),
    requests: &[Request],
    clock: (f64, &str),
) -> Result<(), WorkloadError> {
    let (id, parent, tools) = who;
    let (base, path) = clock;
    let mut segments: Vec<Segment> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    for (i, r) in requests.iter().enumerate() {
        let here = format!("{path}[{i}]");
        let (c, at) = match r {
            Request::Normal(c) | Request::Streaming(c) => (c, base + time(cx, &here, "t", c.t)?),
            Request::Subagent(s) => {
                let at = base + time(cx, &here, "t", s.t)?;
                let parent = match segments.last() {
                    Some(g) => Some((g.id.clone(), g.start())),
                    None => parent.clone(),
                };
                let from = parent.as_ref().map_or(id.as_str(), |p| p.0.as_str());
                let id = format!("{from}::sa:{}", s.agent_id);
                pending.push(Pending {
                    parent,
                    id,
                    at,
                    path: here,
                    sub: s,
                });
                continue;
            }
        };
        check_call(cx, &here, c)?;
        let placed = Placed {
            at,
            call: c,
            path: here,
        };
        place(cx, &mut segments, (&id, &parent, tools), placed)?;
    }
    for g in &segments {
        emit(cx, sessions, g)?;
    }
    for p in pending {
        let base = if cx.absolute { 0.0 } else { p.at };
        let tools = (p.sub.tool_tokens > 0).then_some(p.sub.tool_tokens);
        let inner = format!("{}.requests", p.path);
        agent(
            cx,
            sessions,
            (p.id, p.parent, tools),
            &p.sub.requests,
            (base, &inner),
        )?;
    }
    Ok(())
}

/// Adds call `c` to the agent's sessions (`who`: its first session's id, parent and tools):
/// to the last session where it continues it, a new one where the prompt starts over; a
/// streaming pair's second call is dropped.
fn place<'a>(
    cx: &Ctx,
    segments: &mut Vec<Segment<'a>>,
    who: (&str, &Option<(String, f64)>, Option<u64>),
    c: Placed<'a>,
) -> Result<(), WorkloadError> {
    let (id, parent, tools) = who;
    let prev = segments.last().and_then(|g| g.calls.last());
    let Some(prev) = prev else {
        segments.push(Segment {
            id: id.to_string(),
            parent: parent.clone(),
            tools,
            calls: vec![c],
        });
        return Ok(());
    };
    if c.at < prev.at {
        return Err(cx.bad(format!(
            "{}: t {} is before {}'s t {}: an agent's requests are in time order; sort them by t",
            c.path, c.call.t, prev.path, prev.call.t
        )));
    }
    if repeats(prev.call, c.call) {
        return Ok(());
    }
    if continues(prev.call, c.call) {
        if let Some(last) = segments.last_mut() {
            last.calls.push(c);
        }
        return Ok(());
    }
    let first = (segments[0].id.clone(), segments[0].start());
    segments.push(Segment {
        id: format!("{id}::ctx:{}", segments.len() + 1),
        parent: Some(first),
        tools: None,
        calls: vec![c],
    });
    Ok(())
}

/// Refuses a call the session trace cannot hold: no prompt, an answer too long, a negative
/// time.
fn check_call(cx: &Ctx, path: &str, c: &Call) -> Result<(), WorkloadError> {
    if c.input == 0 {
        return Err(cx.bad(format!(
            "{path}: in 0: a call sends a prompt of at least 1 token; drop the request"
        )));
    }
    if c.out > u64::from(u32::MAX) {
        return Err(cx.bad(format!(
            "{path}: out {} is above {}: drop the request",
            c.out,
            u32::MAX
        )));
    }
    if let Some(v) = c.api_time {
        time(cx, path, "api_time", v)?;
    }
    if let Some(v) = c.think_time {
        time(cx, path, "think_time", v)?;
    }
    Ok(())
}

/// The pause before `next` after `prev` ended (module docs, "times").
fn pause(prev: &Placed, next: &Placed) -> f64 {
    if let Some(t) = next.call.think_time {
        return t;
    }
    let gap = next.at - prev.at;
    (gap - prev.call.api_time.unwrap_or(0.0)).max(0.0)
}

/// Reads one segment's calls as a session's rows, by the session trace's own rules.
fn emit(cx: &Ctx, sessions: &mut Vec<ReplaySession>, g: &Segment) -> Result<(), WorkloadError> {
    if sessions.iter().any(|s| s.id == g.id) {
        return Err(cx.bad(format!(
            "two sessions would be named {}: give each subagent of a parent its own agent_id",
            g.id
        )));
    }
    let mut answer = AnswerKind::Text;
    for (k, c) in g.calls.iter().enumerate() {
        let (input, delay) = match k.checked_sub(1).map(|j| &g.calls[j]) {
            None => {
                let from = g.parent.as_ref().map_or(0.0, |p| p.1);
                (c.call.input, (c.at - from).max(0.0))
            }
            Some(p) => {
                let held = p.call.input.saturating_add(p.call.out);
                (c.call.input.saturating_sub(held).max(1), pause(p, c))
            }
        };
        let kind = match answer {
            AnswerKind::ToolCall => MessageKind::ToolResult,
            AnswerKind::Text => MessageKind::User,
        };
        answer = match c.call.stop.as_str() {
            "tool_use" if k + 1 < g.calls.len() => AnswerKind::ToolCall,
            _ => AnswerKind::Text,
        };
        let row = TraceRow {
            session: serde_json::Value::String(g.id.clone()),
            turn: k as u32 + 1,
            input_tokens: input,
            // A recorded answer of 0 tokens (a call cut short) asks 1, as AIPerf sends it.
            output_tokens: c.call.out.max(1) as u32,
            delay_s: delay,
            group: None,
            parent: g
                .parent
                .as_ref()
                .filter(|_| k == 0)
                .map(|p| p.0.clone().into()),
            fork_turn: g.parent.as_ref().filter(|_| k == 0).map(|_| 0),
            tools_tokens: g.tools.filter(|_| k == 0),
            kind,
            answer,
        };
        read_row(sessions, &row, cx.line).map_err(|f| cx.bad(format!("{}: {f}", c.path)))?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "../tests/session_weka.rs"]
mod tests;
