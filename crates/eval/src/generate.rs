//! One non-streamed generation for accuracy profiles: the prompt (or one chat message),
//! temperature 0, ending where the model stops; the answer text, why it ended and its tokens.

use llmib_client::{Engine, EngineError, PromptInput};
use serde_json::Value;
use std::time::Instant;

/// Why a generation gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GenerateError {
    /// The request failed (transport, status, shape of the answer).
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The answer held no choice.
    #[error("no choices in the answer")]
    NoChoices,
}

/// What one generation returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Generated {
    /// The output (reasoning text first, where the server returns it apart).
    pub text: String,
    /// `finish_reason`.
    pub finish_reason: Option<String>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// Send to answer, ms.
    pub latency_ms: f64,
}

/// Sends `prompt` to the engine's endpoint with `max_tokens` and temperature 0. The engine must
/// let requests end at EOS (`ProbeOptions::respect_eos`): an answer is as long as the model
/// makes it.
pub async fn generate(
    engine: &Engine,
    prompt: &str,
    max_tokens: u32,
) -> Result<Generated, GenerateError> {
    let mut body = engine.completion_body(
        &engine.model().served_model,
        PromptInput::Text(prompt.to_owned()),
        max_tokens,
        false,
    );
    if let Value::Object(m) = &mut body {
        m.insert("temperature".into(), Value::from(0.0));
    }
    let t0 = Instant::now();
    let v = engine.generate_json(&body).await?;
    let choice = v.pointer("/choices/0").ok_or(GenerateError::NoChoices)?;
    let str_at = |p: &str| choice.pointer(p).and_then(Value::as_str).unwrap_or("");
    let out = [
        str_at("/message/reasoning_content"),
        str_at("/message/reasoning"),
        str_at("/message/content"),
        str_at("/text"),
    ]
    .concat();
    Ok(Generated {
        text: out,
        finish_reason: choice
            .get("finish_reason")
            .and_then(Value::as_str)
            .map(str::to_string),
        completion_tokens: v
            .pointer("/usage/completion_tokens")
            .and_then(Value::as_u64),
        latency_ms: t0.elapsed().as_secs_f64() * 1e3,
    })
}
