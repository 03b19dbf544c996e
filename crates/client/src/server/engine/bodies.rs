//! Generation request bodies, in the shape of the engine's API and the keys of its dialect.
//!
//! Every API carries the same request: one conversation (a user message, or a session's
//! history) and an output limit. Completions sends the text as `prompt`; chat sends `messages`;
//! Messages sends `messages` with any system message moved to the top-level `system` and the
//! limit as `max_tokens`; Responses sends the messages as `input`, the system message as
//! `instructions`, and the limit as `max_output_tokens`. Then the dialect's keys: the user's
//! controls, then the tool's own (EOS handling, and on OpenAI's two APIs usage in the stream and
//! the request id), which are never theirs to set. A history's tool calls and results go in
//! each API's own shape (`tool_shapes.rs`).

use serde_json::{Map, Value, json};

use super::{Engine, PromptInput, abort, tool_shapes};
use llmib_core::Api;

impl Engine {
    /// Builds a generation request body for this engine's API and dialect: `ignore_eos: true`
    /// where honoured (else `min_tokens = max_tokens` where that is), and for OpenAI's streams
    /// `stream_options.include_usage` plus `continuous_usage_stats` where supported.
    pub fn completion_body(
        &self,
        model: &str,
        prompt: PromptInput,
        max_tokens: u32,
        stream: bool,
    ) -> Value {
        let body = match self.api {
            Api::Completions => {
                let prompt = match prompt {
                    PromptInput::Text(t) => Value::String(t),
                    PromptInput::Ids(ids) => json!(ids),
                    // Never built for a completions endpoint; its texts in order are the
                    // nearest prompt, rather than a body the server would refuse.
                    PromptInput::Messages(m) => Value::String(messages_text(&m)),
                };
                json!({"model": model, "prompt": prompt, "max_tokens": max_tokens, "stream": stream})
            }
            Api::Chat => json!({
                "model": model,
                "messages": conversation(prompt),
                "max_tokens": max_tokens,
                "stream": stream,
            }),
            Api::Messages => {
                let (system, messages) = split_system(conversation(prompt));
                let messages = tool_shapes::messages_shape(messages);
                let mut b = json!({
                    "model": model,
                    "max_tokens": max_tokens,
                    "messages": messages,
                    "stream": stream,
                });
                put(&mut b, "system", system);
                b
            }
            Api::Responses => {
                let (system, input) = split_system(conversation(prompt));
                let input = tool_shapes::responses_shape(input);
                let mut b = json!({
                    "model": model,
                    "input": input,
                    "max_output_tokens": max_tokens,
                    "stream": stream,
                });
                put(&mut b, "instructions", system);
                b
            }
        };
        self.finish_body(body, max_tokens, stream)
    }

    /// The dialect's keys on a body: the user's controls, then the tool's own (EOS handling,
    /// usage in the stream), which are never theirs to set.
    fn finish_body(&self, mut body: Value, max_tokens: u32, stream: bool) -> Value {
        let openai = matches!(self.api, Api::Completions | Api::Chat);
        if let Value::Object(m) = &mut body {
            self.request.apply(m);
            // Structured output and tools, in this API's shape (`llmib_core::StructuredSpec`).
            if let Some(s) = &self.request.structured {
                s.apply(self.api, m);
            }
            let d = &self.dialect;
            if self.respect_eos {
                // The model decides the length; `max_tokens` only caps it.
            } else if d.ignore_eos {
                m.insert("ignore_eos".into(), Value::Bool(true));
            } else if d.min_tokens {
                m.insert("min_tokens".into(), json!(max_tokens));
            }
            // SGLang's request id and OpenAI's stream options belong to OpenAI's two routes.
            if d.abort_by_rid && openai {
                m.insert("rid".into(), Value::String(abort::next_rid()));
            }
            if stream && d.include_usage && openai {
                let mut so = Map::new();
                so.insert("include_usage".into(), Value::Bool(true));
                if d.continuous_usage {
                    so.insert("continuous_usage_stats".into(), Value::Bool(true));
                }
                m.insert("stream_options".into(), Value::Object(so));
            }
        }
        body
    }
}

/// The prompt as a `messages` array: a text is one user message; a session's history is sent
/// as given.
fn conversation(prompt: PromptInput) -> Value {
    match prompt {
        PromptInput::Text(t) => json!([{"role": "user", "content": t}]),
        // The prompt builder never makes token ids for a conversation (`takes_token_ids`).
        PromptInput::Ids(ids) => json!([{"role": "user", "content": ids}]),
        PromptInput::Messages(m) => m,
    }
}

/// The system messages' texts (joined, one blank line apart) apart from the rest, for the
/// APIs that take the system prompt as a key of its own (`system`, `instructions`).
fn split_system(messages: Value) -> (Option<String>, Value) {
    let Value::Array(all) = messages else {
        return (None, messages);
    };
    let (system, rest): (Vec<Value>, Vec<Value>) = all
        .into_iter()
        .partition(|m| m.get("role").and_then(Value::as_str) == Some("system"));
    let texts: Vec<&str> = system
        .iter()
        .filter_map(|m| m.get("content")?.as_str())
        .collect();
    let system = (!texts.is_empty()).then(|| texts.join("\n\n"));
    (system, Value::Array(rest))
}

fn put(body: &mut Value, key: &str, value: Option<String>) {
    if let (Value::Object(m), Some(v)) = (body, value) {
        m.insert(key.into(), Value::String(v));
    }
}

/// The contents of a `messages` array in order, one blank line apart.
fn messages_text(m: &Value) -> String {
    let parts: Vec<&str> = m
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.get("content")?.as_str())
                .collect()
        })
        .unwrap_or_default();
    parts.join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_message_moves_to_its_own_key_and_the_rest_keep_their_order() {
        let m = json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "again"},
        ]);
        let (system, rest) = split_system(m);
        assert_eq!(system.as_deref(), Some("be brief"));
        let roles: Vec<&str> = rest
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        let (none, one) = split_system(conversation(PromptInput::Text("x".into())));
        assert_eq!(none, None);
        assert_eq!(one, json!([{"role": "user", "content": "x"}]));
    }
}
