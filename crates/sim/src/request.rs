//! Reading and checking generation requests, with each engine's 400 messages.
//!
//! Bodies are parsed leniently (unknown fields are ignored, as both engines do) into one
//! [`GenRequest`]; the checks then apply the engine's own rules: vLLM rejects
//! `prompt + max_tokens > max_model_len`, SGLang rejects `>= context_length`.

use serde::Deserialize;

use crate::config::{Flavor, SimConfig};
use crate::tokenizer::{self, ChatMessage};
use crate::wire::Kind;

pub(crate) use crate::reject::Reject;

#[derive(Debug, Default, Deserialize)]
struct StreamOptions {
    include_usage: Option<bool>,
    continuous_usage_stats: Option<bool>,
}

#[derive(Debug, Deserialize)]
struct RawRequest {
    model: Option<String>,
    prompt: Option<serde_json::Value>,
    messages: Option<Vec<serde_json::Value>>,
    max_tokens: Option<i64>,
    max_completion_tokens: Option<i64>,
    min_tokens: Option<i64>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    stream_options: Option<StreamOptions>,
    n: Option<i64>,
    rid: Option<serde_json::Value>,
    /// Tool definitions: the template renders them ahead of the messages (`crate::tools`).
    tools: Option<Vec<serde_json::Value>>,
}

/// A checked generation request.
#[derive(Debug, Clone)]
pub(crate) struct GenRequest {
    /// The model name to echo in responses.
    pub model: String,
    /// Prompt token ids (after the chat template for chat).
    pub prompt: Vec<u32>,
    /// Output tokens at most.
    pub max_tokens: u32,
    /// No EOS before this many.
    pub min_tokens: u32,
    /// Generate exactly `max_tokens`.
    pub ignore_eos: bool,
    /// SSE or one JSON body.
    pub stream: bool,
    /// Final `choices: []` usage chunk.
    pub include_usage: bool,
    /// Usage on every chunk.
    pub continuous_usage: bool,
    /// SGLang's `rid`: the client's id of the request (a string, or a list of one), by
    /// which `POST /abort_request` names it; SGLang answers with it as the response `id`.
    pub rid: Option<String>,
    /// What a Responses API answer echoes of its request (empty on the other routes).
    pub echo: Echo,
}

/// The request fields the Responses API's response object echoes back.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Echo {
    /// `instructions`
    pub instructions: Option<String>,
    /// `temperature`
    pub temperature: Option<f64>,
    /// `top_p` (`None` under greedy sampling, which resets it)
    pub top_p: Option<f64>,
}

/// Parses chat messages (string content, or a list of `{type: text, text}` parts), the three
/// APIs' tool calls and results among them (`tools.rs`).
pub(crate) fn parse_messages(
    raw: &[serde_json::Value],
    shape: crate::tools::ToolShape,
) -> Result<Vec<ChatMessage>, Reject> {
    let mut out = Vec::with_capacity(raw.len());
    for m in raw {
        if crate::tools::push_tool_item(&mut out, m, shape)? {
            continue;
        }
        let role = m
            .get("role")
            .and_then(|r| r.as_str())
            .ok_or_else(|| Reject::bad("each message needs a string `role`"))?;
        let content = match m.get("content") {
            None | Some(serde_json::Value::Null) => String::new(),
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(|t| t.as_str()))
                .collect::<Vec<_>>()
                .join(""),
            Some(_) => {
                return Err(Reject::bad(
                    "message `content` must be a string or a list of parts",
                ));
            }
        };
        out.push(ChatMessage {
            role: role.to_string(),
            content,
        });
    }
    Ok(out)
}

/// A count from JSON: absent, or a non-negative 32-bit integer (else a 400 naming `name`).
pub(crate) fn to_u32(v: Option<i64>, name: &str) -> Result<Option<u32>, Reject> {
    match v {
        None => Ok(None),
        Some(x) if (0..=i64::from(u32::MAX)).contains(&x) => Ok(Some(x as u32)),
        Some(x) => Err(Reject::bad(format!(
            "`{name}` must be a non-negative integer, got {x}"
        ))),
    }
}

