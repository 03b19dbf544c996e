//! Session replays (issue 31): recorded conversations sent turn by turn, each turn's answer the
//! server's own. Two sources, parsed here without a server:
//! - a **session trace** (JSONL, `sessions:FILE`): one row per turn, `{"session", "turn",
//!   "input_tokens", "output_tokens", "delay_s", "group"?}`. Turns of a session are numbered
//!   1, 2, … in file order; turn 1's `delay_s` is when the session starts (seconds from the
//!   trace's start), a later turn's the pause after the previous turn ended (an agent's tool
//!   call, a user's reading). Turn 1's `input_tokens` is the whole first prompt (its group's
//!   system prompt included), a later turn's the new message's. `group` names sessions that
//!   share a system prompt (an agent's prompt and tool schema). An agent's trace adds, all
//!   optional (`agentic.rs`): `parent` and `fork_turn` (a subagent), `tools_tokens` (its
//!   tool definitions), a turn's `kind` (`user`, `tool_result`) and `answer` (`text`,
//!   `tool_call`), and `idle_s` (the same as `delay_s`).
//! - **multi-turn ShareGPT** (`sharegpt:FILE` with session flags): every conversation is a
//!   session whose turns are its human messages, in order, each asking as many tokens as the
//!   recorded reply after it had; the recorded replies themselves are never sent.

use crate::session::agentic::{AnswerKind, Fork, MessageKind, turn_order_error};
use crate::workload::WorkloadError;
use serde::Deserialize;

/// What a turn's new message is.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnInput {
    /// A filler message of this many tokens (a trace gives lengths only).
    Tokens(u64),
    /// This text, as recorded (ShareGPT).
    Text(String),
}

/// One recorded turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayTurn {
    /// Its new message (turn 1: the whole first prompt).
    pub input: TurnInput,
    /// Output tokens asked for.
    pub output_tokens: u32,
    /// Seconds before it: turn 1's is the session's start, a later turn's the pause after the
    /// previous turn ended.
    pub delay_s: f64,
    /// The 1-based line it came from.
    pub line: usize,
    /// What its new message is (a user's, a tool's result).
    pub kind: MessageKind,
    /// How its answer joins the history (as text, as a tool call).
    pub answer: AnswerKind,
}

impl ReplayTurn {
    /// A user's turn answered with text (ShareGPT's, a plain trace's).
    fn plain(input: TurnInput, output_tokens: u32, delay_s: f64, line: usize) -> ReplayTurn {
        ReplayTurn {
            input,
            output_tokens,
            delay_s,
            line,
            kind: MessageKind::User,
            answer: AnswerKind::Text,
        }
    }
}

/// One recorded session.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySession {
    /// Its id in the file.
    pub id: String,
    /// Its shared-prefix group, where it has one (a subagent's is its parent's).
    pub group: Option<String>,
    /// Its turns, in order.
    pub turns: Vec<ReplayTurn>,
    /// The session it is a subagent of, and after which turn it forks.
    pub fork: Option<Fork>,
    /// Tokens of the tool definitions its requests carry (0: none; a subagent's default is
    /// its parent's).
    pub tools_tokens: u64,
    /// Its start, seconds from the trace's start: turn 1's delay, a subagent's added to its
    /// parent's start (the parent's turns take what the server takes, so a subagent's actual
    /// start is later: its parent's fork turn's end and its delay).
    pub start_s: f64,
}

impl ReplaySession {
    fn plain(id: String, group: Option<String>, turns: Vec<ReplayTurn>) -> ReplaySession {
        ReplaySession {
            id,
            group,
            turns,
            fork: None,
            tools_tokens: 0,
            start_s: 0.0,
        }
    }

    /// The first line that says more than a plain session (a parent, tools, a tool turn).
    fn agentic_line(&self) -> Option<usize> {
        let first = self.turns.first().map(|t| t.line);
        if self.fork.is_some() || self.tools_tokens > 0 {
            return first;
        }
        self.turns
            .iter()
            .find(|t| t.kind != MessageKind::User || t.answer != AnswerKind::Text)
            .map(|t| t.line)
    }
}

