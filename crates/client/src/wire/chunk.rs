//! Parsing one OpenAI-style streaming chunk (completions and chat) into the few facts the
//! driver needs: content text, finish reason, usage, or an error the server sent inside a
//! 200 stream.
//!
//! Engines agree on the outline and differ in details, all handled here:
//! - usage rides on a `choices: []` chunk (vLLM, SGLang, OpenAI) or on the finish chunk itself
//!   (llama.cpp completions); with `continuous_usage_stats` it is on every chunk;
//! - the first chat chunk carries only the role, with `content` null (llama.cpp) or `""`
//!   (vLLM): it is not content;
//! - errors inside a 200 stream come as `{"error": {…}}` (SGLang, vLLM ≥ 0.9, Ollama, llama.cpp),
//!   `{"object": "error", …}` (older vLLM, SGLang), or `{"error": "text"}` (TGI, TRT-LLM).
//!
//! Parsing borrows from the event (`Cow` strings stay borrowed unless the JSON had escapes) and
//! keeps only the first choice, so a chunk costs no heap allocation in the common case.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use thiserror::Error;

pub use crate::wire::chunk_fields::{Chunk, Usage};
use crate::wire::sse::SseEvent;

/// An error the server reported (inside a stream or as an error body).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// The message, on one line.
    pub message: String,
    /// `type` / `error_type`, where given.
    pub kind: Option<String>,
    /// `code`, where given (HTTP status or a string code), as text.
    pub code: Option<String>,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        match (&self.kind, &self.code) {
            (Some(k), Some(c)) => write!(f, " ({k}, code {c})"),
            (Some(k), None) => write!(f, " ({k})"),
            (None, Some(c)) => write!(f, " (code {c})"),
            (None, None) => Ok(()),
        }
    }
}

/// What one SSE event of a completion stream means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem<'a> {
    /// `[DONE]`: the stream ended properly.
    Done,
    /// A data chunk.
    Chunk(Chunk<'a>),
    /// A chunk that also ends the stream properly (the Responses API's `response.completed`,
    /// which carries the usage and has no `[DONE]` after it).
    Final(Chunk<'a>),
    /// The server reported an error inside the (200) stream.
    Error(ServerError),
}

/// A chunk that could not be understood.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("malformed chunk from the server ({reason}): {snippet}")]
pub struct ChunkError {
    /// The JSON error.
    pub reason: String,
    /// The start of the offending data, for the error message.
    pub snippet: String,
}

/// Parses the data of one SSE event.
pub fn parse_data(data: &str) -> Result<StreamItem<'_>, ChunkError> {
    let trimmed = data.trim();
    if trimmed == "[DONE]" {
        return Ok(StreamItem::Done);
    }
    // The common chunk in one pass; anything it is not sure of goes to `serde` below.
    if let Some(chunk) = crate::wire::fastchunk::chunk(trimmed) {
        return Ok(StreamItem::Chunk(chunk));
    }
    parse_json(trimmed)
}

/// [`parse_data`] by `serde` alone, for JSON text that is not `[DONE]` (the fast path's
/// reference in its tests).
pub(crate) fn parse_json(trimmed: &str) -> Result<StreamItem<'_>, ChunkError> {
    let raw: RawChunk<'_> = serde_json::from_str(trimmed).map_err(|e| ChunkError {
        reason: e.to_string(),
        snippet: snippet(trimmed),
    })?;
    if let Some(err) = raw.error.as_ref().and_then(error_value) {
        return Ok(StreamItem::Error(err));
    }
    if raw.object.as_deref() == Some("error") {
        return Ok(StreamItem::Error(ServerError {
            message: raw
                .message
                .as_ref()
                .map_or_else(|| "unknown error".to_owned(), |m| one_line(m)),
            kind: raw.kind.as_deref().map(str::to_owned),
            code: raw.code.as_ref().and_then(value_text),
        }));
    }
    let (choices, first) = raw.choices.map_or((0, None), |c| (c.count, c.first));
    let mut chunk = Chunk {
        choices,
        usage: raw.usage,
        cache_n: raw.timings.and_then(|t| t.cache_n),
        ..Chunk::default()
    };
    if let Some(c) = first {
        chunk.finish_reason = c.finish_reason;
        chunk.content = c.text;
        if let Some(d) = c.delta {
            if chunk.content.is_none() {
                chunk.content = d.content;
            }
            chunk.reasoning = d.reasoning_content.or(d.reasoning);
            if let Some(f) = d.tool_calls.and_then(|t| t.first).and_then(|t| t.function) {
                (chunk.tool_name, chunk.tool_args) = (f.name, f.arguments);
            }
        }
    }
    Ok(StreamItem::Chunk(chunk))
}

