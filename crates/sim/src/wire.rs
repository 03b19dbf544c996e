//! The bytes on the wire: request bodies in, JSON and SSE out, in each engine's own shape.
//!
//! Field order and presence follow what the engines' pydantic models dump (vLLM 0.10.x
//! `protocol.py` / `serving_completion.py` / `serving_chat.py`; SGLang 0.5.x
//! `entrypoints/openai/protocol.py` / `serving_completions.py` / `serving_chat.py`):
//! - vLLM completion chunks are dumped with `exclude_unset=False` (so `"usage":null` appears),
//!   chat chunks with `exclude_unset=True` (only the fields vLLM sets), final usage chunks
//!   with `exclude_none=True`;
//! - SGLang dumps every field (`"usage":null`, `"matched_stop":null`), sends the chat finish
//!   reason in a separate chunk with an empty delta, and final usage with `exclude_none=True`;
//! - errors inside a stream are Python `json.dumps` output, with `", "` and `": "` separators.
//!
//! Structs with `Field` members make "absent", "null" and "value" explicit, because serde's
//! `Value` map would sort the keys and lose the engines' order.

use serde::{Serialize, Serializer};

use crate::config::Flavor;

/// A JSON member that may be left out, written as `null`, or hold a value.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) enum Field<T> {
    /// Not written at all.
    #[default]
    Absent,
    /// Written as `null`.
    Null,
    /// Written as the value.
    Val(T),
}

impl<T> Field<T> {
    /// Whether serde leaves the member out (`skip_serializing_if`).
    pub(crate) fn is_absent(&self) -> bool {
        matches!(self, Field::Absent)
    }
}

impl<T: Serialize> Serialize for Field<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Field::Val(v) => v.serialize(s),
            _ => s.serialize_none(),
        }
    }
}

/// Token counts, in the engines' field order (`prompt`, `total`, `completion`).
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Usage {
    prompt_tokens: u64,
    total_tokens: u64,
    completion_tokens: u64,
    prompt_tokens_details: PromptTokensDetails,
    #[serde(skip_serializing_if = "Field::is_absent")]
    reasoning_tokens: Field<u64>,
}

/// `usage.prompt_tokens_details`: the prompt tokens the prefix cache served, as vLLM (with
/// `--enable-prompt-tokens-details`) and SGLang (with `--enable-cache-report`) report them.
/// The simulator always reports it, 0 included, so a client's per-turn figure can be checked.
#[derive(Debug, Clone, Copy, Serialize)]
struct PromptTokensDetails {
    cached_tokens: u64,
}

#[derive(Debug, Serialize)]
struct Delta<'a> {
    #[serde(skip_serializing_if = "Field::is_absent")]
    role: Field<&'a str>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    content: Field<&'a str>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    reasoning_content: Field<&'a str>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    tool_calls: Field<()>,
}

#[derive(Debug, Serialize)]
struct Message<'a> {
    role: &'a str,
    content: &'a str,
    #[serde(skip_serializing_if = "Field::is_absent")]
    refusal: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    annotations: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    audio: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    function_call: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    reasoning_content: Field<()>,
    tool_calls: Field<[u8; 0]>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    reasoning_content_vllm: Field<()>,
}

#[derive(Debug, Serialize)]
struct Choice<'a> {
    index: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delta: Option<Delta<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Message<'a>>,
    logprobs: Field<()>,
    finish_reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    stop_reason: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    matched_stop: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    prompt_logprobs: Field<()>,
}

#[derive(Debug, Serialize)]
struct Metadata {
    weight_version: &'static str,
}

#[derive(Debug, Serialize)]
struct Body<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<Choice<'a>>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    service_tier: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    system_fingerprint: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    usage: Field<Usage>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    prompt_logprobs: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    kv_transfer_params: Field<()>,
    #[serde(skip_serializing_if = "Field::is_absent")]
    metadata: Field<Metadata>,
}

/// Which endpoint a response belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `/v1/completions`
    Completion,
    /// `/v1/chat/completions`
    Chat,
}

