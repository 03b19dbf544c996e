//! Reading `/v1/messages` (Anthropic's Messages API) and `/v1/responses` (OpenAI's Responses
//! API) bodies into the same [`GenRequest`] chat completions make, so the three routes share
//! the engine, the prefix cache and the faults. The rules are vLLM 0.32's, as recorded
//! (`/work/vllm-agent-apis.md`, the `messages_*` / `responses_*` transcripts).
//!
//! Both are rendered through the chat template as vLLM converts them to a chat request:
//! Messages puts every system text (the top-level `system`, a string or text blocks, then any
//! `system`-role message) into one system message, joined without a separator and without
//! Claude Code's per-request `x-anthropic-billing-header` block, then the other messages;
//! Responses puts `instructions` first as a system message, then `input` (a string is one user
//! message). Text blocks (`text` or `input_text`) are joined; other blocks (images, tool
//! calls, thinking) carry no text here. So the same messages give the same prompt tokens on
//! `/v1/messages` as on chat, while `/v1/responses` counts one more: vLLM tokenizes its
//! rendered template with special tokens on, which puts a second BOS in front.
//!
//! The controls each route honours are vLLM's: Messages drops `ignore_eos` and `min_tokens`
//! (its request model has neither), so a Messages answer can always end early; Responses
//! honours `ignore_eos` but has no `min_tokens`. Neither refuses a prompt + output over the
//! context: the output limit is cut to what the context has left. A prompt that fills the
//! context is refused with vLLM 0.32's message.

use serde::Deserialize;
use serde_json::Value;

use crate::config::{Flavor, SimConfig};
use crate::request::{self, Echo, GenRequest, Reject};
use crate::tokenizer::{self, ChatMessage};

#[derive(Debug, Deserialize)]
struct RawMessages {
    model: Option<String>,
    messages: Option<Vec<Value>>,
    system: Option<Value>,
    max_tokens: Option<i64>,
    stream: Option<bool>,
    /// Tool definitions, rendered ahead of the messages (`crate::tools`).
    tools: Option<Vec<Value>>,
}

#[derive(Debug, Deserialize)]
struct RawResponses {
    model: Option<String>,
    input: Option<Value>,
    instructions: Option<String>,
    max_output_tokens: Option<i64>,
    ignore_eos: Option<bool>,
    stream: Option<bool>,
    temperature: Option<f64>,
    top_p: Option<f64>,
    /// Tool definitions, rendered ahead of the input (`crate::tools`).
    tools: Option<Vec<Value>>,
}

fn read<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Reject> {
    serde_json::from_slice(body).map_err(|e| Reject::bad(format!("invalid request body: {e}")))
}

/// The text of a system value: a string, or text blocks joined without a separator (less
/// Claude Code's attribution block, whose per-request hash would defeat prefix caching: vLLM
/// drops it).
fn system_text(v: Option<&Value>) -> Result<String, Reject> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(blocks)) => Ok(blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .filter(|t| !t.starts_with("x-anthropic-billing-header"))
            .collect()),
        _ => Err(Reject::bad(
            "`system` must be a string or a list of text blocks",
        )),
    }
}

/// The chat messages of a Messages body: one system message (when any system text was
/// given), then the conversation.
fn messages_chat(
    system: Option<&Value>,
    messages: Option<&[Value]>,
) -> Result<Vec<ChatMessage>, Reject> {
    let raw = messages.ok_or_else(|| Reject::bad("`messages` is required"))?;
    let mut sys = system_text(system)?;
    let mut rest = Vec::with_capacity(raw.len());
    for m in raw {
        if m.get("role").and_then(Value::as_str) == Some("system") {
            sys.push_str(&system_text(m.get("content"))?);
        } else {
            rest.push(m.clone());
        }
    }
    let mut out = Vec::with_capacity(rest.len() + 1);
    if !sys.is_empty() {
        out.push(ChatMessage {
            role: "system".into(),
            content: sys,
        });
    }
    out.extend(request::parse_messages(
        &rest,
        crate::tools::ToolShape::Messages,
    )?);
    Ok(out)
}

/// The templated prompt of a chat conversation; never empty.
fn chat_prompt(msgs: &[ChatMessage]) -> Result<Vec<u32>, Reject> {
    let prompt = tokenizer::encode_chat(msgs, true);
    if prompt.is_empty() {
        return Err(Reject::bad("Prompt cannot be empty"));
    }
    Ok(prompt)
}

