//! The plan of the mixed-prefill cells (`--mixed-prefill`; figures in `crate::mixed`): P × N
//! after the matrix, each predicted Over capacity where its N streams and the injected prompt
//! cannot fit in the KV cache at once, and every P too long for the server dropped with its
//! reason. Apart from `crate::mixed` because the plan (`crate::plan`) calls it, and the row's
//! judge imports the plan.

use crate::cell::{CellKey, Phase};
use crate::planned::{DroppedContext, PlannedCell};
use crate::size::{ContextSpec, format_tokens};
use serde::{Deserialize, Serialize};

/// The default before and after spans, seconds.
pub const DEFAULT_MIXED_SPAN_S: f64 = 2.0;

/// The default count of standalone prefills per cell.
pub const DEFAULT_STANDALONE_REPEATS: u32 = 3;

/// The mixed-prefill cells' settings (`--mixed-prefill`, `--mixed-concurrency`,
/// `--mixed-context`, `--mixed-span`), as run.json keeps them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixedPrefillSettings {
    /// The injected prompts' lengths P, tokens, ascending.
    pub prompt_tokens: Vec<u64>,
    /// The decode streams N of each cell; empty: the run's `--concurrency`.
    #[serde(default)]
    pub concurrency: Vec<u32>,
    /// The decode streams' context C; `None`: the smallest planned decode context.
    #[serde(default)]
    pub stream_context: Option<u64>,
    /// Seconds measured before the injection and after its first token.
    pub span_s: f64,
    /// Standalone prefills of P per cell (each fresh); their median is the baseline.
    pub standalone_repeats: u32,
}

/// The mixed-prefill cells of a run ([`mixed_prefill_plan`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MixedPlan {
    /// The streams' context C the cells run at (`None`: none can run).
    pub stream_context: Option<u64>,
    /// The cells in run order: P ascending, then N ascending.
    pub cells: Vec<PlannedCell>,
    /// Prompt lengths asked for that do not run, and why (the run says each).
    pub dropped: Vec<DroppedContext>,
}

/// What the plan of the mixed-prefill cells needs of the run's.
#[derive(Debug, Clone, Copy)]
pub struct MixedPlanInput<'a> {
    /// The run's `--concurrency` (used where the settings give none).
    pub run_concurrency: &'a [u32],
    /// The run's planned decode contexts, ascending (the default stream context is the first).
    pub decode_contexts: &'a [u64],
    /// The streams' `max_tokens` (M, the run's `--max-output`).
    pub max_output: u32,
    /// The server's context length, where known.
    pub context_length: Option<u64>,
    /// The KV capacity the plan predicts with, where known.
    pub kv_capacity: Option<u64>,
}

/// The KV tokens a mixed cell needs: N streams of C + M, and the injected P plus its token.
pub fn mixed_kv_needed(n: u32, stream_context: u64, max_output: u32, prompt: u64) -> u128 {
    crate::capacity::kv_tokens_needed(n, stream_context, max_output) + u128::from(prompt) + 1
}

/// Plans the mixed-prefill cells: P × N, each predicted Over capacity where its N streams and
/// the injected prompt cannot fit in the KV cache at once, and every P too long for the server
/// dropped with its reason (as is every P when the streams' context cannot run).
pub fn mixed_prefill_plan(s: &MixedPrefillSettings, input: MixedPlanInput<'_>) -> MixedPlan {
    let drop_all = |reason: String| MixedPlan {
        stream_context: None,
        cells: Vec::new(),
        dropped: s
            .prompt_tokens
            .iter()
            .map(|&p| DroppedContext {
                spec: ContextSpec::Tokens(p),
                reason: reason.clone(),
            })
            .collect(),
    };
    let Some(c) = s
        .stream_context
        .or_else(|| input.decode_contexts.first().copied())
    else {
        return drop_all(
            "mixed prefill: no decode context is planned for its streams; pass --mixed-context"
                .into(),
        );
    };
    let m = u64::from(input.max_output);
    if let Some(limit) = input.context_length
        && c + m > limit
    {
        return drop_all(format!(
            "mixed prefill: its streams' context {} + --max-output {m} exceeds the server's context length {limit}; pass a smaller --mixed-context or --max-output",
            format_tokens(c)
        ));
    }
    let ns: &[u32] = if s.concurrency.is_empty() {
        input.run_concurrency
    } else {
        &s.concurrency
    };
    let mut plan = MixedPlan {
        stream_context: Some(c),
        cells: Vec::new(),
        dropped: Vec::new(),
    };
    for &p in &s.prompt_tokens {
        if let Some(limit) = input.context_length
            && p + 1 > limit
        {
            plan.dropped.push(DroppedContext {
                spec: ContextSpec::Tokens(p),
                reason: format!(
                    "mixed prefill: a prompt of {p} tokens and its one output token exceed the server's context length {limit}; pass smaller --mixed-prefill"
                ),
            });
            continue;
        }
        for &n in ns {
            let need = mixed_kv_needed(n, c, input.max_output, p);
            plan.cells.push(PlannedCell {
                key: CellKey {
                    phase: Phase::MixedPrefill,
                    context_tokens: p,
                    concurrency: n,
                    rate_mrps: 0,
                },
                label: format_tokens(p),
                over_capacity: crate::capacity::exceeds(need, input.kv_capacity),
            });
        }
    }
    plan
}

impl MixedPlan {
    /// Appends the cells to the plan's and the dropped prompts to its dropped contexts.
    pub fn append_to(self, cells: &mut Vec<PlannedCell>, dropped: &mut Vec<DroppedContext>) {
        cells.extend(self.cells);
        dropped.extend(self.dropped);
    }
}

/// [`mixed_prefill_plan`] for a plan being built: the run's (concurrency, max output), its
/// planned decode contexts ascending, and the server's (context length, KV capacity).
pub(crate) fn plan_at(
    s: &MixedPrefillSettings,
    (run_concurrency, max_output): (&[u32], u32),
    decode_contexts: &[u64],
    (context_length, kv_capacity): (Option<u64>, Option<u64>),
) -> MixedPlan {
    let input = MixedPlanInput {
        run_concurrency,
        decode_contexts,
        max_output,
        context_length,
        kv_capacity,
    };
    mixed_prefill_plan(s, input)
}
