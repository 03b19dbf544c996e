//! What has room on the server, decided before anything is sent: the default prefill context
//! (the seed tool's 8K sanity point, planned only where it fits) and the contexts whose session
//! cells fit the server's context length. A session's room comes from its own lengths (history,
//! turn message, turn answer), never from `--max-output`, which no session turn asks for.

use crate::plan::{Plan, PlannedContext};
use crate::session::SessionSettings;
use crate::size::ContextSpec;
use crate::size::format_tokens;

/// The seed tool's sanity point: a prefill at 8K in every run.
pub const DEFAULT_PREFILL_CONTEXT: u64 = 8192;

/// The prefill contexts of a run not given `--prefill-contexts`: the 8K sanity point where it
/// fits the server's context length `limit` (or the limit is unknown). A default that does not
/// fit is nobody's request, so it is neither planned nor listed as dropped.
pub fn default_prefill_contexts(limit: Option<u64>) -> Vec<ContextSpec> {
    match limit {
        Some(l) if DEFAULT_PREFILL_CONTEXT >= l => Vec::new(),
        _ => vec![ContextSpec::Tokens(DEFAULT_PREFILL_CONTEXT)],
    }
}

/// Why a planned context runs no session cells; the words name the flag that would make it fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoSessionRoom {
    /// A `full` context: its prompt alone fills the server's context.
    #[error(
        "sessions not run at {label}: a `full` context is prefill only (its prompt fills the server's context); give explicit --contexts for sessions"
    )]
    PrefillOnly {
        /// The context's label.
        label: String,
    },
    /// The first measured turn (history, the warm-up's answer, the turn's message and its
    /// answer) does not fit the server's context length.
    #[error(
        "sessions not run at {label}: history {} + turn {} + 2 × {} output = {} tokens does not fit the server's context length of {}; pass smaller --contexts, --turn-input-len or --turn-output-len",
        format_tokens(*.history),
        format_tokens(*.turn_input),
        .turn_output,
        format_tokens(*.needs),
        format_tokens(*.limit)
    )]
    TooLong {
        /// The context's label.
        label: String,
        /// History tokens C.
        history: u64,
        /// The longest turn message U.
        turn_input: u64,
        /// Output tokens of each turn O.
        turn_output: u32,
        /// C + U + 2 × O.
        needs: u64,
        /// The server's context length.
        limit: u64,
    },
}

/// Whether a session cell at `ctx` fits a server of context length `limit` (unknown: it is
/// tried). The first measured turn's prompt is the history C, the warm-up's answer O and the
/// new message U, and it asks O more: C + U + 2 × O must stay strictly below the limit, the
/// rule every context follows (some engines reject prompt + max_tokens equal to the limit).
/// Later turns stop at the context length by themselves.
pub fn session_room(
    ctx: &PlannedContext,
    limit: Option<u64>,
    st: &SessionSettings,
) -> Result<(), NoSessionRoom> {
    if ctx.spec == ContextSpec::Full {
        return Err(NoSessionRoom::PrefillOnly {
            label: ctx.label.clone(),
        });
    }
    let needs =
        crate::session::session_kv_needed(1, ctx.tokens, st.turn_input.max(), st.turn_output);
    match limit {
        Some(l) if needs >= l => Err(NoSessionRoom::TooLong {
            label: ctx.label.clone(),
            history: ctx.tokens,
            turn_input: st.turn_input.max(),
            turn_output: st.turn_output,
            needs,
            limit: l,
        }),
        _ => Ok(()),
    }
}

/// The plan's contexts that run session cells, in plan order, and why each other one does not
/// (empty lists when the run has no sessions).
pub fn session_contexts(plan: &Plan) -> (Vec<&PlannedContext>, Vec<NoSessionRoom>) {
    let Some(st) = plan.settings.sessions.as_ref() else {
        return (Vec::new(), Vec::new());
    };
    let mut fit = Vec::new();
    let mut not = Vec::new();
    for c in &plan.contexts {
        match session_room(c, plan.context_length, st) {
            Ok(()) => fit.push(c),
            Err(why) => not.push(why),
        }
    }
    (fit, not)
}

#[cfg(test)]
#[path = "tests/room.rs"]
mod tests;
