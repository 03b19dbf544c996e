//! `/v1/messages` on the wire: Anthropic's Messages API as vLLM 0.32 serves it
//! ([`MessagesFrames`]), its error bodies and the `count_tokens` answer. Shapes and field order
//! follow the recorded transcripts (`crates/client/fixtures/transcripts/vllm/live/messages_*`).
//!
//! A stream is SSE with an `event:` line naming each event's `type`, no `[DONE]` and no `ping`
//! (vLLM sends none; `messages_ping` adds Anthropic's, for a client test):
//! `message_start` (sent with the first token: vLLM builds it from the chat stream's first
//! chunk; `usage` holds only `input_tokens`, the whole prompt, and `output_tokens` 0), then per
//! block `content_block_start`, `content_block_delta`s and `content_block_stop` (a reasoning
//! answer's thinking first, as a `thinking` block closed by a `signature_delta`, then the text
//! block at the next index), then `message_delta` (stop reason and the final usage) and
//! `message_stop`. A failure mid-stream is an `error` event (`internal_error`, as vLLM's
//! converter words it) and the end of the body, without `message_stop`.
//!
//! Where vLLM differs from Anthropic's API (and so does the simulator): the message id is the
//! chat completion's (`chatcmpl-…`); `index` comes after `content_block` / `delta`; the
//! non-streamed body leaves out a null `stop_sequence`; an error's `type` is vLLM's error type
//! (`BadRequestError`), not Anthropic's (`invalid_request_error`); only
//! `Authorization: Bearer` opens the route (`x-api-key` only with `messages_x_api_key`).
//!
//! The final usage reproduces vLLM's cache accounting ([`PromptSplit`]): with the default
//! `messages_usage = "anthropic"`, `input_tokens` counts only the prompt tokens neither read
//! from nor written to the prefix cache, so a client that takes it for the prompt length
//! undercounts; `"inclusive"` imitates a server that reports the whole prompt there.

use serde::Serialize;

use crate::config::{MessagesUsage, SimConfig};
use crate::engine::Finish;
use crate::frames::{Answer, Frames, PromptSplit, Step, StepEvents};
use crate::rng::{Rng, hash_tokens};
use crate::wire::{Field, Writer, to_json};

/// Anthropic's `usage` object.
#[derive(Debug, Clone, Copy, Serialize)]
struct Usage {
    input_tokens: u64,
    output_tokens: u64,
    #[serde(skip_serializing_if = "Field::is_absent")]
    cache_creation_input_tokens: Field<u64>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    cache_read_input_tokens: Field<u64>,
}

/// A content block, as `content_block_start` and the non-streamed body carry it.
#[derive(Debug, Serialize)]
struct Block<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
}

/// The message object (`message_start`'s `message`, and the non-streamed body).
#[derive(Debug, Serialize)]
struct Message<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    role: &'static str,
    content: Vec<Block<'a>>,
    model: &'a str,
    stop_reason: Option<&'static str>,
    /// `null` in `message_start`; left out of the non-streamed body (vLLM dumps it without
    /// `None`s), where only a matched stop string would show (not modelled).
    #[serde(skip_serializing_if = "Field::is_absent")]
    stop_sequence: Field<&'static str>,
    usage: Usage,
}

/// A block's delta: the same members as a block (`type`, then its text, thinking or
/// signature).
type Delta<'a> = Block<'a>;

/// `message_delta`'s delta.
#[derive(Debug, Serialize)]
struct StopDelta {
    stop_reason: Option<&'static str>,
    stop_sequence: Option<&'static str>,
}

/// Every streamed event, its members in the order of vLLM's `AnthropicStreamEvent` (so
/// `index` comes after `content_block` and `delta`), only those the event has.
#[derive(Debug, Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<DeltaKind<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_block: Option<Block<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorInfo<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

#[derive(Debug, Serialize)]
#[serde(untagged)]
enum DeltaKind<'a> {
    Block(Delta<'a>),
    Stop(StopDelta),
}

#[derive(Debug, Serialize)]
struct ErrorInfo<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    message: &'a str,
}

