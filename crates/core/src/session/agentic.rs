//! Agentic session traces (issue 42): what a coding agent's trace says beyond one conversation
//! per session, and the prefix cache's prediction for it. A session may be a **subagent** of
//! another (`parent`, forking after the parent's turn `fork_turn`: it shares the parent's
//! system prompt and tools, and with `fork_turn` k ≥ 1 the parent's conversation through turn
//! k's prompt and answer); its requests may carry **tool definitions** of about `tools_tokens`
//! tokens; a turn's new message may be a **tool's result** (`kind`) and its answer may be
//! replayed as a **tool call** (`answer`); the pause before a turn (`delay_s`, or `idle_s`) is
//! the time its agent sat idle while a tool ran.
//!
//! The prediction stays the perfect prefix cache's of `predicted_cached_prefix`: a turn shares
//! what came before it in its lineage (its own previous turn, or for a subagent's opening the
//! parent's fork turn). A previous answer replayed as text is rendered into the next prompt
//! as it was generated, so it is shared whole; one replayed as a tool call is rendered by the
//! template as a call (its markup, its arguments), not as the tokens the model generated, so
//! only the previous prompt is shared.

use serde::Deserialize;

/// What a turn's new message is (`kind` in a trace row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// A user's (or a parent agent's) message: a filler of the turn's `input_tokens`.
    #[default]
    User,
    /// A tool's result of the turn's `input_tokens`, answering the previous turn's tool call.
    ToolResult,
}

/// How a turn's answer joins its session's history (`answer` in a trace row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerKind {
    /// As the model's text.
    #[default]
    Text,
    /// As a tool call whose arguments carry the model's answer (`output_tokens` its size); the
    /// next turn must be the tool's result.
    ToolCall,
}

/// Where a subagent forks from its parent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork {
    /// The parent session's id.
    pub parent: String,
    /// The parent's turn after whose answer it starts (0: after the parent's start, sharing
    /// its system prompt and tools only).
    pub turn: u32,
}

/// An earlier turn a prompt continues: its prompt, its answer and how the answer was replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriorTurn {
    /// Its prompt's tokens, as the server counted them.
    pub prompt_tokens: u64,
    /// Its answer's tokens.
    pub answer_tokens: u64,
    /// How its answer joins the history.
    pub answer: AnswerKind,
}

/// The prefix a replayed turn shares with what its lineage sent and generated before it
/// (module docs): nothing for an opening (`None`: a session's first turn, a subagent forked
/// at turn 0 or with tools of its own), the prior prompt and answer after a text answer, the
/// prior prompt alone after a tool call.
pub fn replay_shared_prefix(prior: Option<PriorTurn>) -> u64 {
    match prior {
        None => 0,
        Some(p) => match p.answer {
            AnswerKind::Text => p.prompt_tokens.saturating_add(p.answer_tokens),
            AnswerKind::ToolCall => p.prompt_tokens,
        },
    }
}

/// Whether a subagent's opening continues its parent's fork turn in the cache: it forks after
/// a turn (not at 0) and sends the parent's tool definitions (they render ahead of the
/// conversation, so other tools share nothing after them).
pub fn fork_shares_turn(fork_turn: u32, tools_tokens: u64, parent_tools_tokens: u64) -> bool {
    fork_turn >= 1 && tools_tokens == parent_tools_tokens
}

/// Why a session's sequence of turn kinds cannot be replayed, for the turn at `index`
/// (0-based) with message `kind` after a previous answer `prev` (`None`: the first turn), or
/// `None` when it can: a tool's result answers a tool call, and a tool call is answered by a
/// tool's result.
pub(crate) fn turn_order_error(
    index: usize,
    kind: MessageKind,
    prev: Option<AnswerKind>,
) -> Option<String> {
    match (prev, kind) {
        (None, MessageKind::ToolResult) => Some(format!(
            "turn {} is a tool_result but opens its session: a tool's result answers the previous turn's tool call",
            index + 1
        )),
        (Some(AnswerKind::Text), MessageKind::ToolResult) => Some(format!(
            "turn {} is a tool_result but turn {} answered with text: give turn {} \"answer\": \"tool_call\"",
            index + 1,
            index,
            index
        )),
        (Some(AnswerKind::ToolCall), MessageKind::User) => Some(format!(
            "turn {} is a user message but turn {} answered with a tool call: a tool call's next turn is its \"kind\": \"tool_result\"",
            index + 1,
            index
        )),
        _ => None,
    }
}

#[cfg(test)]
#[path = "../tests/session_agentic.rs"]
mod tests;
