//! The generation APIs a run can measure: OpenAI's completions and chat completions, and the
//! agents' Anthropic Messages and OpenAI Responses. Part of the plan's settings; the client
//! builds each API's bodies and parses its events.

use serde::{Deserialize, Serialize};

/// Which generation API the requests use: OpenAI's two (completions, chat completions), or
/// the agents' two (Anthropic Messages, OpenAI Responses), which render a conversation through
/// the same chat template as chat completions on the engines that serve them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `/v1/completions` with a `prompt`: exact token counts, token-id prompts where taken.
    #[default]
    Completions,
    /// `/v1/chat/completions` with one user message: the server's chat template adds its
    /// tokens, which the prompt builder measures and subtracts.
    Chat,
    /// `/v1/messages` (Anthropic Messages): `system`, `messages`, `max_tokens`; named stream
    /// events; usage with the cache's reads and writes apart from `input_tokens`.
    Messages,
    /// `/v1/responses` (OpenAI Responses): `instructions`, `input`, `max_output_tokens`;
    /// `response.*` stream events; usage on the end event.
    Responses,
}

impl Api {
    /// As a report prints it.
    pub fn label(self) -> &'static str {
        match self {
            Api::Completions => "completions",
            Api::Chat => "chat completions",
            Api::Messages => "messages",
            Api::Responses => "responses",
        }
    }

    /// Whether the prompt is a conversation rendered through the server's chat template (every
    /// API but completions): its length is counted with the template, and it cannot be token
    /// ids.
    pub fn is_conversation(self) -> bool {
        self != Api::Completions
    }

    /// The generation route, after the base URL.
    pub fn path(self) -> &'static str {
        match self {
            Api::Completions => "/v1/completions",
            Api::Chat => "/v1/chat/completions",
            Api::Messages => "/v1/messages",
            Api::Responses => "/v1/responses",
        }
    }
}
