//! What the chosen API needs from the probe beyond the engine: the headers that carry the key
//! (and `anthropic-version` on the Messages API), and a note where the engine's route drops a
//! key the run relies on.

use super::options::{ProbeError, ProbeOptions};
use crate::wire::http::{HttpOptions, build_client};
use llmib_core::{Api, EngineKind};

/// The client every request of the run goes through: the key in the headers the API wants,
/// and `anthropic-version` on the Messages API.
pub(super) fn client_for(opts: &ProbeOptions) -> Result<reqwest::Client, ProbeError> {
    Ok(build_client(&HttpOptions {
        api_key: opts.api_key.clone(),
        key_header: opts.key_header(),
        anthropic: opts.api == Some(Api::Messages),
        connect_timeout: opts.timeout,
        ..HttpOptions::default()
    })?)
}

/// What the chosen route cannot do on this engine that the run relies on: vLLM's Messages
/// route drops `ignore_eos` (recorded on 0.32), so an answer may end before `max_tokens`.
pub(super) fn route_note(opts: &ProbeOptions, kind: EngineKind) -> Option<String> {
    (opts.api == Some(Api::Messages) && kind == EngineKind::Vllm && !opts.respect_eos).then(|| {
        "vLLM's /v1/messages ignores ignore_eos: an answer may end at the model's end of sequence before max_tokens (each cell counts such early stops)".to_string()
    })
}