/// The output limit of a `p`-token prompt that asked for `asked` (`None`: all it can have):
/// cut to what the context has left, as vLLM 0.32 does on both routes. A prompt that leaves
/// no room is refused in vLLM's words (which count at most one token past the context), and
/// the KV cache's own check follows.
fn fit_to_context(cfg: &SimConfig, p: u64, asked: Option<u32>) -> Result<u32, Reject> {
    let ctx = cfg.context_length;
    if p >= ctx {
        let seen = p.min(ctx + 1);
        return Err(Reject {
            status: 400,
            err_type: "BadRequestError",
            message: format!(
                "This model's maximum context length is {ctx} tokens. However, your prompt contains at least {seen} input tokens, which exceeds this limit even without any output tokens. Please reduce the length of the input prompt. (parameter=input_tokens, value={seen})"
            ),
            param: Some("input_tokens"),
        });
    }
    // SGLang keeps one token to spare, as on its chat route.
    let spare = u64::from(cfg.flavor == Flavor::Sglang);
    let room = ctx.saturating_sub(p + spare).min(u64::from(u32::MAX)) as u32;
    let max_tokens = asked.map_or(room, |a| a.min(room)).max(1);
    request::check_length(cfg, p, max_tokens)?;
    Ok(max_tokens)
}

/// Parses and checks a `/v1/messages` body (`max_tokens` is required, as Anthropic's is).
pub(crate) fn parse_messages(cfg: &SimConfig, body: &[u8]) -> Result<GenRequest, Reject> {
    let raw: RawMessages = read(body)?;
    let model = request::response_model(cfg, raw.model.as_deref())?;
    let chat = messages_chat(raw.system.as_ref(), raw.messages.as_deref())?;
    let mut prompt = chat_prompt(&crate::tools::with_tools(chat, raw.tools.as_deref()))?;
    let msgs = raw.messages.as_deref().unwrap_or_default();
    crate::images::append_image_tokens(cfg, &mut prompt, msgs)?;
    let asked = request::to_u32(raw.max_tokens, "max_tokens")?
        .ok_or_else(|| Reject::bad("`max_tokens` is required"))?;
    if asked == 0 {
        return Err(Reject::bad("max_tokens must be positive"));
    }
    let max_tokens = fit_to_context(cfg, prompt.len() as u64, Some(asked))?;
    Ok(GenRequest {
        model,
        prompt,
        max_tokens,
        min_tokens: 0,
        ignore_eos: false,
        stream: raw.stream.unwrap_or(false),
        include_usage: false,
        continuous_usage: false,
        rid: None,
        echo: Echo::default(),
    })
}

/// The prompt tokens of a `/v1/messages/count_tokens` body (`model`, `messages`, `system`).
pub(crate) fn count_message_tokens(cfg: &SimConfig, body: &[u8]) -> Result<u64, Reject> {
    let raw: RawMessages = read(body)?;
    request::response_model(cfg, raw.model.as_deref())?;
    let msgs = messages_chat(raw.system.as_ref(), raw.messages.as_deref())?;
    let mut prompt = chat_prompt(&crate::tools::with_tools(msgs, raw.tools.as_deref()))?;
    let raw_msgs = raw.messages.as_deref().unwrap_or_default();
    crate::images::append_image_tokens(cfg, &mut prompt, raw_msgs)?;
    Ok(prompt.len() as u64)
}

/// The chat messages of a Responses body: `instructions` as a system message, then `input`.
fn responses_chat(raw: &RawResponses) -> Result<Vec<ChatMessage>, Reject> {
    let mut out = Vec::new();
    if let Some(i) = &raw.instructions {
        out.push(ChatMessage {
            role: "system".into(),
            content: i.clone(),
        });
    }
    match &raw.input {
        Some(Value::String(s)) => out.push(ChatMessage {
            role: "user".into(),
            content: s.clone(),
        }),
        Some(Value::Array(items)) => out.extend(request::parse_messages(
            items,
            crate::tools::ToolShape::Responses,
        )?),
        _ => {
            return Err(Reject::bad(
                "`input` is required: a string or a list of messages",
            ));
        }
    }
    Ok(out)
}

