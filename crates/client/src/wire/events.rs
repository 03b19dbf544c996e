//! One SSE event of any API's stream, parsed by that API's parser: chat's for completions and
//! chat completions (`chunk.rs`), the agents' for Messages and Responses (`agent_events.rs`).
//! The one place that knows which parser reads which route.

use crate::wire::chunk::{ChunkError, StreamItem, parse_event};
use crate::wire::sse::SseEvent;

/// Parses one SSE event of a stream from `api`'s route.
pub fn parse_event_of<'a>(
    api: llmib_core::Api,
    ev: &SseEvent<'a>,
) -> Result<StreamItem<'a>, ChunkError> {
    match api {
        llmib_core::Api::Completions | llmib_core::Api::Chat => parse_event(ev),
        llmib_core::Api::Messages => crate::wire::agent_events::parse_messages_event(ev),
        llmib_core::Api::Responses => crate::wire::agent_events::parse_responses_event(ev),
    }
}
