//! Parsing the agents' two streaming APIs into the same [`StreamItem`]s as chat's chunks:
//! Anthropic Messages (`/v1/messages`) and OpenAI Responses (`/v1/responses`).
//!
//! Both name every event: the `event:` line and the data's `"type"` say the same, and the
//! data's `type` decides (a proxy may drop `event:` lines). What each event means here:
//! - Messages: `message_start` carries the request's first usage report (its
//!   `input_tokens`, and on some servers the cache's counts); `content_block_delta` carries text
//!   (`text_delta`) or reasoning (`thinking_delta`), both generated tokens; `message_delta`
//!   carries the stop reason and the final usage (`output_tokens` cumulative, `input_tokens`
//!   with `cache_read_input_tokens` and `cache_creation_input_tokens`, read by
//!   [`llmib_core::request_prompt_tokens`]); `message_stop` ends the stream as `[DONE]` does;
//!   `error` is the server's error; `ping` and the block start/stop events carry nothing.
//! - Responses: `response.output_text.delta` carries text, the `…reasoning…delta` events
//!   reasoning; `response.completed` and `response.incomplete` end the stream with the usage
//!   (`input_tokens` the whole prompt, `input_tokens_details.cached_tokens`, `output_tokens`);
//!   `response.failed` and `error` are the server's error; every other event carries nothing.
//!
//! Stop reasons are given chat's words (`max_tokens` and `max_output_tokens` are `length`,
//! `end_turn` and `stop_sequence` are `stop`), since the cells' decisions read those. Unknown
//! event types carry nothing (the APIs add events), but data that is not JSON, or a known
//! event whose fields have the wrong types, is a malformed chunk. As chat's parser, this one
//! borrows the text from the event (no allocation without JSON escapes).

use std::borrow::Cow;
use std::fmt;

use llmib_core::MessagesUsage;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use crate::wire::chunk::{Chunk, ChunkError, ServerError, StreamItem, error_value, one_line};
use crate::wire::sse::SseEvent;

/// Parses one event of a Messages stream.
pub fn parse_messages_event<'a>(ev: &SseEvent<'a>) -> Result<StreamItem<'a>, ChunkError> {
    if ev.is_done() {
        // Not Anthropic's, but an OpenAI-minded proxy may add it after `message_stop`.
        return Ok(StreamItem::Done);
    }
    let raw: MsgEvent<'a> = from_json(ev.data)?;
    let mut chunk = Chunk::default();
    match raw.kind.as_ref() {
        "message_start" => {
            chunk.messages_usage = raw
                .message
                .and_then(|m| m.usage)
                .and_then(RawMsgUsage::report);
        }
        "content_block_start" => {
            // A block's first text, where a server puts any there (Anthropic sends "").
            if let Some(b) = raw.content_block {
                (chunk.content, chunk.reasoning) = (b.text, b.thinking);
                // A `tool_use` block names its tool; its input streams as JSON deltas.
                chunk.tool_name = b.name;
            }
        }
        "content_block_delta" => {
            if let Some(d) = raw.delta {
                (chunk.content, chunk.reasoning) = (d.text, d.thinking);
                chunk.tool_args = d.partial_json;
            }
        }
        "message_delta" => {
            chunk.finish_reason = raw
                .delta
                .and_then(|d| d.stop_reason)
                .map(|r| chat_reason(r, "max_tokens"));
            if let Some(u) = raw.usage {
                chunk.usage = Some(crate::wire::chunk::Usage {
                    completion_tokens: u.output_tokens,
                    cached_tokens: u.cache_read_input_tokens,
                    ..Default::default()
                });
                chunk.messages_usage = u.report();
            }
        }
        "message_stop" => return Ok(StreamItem::Done),
        "error" => return Ok(StreamItem::Error(server_error(raw.error, ev.data))),
        _ => {}
    }
    Ok(StreamItem::Chunk(chunk))
}

/// Parses one event of a Responses stream.
pub fn parse_responses_event<'a>(ev: &SseEvent<'a>) -> Result<StreamItem<'a>, ChunkError> {
    if ev.is_done() {
        return Ok(StreamItem::Done);
    }
    let raw: RespEvent<'a> = from_json(ev.data)?;
    let kind = raw.kind.as_ref();
    let mut chunk = Chunk::default();
    match kind {
        "response.output_text.delta" | "response.refusal.delta" => chunk.content = raw.delta.0,
        k if k.starts_with("response.reasoning") && k.ends_with(".delta") => {
            chunk.reasoning = raw.delta.0;
        }
        "response.function_call_arguments.delta" => chunk.tool_args = raw.delta.0,
        "response.output_item.added" => {
            chunk.tool_name = raw
                .item
                .filter(|i| i.kind.as_deref() == Some("function_call"))
                .and_then(|i| i.name);
        }
        "response.completed" | "response.incomplete" => {
            let Some(r) = raw.response else {
                return Err(malformed(ev.data, "the end event has no `response`"));
            };
            chunk.finish_reason = Some(r.finish_reason());
            chunk.usage = r.usage.map(RespUsage::usage);
            return Ok(StreamItem::Final(chunk));
        }
        "response.failed" => {
            let err = raw.response.and_then(|r| r.error);
            return Ok(StreamItem::Error(server_error(err, ev.data)));
        }
        "error" => {
            // The Responses API's error event puts `message` and `code` at the top level.
            let v: serde_json::Value = serde_json::from_str(ev.data.trim())
                .map_err(|e| malformed(ev.data, &e.to_string()))?;
            let err = match v {
                serde_json::Value::Object(mut o) => match o.remove("error") {
                    Some(inner) => inner,
                    None => {
                        // `type` names the event here, not the error's kind.
                        o.remove("type");
                        serde_json::Value::Object(o)
                    }
                },
                other => other,
            };
            return Ok(StreamItem::Error(server_error(Some(err), ev.data)));
        }
        _ => {}
    }
    Ok(StreamItem::Chunk(chunk))
}