#[derive(Debug, Serialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    error: ErrorInfo<'a>,
}

impl<'a> Event<'a> {
    fn new(kind: &'static str) -> Self {
        Event {
            kind,
            message: None,
            index: None,
            content_block: None,
            delta: None,
            usage: None,
            error: None,
        }
    }

    /// `event: <type>` and `data: <json>`, the framing Anthropic's SDKs read.
    fn sse(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.kind, to_json(self))
    }
}

/// An HTTP error body in Anthropic's shape, as vLLM translates its own errors: the `type` is
/// the engine's error type (`BadRequestError`), with no `param` or `code`.
pub(crate) fn error_json(err_type: &str, message: &str) -> String {
    to_json(&ErrorBody {
        kind: "error",
        error: ErrorInfo {
            kind: err_type,
            message,
        },
    })
}

/// `/v1/messages/count_tokens`'s answer.
pub(crate) fn count_tokens_json(input_tokens: u64) -> String {
    format!(
        "{{\"input_tokens\":{input_tokens},\"context_management\":{{\"original_input_tokens\":{input_tokens}}}}}"
    )
}

/// The stop reason of a finish (`null` for an abort, as vLLM maps none).
fn stop_reason(f: Finish) -> Option<&'static str> {
    match f {
        Finish::Length => Some("max_tokens"),
        Finish::Stop => Some("end_turn"),
        Finish::Abort => None,
    }
}

/// Which block is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Thinking,
    Text,
}

/// `/v1/messages` framing of one request.
pub(crate) struct MessagesFrames {
    writer: Writer,
    usage_mode: MessagesUsage,
    ping: bool,
    cache_on: bool,
    /// The open block and its index.
    open: Option<(Open, u32)>,
    /// The index the next block gets.
    next_index: u32,
    /// The thinking block's signature (what `signature_delta` carries).
    signature: String,
}

impl MessagesFrames {
    /// The framing of a request answered by `writer` under `cfg`.
    pub(crate) fn new(writer: Writer, cfg: &SimConfig) -> Self {
        // A signature is opaque to clients; a digest of the id keeps runs reproducible.
        let id: Vec<u32> = writer.id.bytes().map(u32::from).collect();
        let mut r = Rng::derive(0x5167, hash_tokens(&id));
        let signature = format!("{:016x}{:016x}", r.next_u64(), r.next_u64());
        MessagesFrames {
            writer,
            usage_mode: cfg.messages_usage,
            ping: cfg.messages_ping,
            cache_on: cfg.prefix_cache_tokens > 0,
            open: None,
            next_index: 0,
            signature,
        }
    }

    /// The final usage (`message_delta`, the non-streamed body), per `messages_usage`.
    fn final_usage(&self, completion: u32) -> Usage {
        let p = self.writer.prompt_tokens;
        let split = PromptSplit::of(p, self.writer.cached_tokens, self.cache_on);
        Usage {
            input_tokens: match self.usage_mode {
                MessagesUsage::Anthropic => split.uncached,
                MessagesUsage::Inclusive => p,
            },
            output_tokens: u64::from(completion),
            cache_creation_input_tokens: Field::Val(split.creation),
            cache_read_input_tokens: Field::Val(split.read),
        }
    }

    /// Closes the open block (a thinking block with its signature first).
    fn close_block(&mut self, out: &mut Vec<String>) {
        let Some((open, index)) = self.open.take() else {
            return;
        };
        if open == Open::Thinking {
            let mut e = Event::new("content_block_delta");
            e.index = Some(index);
            e.delta = Some(DeltaKind::Block(Delta {
                kind: "signature_delta",
                text: None,
                thinking: None,
                signature: Some(&self.signature),
            }));
            out.push(e.sse());
        }
        let mut e = Event::new("content_block_stop");
        e.index = Some(index);
        out.push(e.sse());
    }

