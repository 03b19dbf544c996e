//! The facts one parsed streaming chunk carries ([`Chunk`], with its [`Usage`]): the result of
//! both chunk parsers, `serde`'s (`crate::wire::chunk`) and the fast path's
//! (`crate::wire::fastchunk`), so each builds it without importing the other.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::{self, Deserializer};

/// Token counts the server reported (`usage`). Each may be missing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`: cumulative for the request so far.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    /// `usage.total_tokens`.
    #[serde(default)]
    pub total_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens` (prefix-cache hits), where reported.
    #[serde(
        default,
        rename = "prompt_tokens_details",
        deserialize_with = "cached_tokens"
    )]
    pub cached_tokens: Option<u64>,
}

/// One parsed data chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Chunk<'a> {
    /// Number of entries in `choices` (0 for a usage-only chunk).
    pub choices: usize,
    /// Content of the first choice: completions `text`, chat `delta.content`. `None` when absent
    /// or null (a role-only first chat chunk); may be `Some("")` (llama.cpp's finish chunk).
    pub content: Option<Cow<'a, str>>,
    /// Reasoning text of the first choice (`delta.reasoning_content` or `delta.reasoning`, as
    /// SGLang and vLLM stream a thinking model's reasoning). Generated tokens too.
    pub reasoning: Option<Cow<'a, str>>,
    /// `finish_reason` of the first choice (`length`, `stop`, …).
    pub finish_reason: Option<Cow<'a, str>>,
    /// `usage`, where this chunk carries it.
    pub usage: Option<Usage>,
    /// llama.cpp's `timings.cache_n`: prompt tokens its slot's cache served.
    pub cache_n: Option<u64>,
    /// A Messages usage report (`message_start`, `message_delta`): the prompt's length is
    /// read from all of a request's reports together (`llmib_core::request_prompt_tokens`).
    pub messages_usage: Option<llmib_core::MessagesUsage>,
    /// The name of a tool call this chunk starts (chat's `delta.tool_calls[0].function.name`,
    /// a Messages `tool_use` block, a Responses `function_call` item).
    pub tool_name: Option<Cow<'a, str>>,
    /// A piece of a tool call's arguments (JSON text): generated tokens too.
    pub tool_args: Option<Cow<'a, str>>,
}

impl Chunk<'_> {
    /// True when the chunk carries generated text (content, reasoning or a tool call's
    /// arguments, non-empty).
    pub fn has_text(&self) -> bool {
        self.text_len() > 0
    }

    /// Bytes of generated text in this chunk (content, reasoning and tool-call arguments).
    pub fn text_len(&self) -> usize {
        self.content.as_deref().map_or(0, str::len)
            + self.reasoning.as_deref().map_or(0, str::len)
            + self.tool_args.as_deref().map_or(0, str::len)
    }
}

/// `prompt_tokens_details` → its `cached_tokens` (the object or the field may be null).
fn cached_tokens<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    #[derive(Deserialize)]
    struct Details {
        #[serde(default)]
        cached_tokens: Option<u64>,
    }
    let details = Option::<Details>::deserialize(d).map_err(de::Error::custom)?;
    Ok(details.and_then(|x| x.cached_tokens))
}