/// Parses one SSE event, honouring an error event type (llama.cpp's `error:` field, or an
/// `event: error`) whose data may be JSON or plain text.
pub fn parse_event<'a>(ev: &SseEvent<'a>) -> Result<StreamItem<'a>, ChunkError> {
    if ev.is_error_event() {
        let msg = serde_json::from_str::<serde_json::Value>(ev.data)
            .ok()
            .and_then(|v| error_value(v.get("error").unwrap_or(&v)))
            .unwrap_or_else(|| ServerError {
                message: one_line(ev.data),
                kind: None,
                code: None,
            });
        return Ok(StreamItem::Error(msg));
    }
    parse_data(ev.data)
}

/// Turns a non-streaming error body (any engine's shape, or plain text) into one line, without
/// the status: `{"error":{"message":…}}`, `{"error":"…"}`, `{"object":"error","message":…}`,
/// FastAPI's `{"detail":…}`, or the text itself, shortened.
pub fn error_body_message(body: &str) -> String {
    let body = body.trim();
    if let Ok(v) = serde_json::from_str::<serde_json::Value>(body) {
        if let Some(e) = v.get("error").and_then(error_value) {
            return e.to_string();
        }
        if let Some(e) = error_value(&v) {
            return e.to_string();
        }
        if let Some(d) = v.get("detail") {
            return match d {
                serde_json::Value::String(s) => one_line(s),
                serde_json::Value::Array(items) => one_line(
                    &items
                        .iter()
                        .filter_map(|i| i.get("msg").and_then(|m| m.as_str()))
                        .collect::<Vec<_>>()
                        .join("; "),
                ),
                other => one_line(&other.to_string()),
            };
        }
    }
    if body.is_empty() {
        return "(empty body)".to_owned();
    }
    snippet(body)
}

/// An error object (`{"message", "type", "code"}`), or a bare error string (TGI, TRT-LLM).
pub(crate) fn error_value(v: &serde_json::Value) -> Option<ServerError> {
    match v {
        serde_json::Value::String(s) => Some(ServerError {
            message: one_line(s),
            kind: None,
            code: None,
        }),
        serde_json::Value::Object(m) => {
            let message = m.get("message").and_then(|x| x.as_str())?;
            let kind = m
                .get("type")
                .or_else(|| m.get("error_type"))
                .and_then(value_text);
            Some(ServerError {
                message: one_line(message),
                kind,
                code: m.get("code").and_then(value_text),
            })
        }
        _ => None,
    }
}

fn value_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    }
}

/// Collapses whitespace runs (newlines included) to single spaces.
pub(crate) fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first 200 characters, on one line.
pub(crate) fn snippet(s: &str) -> String {
    const MAX: usize = 200;
    let line = one_line(s);
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line,
    }
}

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(default)]
    choices: Option<FirstOf<RawChoice<'a>>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    timings: Option<RawTimings>,
}

/// llama.cpp's `timings` (only `cache_n` is read).
#[derive(Deserialize)]
struct RawTimings {
    #[serde(default)]
    cache_n: Option<u64>,
}

#[derive(Deserialize)]
struct RawChoice<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<RawDelta<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    /// Tool-call deltas (only the first of a chunk is read: engines stream one at a time).
    #[serde(default, borrow)]
    tool_calls: Option<FirstOf<RawToolCall<'a>>>,
}

#[derive(Deserialize)]
struct RawToolCall<'a> {
    #[serde(default, borrow)]
    function: Option<RawFunction<'a>>,
}

#[derive(Deserialize)]
struct RawFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

/// The first element of a JSON array and the array's length, without allocating a `Vec`.
struct FirstOf<T> {
    first: Option<T>,
    count: usize,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for FirstOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = FirstOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element::<T>()?;
                let mut count = usize::from(first.is_some());
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    count += 1;
                }
                Ok(FirstOf { first, count })
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
