//! One interface to every inference engine: SGLang, vLLM, llama.cpp, TGI, TensorRT-LLM,
//! Ollama, and any other OpenAI-compatible endpoint.
//!
//! [`Engine::probe`] checks the server, the key and the model, detects the engine by its own
//! endpoints, and reads what it can tell (version, context length, KV capacity, launch command).
//! The resulting [`Engine`] is what the driver talks to: it builds completion bodies in the
//! engine's dialect, reads the queue gauges and token counters from `/metrics`, and tokenizes
//! through the engine's own tokenizer. Dispatch is by [`EngineKind`] inside each method: the set
//! of engines is closed, so an enum beats trait objects here.
//!
//! Each engine's specifics live in its module (`sglang.rs`, `vllm.rs`, …): which endpoints it
//! has, how they are read, its request dialect and metric names. What an engine cannot tell is
//! left `None` (unknown), never guessed.

mod abort;
mod agent_probe;
mod answers;
mod bodies;
mod cache;
mod dialect;
mod discovery;
mod dispatch;
mod generic;
mod images;
mod llamacpp;
mod ollama;
mod options;
mod probe;
mod reader;
mod route;
mod sglang;
mod tgi;
mod tokens;
mod tool_shapes;
mod trtllm;
mod util;
mod vllm;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bodies;

use std::time::Duration;

use crate::server::local_tokenizer::LocalTokenizer;
use llmib_core::{Api, Targeting};
use llmib_core::{EngineInfo, EngineKind, ModelInfo};
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;
use thiserror::Error;

use crate::server::metrics::{Metrics, parse_trtllm_json};
use crate::wire::http::{describe_request_error, describe_status, send_fresh};
use crate::wire::stream::{Counting, RequestSpec, StreamLimits};

pub use answers::{Answer, answer_of};
pub(crate) use dialect::{Dialect, MetricsKind, TokenizerKind};
pub use dialect::{Gauges, MAX_SPEC_POSITIONS, SpecCounters, SpecPositions};
pub(crate) use dispatch::gauges_from;
pub use images::ImagePart;
pub use options::{ProbeError, ProbeOptions};

/// A prompt as sent in a completion request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptInput {
    /// Text; the server tokenizes it (adding BOS/special tokens where the model does).
    Text(String),
    /// Token ids, used as given.
    Ids(Vec<u32>),
    /// A chat's whole `messages` array (a session's history), sent as given to a chat
    /// endpoint. The session builder makes it only where the engine's API is chat.
    Messages(Value),
}

/// The result of a probe.
#[derive(Debug, Clone)]
pub struct Probe {
    /// The engine, ready for requests.
    pub engine: Engine,
    /// Every model id `/v1/models` listed.
    pub served_models: Vec<String>,
    /// Things worth telling the user that did not stop the probe (a metrics endpoint missing).
    pub notes: Vec<String>,
}

/// An engine request that failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum EngineError {
    /// The request did not get an HTTP answer.
    #[error("{0}")]
    Transport(String),
    /// The server answered with an error status.
    #[error("{0}")]
    Status(String),
    /// The answer was not in the expected shape.
    #[error("unexpected answer from {url}: {detail}")]
    Parse {
        /// The endpoint.
        url: String,
        /// What was wrong.
        detail: String,
    },
    /// The engine has no such endpoint.
    #[error("{0}")]
    Unsupported(String),
    /// A request body could not be built (never sent as an empty request).
    #[error("{0}")]
    Body(String),
}

/// What one chat request with a sample message tells about the chat template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChatCalibration {
    /// `usage.prompt_tokens` of the whole request, as the server counted it.
    pub total: u64,
    /// The tokens the template added around the message: `total` minus the message's own.
    pub template: u64,
}

