//! One non-streamed generation for accuracy profiles: the prompt (or one message, on chat or
//! the agents' APIs),
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
    /// The answer held no choice (no content, no output on the agents' APIs).
    #[error("no answer in the server's reply (no choices, content or output)")]
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
    let a = llmib_client::answer_of(engine.api(), &v).ok_or(GenerateError::NoChoices)?;
    Ok(Generated {
        text: a.text,
        finish_reason: a.finish_reason,
        completion_tokens: a.completion_tokens,
        latency_ms: t0.elapsed().as_secs_f64() * 1e3,
    })
}
