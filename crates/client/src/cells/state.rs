//! What the run carries from cell to cell ([`RunState`]): the prompt builder, the current
//! context's prompts, whether the hidden warm-up ran, and each context's warm TTFT; and the
//! part of it one cell works with ([`AtContext`]).

use crate::cells::context::MatrixRun;
use crate::cells::inputs::ContextPrompts;
use crate::prompts::prompt::PromptBuilder;
use std::collections::HashMap;

/// What the run carries from cell to cell.
pub(crate) struct RunState {
    /// The run's prompt builder (the open-load sections build with it too).
    pub(crate) builder: PromptBuilder,
    pub(crate) ctx: Option<ContextPrompts>,
    /// Whether the one-off hidden warm-up has run.
    pub(crate) hidden_warmup_done: bool,
    /// The TTFT of a lone warm request at each context (the N = 1 cell): the baseline for the
    /// gauge-less queueing rule.
    pub(crate) warm_ttft_ms: HashMap<u64, f64>,
}

impl RunState {
    /// The run's state before its first cell.
    pub(crate) fn new(m: &MatrixRun<'_>) -> RunState {
        RunState {
            builder: PromptBuilder::new(m.engine.clone(), m.plan.settings.prompt_seed)
                .with_targeting(m.plan.settings.token_targeting)
                .with_prompt_text(m.plan.settings.prompt_text.as_ref()),
            ctx: None,
            hidden_warmup_done: false,
            warm_ttft_ms: HashMap::new(),
        }
    }

    /// The state a cell at `context` works with: its context's prompts (fresh when the run
    /// moves to a new context: stream i has one prompt per context, reused by every N there),
    /// the run's prompt builder and the warm TTFT baselines, borrowed apart.
    pub(crate) fn at_context(&mut self, context: u64) -> AtContext<'_> {
        let cp = self
            .ctx
            .take()
            .filter(|c| c.context == context)
            .unwrap_or_else(|| ContextPrompts::new(context));
        AtContext {
            prompts: self.ctx.insert(cp),
            builder: &mut self.builder,
            warm_ttft_ms: &mut self.warm_ttft_ms,
        }
    }
}

/// [`RunState::at_context`]: the parts of the run's state one cell uses.
pub(crate) struct AtContext<'s> {
    /// The context's prompts.
    pub(crate) prompts: &'s mut ContextPrompts,
    /// The run's prompt builder.
    pub(crate) builder: &'s mut PromptBuilder,
    /// The warm TTFT of each context (see [`RunState::warm_ttft_ms`]).
    pub(crate) warm_ttft_ms: &'s mut HashMap<u64, f64>,
}