/// Parses and checks a `/v1/completions` or `/v1/chat/completions` body.
pub(crate) fn parse(cfg: &SimConfig, kind: Kind, body: &[u8]) -> Result<GenRequest, Reject> {
    let raw: RawRequest = serde_json::from_slice(body)
        .map_err(|e| Reject::bad(format!("invalid request body: {e}")))?;
    if raw.n.is_some_and(|n| n != 1) {
        return Err(Reject::bad("the simulator supports only n = 1"));
    }
    let model = response_model(cfg, raw.model.as_deref())?;
    let mut prompt = prompt_tokens(cfg, kind, &raw)?;
    if kind == Kind::Chat {
        let msgs = raw.messages.as_deref().unwrap_or_default();
        crate::images::append_image_tokens(cfg, &mut prompt, msgs)?;
    }
    let p = prompt.len() as u64;
    let max_tokens = max_tokens(cfg, kind, &raw, p)?;
    check_length(cfg, p, max_tokens)?;
    let (include_usage, continuous_usage) = usage_options(cfg, raw.stream_options);
    Ok(GenRequest {
        model,
        prompt,
        max_tokens,
        min_tokens: to_u32(raw.min_tokens, "min_tokens")?.unwrap_or(0),
        ignore_eos: raw.ignore_eos.unwrap_or(false),
        stream: raw.stream.unwrap_or(false),
        include_usage,
        continuous_usage,
        rid: match raw.rid {
            Some(serde_json::Value::String(s)) => Some(s),
            Some(serde_json::Value::Array(a)) if a.len() == 1 => a[0].as_str().map(str::to_string),
            _ => None,
        },
        echo: Echo::default(),
    })
}

/// The model name to echo, after vLLM's check that the client asked for the served one (or
/// one of its LoRA adapters) and SGLang's that a `base:adapter` names a loaded adapter.
pub(crate) fn response_model(cfg: &SimConfig, asked: Option<&str>) -> Result<String, Reject> {
    if let Some(why) = crate::lora::sglang_refusal(cfg, asked) {
        return Err(Reject::bad(why));
    }
    let vllm = cfg.flavor == Flavor::Vllm;
    if let Some(m) = asked.filter(|m| vllm && !crate::lora::vllm_serves(cfg, m)) {
        return Err(Reject {
            status: 404,
            err_type: "NotFoundError",
            message: format!("The model `{m}` does not exist."),
            param: None,
        });
    }
    // vLLM answers with its served name (an adapter's own); SGLang echoes what was sent.
    Ok(match cfg.flavor {
        Flavor::Vllm => asked
            .filter(|m| crate::lora::adapter_of(cfg, m).is_some())
            .unwrap_or(&cfg.model)
            .to_string(),
        Flavor::Sglang => asked.unwrap_or("default").to_string(),
    })
}

/// The prompt's token ids (a completion's text or ids, or the templated chat); never empty.
fn prompt_tokens(cfg: &SimConfig, kind: Kind, raw: &RawRequest) -> Result<Vec<u32>, Reject> {
    let prompt = match kind {
        Kind::Completion => match &raw.prompt {
            Some(serde_json::Value::String(s)) => tokenizer::encode(s, cfg.add_bos),
            Some(serde_json::Value::Array(items))
                if items.iter().all(|i| i.is_u64() || i.is_i64()) =>
            {
                items
                    .iter()
                    .map(|i| i.as_u64().and_then(|v| u32::try_from(v).ok()).ok_or(()))
                    .collect::<Result<Vec<u32>, ()>>()
                    .map_err(|()| {
                        Reject::bad("token ids in `prompt` must be non-negative 32-bit integers")
                    })?
            }
            Some(serde_json::Value::Array(_)) => {
                return Err(Reject::bad(
                    "the simulator takes one prompt: a string or a list of token ids",
                ));
            }
            _ => {
                return Err(Reject::bad(
                    "`prompt` is required: a string or a list of token ids",
                ));
            }
        },
        Kind::Chat => {
            let msgs = raw
                .messages
                .as_deref()
                .ok_or_else(|| Reject::bad("`messages` is required"))?;
            let msgs = crate::tools::with_tools(
                parse_messages(msgs, crate::tools::ToolShape::Chat)?,
                raw.tools.as_deref(),
            );
            tokenizer::encode_chat(&msgs, true)
        }
    };
    if prompt.is_empty() {
        return Err(Reject::bad("Prompt cannot be empty"));
    }
    Ok(prompt)
}

/// The output limit: the one asked for, or the engine's default for a prompt of `p` tokens.
fn max_tokens(cfg: &SimConfig, kind: Kind, raw: &RawRequest, p: u64) -> Result<u32, Reject> {
    let requested = to_u32(raw.max_completion_tokens.or(raw.max_tokens), "max_tokens")?;
    let max_tokens = match (requested, kind) {
        (Some(m), _) => m,
        (None, Kind::Completion) => 16,
        // Chat without a limit may use the rest of the context (SGLang needs one to spare).
        (None, Kind::Chat) => {
            let spare = if cfg.flavor == Flavor::Vllm { 0 } else { 1 };
            cfg.context_length
                .saturating_sub(p + spare)
                .min(u64::from(u32::MAX)) as u32
        }
    };
    if max_tokens == 0 {
        return Err(Reject::bad("max_tokens must be at least 1, got 0."));
    }
    Ok(max_tokens)
}