/// The API an event came from, by its `event:` name alone (for the output viewer, which
/// reads any stream without being told its route): `response.*` is Responses, Anthropic's
/// event names are Messages, anything else (no name, `error`) chat's.
pub fn api_of(ev: &SseEvent<'_>) -> llmib_core::Api {
    match ev.event {
        e if e.starts_with("response.") => llmib_core::Api::Responses,
        "message_start"
        | "content_block_start"
        | "content_block_delta"
        | "content_block_stop"
        | "message_delta"
        | "message_stop"
        | "ping" => llmib_core::Api::Messages,
        _ => llmib_core::Api::Chat,
    }
}

/// A stop reason in chat's words: the API's word for the length limit (`limit`) is `length`;
/// Anthropic's `end_turn` and `stop_sequence` are `stop`; any other word is kept.
pub(crate) fn chat_reason<'a>(reason: Cow<'a, str>, limit: &str) -> Cow<'a, str> {
    match reason.as_ref() {
        r if r == limit => Cow::Borrowed("length"),
        "end_turn" | "stop_sequence" => Cow::Borrowed("stop"),
        "tool_use" => Cow::Borrowed("tool_calls"),
        _ => reason,
    }
}

fn from_json<'a, T: Deserialize<'a>>(data: &'a str) -> Result<T, ChunkError> {
    serde_json::from_str(data.trim()).map_err(|e| malformed(data, &e.to_string()))
}

fn malformed(data: &str, reason: &str) -> ChunkError {
    ChunkError {
        reason: reason.to_owned(),
        snippet: crate::wire::chunk::snippet(data),
    }
}

/// The server's error from an error object, or the event's data on one line.
fn server_error(err: Option<serde_json::Value>, data: &str) -> ServerError {
    err.as_ref()
        .and_then(error_value)
        .unwrap_or_else(|| ServerError {
            message: one_line(data),
            kind: None,
            code: None,
        })
}

#[derive(Deserialize)]
struct MsgEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default)]
    message: Option<MsgStart>,
    #[serde(default, borrow)]
    delta: Option<MsgDelta<'a>>,
    #[serde(default, borrow)]
    content_block: Option<MsgDelta<'a>>,
    #[serde(default)]
    usage: Option<RawMsgUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

/// `message_start.message`: only its usage is read.
#[derive(Deserialize)]
struct MsgStart {
    #[serde(default)]
    usage: Option<RawMsgUsage>,
}

/// A block delta (`text`, `thinking`), a block start (the same fields), or a message delta
/// (`stop_reason`).
#[derive(Deserialize)]
struct MsgDelta<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    stop_reason: Option<Cow<'a, str>>,
    /// A `tool_use` block's tool.
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    /// An `input_json_delta`'s piece of the tool's input.
    #[serde(default, borrow)]
    partial_json: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawMsgUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl RawMsgUsage {
    /// A prompt-length report, where the usage has an `input_tokens` to report.
    fn report(self) -> Option<MessagesUsage> {
        Some(MessagesUsage {
            input_tokens: self.input_tokens?,
            cache_read: self.cache_read_input_tokens,
            cache_creation: self.cache_creation_input_tokens,
        })
    }
}

#[derive(Deserialize)]
struct RespEvent<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    delta: LooseStr<'a>,
    #[serde(default)]
    response: Option<RespObject>,
    /// `response.output_item.added`'s item (a function call names its function there).
    #[serde(default, borrow)]
    item: Option<RespItem<'a>>,
}

#[derive(Deserialize)]
struct RespItem<'a> {
    #[serde(default, rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

/// The end events' `response`: status, usage, why it is incomplete, or its error.
#[derive(Deserialize)]
struct RespObject {
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    usage: Option<RespUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

impl RespObject {
    /// `length` for an output cut at `max_output_tokens`, `stop` for a completed response,
    /// else the incomplete reason or the status as given.
    fn finish_reason(&self) -> Cow<'static, str> {
        let reason = self
            .incomplete_details
            .as_ref()
            .and_then(|d| d.reason.clone());
        match (self.status.as_deref(), reason) {
            (_, Some(r)) => chat_reason(Cow::Owned(r), "max_output_tokens"),
            (Some("completed") | None, None) => Cow::Borrowed("stop"),
            (Some(s), None) => Cow::Owned(s.to_owned()),
        }
    }
}

#[derive(Deserialize)]
struct RespUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl RespUsage {
    /// Chat's usage: the Responses API means `input_tokens` as chat means `prompt_tokens`.
    fn usage(self) -> crate::wire::chunk::Usage {
        crate::wire::chunk::Usage {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            total_tokens: self.total_tokens,
            cached_tokens: self.input_tokens_details.and_then(|d| d.cached_tokens),
        }
    }
}

/// A `delta` that is text in the text events and may be anything in others (a function
/// call's arguments, a future event's object): text kept, anything else skipped.
#[derive(Default)]
struct LooseStr<'a>(Option<Cow<'a, str>>);

impl<'de: 'a, 'a> Deserialize<'de> for LooseStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = LooseStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a delta")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(LooseStr(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(LooseStr(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(LooseStr(Some(Cow::Owned(s))))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(LooseStr(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Self::Value, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(LooseStr(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LooseStr(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(LooseStr(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(LooseStr(None))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(LooseStr(None))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(LooseStr(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(LooseStr(None))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
#[path = "agent_events_tests.rs"]
mod tests;