/// Parses and checks a `/v1/responses` body.
pub(crate) fn parse_responses(cfg: &SimConfig, body: &[u8]) -> Result<GenRequest, Reject> {
    let raw: RawResponses = read(body)?;
    let model = request::response_model(cfg, raw.model.as_deref())?;
    let chat = crate::tools::with_tools(responses_chat(&raw)?, raw.tools.as_deref());
    let mut prompt = chat_prompt(&chat)?;
    if cfg.add_bos {
        // Special tokens on over a template that starts with BOS: a second one.
        prompt.insert(0, tokenizer::BOS);
    }
    if let Some(Value::Array(items)) = &raw.input {
        crate::images::append_image_tokens(cfg, &mut prompt, items)?;
    }
    let asked = request::to_u32(raw.max_output_tokens, "max_output_tokens")?;
    if asked == Some(0) {
        return Err(Reject::bad("max_output_tokens must be at least 1, got 0."));
    }
    let max_tokens = fit_to_context(cfg, prompt.len() as u64, asked)?;
    // Greedy sampling (temperature 0) resets top_p to 1, and the response echoes that.
    let top_p = if raw.temperature == Some(0.0) {
        None
    } else {
        raw.top_p
    };
    Ok(GenRequest {
        model,
        prompt,
        max_tokens,
        min_tokens: 0,
        ignore_eos: raw.ignore_eos.unwrap_or(false),
        stream: raw.stream.unwrap_or(false),
        include_usage: false,
        continuous_usage: false,
        rid: None,
        echo: Echo {
            instructions: raw.instructions,
            temperature: raw.temperature,
            top_p,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Kind;
    use serde_json::json;

    fn cfg() -> SimConfig {
        SimConfig {
            flavor: Flavor::Vllm,
            model: "m".into(),
            context_length: 200,
            ..SimConfig::default()
        }
    }

    fn chat_tokens(c: &SimConfig, messages: Value) -> Vec<u32> {
        let body = json!({"model": "m", "messages": messages, "max_tokens": 4}).to_string();
        request::parse(c, Kind::Chat, body.as_bytes())
            .expect("chat parses")
            .prompt
    }

    #[test]
    fn messages_render_like_chat_with_system_first() {
        let c = cfg();
        let body = json!({
            "model": "m", "max_tokens": 4, "ignore_eos": true, "min_tokens": 3,
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc=1;"},
                       {"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hi"}]}],
        });
        let m = parse_messages(&c, body.to_string().as_bytes()).expect("parses");
        let same = chat_tokens(
            &c,
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}]),
        );
        assert_eq!(m.prompt, same);
        assert_eq!(m.max_tokens, 4);
        // vLLM's Messages request has neither control: the answer may always end early.
        assert!(!m.ignore_eos && m.min_tokens == 0);
        let missing = json!({"model": "m", "messages": [{"role": "user", "content": "x"}]});
        let e = parse_messages(&c, missing.to_string().as_bytes()).expect_err("no max_tokens");
        assert!(e.message.contains("max_tokens"), "{e:?}");
    }

    #[test]
    fn responses_count_a_second_bos_and_clamp_the_output() {
        let c = cfg();
        let body = json!({"model": "m", "instructions": "Be brief.", "input": "Say hi",
                          "max_output_tokens": 100_000, "ignore_eos": true,
                          "temperature": 0.0, "top_p": 0.5});
        let r = parse_responses(&c, body.to_string().as_bytes()).expect("parses");
        let same = chat_tokens(
            &c,
            json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}]),
        );
        assert_eq!(r.prompt[1..], same[..]);
        assert_eq!(r.prompt[0], tokenizer::BOS);
        assert_eq!(u64::from(r.max_tokens) + r.prompt.len() as u64, 200);
        assert!(r.ignore_eos);
        assert_eq!((r.echo.temperature, r.echo.top_p), (Some(0.0), None));
        let parts = json!({"model": "m", "input": [{"role": "user",
                           "content": [{"type": "input_text", "text": "Say hi"}]}]});
        let r = parse_responses(&c, parts.to_string().as_bytes()).expect("parses");
        let user = chat_tokens(&c, json!([{"role": "user", "content": "Say hi"}]));
        assert_eq!(r.prompt.len(), user.len() + 1);
    }

    #[test]
    fn a_prompt_that_fills_the_context_is_refused_in_vllms_words() {
        let c = cfg();
        let long = json!({"model": "m", "input": "word ".repeat(400)});
        let e = parse_responses(&c, long.to_string().as_bytes()).expect_err("too long");
        assert!(
            e.message
                .contains("your prompt contains at least 201 input tokens")
                && e.message.ends_with("(parameter=input_tokens, value=201)"),
            "{e:?}"
        );
        assert_eq!((e.status, e.param), (400, Some("input_tokens")));
        let long = json!({"model": "m", "max_tokens": 5,
                          "messages": [{"role": "user", "content": "word ".repeat(400)}]});
        let e = parse_messages(&c, long.to_string().as_bytes()).expect_err("too long");
        assert_eq!(e.err_type, "BadRequestError");
    }
}
