//! The server an eval asks: how to reach it, and the engine that answers (chat, each answer
//! ending where the model stops).

use crate::error::EvalError;
use llmib_client::{Engine, ProbeOptions};
use std::path::Path;
use std::time::Duration;

/// How to reach the server.
#[derive(Debug, Clone)]
pub struct Server {
    /// Base URL (it may hold a user and password; no file keeps them).
    pub url: String,
    /// API key. Never written to any output.
    pub api_key: Option<String>,
    /// Model to request (default: the one the server lists).
    pub model: Option<String>,
    /// The API the answers come from (default chat; Messages or Responses to score the route
    /// agents use; completions is refused, since profiles send chat messages).
    pub api: Option<llmib_core::Api>,
}

/// Probes the server for an eval (accuracy or long-answer) and makes the results folder
/// `output`. An answer ends where the model stops; chat is what instruction models are served
/// for.
pub(crate) async fn answering_engine(server: &Server, output: &Path) -> Result<Engine, EvalError> {
    let probe = Engine::probe(&ProbeOptions {
        api_key: server.api_key.clone(),
        model: server.model.clone(),
        timeout: Duration::from_secs(10),
        respect_eos: true,
        api: Some(server.api.unwrap_or(llmib_core::Api::Chat)),
        ..ProbeOptions::new(server.url.clone())
    })
    .await?;
    let engine = probe.engine;
    std::fs::create_dir_all(output).map_err(EvalError::io("create", output))?;
    Ok(engine)
}