/// Everything that is the same in every chunk of one response.
#[derive(Debug, Clone)]
pub(crate) struct Writer {
    /// The engine dialect.
    pub flavor: Flavor,
    /// Completion or chat.
    pub kind: Kind,
    /// `cmpl-…` / `chatcmpl-…`
    pub id: String,
    /// Unix seconds.
    pub created: u64,
    /// The `model` to echo.
    pub model: String,
    /// Prompt tokens (for usage).
    pub prompt_tokens: u64,
    /// Prompt tokens served from the prefix cache (for usage); known once the engine has
    /// admitted the request, so the handler sets it from the first token event.
    pub cached_tokens: u64,
    /// Chat: the first this-many output tokens are reasoning (`reasoning_content`).
    pub reasoning_tokens: u32,
}

/// One SSE event without an `event:` line: `data: <json>` and a blank line.
pub(crate) fn sse(json: &str) -> String {
    format!("data: {json}\n\n")
}

/// Compact JSON of a plain struct (members in declaration order).
pub(crate) fn to_json<T: Serialize>(v: &T) -> String {
    // Serializing these plain structs cannot fail (no maps with non-string keys, no I/O).
    serde_json::to_string(v).unwrap_or_default()
}

/// The final SSE event of every stream.
pub(crate) const DONE: &str = "data: [DONE]\n\n";

impl Writer {
    fn usage(&self, completion: u64) -> Usage {
        let sglang = self.flavor == Flavor::Sglang;
        Usage {
            prompt_tokens: self.prompt_tokens,
            total_tokens: self.prompt_tokens + completion,
            completion_tokens: completion,
            prompt_tokens_details: PromptTokensDetails {
                cached_tokens: self.cached_tokens,
            },
            reasoning_tokens: if sglang { Field::Val(0) } else { Field::Absent },
        }
    }

