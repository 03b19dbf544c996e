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
use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use thiserror::Error;

use crate::wire::sse::SseEvent;

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
}

impl Chunk<'_> {
    /// True when the chunk carries generated text (content or reasoning, non-empty).
    pub fn has_text(&self) -> bool {
        self.content.as_deref().is_some_and(|s| !s.is_empty())
            || self.reasoning.as_deref().is_some_and(|s| !s.is_empty())
    }

    /// Bytes of generated text in this chunk (content plus reasoning).
    pub fn text_len(&self) -> usize {
        self.content.as_deref().map_or(0, str::len) + self.reasoning.as_deref().map_or(0, str::len)
    }
}

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
    let raw: RawChunk<'_> = serde_json::from_str(trimmed).map_err(|e| ChunkError {
        reason: e.to_string(),
        snippet: snippet(trimmed),
    })?;
    if let Some(err) = raw.error.as_ref().and_then(error_from_value) {
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
            .and_then(|v| error_from_value(v.get("error").unwrap_or(&v)))
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
        if let Some(e) = v.get("error").and_then(error_from_value) {
            return e.to_string();
        }
        if let Some(e) = error_from_value(&v) {
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
fn error_from_value(v: &serde_json::Value) -> Option<ServerError> {
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
fn snippet(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::sse::{OwnedSseEvent, SseDecoder};

    fn events(fx: &str) -> Vec<OwnedSseEvent> {
        let mut d = SseDecoder::new();
        let mut v = d.push_collect(fx.as_bytes()).expect("valid sse");
        if let Some(Ok(e)) = d.finish() {
            v.push(e.to_owned_event());
        }
        v
    }

    fn items(fx: &str) -> Vec<StreamItem<'static>> {
        events(fx)
            .into_iter()
            .map(|e| {
                let ev = SseEvent {
                    event: &e.event,
                    data: &e.data,
                };
                into_owned(parse_event(&ev).expect("parses"))
            })
            .collect()
    }

    fn into_owned(i: StreamItem<'_>) -> StreamItem<'static> {
        match i {
            StreamItem::Done => StreamItem::Done,
            StreamItem::Error(e) => StreamItem::Error(e),
            StreamItem::Chunk(c) => StreamItem::Chunk(Chunk {
                choices: c.choices,
                content: c.content.map(|x| Cow::Owned(x.into_owned())),
                reasoning: c.reasoning.map(|x| Cow::Owned(x.into_owned())),
                finish_reason: c.finish_reason.map(|x| Cow::Owned(x.into_owned())),
                usage: c.usage,
                cache_n: c.cache_n,
            }),
        }
    }

    fn chunk<'a>(i: &'a StreamItem<'static>) -> &'a Chunk<'static> {
        match i {
            StreamItem::Chunk(c) => c,
            other => panic!("expected a chunk, got {other:?}"),
        }
    }

    #[test]
    fn sglang_continuous_usage_and_final_usage_chunk() {
        let it = items(include_str!(
            "../../fixtures/transcripts/sglang/completions_stream.sse"
        ));
        assert_eq!(it.len(), 6);
        let c0 = chunk(&it[0]);
        assert_eq!(c0.content.as_deref(), Some(" The"));
        assert_eq!(c0.usage.and_then(|u| u.completion_tokens), Some(1));
        // A speculative-decoding style chunk carries three tokens.
        assert_eq!(
            chunk(&it[1]).usage.and_then(|u| u.completion_tokens),
            Some(4)
        );
        assert_eq!(chunk(&it[3]).finish_reason.as_deref(), Some("length"));
        let last = chunk(&it[4]);
        assert_eq!(last.choices, 0);
        assert!(last.content.is_none());
        let u = last.usage.expect("usage");
        assert_eq!(
            (
                u.prompt_tokens,
                u.completion_tokens,
                u.total_tokens,
                u.cached_tokens
            ),
            (Some(12), Some(8), Some(20), Some(0))
        );
        assert_eq!(it[5], StreamItem::Done);
        // prompt_tokens_details: null is tolerated.
        assert_eq!(c0.usage.and_then(|u| u.cached_tokens), None);
    }

    #[test]
    fn chat_role_only_first_chunk_is_not_text() {
        for fx in [
            include_str!("../../fixtures/transcripts/sglang/chat_stream.sse"),
            include_str!("../../fixtures/transcripts/vllm/chat_stream.sse"),
            include_str!("../../fixtures/transcripts/generic/chat_stream_crlf.sse"),
        ] {
            let it = items(fx);
            assert!(!chunk(&it[0]).has_text(), "{fx}");
            assert!(chunk(&it[1]).has_text());
            assert_eq!(*it.last().expect("items"), StreamItem::Done);
        }
        let c =
            parse_data(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#)
                .expect("parses");
        let StreamItem::Chunk(c) = c else {
            panic!("chunk")
        };
        assert_eq!(c.content, None);
        assert_eq!(c.choices, 1);
    }

    #[test]
    fn vllm_usage_on_empty_choices_chunk() {
        let it = items(include_str!(
            "../../fixtures/transcripts/vllm/completions_stream.sse"
        ));
        let fin = chunk(&it[2]);
        assert_eq!(fin.finish_reason.as_deref(), Some("length"));
        let u = chunk(&it[3]).usage.expect("usage");
        assert_eq!(chunk(&it[3]).choices, 0);
        assert_eq!(u.cached_tokens, Some(384));
    }

    #[test]
    fn llama_cpp_usage_on_finish_chunk() {
        // Recorded: 8 text chunks, then text "" + finish_reason + usage + timings, then [DONE];
        // the same with include_usage, and continuous_usage_stats ignored.
        for fx in [
            include_str!("../../fixtures/transcripts/llamacpp/completions_stream.sse"),
            include_str!("../../fixtures/transcripts/llamacpp/completions_stream_usage.sse"),
            include_str!(
                "../../fixtures/transcripts/llamacpp/completions_stream_continuous_usage.sse"
            ),
        ] {
            let it = items(fx);
            assert_eq!(it.len(), 10);
            assert!(
                it[..8]
                    .iter()
                    .all(|i| chunk(i).has_text() && chunk(i).usage.is_none())
            );
            let fin = chunk(&it[8]);
            assert_eq!(fin.choices, 1);
            assert_eq!(fin.content.as_deref(), Some(""));
            assert!(!fin.has_text());
            assert_eq!(fin.finish_reason.as_deref(), Some("length"));
            let u = fin.usage.expect("usage on the finish chunk");
            assert_eq!((u.completion_tokens, u.prompt_tokens), (Some(8), Some(6)));
            assert!(u.cached_tokens.is_some());
            // What the slot's cache served (`timings.cache_n`): 1 token of the first request's 6,
            // 5 of the later ones', which repeat its prompt.
            assert!(matches!(fin.cache_n, Some(1 | 5)), "{:?}", fin.cache_n);
            assert_eq!(it[9], StreamItem::Done);
        }
        // Prompt + max_tokens over the slot: cut with "length", usage says 14 tokens.
        let it = items(include_str!(
            "../../fixtures/transcripts/llamacpp/completions_stream_truncated.sse"
        ));
        let fin = chunk(&it[it.len() - 2]);
        assert_eq!(fin.finish_reason.as_deref(), Some("length"));
        assert_eq!(fin.usage.and_then(|u| u.completion_tokens), Some(14));
    }

    #[test]
    fn llama_cpp_chat_null_role_chunk_and_separate_usage() {
        let it = items(include_str!(
            "../../fixtures/transcripts/llamacpp/chat_stream_usage.sse"
        ));
        let first = chunk(&it[0]);
        assert_eq!((first.content.as_deref(), first.choices), (None, 1));
        let usage = chunk(&it[it.len() - 2]);
        assert_eq!(usage.choices, 0);
        assert_eq!(usage.usage.and_then(|u| u.completion_tokens), Some(8));
        let texts = it
            .iter()
            .filter(|i| matches!(i, StreamItem::Chunk(c) if c.has_text()));
        assert_eq!(texts.count(), 8);
    }

    #[test]
    fn errors_inside_a_200_stream() {
        let it = items(include_str!(
            "../../fixtures/transcripts/sglang/error_in_stream.sse"
        ));
        let StreamItem::Error(e) = &it[1] else {
            panic!("error expected")
        };
        assert!(e.message.contains("out of memory"));
        assert_eq!(e.code.as_deref(), Some("503"));

        let it = items(include_str!(
            "../../fixtures/transcripts/vllm/error_in_stream.sse"
        ));
        let StreamItem::Error(e) = &it[1] else {
            panic!("error expected")
        };
        assert_eq!(e.kind.as_deref(), Some("InternalServerError"));

        let it = items(include_str!(
            "../../fixtures/transcripts/tgi/error_in_stream.sse"
        ));
        let StreamItem::Error(e) = &it[1] else {
            panic!("error expected")
        };
        assert!(e.message.starts_with("Request failed during generation"));
        // TGI's stream ends after the error, without [DONE].
        assert_eq!(it.len(), 2);

        let it = items(include_str!(
            "../../fixtures/transcripts/ollama/error_in_stream.sse"
        ));
        assert!(matches!(&it[0], StreamItem::Error(e) if e.kind.as_deref() == Some("api_error")));

        // llama.cpp: newer builds send data: {"error": …}, older ones an `error:` field.
        let it = items(
            "error: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n",
        );
        assert!(matches!(&it[0], StreamItem::Error(e) if e.message == "slot unavailable"));
        let it = items(
            "data: {\"error\":{\"code\":400,\"message\":\"too long\",\"type\":\"exceed_context_size_error\"}}\n\n",
        );
        assert!(matches!(&it[0], StreamItem::Error(e) if e.code.as_deref() == Some("400")));
    }

    #[test]
    fn every_fixture_parses() {
        for fx in [
            include_str!("../../fixtures/transcripts/tgi/completions_stream.sse"),
            include_str!("../../fixtures/transcripts/trtllm/completions_stream.sse"),
            include_str!("../../fixtures/transcripts/ollama/completions_stream.sse"),
            include_str!("../../fixtures/transcripts/generic/truncated_cr.sse"),
        ] {
            let it = items(fx);
            assert!(
                it.iter()
                    .any(|i| matches!(i, StreamItem::Chunk(c) if c.has_text()))
            );
        }
        let it = items(include_str!(
            "../../fixtures/transcripts/trtllm/completions_stream.sse"
        ));
        assert_eq!(
            chunk(&it[1]).usage.and_then(|u| u.completion_tokens),
            Some(3)
        );
    }

    #[test]
    fn malformed_json_is_an_error_value() {
        for bad in [
            "{",
            "{\"choices\": 3}",
            "not json",
            "{\"usage\":{\"prompt_tokens\":\"x\"}}",
        ] {
            let e = parse_data(bad).expect_err(bad);
            assert!(e.to_string().starts_with("malformed chunk"));
        }
        assert_eq!(parse_data("  [DONE]  "), Ok(StreamItem::Done));
        // Unknown fields are fine.
        assert!(parse_data(r#"{"foo":{"bar":[1,2]},"choices":[{"text":"x","extra":1}]}"#).is_ok());
    }

    #[test]
    fn escapes_and_reasoning() {
        let StreamItem::Chunk(c) =
            parse_data(r#"{"choices":[{"delta":{"reasoning_content":"think\n","content":null}}]}"#)
                .expect("parses")
        else {
            panic!("chunk")
        };
        assert_eq!(c.reasoning.as_deref(), Some("think\n"));
        assert!(c.has_text());
        assert_eq!(c.text_len(), 6);
    }

    #[test]
    fn non_streaming_error_bodies() {
        assert_eq!(
            error_body_message(
                r#"{"error":{"code":400,"message":"request (4106 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error"}}"#
            ),
            "request (4106 tokens) exceeds the available context size (4096 tokens) (exceed_context_size_error, code 400)"
        );
        assert_eq!(
            error_body_message(
                r#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#
            ),
            "The model `x` does not exist. (NotFoundError, code 404)"
        );
        assert_eq!(
            error_body_message(
                r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096","error_type":"validation"}"#
            ),
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"
        );
        assert_eq!(
            error_body_message(include_str!(
                "../../fixtures/transcripts/llamacpp/error_context_exceeded_stream.sse"
            )),
            "request (4102 tokens) exceeds the available context size (4096 tokens), try increasing it (exceed_context_size_error, code 400)"
        );
        assert_eq!(
            error_body_message(include_str!(
                "../../fixtures/transcripts/llamacpp/error_unauthorized.json"
            )),
            "Invalid API Key (authentication_error, code 401)"
        );
        assert_eq!(error_body_message(r#"{"detail":"Not Found"}"#), "Not Found");
        assert_eq!(
            error_body_message(r#"{"detail":[{"loc":["body","model"],"msg":"field required"}]}"#),
            "field required"
        );
        assert_eq!(error_body_message("Unauthorized\n"), "Unauthorized");
        assert_eq!(error_body_message(""), "(empty body)");
        assert!(error_body_message(&"x".repeat(1000)).ends_with('…'));
    }

    /// Ingest cost: decode + parse a realistic stream many times. Run with
    /// `cargo test --release -p llmib-client --lib ingest_throughput -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn ingest_throughput() {
        let fx = include_str!("../../fixtures/transcripts/sglang/completions_stream.sse");
        let one: &[u8] = fx.as_bytes();
        let reps = 200_000;
        let mut d = SseDecoder::new();
        let t = std::time::Instant::now();
        let (mut events, mut text) = (0u64, 0usize);
        for _ in 0..reps {
            // Deliver in 3 reads, as TCP might.
            for part in one.chunks(one.len() / 3 + 1) {
                d.push(part);
                while let Some(ev) = d.next_event() {
                    let ev = ev.expect("valid");
                    if let Ok(StreamItem::Chunk(c)) = parse_event(&ev) {
                        text += c.text_len();
                    }
                    events += 1;
                }
            }
        }
        let s = t.elapsed().as_secs_f64();
        println!(
            "decode+parse: {events} events in {s:.3}s: {:.2} M events/s, {:.0} MB/s ({text} text bytes)",
            events as f64 / s / 1e6,
            (one.len() * reps) as f64 / s / 1e6
        );
        let t = std::time::Instant::now();
        let mut n = 0u64;
        for _ in 0..reps {
            for part in one.chunks(one.len() / 3 + 1) {
                d.push(part);
                while let Some(ev) = d.next_event() {
                    n += u64::from(ev.is_ok());
                }
            }
        }
        let s = t.elapsed().as_secs_f64();
        println!("decode only: {:.2} M events/s", n as f64 / s / 1e6);
    }
}