/// A replay: its sessions in order of their start, and the conversations skipped (ShareGPT's
/// without a human turn answered).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionReplay {
    /// The sessions, by start.
    pub sessions: Vec<ReplaySession>,
    /// Conversations that had no turn to send.
    pub skipped: usize,
}

impl SessionReplay {
    /// Every session's start at time scale `k` (2: twice as fast), seconds (a subagent's
    /// the earliest it can start: `ReplaySession::start_s`).
    pub fn starts_s(&self, k: f64) -> Vec<f64> {
        self.sessions.iter().map(|s| s.start_s / k).collect()
    }

    /// Why this replay cannot run as asked, in one line naming `file` and the first agentic
    /// line; `None` when it can. An agent's trace (subagents, tool definitions, tool turns)
    /// needs a chat API (`chat` false: completions, which has no tools or tool messages), and
    /// its subagents run in the process of their parent (`sharded`: on several client
    /// machines, a subagent's parent may run on another).
    pub fn agent_refusal(&self, file: &str, chat: bool, sharded: bool) -> Option<String> {
        let line = self.agentic_line()?;
        let forks = self.sessions.iter().any(|s| s.fork.is_some());
        let why = if !chat {
            "an agent's trace (parent, tools_tokens, tool turns) needs --api chat, messages or responses: completions has no tools or tool messages"
        } else if sharded && forks {
            "a trace with subagents runs on one client machine: a subagent continues its parent's conversation, which another shard would hold"
        } else {
            return None;
        };
        Some(format!("{file}:{line}: {why}"))
    }

    /// The first line (by session) of an agent's trace: a subagent, tool definitions or a
    /// tool turn; `None` for a plain trace.
    pub fn agentic_line(&self) -> Option<usize> {
        self.sessions
            .iter()
            .filter_map(ReplaySession::agentic_line)
            .min()
    }

    /// Turns of every session.
    pub fn turns(&self) -> usize {
        self.sessions.iter().map(|s| s.turns.len()).sum()
    }
}

/// One row of a session trace (module docs); other formats' importers (`weka.rs`) build
/// these so that their sessions pass the same checks.
#[derive(Deserialize)]
pub(crate) struct TraceRow {
    pub(crate) session: serde_json::Value,
    pub(crate) turn: u32,
    pub(crate) input_tokens: u64,
    pub(crate) output_tokens: u32,
    #[serde(default, alias = "idle_s")]
    pub(crate) delay_s: f64,
    #[serde(default)]
    pub(crate) group: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) parent: Option<serde_json::Value>,
    #[serde(default)]
    pub(crate) fork_turn: Option<u32>,
    #[serde(default)]
    pub(crate) tools_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) kind: MessageKind,
    #[serde(default)]
    pub(crate) answer: AnswerKind,
}

fn id_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn bad(file: &str, line: usize, what: String) -> WorkloadError {
    WorkloadError::BadRow {
        file: file.to_string(),
        line,
        what,
    }
}

/// Parses a session trace (module docs).
pub fn parse_session_trace(file: &str, text: &str) -> Result<SessionReplay, WorkloadError> {
    let mut sessions: Vec<ReplaySession> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let r: TraceRow = serde_json::from_str(raw).map_err(|e| {
            bad(file, line, format!("not a session trace row ({{\"session\", \"turn\", \"input_tokens\", \"output_tokens\", \"delay_s\"}}): {e}"))
        })?;
        read_row(&mut sessions, &r, line).map_err(|what| bad(file, line, what.0))?;
    }
    finish(file, sessions, 0)
}

/// Why one trace row cannot be read: the words after `FILE:LINE:` in its refusal.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct RowFault(String);

impl From<String> for RowFault {
    fn from(what: String) -> Self {
        RowFault(what)
    }
}

impl From<&str> for RowFault {
    fn from(what: &str) -> Self {
        RowFault(what.to_string())
    }
}