/// The engine's context-length checks (worded as it words them), then the KV cache's.
pub(crate) fn check_length(cfg: &SimConfig, p: u64, max_tokens: u32) -> Result<(), Reject> {
    let ctx = cfg.context_length;
    let total = p + u64::from(max_tokens);
    if cfg.flavor == Flavor::Vllm {
        if p >= ctx {
            return Err(Reject::bad(format!(
                "This model's maximum context length is {ctx} tokens. However, your request has {p} input tokens. Please reduce the length of the input messages."
            )));
        }
        if total > ctx {
            return Err(Reject::bad(format!(
                "This model's maximum context length is {ctx} tokens. However, you requested {total} tokens ({p} in the messages, {max_tokens} in the completion). Please reduce the length of the messages or completion."
            )));
        }
    } else {
        if p >= ctx {
            return Err(Reject::bad(format!(
                "The input ({p} tokens) is longer than the model's context length ({ctx} tokens)."
            )));
        }
        if total >= ctx {
            return Err(Reject::bad(format!(
                "Requested token count exceeds the model's maximum context length of {ctx} tokens. You requested a total of {total} tokens: {p} tokens from the input messages and {max_tokens} tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit."
            )));
        }
    }
    let cap = cfg.effective_kv_capacity();
    if total > cap {
        // A request that can never be admitted would block the FIFO queue forever.
        return Err(Reject::bad(format!(
            "The request needs {total} KV tokens ({p} prompt + {max_tokens} output) but the KV cache holds only {cap} tokens."
        )));
    }
    Ok(())
}

/// `(include_usage, continuous_usage)` from `stream_options`, with each engine's defaults.
fn usage_options(cfg: &SimConfig, options: Option<StreamOptions>) -> (bool, bool) {
    let has_so = options.is_some();
    let so = options.unwrap_or_default();
    let (include_usage, continuous_usage) = match cfg.flavor {
        // vLLM: `include_usage` defaults to true once `stream_options` is given, and
        // continuous stats need it.
        Flavor::Vllm if has_so => {
            let inc = so.include_usage.unwrap_or(true);
            (inc, inc && so.continuous_usage_stats.unwrap_or(false))
        }
        Flavor::Vllm => (false, false),
        Flavor::Sglang => (
            so.include_usage.unwrap_or(false),
            so.continuous_usage_stats.unwrap_or(false),
        ),
    };
    // A hosted gateway reports usage once, at the end.
    (include_usage, continuous_usage && !cfg.hosted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(flavor: Flavor) -> SimConfig {
        SimConfig {
            flavor,
            context_length: 100,
            ..SimConfig::default()
        }
    }

    #[test]
    fn context_rules_differ_by_engine() {
        // 50 tokens of prompt: BOS + 49 punctuation tokens.
        let prompt = ".".repeat(49);
        let body = |m: u32| format!("{{\"prompt\":\"{prompt}\",\"max_tokens\":{m}}}");
        let v = cfg(Flavor::Vllm);
        let s = cfg(Flavor::Sglang);
        assert!(parse(&v, Kind::Completion, body(50).as_bytes()).is_ok());
        assert!(parse(&s, Kind::Completion, body(50).as_bytes()).is_err());
        assert!(parse(&s, Kind::Completion, body(49).as_bytes()).is_ok());
        let e = parse(&v, Kind::Completion, body(51).as_bytes()).expect_err("over");
        assert!(
            e.message
                .contains("you requested 101 tokens (50 in the messages, 51 in the completion)")
        );
    }

    #[test]
    fn prompt_forms() {
        let c = cfg(Flavor::Sglang);
        let r = parse(
            &c,
            Kind::Completion,
            br#"{"prompt":[5,6,7],"stream":true,"stream_options":{"include_usage":true}}"#,
        )
        .expect("ok");
        assert_eq!(r.prompt, vec![5, 6, 7]);
        assert!(r.include_usage && r.stream && !r.continuous_usage);
        assert!(parse(&c, Kind::Completion, br#"{"prompt":[-1]}"#).is_err());
        assert!(parse(&c, Kind::Completion, br#"{"prompt":["a","b"]}"#).is_err());
        assert!(parse(&c, Kind::Completion, b"not json").is_err());
        let chat = parse(
            &c,
            Kind::Chat,
            br#"{"messages":[{"role":"user","content":"hi"}]}"#,
        )
        .expect("ok");
        assert_eq!(u64::from(chat.max_tokens) + chat.prompt.len() as u64, 99);
    }
}