    fn object(&self, stream: bool) -> &'static str {
        match (self.kind, stream) {
            (Kind::Completion, _) => "text_completion",
            (Kind::Chat, true) => "chat.completion.chunk",
            (Kind::Chat, false) => "chat.completion",
        }
    }

    fn body<'a>(&'a self, choices: Vec<Choice<'a>>, usage: Field<Usage>, stream: bool) -> Body<'a> {
        Body {
            id: &self.id,
            object: self.object(stream),
            created: self.created,
            model: &self.model,
            choices,
            service_tier: Field::Absent,
            system_fingerprint: Field::Absent,
            usage,
            prompt_logprobs: Field::Absent,
            kv_transfer_params: Field::Absent,
            metadata: Field::Absent,
        }
    }

    fn choice<'a>(
        &self,
        text: Option<&'a str>,
        delta: Option<Delta<'a>>,
        finish: Option<&'a str>,
    ) -> Choice<'a> {
        Choice {
            index: 0,
            text,
            delta,
            message: None,
            logprobs: Field::Null,
            finish_reason: finish,
            stop_reason: Field::Absent,
            matched_stop: Field::Absent,
            prompt_logprobs: Field::Absent,
        }
    }

    /// Chat only: the first chunk, announcing the assistant role with empty content.
    pub(crate) fn role_chunk(&self, continuous_usage: bool) -> String {
        let (reasoning, tools) = match self.flavor {
            Flavor::Sglang => (Field::Null, Field::Null),
            Flavor::Vllm => (Field::Absent, Field::Absent),
        };
        let delta = Delta {
            role: Field::Val("assistant"),
            content: Field::Val(""),
            reasoning_content: reasoning,
            tool_calls: tools,
        };
        let mut c = self.choice(None, Some(delta), None);
        let usage = match self.flavor {
            Flavor::Sglang => {
                c.matched_stop = Field::Null;
                if continuous_usage {
                    Field::Val(self.usage(0))
                } else {
                    Field::Null
                }
            }
            Flavor::Vllm if continuous_usage => Field::Val(self.usage(0)),
            Flavor::Vllm => Field::Absent,
        };
        sse(&to_json(&self.body(vec![c], usage, true)))
    }

    /// The SSE events for one engine step: the chunk carrying `text`, and for SGLang chat a
    /// separate finish chunk with an empty delta. A chat step with `reasoning` carries its
    /// text as `reasoning_content` (a reasoning model's thinking) instead of `content`.
    pub(crate) fn token_events(
        &self,
        text: &str,
        completion: u64,
        finish: Option<&str>,
        continuous_usage: bool,
        reasoning: bool,
    ) -> Vec<String> {
        let mut out = Vec::with_capacity(2);
        out.push(match (self.flavor, self.kind) {
            (_, Kind::Completion) => {
                self.completion_chunk(text, completion, finish, continuous_usage)
            }
            (Flavor::Vllm, Kind::Chat) => {
                self.vllm_chat_chunk(text, completion, finish, continuous_usage, reasoning)
            }
            (Flavor::Sglang, Kind::Chat) => {
                self.sglang_chat_chunk(text, completion, continuous_usage, reasoning)
            }
        });
        if let (Flavor::Sglang, Kind::Chat, Some(f)) = (self.flavor, self.kind, finish) {
            out.push(self.sglang_finish_chunk(f));
        }
        out
    }

    /// The usage of a step's chunk: the running totals with continuous usage, else `off`.
    fn step_usage(
        &self,
        continuous_usage: bool,
        completion: u64,
        off: Field<Usage>,
    ) -> Field<Usage> {
        if continuous_usage {
            Field::Val(self.usage(completion))
        } else {
            off
        }
    }

    /// A completion chunk; vLLM adds `stop_reason: null`, SGLang `matched_stop: null`.
    fn completion_chunk(
        &self,
        text: &str,
        completion: u64,
        finish: Option<&str>,
        continuous_usage: bool,
    ) -> String {
        let mut c = self.choice(Some(text), None, finish);
        match self.flavor {
            Flavor::Vllm => c.stop_reason = Field::Null,
            Flavor::Sglang => c.matched_stop = Field::Null,
        }
        let usage = self.step_usage(continuous_usage, completion, Field::Null);
        sse(&to_json(&self.body(vec![c], usage, true)))
    }

    /// A vLLM chat chunk: only the fields vLLM sets (`exclude_unset=True`), the finish reason
    /// in the same chunk.
    fn vllm_chat_chunk(
        &self,
        text: &str,
        completion: u64,
        finish: Option<&str>,
        continuous_usage: bool,
        reasoning: bool,
    ) -> String {
        let delta = if reasoning {
            Delta {
                reasoning_content: Field::Val(text),
                ..delta_absent()
            }
        } else {
            Delta {
                content: Field::Val(text),
                ..delta_absent()
            }
        };
        let mut c = self.choice(None, Some(delta), finish);
        if finish.is_some() {
            c.stop_reason = Field::Null;
        }
        let usage = self.step_usage(continuous_usage, completion, Field::Absent);
        sse(&to_json(&self.body(vec![c], usage, true)))
    }

    /// An SGLang chat chunk: every delta field, no finish reason (that comes in its own
    /// chunk, [`Self::sglang_finish_chunk`]).
    fn sglang_chat_chunk(
        &self,
        text: &str,
        completion: u64,
        continuous_usage: bool,
        reasoning: bool,
    ) -> String {
        let (content, reasoning_content) = if reasoning {
            (Field::Null, Field::Val(text))
        } else {
            (Field::Val(text), Field::Null)
        };
        let delta = Delta {
            role: Field::Null,
            content,
            reasoning_content,
            tool_calls: Field::Null,
        };
        let mut c = self.choice(None, Some(delta), None);
        c.matched_stop = Field::Null;
        let usage = self.step_usage(continuous_usage, completion, Field::Null);
        sse(&to_json(&self.body(vec![c], usage, true)))
    }

    /// SGLang chat's separate finish chunk: an empty delta and the finish reason.
    fn sglang_finish_chunk(&self, finish: &str) -> String {
        let empty = Delta {
            role: Field::Null,
            content: Field::Null,
            reasoning_content: Field::Null,
            tool_calls: Field::Null,
        };
        let mut c = self.choice(None, Some(empty), Some(finish));
        c.matched_stop = Field::Null;
        sse(&to_json(&self.body(vec![c], Field::Null, true)))
    }

    /// The `stream_options.include_usage` chunk: `choices: []` and the totals.
    pub(crate) fn usage_chunk(&self, completion: u64) -> String {
        sse(&to_json(&self.body(
            Vec::new(),
            Field::Val(self.usage(completion)),
            true,
        )))
    }

    /// A non-streaming response body.
    pub(crate) fn full_response(&self, text: &str, completion: u64, finish: &str) -> String {
        let vllm = self.flavor == Flavor::Vllm;
        let mut c = match self.kind {
            Kind::Completion => self.choice(Some(text), None, Some(finish)),
            Kind::Chat => {
                let mut c = self.choice(None, None, Some(finish));
                c.message = Some(Message {
                    role: "assistant",
                    content: text,
                    refusal: if vllm { Field::Null } else { Field::Absent },
                    annotations: if vllm { Field::Null } else { Field::Absent },
                    audio: if vllm { Field::Null } else { Field::Absent },
                    function_call: if vllm { Field::Null } else { Field::Absent },
                    reasoning_content: if vllm { Field::Absent } else { Field::Null },
                    tool_calls: if vllm { Field::Val([]) } else { Field::Null },
                    reasoning_content_vllm: if vllm { Field::Null } else { Field::Absent },
                });
                c
            }
        };
        if vllm {
            c.stop_reason = Field::Null;
            if self.kind == Kind::Completion {
                c.prompt_logprobs = Field::Null;
            }
        } else {
            c.matched_stop = Field::Null;
        }
        let mut b = self.body(vec![c], Field::Val(self.usage(completion)), false);
        if vllm {
            b.service_tier = Field::Null;
            b.system_fingerprint = Field::Null;
            b.kv_transfer_params = Field::Null;
            if self.kind == Kind::Chat {
                b.prompt_logprobs = Field::Null;
            }
        } else {
            b.metadata = Field::Val(Metadata {
                weight_version: "default",
            });
        }
        let json = to_json(&b);
        // vLLM's ChatMessage calls its reasoning field `reasoning_content` too; the struct
        // needs two members to place it after `tool_calls`, so rename it here.
        json.replacen("\"reasoning_content_vllm\"", "\"reasoning_content\"", 1)
    }

    /// An error object inside the stream, as the engine's `create_streaming_error_response`.
    pub(crate) fn stream_error(&self, message: &str, err_type: &str, code: u16) -> String {
        sse(&stream_error_json(self.flavor, message, err_type, code))
    }
}