/// Adds row `r` (at `line`) to the sessions read so far, or says why it cannot be.
pub(crate) fn read_row(
    sessions: &mut Vec<ReplaySession>,
    r: &TraceRow,
    line: usize,
) -> Result<(), RowFault> {
    if r.input_tokens == 0 || r.output_tokens == 0 {
        return Err("input_tokens and output_tokens must be at least 1".into());
    }
    if !r.delay_s.is_finite() || r.delay_s < 0.0 {
        return Err(format!("delay_s {} must be 0 or more seconds", r.delay_s).into());
    }
    let id = id_text(&r.session);
    let turn = ReplayTurn {
        input: TurnInput::Tokens(r.input_tokens),
        output_tokens: r.output_tokens,
        delay_s: r.delay_s,
        line,
        kind: r.kind,
        answer: r.answer,
    };
    let Some(s) = sessions.iter_mut().find(|s| s.id == id) else {
        if r.turn != 1 {
            return Err(format!(
                "session {id} starts at turn {}: its first row must be turn 1",
                r.turn
            )
            .into());
        }
        let s = open_session(sessions, r, id, turn)?;
        sessions.push(s);
        return Ok(());
    };
    if s.turns.len() as u32 + 1 != r.turn {
        return Err(format!(
            "session {id}: turn {} follows turn {}: a session's turns must be 1, 2, … in file order",
            r.turn,
            s.turns.len()
        ).into());
    }
    same_as_opening(s, r)?;
    let prev = s.turns.last().map(|t| t.answer);
    if let Some(why) = turn_order_error(s.turns.len(), r.kind, prev) {
        return Err(format!("session {id}: {why}").into());
    }
    s.turns.push(turn);
    Ok(())
}

/// A later row may repeat its session's `parent`, `fork_turn` and `tools_tokens`, never
/// change them: they are the session's, given on its turn 1.
fn same_as_opening(s: &ReplaySession, r: &TraceRow) -> Result<(), RowFault> {
    let parent = r.parent.as_ref().map(id_text);
    let changed = (parent.is_some()
        && parent.as_deref() != s.fork.as_ref().map(|f| f.parent.as_str()))
        || (r.fork_turn.is_some() && r.fork_turn != s.fork.as_ref().map(|f| f.turn))
        || r.tools_tokens.is_some_and(|t| t != s.tools_tokens);
    match changed {
        true => Err(format!(
            "session {}: parent, fork_turn and tools_tokens are the session's, given on its turn 1; this row changes them",
            s.id
        ).into()),
        false => Ok(()),
    }
}

/// A session opened by row `r` (its turn 1): a subagent of a session read before it, which
/// it takes its group and (unless given) its tools from.
fn open_session(
    sessions: &[ReplaySession],
    r: &TraceRow,
    id: String,
    turn: ReplayTurn,
) -> Result<ReplaySession, RowFault> {
    let group = r.group.as_ref().map(id_text);
    let mut s = ReplaySession::plain(id, group, vec![turn]);
    s.tools_tokens = r.tools_tokens.unwrap_or(0);
    let (parent, fork_turn) = match (&r.parent, r.fork_turn) {
        (None, None) => {
            return match turn_order_error(0, r.kind, None) {
                Some(why) => Err(format!("session {}: {why}", s.id).into()),
                None => Ok(s),
            };
        }
        (Some(p), Some(k)) => (id_text(p), k),
        _ => {
            return Err(format!(
                "session {}: a subagent gives both parent and fork_turn",
                s.id
            )
            .into());
        }
    };
    let Some(p) = sessions.iter().find(|p| p.id == parent) else {
        return Err(format!(
            "session {}: its parent {parent} has no row before it: a parent's rows come first",
            s.id
        )
        .into());
    };
    if p.turns.len() < fork_turn as usize {
        return Err(format!(
            "session {}: forks after turn {fork_turn} of {parent}, which has {} turns before this row",
            s.id,
            p.turns.len()
        ).into());
    }
    // Its opening continues the parent's turn: after a tool call, with the tool's result.
    let prev = (fork_turn as usize)
        .checked_sub(1)
        .and_then(|k| p.turns.get(k))
        .map(|t| t.answer);
    match (prev, r.kind) {
        (Some(AnswerKind::ToolCall), MessageKind::User) => {
            return Err(format!(
                "session {}: forks after {parent}'s turn {fork_turn}, a tool call, so its turn 1 is that call's \"kind\": \"tool_result\"",
                s.id
            ).into());
        }
        (Some(AnswerKind::Text) | None, MessageKind::ToolResult) => {
            return Err(format!(
                "session {}: its turn 1 is a tool_result but {parent}'s turn {fork_turn} made no tool call",
                s.id
            ).into());
        }
        _ => {}
    }
    if s.group.is_some() && s.group != p.group {
        return Err(format!(
            "session {}: a subagent shares its parent's system prompt, so its group is {parent}'s ({}): drop group",
            s.id,
            p.group.as_deref().unwrap_or("none")
        ).into());
    }
    s.group.clone_from(&p.group);
    s.tools_tokens = r.tools_tokens.unwrap_or(p.tools_tokens);
    s.fork = Some(Fork {
        parent,
        turn: fork_turn,
    });
    Ok(s)
}

