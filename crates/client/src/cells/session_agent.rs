//! A replayed agent's parts of a session's task (issue 42, docs/sessions.md "Replays"): which
//! message and answer kind each turn has, the subagents it hands its conversation to after a
//! turn, and, for a subagent, the parent's conversation it waits for before its first turn.
//! The prediction is `llmib_core::replay_shared_prefix`'s; this only moves conversations
//! between the tasks.

use crate::prompts::conversation::Conversation;
use llmib_core::{AnswerKind, MessageKind, PriorTurn};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// A parent's conversation after one of its turns: its prompt, the answer and the turn's
/// figures, for a subagent to continue.
#[derive(Debug)]
pub(crate) struct ForkPoint {
    pub conv: Conversation,
    pub answer: String,
    pub prior: PriorTurn,
}

/// A subagent's wait for its parent's fork turn.
#[derive(Debug)]
pub(crate) struct ForkIn {
    pub from: oneshot::Receiver<ForkPoint>,
    /// Whether its opening shares the parent's turn in the cache (`llmib_core::fork_shares_turn`).
    pub shares: bool,
    /// Its own tool definitions (chat-shaped), where it has them.
    pub tools: Option<Value>,
}

/// A session's agent parts; the default is a plain session's (user messages, text answers).
#[derive(Debug, Default)]
pub(crate) struct AgentJob {
    /// Each turn's message and answer kind, by index (none: a user's, answered with text).
    pub kinds: Vec<(MessageKind, AnswerKind)>,
    /// Where it is a subagent forked after a turn: the wait for it.
    pub fork_in: Option<ForkIn>,
    /// Subagents forked after its turn k (1-based).
    pub fork_out: Vec<(u32, oneshot::Sender<ForkPoint>)>,
}

impl AgentJob {
    /// Turn `i`'s (0-based) new message kind.
    pub(crate) fn message(&self, i: usize) -> MessageKind {
        self.kinds.get(i).map_or(MessageKind::User, |k| k.0)
    }

    /// Turn `i`'s (0-based) answer kind.
    pub(crate) fn answer(&self, i: usize) -> AnswerKind {
        self.kinds.get(i).map_or(AnswerKind::Text, |k| k.1)
    }

    /// Hands the conversation after turn `k` to every subagent forked there.
    pub(crate) fn hand(&mut self, k: u32, conv: &Conversation, answer: &str, prior: PriorTurn) {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.fork_out)
            .into_iter()
            .partition(|(t, _)| *t == k);
        self.fork_out = later;
        for (_, tx) in now {
            // A subagent that has ended (its cell cut) takes nothing.
            let _ = tx.send(ForkPoint {
                conv: conv.clone(),
                answer: answer.to_string(),
                prior,
            });
        }
    }
}

/// The parent's conversation, once its fork turn ended; `None` when the cell was cut or the
/// parent ended before that turn (the subagent then sends nothing).
pub(crate) async fn wait_fork(
    from: oneshot::Receiver<ForkPoint>,
    cancel: &CancellationToken,
) -> Option<ForkPoint> {
    tokio::select! {
        () = cancel.cancelled() => None,
        p = from => p.ok(),
    }
}