    /// Opens a block of this kind unless it is the open one; answers its index.
    fn ensure_block(&mut self, want: Open, out: &mut Vec<String>) -> u32 {
        if let Some((open, index)) = self.open
            && open == want
        {
            return index;
        }
        self.close_block(out);
        let index = self.next_index;
        self.next_index += 1;
        let mut e = Event::new("content_block_start");
        e.index = Some(index);
        e.content_block = Some(match want {
            Open::Thinking => Block {
                kind: "thinking",
                text: None,
                thinking: Some(""),
                signature: None,
            },
            Open::Text => Block {
                kind: "text",
                text: Some(""),
                thinking: None,
                signature: None,
            },
        });
        out.push(e.sse());
        self.open = Some((want, index));
        index
    }
}

impl Frames for MessagesFrames {
    fn writer(&self) -> &Writer {
        &self.writer
    }

    fn set_cached_tokens(&mut self, cached: u64) {
        self.writer.cached_tokens = cached;
    }

    fn opening(&mut self) -> Vec<String> {
        let mut e = Event::new("message_start");
        e.message = Some(Message {
            id: &self.writer.id,
            kind: "message",
            role: "assistant",
            content: Vec::new(),
            model: &self.writer.model,
            stop_reason: None,
            stop_sequence: Field::Null,
            usage: Usage {
                input_tokens: self.writer.prompt_tokens,
                output_tokens: 0,
                cache_creation_input_tokens: Field::Absent,
                cache_read_input_tokens: Field::Absent,
            },
        });
        let mut out = vec![e.sse()];
        if self.ping {
            out.push("event: ping\ndata: {\"type\": \"ping\"}\n\n".to_string());
        }
        out
    }

    fn step(&mut self, s: &Step<'_>) -> StepEvents {
        let mut out = StepEvents::default();
        // An empty step (an abort's last event) opens no block, as vLLM skips empty deltas.
        if s.text.is_empty() {
            return out;
        }
        let want = if s.reasoning {
            Open::Thinking
        } else {
            Open::Text
        };
        let index = self.ensure_block(want, &mut out.events);
        let mut e = Event::new("content_block_delta");
        e.index = Some(index);
        e.delta = Some(DeltaKind::Block(match want {
            Open::Thinking => Delta {
                kind: "thinking_delta",
                text: None,
                thinking: Some(s.text),
                signature: None,
            },
            Open::Text => Delta {
                kind: "text_delta",
                text: Some(s.text),
                thinking: None,
                signature: None,
            },
        }));
        out.carrier = Some(out.events.len());
        out.events.push(e.sse());
        out
    }

    fn closing(&mut self, completion: u32, finish: Finish) -> Vec<String> {
        let mut out = Vec::with_capacity(4);
        self.close_block(&mut out);
        let mut e = Event::new("message_delta");
        e.delta = Some(DeltaKind::Stop(StopDelta {
            stop_reason: stop_reason(finish),
            stop_sequence: None,
        }));
        e.usage = Some(self.final_usage(completion));
        out.push(e.sse());
        out.push(Event::new("message_stop").sse());
        out
    }

    fn failure(&mut self, message: &str) -> Vec<String> {
        let mut e = Event::new("error");
        e.error = Some(ErrorInfo {
            kind: "internal_error",
            message,
        });
        vec![e.sse()]
    }

    fn torn_event(&self) -> &'static str {
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_d"
    }

    fn body(&self, answer: &Answer, completion: u32, finish: Finish) -> String {
        let mut content = Vec::with_capacity(2);
        if !answer.reasoning.is_empty() {
            content.push(Block {
                kind: "thinking",
                text: None,
                thinking: Some(&answer.reasoning),
                signature: Some(&self.signature),
            });
        }
        content.push(Block {
            kind: "text",
            text: Some(&answer.text),
            thinking: None,
            signature: None,
        });
        to_json(&Message {
            id: &self.writer.id,
            kind: "message",
            role: "assistant",
            content,
            model: &self.writer.model,
            stop_reason: stop_reason(finish),
            stop_sequence: Field::Absent,
            usage: self.final_usage(completion),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_keep_the_engines_type_in_anthropics_shape() {
        assert_eq!(
            error_json("BadRequestError", "too long"),
            "{\"type\":\"error\",\"error\":{\"type\":\"BadRequestError\",\"message\":\"too long\"}}"
        );
    }
}
