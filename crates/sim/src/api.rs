//! Which HTTP API a generation request came in on. Every generation route shares one engine
//! submission, one fault plan, one stamp log and one API-key check; what differs per route is
//! read from here: how the body is parsed (`request`, `agent_request`), how answers and errors
//! are framed (`frames`, `messages_api`, `responses_api`, `reply`) and the response id's prefix.

use crate::rng::Rng;
use crate::wire::{self, Kind};

/// A generation route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Api {
    /// `POST /v1/completions`
    Completions,
    /// `POST /v1/chat/completions`
    Chat,
    /// `POST /v1/messages` (Anthropic's Messages API, as vLLM serves it)
    Messages,
    /// `POST /v1/responses` (OpenAI's Responses API, as vLLM serves it)
    Responses,
}

impl Api {
    /// How the prompt is built: from a completion's text, or through the chat template (every
    /// route but completions, so the same messages give the same prompt tokens on each).
    pub(crate) fn kind(self) -> Kind {
        match self {
            Api::Completions => Kind::Completion,
            Api::Chat | Api::Messages | Api::Responses => Kind::Chat,
        }
    }

    /// A response id drawn from `rng`: `cmpl-` / `chatcmpl-` and 32 hex digits on the OpenAI
    /// routes; vLLM 0.32 answers `/v1/messages` with the id of the chat completion it runs
    /// underneath (`chatcmpl-` and 16 hex digits) and names responses `resp_` and 16 hex
    /// digits. Every route draws the same two values, so the faults drawn after the id do not
    /// depend on the route.
    pub(crate) fn make_id(self, rng: &mut Rng) -> String {
        let (prefix, digits) = match self {
            Api::Completions => ("cmpl-", 32),
            Api::Chat => ("chatcmpl-", 32),
            Api::Messages => ("chatcmpl-", 16),
            Api::Responses => ("resp_", 16),
        };
        let mut id = wire::make_id(prefix, rng);
        id.truncate(prefix.len() + digits);
        id
    }
}
