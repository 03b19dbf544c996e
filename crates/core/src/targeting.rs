//! How a prompt is made C tokens long ([`Targeting`]) and how far the server's count of it may
//! be from C: exact by the server's tokenizer, estimated from its usage where it has none, or
//! token ids exact by construction. Apart from the plan because the prompt builder, the cells'
//! prompt checks and the exports all read it.

use serde::{Deserialize, Serialize};

/// How prompts are made C tokens long.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Targeting {
    /// With the server's tokenizer: exactly C.
    #[default]
    Exact,
    /// Without one (hosted APIs): from the server's `usage.prompt_tokens` of probe requests,
    /// within [`ESTIMATE_TOLERANCE`] of C. Contexts are labelled `≈`.
    Estimate,
    /// Token ids, exactly C by construction (`--token-targeting ids`): the filler's words as
    /// the server's tokenizer spells them, each word's ids learned once per run, so that a
    /// prompt costs no server call. Completions only, on an engine that takes token-id prompts
    /// ([`ids_refusal`]).
    Ids,
}

impl Targeting {
    /// Whether a prompt's length is exactly C before it is sent (not estimated).
    pub fn is_exact(self) -> bool {
        matches!(self, Targeting::Exact | Targeting::Ids)
    }
}

/// Why `--token-targeting ids` cannot run against this server, or `None` where it can: the
/// prompt goes in a completion's `prompt` as a list of ids (a chat message is text), the
/// engine must be known to take such a list, and its tokenizer must spell the filler's words.
/// `prompt_text`: the run cuts its prompts from a `--prompt-text` file, whose words the ids
/// mode does not spell.
pub fn ids_refusal(
    api: crate::Api,
    takes_ids: Option<bool>,
    has_tokenizer: bool,
    prompt_text: bool,
) -> Option<&'static str> {
    if api != crate::Api::Completions {
        return Some(
            "--token-targeting ids sends each prompt as a list of token ids, which only the completions API takes: add --api completions, or use --token-targeting exact",
        );
    }
    if takes_ids != Some(true) {
        return Some(
            "--token-targeting ids: this engine is not known to take token-id prompts (vLLM, SGLang and llama.cpp do): use --token-targeting exact",
        );
    }
    if !has_tokenizer {
        return Some(
            "--token-targeting ids learns the filler words' ids from the server's tokenize endpoint, which this server lacks: use --token-targeting estimate",
        );
    }
    if prompt_text {
        return Some(
            "--token-targeting ids makes its prompts from the filler words; prompts cut from --prompt-text need --token-targeting exact (the default)",
        );
    }
    None
}

/// How far an estimated prompt may be from C by the server's count: 0.5 %, and never less
/// than two tokens (prompts of one context differ by their tag's stream number).
pub fn estimate_tolerance(context: u64) -> u64 {
    ((context as f64 * ESTIMATE_TOLERANCE).floor() as u64).max(2)
}

/// How far a prompt's length by the server's count may be from the cell's expected length:
/// 0 for exact prompts (text or ids), [`estimate_tolerance`] for estimated ones. Context 0 sends only the
/// prompt's fixed part (its tag, and the chat template's tokens), whose length differs between
/// streams by the tag's digits and, with estimated targeting, is not known before it is sent:
/// [`MINIMAL_PROMPT_SPREAD`] tokens around stream 0's, or anything up to
/// [`MINIMAL_PROMPT_MAX`] tokens.
pub fn prompt_tolerance(targeting: Targeting, context: u64) -> u64 {
    match (targeting, context) {
        // Context 0 is the tag alone, as text, in every mode.
        (Targeting::Exact | Targeting::Ids, 0) => MINIMAL_PROMPT_SPREAD,
        (Targeting::Estimate, 0) => MINIMAL_PROMPT_MAX,
        (Targeting::Exact | Targeting::Ids, _) => 0,
        (Targeting::Estimate, c) => estimate_tolerance(c),
    }
}

/// Context 0, exact targeting: how many tokens the fixed parts of two streams' prompts may
/// differ by (the stream number's digits tokenize differently).
pub const MINIMAL_PROMPT_SPREAD: u64 = 8;

/// Context 0, estimated targeting: the longest fixed part accepted (a tag of about 20 tokens
/// and a chat template of a few dozen).
pub const MINIMAL_PROMPT_MAX: u64 = 128;

/// The relative tolerance of [`Targeting::Estimate`].
pub const ESTIMATE_TOLERANCE: f64 = 0.005;
