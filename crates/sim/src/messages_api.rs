//! `/v1/messages` on the wire: Anthropic's Messages API as vLLM serves it ([`MessagesFrames`]),
//! its error bodies and the `count_tokens` answer.
//!
//! A stream is SSE with an `event:` line naming each event's `type`:
//! `message_start` (with the first token, as vLLM builds it from the chat stream's first
//! chunk; `usage.input_tokens` is the whole prompt), an optional `ping` (`messages_ping`; vLLM
//! sends none), then per block `content_block_start`, `content_block_delta`s and
//! `content_block_stop` (a reasoning answer's thinking first, as a `thinking` block closed by a
//! `signature_delta`, then the text block at the next index), then `message_delta` (stop
//! reason and the final usage) and `message_stop`. A failure mid-stream is an `error` event
//! and the end of the body, without `message_stop`.
//!
//! The final usage reproduces vLLM's cache accounting ([`PromptSplit`]): with the default
//! `messages_usage = "anthropic"`, `input_tokens` counts only the prompt tokens neither read
//! from nor written to the prefix cache, so a client that takes it for the prompt length
//! undercounts; `"inclusive"` imitates a server that reports the whole prompt there.

use serde::Serialize;

use crate::config::{MessagesUsage, SimConfig};
use crate::engine::{CACHE_BLOCK_TOKENS, Finish};
use crate::frames::{Answer, Frames, Step, StepEvents};
use crate::rng::{Rng, hash_tokens};
use crate::wire::{Field, Writer, to_json};

/// How a prompt's tokens divide between the prefix cache's reads, its writes and the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PromptSplit {
    /// Tokens neither read from nor written to the cache.
    pub uncached: u64,
    /// Tokens this request wrote to the cache as new whole blocks.
    pub creation: u64,
    /// Tokens the cache served.
    pub read: u64,
}

impl PromptSplit {
    /// The split of a `prompt`-token prompt that was served `cached` tokens: the cache reads
    /// those, writes the prompt's other whole blocks (none with the cache off), and the
    /// prompt's last partial block is neither. The three sum to the prompt.
    pub(crate) fn of(prompt: u64, cached: u64, cache_on: bool) -> PromptSplit {
        let read = cached.min(prompt);
        let block = CACHE_BLOCK_TOKENS as u64;
        let creation = if cache_on {
            (prompt / block * block).saturating_sub(read)
        } else {
            0
        };
        PromptSplit {
            uncached: prompt - read - creation,
            creation,
            read,
        }
    }
}

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
    stop_sequence: Option<&'static str>,
    usage: Usage,
}

/// A block's delta.
#[derive(Debug, Serialize)]
struct Delta<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    thinking: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    signature: Option<&'a str>,
}

/// `message_delta`'s delta.
#[derive(Debug, Serialize)]
struct StopDelta {
    stop_reason: Option<&'static str>,
    stop_sequence: Option<&'static str>,
}

/// Every streamed event: `type` first, then the members that event has.
#[derive(Debug, Serialize)]
struct Event<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_block: Option<Block<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<DeltaKind<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorInfo<'a>>,
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

/// The Anthropic error type of an HTTP status (Anthropic's own table).
fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 | 529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// An HTTP error body in Anthropic's shape, its type chosen by the status.
pub(crate) fn error_json(status: u16, message: &str) -> String {
    to_json(&ErrorBody {
        kind: "error",
        error: ErrorInfo {
            kind: error_type(status),
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
            stop_sequence: None,
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
            kind: "overloaded_error",
            message,
        });
        vec![e.sse()]
    }

    fn torn_event(&self) -> &'static str {
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_d"
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
            stop_sequence: None,
            usage: self.final_usage(completion),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_split_sums_to_the_prompt() {
        // Cold: 1758 tokens = 109 whole blocks (1744) written + 14 in the last partial block.
        assert_eq!(
            PromptSplit::of(1758, 0, true),
            PromptSplit {
                uncached: 14,
                creation: 1744,
                read: 0
            }
        );
        // Warm, served whole: nothing written, nothing left.
        assert_eq!(
            PromptSplit::of(1758, 1758, true),
            PromptSplit {
                uncached: 0,
                creation: 0,
                read: 1758
            }
        );
        // A longer prompt served its first 1744: the new whole blocks are written.
        let s = PromptSplit::of(1800, 1744, true);
        assert_eq!((s.read, s.creation, s.uncached), (1744, 48, 8));
        assert_eq!(PromptSplit::of(40, 0, false).uncached, 40);
    }

    #[test]
    fn errors_take_anthropic_types() {
        assert_eq!(
            error_json(400, "too long"),
            "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"too long\"}}"
        );
        assert!(error_json(503, "full").contains("overloaded_error"));
        assert!(error_json(500, "x").contains("api_error"));
    }
}