/// A probed engine: everything the driver needs to talk to it. Its `Debug` leaves out the API
/// key (and the raw reader's request head, which carries it).
#[derive(Clone)]
pub struct Engine {
    kind: EngineKind,
    base_url: String,
    client: reqwest::Client,
    info: EngineInfo,
    model: ModelInfo,
    launch_command: Option<String>,
    dialect: Dialect,
    /// Timeout of the small side requests (gauges, tokenize).
    side_timeout: Duration,
    /// The API key the client sends, kept only to redact it from anything written.
    api_key: Option<String>,
    /// The endpoint generation requests go to.
    api: Api,
    /// How prompts are made C tokens long.
    targeting: Targeting,
    /// Let requests end at EOS (no `ignore_eos` / `min_tokens`).
    respect_eos: bool,
    /// Keep every generation request's answer text in its record (`run --save-texts`).
    save_texts: bool,
    /// Sampling and extra keys every generation request carries.
    request: llmib_core::RequestControls,
    /// A tokenizer file for counting when the server has no tokenize endpoint.
    local_tokenizer: Option<Arc<LocalTokenizer>>,
    /// The raw reader's target when the measured streams read with it (`--http-reader raw`).
    raw: Option<Arc<crate::wire::rawhttp::RawTarget>>,
    /// Which headers carry the API key (`--api-key-header`).
    key_header: crate::wire::http::KeyHeader,
    /// The server's reading of a Messages usage's `input_tokens`, once calibrated (shared by
    /// the engine's clones, since every stream reads by it).
    reading: Arc<std::sync::OnceLock<llmib_core::InputReading>>,
    /// What the agents' route counts beyond the chat template's render of the same messages,
    /// once measured ([`Engine::route_extra_tokens`]).
    route_extra: Arc<std::sync::OnceLock<i64>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("kind", &self.kind)
            .field("base_url", &self.base_url)
            .field("model", &self.model.served_model)
            .field("api", &self.api)
            .field("targeting", &self.targeting)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("raw", &self.raw)
            .finish_non_exhaustive()
    }
}

/// Limit of a non-streamed generation ([`Engine::generate_json`]): as the default
/// first-token limit of streamed requests.
const GENERATION_TIMEOUT: Duration = Duration::from_secs(600);

/// Timeout of one gauges read: sampled ~4×/s, a slow read is dropped rather than queued.
const GAUGES_TIMEOUT: Duration = Duration::from_secs(2);

impl Engine {
    /// Probes the server (see [`ProbeOptions`]): fails fast with a one-line [`ProbeError`] when
    /// the server does not answer, the key is refused or the model is not served.
    pub async fn probe(opts: &ProbeOptions) -> Result<Probe, ProbeError> {
        let found = probe::probe(opts).await?;
        let has_tokenizer = found.dialect.tokenizer != TokenizerKind::None;
        let engine = Engine {
            kind: found.kind,
            base_url: found.base_url,
            client: found.client,
            info: found.info,
            model: found.model,
            launch_command: found.launch_command,
            dialect: found.dialect,
            side_timeout: Duration::from_secs(60),
            api_key: opts.api_key.clone().filter(|k| !k.is_empty()),
            // What the run decided, resolved against what the probe found.
            api: opts.api.unwrap_or(match found.kind {
                EngineKind::Generic => Api::Chat,
                _ => Api::Completions,
            }),
            targeting: opts.targeting.unwrap_or(if has_tokenizer {
                Targeting::Exact
            } else {
                Targeting::Estimate
            }),
            respect_eos: opts.respect_eos,
            save_texts: opts.save_texts,
            request: opts.request.clone(),
            local_tokenizer: opts.local_tokenizer.clone(),
            raw: None,
            key_header: opts.key_header(),
            reading: Arc::default(),
            route_extra: Arc::default(),
        };
        Ok(Probe {
            engine,
            served_models: found.served_models,
            notes: found.notes,
        })
    }

    /// The engine kind (detected or forced).
    pub fn kind(&self) -> EngineKind {
        self.kind
    }

    /// The server root (`http://host:port`, without `/v1` or a trailing slash).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The shared HTTP client (API key and pool configured).
    pub fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The Engine card.
    pub fn info(&self) -> &EngineInfo {
        &self.info
    }

    /// The literal secrets of this connection (the API key, the URL's password), to remove
    /// from anything the tool writes that came from the server
    /// (`llmib_core::redact_text`).
    pub fn secrets(&self) -> Vec<&str> {
        self.api_key
            .as_deref()
            .into_iter()
            .chain(llmib_core::url_password(&self.base_url))
            .collect()
    }

    /// The served model.
    pub fn model(&self) -> &ModelInfo {
        &self.model
    }

    /// The launch command rebuilt from what the engine exposes (SGLang `server_args`, vLLM's
    /// dev-mode `/server_info`), secrets redacted; `None` when the engine does not expose it.
    pub fn launch_command(&self) -> Option<&str> {
        self.launch_command.as_deref()
    }

    /// `POST` target of completion requests.
    pub fn completions_url(&self) -> String {
        format!("{}/v1/completions", self.base_url)
    }

    /// The local tokenizer file, if one was given.
    pub fn local_tokenizer(&self) -> Option<&LocalTokenizer> {
        self.local_tokenizer.as_deref()
    }

    /// The endpoint generation requests go to (asked for, or chosen by the probe).
    pub fn api(&self) -> Api {
        self.api
    }