fn delta_absent<'a>() -> Delta<'a> {
    Delta {
        role: Field::Absent,
        content: Field::Absent,
        reasoning_content: Field::Absent,
        tool_calls: Field::Absent,
    }
}

#[derive(Serialize)]
struct SglangError<'a> {
    object: &'static str,
    message: &'a str,
    #[serde(rename = "type")]
    err_type: &'a str,
    param: Option<&'a str>,
    code: u16,
}

#[derive(Serialize)]
struct VllmErrorInfo<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    err_type: &'a str,
    param: Option<&'a str>,
    code: u16,
}

#[derive(Serialize)]
struct Wrapped<T> {
    error: T,
}

/// The body of an HTTP error (`400`, `404`, `500`, ...) in the engine's shape; `param` names
/// the request field it is about, where the engine says.
pub(crate) fn error_json(
    flavor: Flavor,
    message: &str,
    err_type: &str,
    code: u16,
    param: Option<&str>,
) -> String {
    match flavor {
        Flavor::Sglang => to_json(&SglangError {
            object: "error",
            message,
            err_type,
            param,
            code,
        }),
        Flavor::Vllm => to_json(&Wrapped {
            error: VllmErrorInfo {
                message,
                err_type,
                param,
                code,
            },
        }),
    }
}

fn stream_error_json(flavor: Flavor, message: &str, err_type: &str, code: u16) -> String {
    match flavor {
        Flavor::Sglang => py_dumps(&Wrapped {
            error: SglangError {
                object: "error",
                message,
                err_type,
                param: None,
                code,
            },
        }),
        Flavor::Vllm => py_dumps(&Wrapped {
            error: VllmErrorInfo {
                message,
                err_type,
                param: None,
                code,
            },
        }),
    }
}