/// The sessions read, each with its start, ordered by start; `Empty` when there is none.
pub(crate) fn finish(
    file: &str,
    mut sessions: Vec<ReplaySession>,
    skipped: usize,
) -> Result<SessionReplay, WorkloadError> {
    if sessions.is_empty() {
        return Err(WorkloadError::Empty {
            file: file.to_string(),
            skipped,
        });
    }
    // Each start, in file order: a parent's comes before its subagents'.
    for i in 0..sessions.len() {
        let delay = sessions[i].turns.first().map_or(0.0, |t| t.delay_s);
        let after = sessions[i].fork.as_ref().and_then(|f| {
            sessions[..i]
                .iter()
                .find(|p| p.id == f.parent)
                .map(|p| p.start_s)
        });
        sessions[i].start_s = after.unwrap_or(0.0) + delay;
    }
    // By start; a stable sort keeps the file's order among sessions that start together.
    sessions.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    Ok(SessionReplay { sessions, skipped })
}

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Message>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

/// Parses ShareGPT as sessions (module docs): `count_tokens` is the server's count of a reply's
/// text (what each turn asks for). Every session starts at 0: the run's `--session-rate`
/// places them.
pub fn parse_sharegpt_sessions(
    file: &str,
    text: &str,
    count_tokens: &dyn Fn(&str) -> u64,
) -> Result<SessionReplay, WorkloadError> {
    let all: Vec<Conversation> = serde_json::from_str(text).map_err(|e| {
        bad(file, e.line(), format!("not ShareGPT JSON (an array of {{\"conversations\": [{{\"from\", \"value\"}}]}}): {e}"))
    })?;
    let is = |m: &Message, names: &[&str]| names.iter().any(|n| m.from.eq_ignore_ascii_case(n));
    let mut sessions = Vec::new();
    let mut skipped = 0;
    for (i, c) in all.iter().enumerate() {
        let turns: Vec<ReplayTurn> = c
            .conversations
            .windows(2)
            .filter(|w| {
                is(&w[0], &["human", "user"]) && is(&w[1], &["gpt", "assistant", "chatgpt"])
            })
            .filter(|w| !w[0].value.trim().is_empty())
            .filter_map(|w| {
                let out = u32::try_from(count_tokens(&w[1].value))
                    .ok()
                    .filter(|n| *n > 0)?;
                Some(ReplayTurn::plain(
                    TurnInput::Text(w[0].value.clone()),
                    out,
                    0.0,
                    1,
                ))
            })
            .collect();
        if turns.is_empty() {
            skipped += 1;
            continue;
        }
        sessions.push(ReplaySession::plain(
            format!("conversation {i}"),
            None,
            turns,
        ));
    }
    finish(file, sessions, skipped)
}