    /// How prompts are made C tokens long (asked for, or chosen by the probe).
    pub fn targeting(&self) -> Targeting {
        self.targeting
    }

    /// Whether requests may end at the model's EOS.
    pub fn respects_eos(&self) -> bool {
        self.respect_eos
    }

    /// `POST` target of generation requests: completions or chat completions.
    pub fn generate_url(&self) -> String {
        format!("{}{}", self.base_url, self.api.path())
    }

    /// Whether the requests go to one of the agents' APIs (Messages, Responses), whose bodies,
    /// events and usage differ from OpenAI's two.
    pub(crate) fn agent_api(&self) -> bool {
        matches!(self.api, Api::Messages | Api::Responses)
    }

    /// How the server means a Messages usage's `input_tokens`: learned by the prompt
    /// calibration's probes (`agent_prompt_tokens`); Anthropic's until then.
    pub fn input_reading(&self) -> llmib_core::InputReading {
        self.reading.get().copied().unwrap_or_default()
    }

    /// Records the server's reading of `input_tokens` (once: the first calibration's).
    pub(crate) fn set_input_reading(&self, r: llmib_core::InputReading) {
        let _ = self.reading.set(r);
    }

    /// Whether a prompt may be sent as token ids: the engine takes them and the requests go
    /// to completions (a chat message is text).
    pub fn takes_token_ids(&self) -> bool {
        self.api == Api::Completions && self.info.capabilities.token_id_prompts == Some(true)
    }

    /// Sends a non-streamed generation `body` (from [`Engine::completion_body`]) to the
    /// generation endpoint and returns the answer: the probes of estimated prompt lengths and
    /// the answers of accuracy profiles. Its limit is the first-token default, since a long
    /// prefill on a hosted API takes minutes.
    pub async fn generate_json(&self, body: &Value) -> Result<Value, EngineError> {
        self.post_json_within(&self.generate_url(), body, GENERATION_TIMEOUT)
            .await
    }

    /// How a stream from this engine tells tokens per chunk: cumulative usage on every chunk
    /// where the server streams it, else counted after the request.
    pub fn counting(&self) -> Counting {
        // The agents' APIs stream no per-chunk usage: their final usage counts the output.
        if self.info().capabilities.continuous_usage_stats == Some(true) && !self.agent_api() {
            Counting::UsagePerChunk
        } else {
            Counting::Deferred
        }
    }

    /// Builds one streamed completion request, once: the body is serialised here, and a body
    /// that cannot be serialised is an error (never an empty request). `deferred` forces
    /// counting after the request (warm-ups and prefill, whose chunks are not figures).
    pub fn stream_request(
        &self,
        model: &str,
        prompt: PromptInput,
        max_tokens: u32,
        deferred: bool,
        limits: StreamLimits,
    ) -> Result<RequestSpec, EngineError> {
        self.stream_request_with_images(model, prompt, max_tokens, deferred, limits, &[])
    }

    /// [`Engine::stream_request`] with `images` in its user message (`images.rs`; none: the
    /// same request). A completions engine refuses images.
    pub fn stream_request_with_images(
        &self,
        model: &str,
        prompt: PromptInput,
        max_tokens: u32,
        deferred: bool,
        limits: StreamLimits,
        images: &[ImagePart],
    ) -> Result<RequestSpec, EngineError> {
        let counting = if deferred {
            Counting::Deferred
        } else {
            self.counting()
        };
        let mut body = self.completion_body(model, prompt, max_tokens, true);
        images::attach(self.api, &mut body, images)
            .map_err(|e| EngineError::Body(e.to_string()))?;
        self.spec_of(&body, counting, max_tokens, limits)
    }

    /// [`Engine::stream_request`] whose body carries `tools` (chat-shaped: a replayed agent
    /// session's own, in place of `--tools`) in this API's shape.
    pub(crate) fn stream_request_with_tools(
        &self,
        model: &str,
        prompt: PromptInput,
        max_tokens: u32,
        limits: StreamLimits,
        tools: Option<&Value>,
    ) -> Result<RequestSpec, EngineError> {
        let mut body = self.completion_body(model, prompt, max_tokens, true);
        if let (Some(t), Value::Object(m)) = (tools, &mut body) {
            m.insert("tools".into(), tool_shapes::tools_shape(self.api, t));
        }
        self.spec_of(&body, self.counting(), max_tokens, limits)
    }