/// Python's `json.dumps` layout: `", "` between items and `": "` after keys.
struct PyFormatter;

impl serde_json::ser::Formatter for PyFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first { Ok(()) } else { w.write_all(b", ") }
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

fn py_dumps<T: Serialize>(v: &T) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, PyFormatter);
    if v.serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(buf).unwrap_or_default()
}

/// A request or response id: `prefix` + 32 hex digits, like `uuid4().hex`.
pub(crate) fn make_id(prefix: &str, rng: &mut crate::rng::Rng) -> String {
    format!("{prefix}{:016x}{:016x}", rng.next_u64(), rng.next_u64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(flavor: Flavor, kind: Kind) -> Writer {
        Writer {
            flavor,
            kind,
            id: "cmpl-1".into(),
            created: 7,
            model: "m".into(),
            prompt_tokens: 5,
            cached_tokens: 0,
            reasoning_tokens: 0,
        }
    }

    #[test]
    fn vllm_completion_chunk_shape() {
        let ev = w(Flavor::Vllm, Kind::Completion).token_events(" a", 1, None, false, false);
        assert_eq!(
            ev[0],
            "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" a\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}\n\n"
        );
        let u = w(Flavor::Vllm, Kind::Completion).usage_chunk(3);
        assert!(u.contains("\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"total_tokens\":8,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":0}}}"), "{u}");
    }

    #[test]
    fn sglang_chat_finish_is_separate() {
        let ev = w(Flavor::Sglang, Kind::Chat).token_events(" a", 1, Some("length"), false, false);
        assert_eq!(ev.len(), 2);
        assert!(ev[0].contains("\"delta\":{\"role\":null,\"content\":\" a\",\"reasoning_content\":null,\"tool_calls\":null},\"logprobs\":null,\"finish_reason\":null,\"matched_stop\":null}],\"usage\":null}"), "{}", ev[0]);
        assert!(ev[1].contains("\"content\":null"));
        assert!(ev[1].contains("\"finish_reason\":\"length\""));
    }

    #[test]
    fn reasoning_steps_carry_reasoning_content() {
        let ev = w(Flavor::Sglang, Kind::Chat).token_events(" a", 1, None, false, true);
        assert!(
            ev[0].contains("\"content\":null,\"reasoning_content\":\" a\""),
            "{}",
            ev[0]
        );
        let ev = w(Flavor::Vllm, Kind::Chat).token_events(" a", 1, None, false, true);
        assert!(
            ev[0].contains("\"delta\":{\"reasoning_content\":\" a\"}"),
            "{}",
            ev[0]
        );
    }

    #[test]
    fn errors_in_each_shape() {
        assert_eq!(
            error_json(Flavor::Sglang, "bad", "BadRequestError", 400, None),
            "{\"object\":\"error\",\"message\":\"bad\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}"
        );
        assert_eq!(
            error_json(Flavor::Vllm, "bad", "BadRequestError", 400, None),
            "{\"error\":{\"message\":\"bad\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}"
        );
        assert_eq!(
            stream_error_json(Flavor::Vllm, "x", "InternalServerError", 500),
            "{\"error\": {\"message\": \"x\", \"type\": \"InternalServerError\", \"param\": null, \"code\": 500}}"
        );
    }

    #[test]
    fn vllm_chat_message_fields() {
        let b = w(Flavor::Vllm, Kind::Chat).full_response(" a", 1, "length");
        assert!(b.contains("\"message\":{\"role\":\"assistant\",\"content\":\" a\",\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,\"tool_calls\":[],\"reasoning_content\":null}"), "{b}");
    }
}
