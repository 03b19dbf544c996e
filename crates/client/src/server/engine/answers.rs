//! A non-streamed generation's answer in each API's shape: its text (reasoning first, where
//! the server returns it apart), why it ended (in chat's words), and its output tokens. Read by
//! the accuracy profiles, which ask for whole answers.

use serde_json::Value;

use llmib_core::Api;

/// What one non-streamed answer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The output: reasoning text first, then the answer's text.
    pub text: String,
    /// Why it ended, in chat's words (`length`, `stop`, …).
    pub finish_reason: Option<String>,
    /// The output tokens the server counted.
    pub completion_tokens: Option<u64>,
}

/// The answer in `v`, a non-streamed body from `api`'s route; `None` where the body holds no
/// answer (no choice, no content, no output).
pub fn answer_of(api: Api, v: &Value) -> Option<Answer> {
    let tokens = |p: &str| v.pointer(p).and_then(Value::as_u64);
    match api {
        Api::Completions | Api::Chat => {
            let choice = v.pointer("/choices/0")?;
            let s = |p: &str| choice.pointer(p).and_then(Value::as_str).unwrap_or("");
            Some(Answer {
                text: [
                    s("/message/reasoning_content"),
                    s("/message/reasoning"),
                    s("/message/content"),
                    s("/text"),
                ]
                .concat(),
                finish_reason: choice
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                completion_tokens: tokens("/usage/completion_tokens"),
            })
        }
        Api::Messages => {
            let blocks = v.get("content")?.as_array()?;
            let of = |key: &str| -> String {
                blocks
                    .iter()
                    .filter_map(|b| b.get(key).and_then(Value::as_str))
                    .collect()
            };
            let reason = v.get("stop_reason").and_then(Value::as_str);
            Some(Answer {
                text: of("thinking") + &of("text"),
                finish_reason: reason.map(|r| chat_words(r, "max_tokens")),
                completion_tokens: tokens("/usage/output_tokens"),
            })
        }
        Api::Responses => {
            let items = v.get("output")?.as_array()?;
            let of = |kind: &str| -> String {
                items
                    .iter()
                    .filter(|i| i.get("type").and_then(Value::as_str) == Some(kind))
                    .flat_map(|i| {
                        i.get("content")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                    })
                    .filter_map(|c| c.get("text").and_then(Value::as_str))
                    .collect()
            };
            let incomplete = v
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str);
            let status = v.get("status").and_then(Value::as_str);
            Some(Answer {
                text: of("reasoning") + &of("message"),
                finish_reason: match (incomplete, status) {
                    (Some(r), _) => Some(chat_words(r, "max_output_tokens")),
                    (None, Some("completed")) => Some("stop".to_owned()),
                    (None, s) => s.map(str::to_owned),
                },
                completion_tokens: tokens("/usage/output_tokens"),
            })
        }
    }
}

/// The API's stop reason in chat's words, as the stream parsers give it.
fn chat_words(reason: &str, limit: &str) -> String {
    crate::wire::agent_events::chat_reason(reason.into(), limit).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live(name: &str) -> Value {
        let path = format!(
            "{}/fixtures/transcripts/vllm/live/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).expect("fixture")).expect("JSON")
    }

    #[test]
    fn vllms_answers_on_each_route_read_alike() {
        let text = " counter counter counter counter counter counter counter counter";
        for (api, file) in [
            (Api::Messages, "messages.json"),
            (Api::Responses, "responses.json"),
        ] {
            let a = answer_of(api, &live(file)).expect("an answer");
            assert_eq!(a.text, text, "{file}");
            assert_eq!(a.finish_reason.as_deref(), Some("length"), "{file}");
            assert_eq!(a.completion_tokens, Some(8), "{file}");
        }
        let stopped = answer_of(Api::Messages, &live("messages_stop_sequence.json"));
        assert_eq!(
            stopped.expect("answer").finish_reason.as_deref(),
            Some("stop")
        );
        assert_eq!(
            answer_of(Api::Responses, &serde_json::json!({"id": 1})),
            None
        );
    }
}