    /// The streamed request of a generation `body`.
    fn spec_of(
        &self,
        body: &Value,
        counting: Counting,
        max_tokens: u32,
        limits: StreamLimits,
    ) -> Result<RequestSpec, EngineError> {
        let mut spec = RequestSpec::new(self.generate_url(), body, counting)
            .map_err(|e| EngineError::Body(e.to_string()))?;
        spec.limits = limits;
        spec.max_tokens = Some(max_tokens);
        spec.rid = body.get("rid").and_then(Value::as_str).map(Arc::from);
        spec.api = self.api;
        spec.reading = self.input_reading();
        spec.raw = self.raw.clone();
        spec.structured = self.request.structured.clone().map(Arc::new);
        spec.save_text = self.save_texts;
        Ok(spec)
    }

    /// Whether the server still answers (any HTTP status counts; only transport errors fail).
    /// Used after connection failures to tell "server gone" from "request failed".
    pub async fn alive(&self) -> bool {
        let url = format!("{}/v1/models", self.base_url);
        send_fresh(self.client.get(&url).timeout(self.side_timeout), || {})
            .await
            .is_ok()
    }

    /// Reads the queue gauges and token counters from the engine's metrics (one small GET;
    /// engines without metrics return all-`None` without a request).
    ///
    /// TensorRT-LLM's JSON `/metrics` is drained by each read: gauges come from the last
    /// iteration since the previous read (none → idle, reported as 0 running / 0 waiting), and
    /// it has no cumulative token counters. Another client reading it steals iterations.
    pub async fn gauges(&self) -> Result<Gauges, EngineError> {
        if self.dialect.metrics == MetricsKind::None {
            return Ok(Gauges::default());
        }
        let url = format!("{}/metrics", self.base_url);
        let body = self.get_text(&url, GAUGES_TIMEOUT).await?;
        match self.dialect.metrics {
            MetricsKind::TrtLlmJson => {
                let s = parse_trtllm_json(&body).map_err(|e| EngineError::Parse {
                    url,
                    detail: e.to_string(),
                })?;
                Ok(trtllm::gauges(&s))
            }
            MetricsKind::Prometheus => {
                let mut g = gauges_from(self.kind, &Metrics::parse(&body));
                if self.kind == EngineKind::Sglang && !sglang::speculates(&self.info.extra) {
                    (g.spec_accept_rate, g.spec_accept_length) = (None, None);
                }
                Ok(g)
            }
            MetricsKind::None => Ok(Gauges::default()),
        }
    }

    /// Whether a second reader may sample `/metrics` beside the window's own reads (the
    /// telemetry sampler): a Prometheus page reads the same for every reader, while
    /// TensorRT-LLM's JSON is drained by each read (a second reader would steal the window's
    /// iterations) and an engine without metrics has nothing to read.
    pub(crate) fn metrics_shareable(&self) -> bool {
        self.dialect.metrics == MetricsKind::Prometheus
    }

    async fn get_text(&self, url: &str, timeout: Duration) -> Result<String, EngineError> {
        self.send_text(self.client.get(url).timeout(timeout), url)
            .await
    }

    /// Sends a side request (on a fresh connection if the pooled one was stale) and returns its
    /// body, or the server's error as one line.
    async fn send_text(
        &self,
        req: reqwest::RequestBuilder,
        url: &str,
    ) -> Result<String, EngineError> {
        let resp = send_fresh(req, || {})
            .await
            .map_err(|e| EngineError::Transport(describe_request_error(&e, url)))?;
        let status = resp.status();
        let text = resp
            .text()
            .await
            .map_err(|e| EngineError::Transport(describe_request_error(&e, url)))?;
        if !status.is_success() {
            return Err(EngineError::Status(describe_status(status, &text, url)));
        }
        Ok(text)
    }

    async fn post_json<B: Serialize + ?Sized>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<Value, EngineError> {
        self.post_json_within(url, body, self.side_timeout).await
    }

    /// [`Engine::post_json`] to an endpoint the server may not serve or may not take this body
    /// at: an error answer (status or shape) is `None`, while a transport error is returned,
    /// since a server that is down must not read as one without the feature.
    async fn post_json_if_served<B: Serialize + ?Sized>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<Option<Value>, EngineError> {
        match self.post_json(url, body).await {
            Ok(v) => Ok(Some(v)),
            Err(EngineError::Transport(e)) => Err(EngineError::Transport(e)),
            Err(_) => Ok(None),
        }
    }

    /// [`Engine::post_json`] with its own limit.
    async fn post_json_within<B: Serialize + ?Sized>(
        &self,
        url: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<Value, EngineError> {
        let req = self.client.post(url).json(body).timeout(timeout);
        let text = self.send_text(req, url).await?;
        serde_json::from_str(&text).map_err(|e| EngineError::Parse {
            url: url.to_owned(),
            detail: e.to_string(),
        })
    }
}
