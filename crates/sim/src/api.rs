//! Which HTTP API a generation request came in on. Every generation route shares one engine
//! submission, one fault plan, one stamp log and one API-key check; what differs per route is
//! read from here: how the body is parsed (`request`, `agent_request`), how answers and errors
//! are framed (`frames`, `messages_api`, `responses_api`, `reply`) and the response id's prefix.

use crate::wire::Kind;

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

    /// The prefix of the response id. vLLM answers `/v1/messages` with the id of the chat
    /// completion it runs underneath (`chatcmpl-…`) and names responses `resp_…`.
    pub(crate) fn id_prefix(self) -> &'static str {
        match self {
            Api::Completions => "cmpl-",
            Api::Chat | Api::Messages => "chatcmpl-",
            Api::Responses => "resp_",
        }
    }
}
