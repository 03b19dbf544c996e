//! Session replays (issue 31): recorded conversations sent turn by turn, each turn's answer the
//! server's own. Two sources, parsed here without a server:
//! - a **session trace** (JSONL, `sessions:FILE`): one row per turn, `{"session", "turn",
//!   "input_tokens", "output_tokens", "delay_s", "group"?}`. Turns of a session are numbered
//!   1, 2, … in file order; turn 1's `delay_s` is when the session starts (seconds from the
//!   trace's start), a later turn's the pause after the previous turn ended (an agent's tool
//!   call, a user's reading). Turn 1's `input_tokens` is the whole first prompt (its group's
//!   system prompt included), a later turn's the new message's. `group` names sessions that
//!   share a system prompt (an agent's prompt and tool schema).
//! - **multi-turn ShareGPT** (`sharegpt:FILE` with session flags): every conversation is a
//!   session whose turns are its human messages, in order, each asking as many tokens as the
//!   recorded reply after it had; the recorded replies themselves are never sent.

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
}

/// One recorded session.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySession {
    /// Its id in the file.
    pub id: String,
    /// Its shared-prefix group, where it has one.
    pub group: Option<String>,
    /// Its turns, in order.
    pub turns: Vec<ReplayTurn>,
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
    /// Every session's start at time scale `k` (2: twice as fast), seconds.
    pub fn starts_s(&self, k: f64) -> Vec<f64> {
        self.sessions
            .iter()
            .map(|s| s.turns.first().map_or(0.0, |t| t.delay_s) / k)
            .collect()
    }

    /// Turns of every session.
    pub fn turns(&self) -> usize {
        self.sessions.iter().map(|s| s.turns.len()).sum()
    }
}

#[derive(Deserialize)]
struct TraceRow {
    session: serde_json::Value,
    turn: u32,
    input_tokens: u64,
    output_tokens: u32,
    #[serde(default)]
    delay_s: f64,
    #[serde(default)]
    group: Option<serde_json::Value>,
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
        if r.input_tokens == 0 || r.output_tokens == 0 {
            return Err(bad(
                file,
                line,
                "input_tokens and output_tokens must be at least 1".into(),
            ));
        }
        if !r.delay_s.is_finite() || r.delay_s < 0.0 {
            return Err(bad(
                file,
                line,
                format!("delay_s {} must be 0 or more seconds", r.delay_s),
            ));
        }
        let id = id_text(&r.session);
        let turn = ReplayTurn {
            input: TurnInput::Tokens(r.input_tokens),
            output_tokens: r.output_tokens,
            delay_s: r.delay_s,
            line,
        };
        match sessions.iter_mut().find(|s| s.id == id) {
            Some(s) if s.turns.len() as u32 + 1 == r.turn => s.turns.push(turn),
            Some(s) => {
                return Err(bad(
                    file,
                    line,
                    format!(
                        "session {id}: turn {} follows turn {}: a session's turns must be 1, 2, … in file order",
                        r.turn,
                        s.turns.len()
                    ),
                ));
            }
            None if r.turn == 1 => sessions.push(ReplaySession {
                id,
                group: r.group.as_ref().map(id_text),
                turns: vec![turn],
            }),
            None => {
                return Err(bad(
                    file,
                    line,
                    format!(
                        "session {id} starts at turn {}: its first row must be turn 1",
                        r.turn
                    ),
                ));
            }
        }
    }
    finish(file, sessions, 0)
}

fn finish(
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
    // By start; a stable sort keeps the file's order among sessions that start together.
    sessions.sort_by(|a, b| {
        let s = |x: &ReplaySession| x.turns.first().map_or(0.0, |t| t.delay_s);
        s(a).total_cmp(&s(b))
    });
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
                Some(ReplayTurn {
                    input: TurnInput::Text(w[0].value.clone()),
                    output_tokens: out,
                    delay_s: 0.0,
                    line: 1,
                })
            })
            .collect();
        if turns.is_empty() {
            skipped += 1;
            continue;
        }
        sessions.push(ReplaySession {
            id: format!("conversation {i}"),
            group: None,
            turns,
        });
    }
    finish(file, sessions, skipped)
}
