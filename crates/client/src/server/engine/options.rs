//! What a probe takes and how it fails: its options (also what the route reads to build the
//! client) and its one-line errors. Apart from the probe so that the route, which the probe
//! calls, does not import the probe.

use std::sync::Arc;
use std::time::Duration;

use crate::server::local_tokenizer::LocalTokenizer;
use crate::wire::http::HttpError;
use llmib_core::{Api, EngineKind, Targeting};
use thiserror::Error;

/// What to probe.
#[derive(Debug, Clone)]
pub struct ProbeOptions {
    /// Server URL (`http://host:8000` or `http://host:8000/v1`).
    pub base_url: String,
    /// API key, sent as `Authorization: Bearer`.
    pub api_key: Option<String>,
    /// The model to use; auto-detected from `/v1/models` when `None`.
    pub model: Option<String>,
    /// Forces the engine kind (`--engine`) instead of detecting it.
    pub engine: Option<EngineKind>,
    /// `--kv-capacity`: KV capacity in tokens, overriding what the engine reports.
    pub kv_capacity: Option<u64>,
    /// `--dcp-size`: the reported per-rank capacity is multiplied by this.
    pub dcp_size: Option<u64>,
    /// Timeout of each probe request (and the connect timeout of the client).
    pub timeout: Duration,
    /// The endpoint generation requests go to; `None`: completions for a detected engine,
    /// chat for an unknown OpenAI-compatible endpoint (hosted APIs often serve chat only).
    pub api: Option<Api>,
    /// How prompts are made C tokens long; `None`: exact where the engine has a tokenize
    /// endpoint, estimated otherwise.
    pub targeting: Option<Targeting>,
    /// Let requests end at the model's EOS (no `ignore_eos` / `min_tokens`).
    pub respect_eos: bool,
    /// Keep each generation request's answer text in its record (`run --save-texts`).
    pub save_texts: bool,
    /// A tokenizer file that counts chunk texts where the server has no tokenize endpoint.
    pub local_tokenizer: Option<Arc<LocalTokenizer>>,
    /// Sampling and extra keys every generation request carries.
    pub request: llmib_core::RequestControls,
    /// Which headers carry the key (`--api-key-header`); `None`: both `Authorization: Bearer`
    /// and `x-api-key` for the Messages API (a server that copies it may check either),
    /// Bearer otherwise.
    pub key_header: Option<crate::wire::http::KeyHeader>,
}

impl ProbeOptions {
    /// The headers that carry the key: as asked, else by the API (see `key_header`).
    pub fn key_header(&self) -> crate::wire::http::KeyHeader {
        use crate::wire::http::KeyHeader;
        self.key_header.unwrap_or(match self.api {
            Some(Api::Messages) => KeyHeader::Both,
            _ => KeyHeader::Bearer,
        })
    }

    /// Options for `base_url` with defaults: no key, auto model, auto engine, 5 s timeout,
    /// completions (`api: None` chooses by the engine, as `run --api auto` does), automatic
    /// targeting, `ignore_eos`, no local tokenizer.
    pub fn new(base_url: impl Into<String>) -> Self {
        ProbeOptions {
            base_url: base_url.into(),
            api_key: None,
            model: None,
            engine: None,
            kv_capacity: None,
            dcp_size: None,
            timeout: Duration::from_secs(5),
            api: Some(Api::Completions),
            targeting: None,
            respect_eos: false,
            save_texts: false,
            request: llmib_core::RequestControls::default(),
            local_tokenizer: None,
            key_header: None,
        }
    }
}

/// Why a probe failed. Each message is one line that says what to do.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProbeError {
    /// The URL is not usable.
    #[error("invalid --url {0:?}: expected something like http://host:8000 or http://host:8000/v1")]
    InvalidUrl(String),
    /// No HTTP answer.
    #[error("{0}")]
    Unreachable(String),
    /// The key was refused.
    #[error("{0}")]
    Auth(String),
    /// `/v1/models` is not there and no model was given: the URL is not an OpenAI-compatible
    /// server's root.
    #[error(
        "{url}/v1/models answered HTTP 404: check --url (the server's root, e.g. http://host:8000); --model NAME only helps a server that serves completions but lists no models"
    )]
    NotAnApi {
        /// The server.
        url: String,
    },
    /// The requested model is not served.
    #[error(
        "model {:?} is not served at {url}; server serves: {}; pass --model with one of them",
        short(model),
        short_list(available)
    )]
    ModelNotFound {
        /// The server.
        url: String,
        /// The model asked for.
        model: String,
        /// What the server lists.
        available: Vec<String>,
    },
    /// No model given and the server lists none (or cannot list them).
    #[error("cannot tell which model to use: {0}; pass --model NAME")]
    NoModel(String),
    /// No model given and the server lists several.
    #[error(
        "{url} serves several models: {}; pass --model with one of them",
        short_list(models)
    )]
    SeveralModels {
        /// The server.
        url: String,
        /// What it lists.
        models: Vec<String>,
    },
    /// Another HTTP error.
    #[error("{0}")]
    Http(String),
    /// The client could not be built.
    #[error("{0}")]
    Client(String),
}

/// A server-provided name cut for a one-line message (a model id can be a megabyte long).
fn short(s: &str) -> std::borrow::Cow<'_, str> {
    llmib_core::cut_text(s, llmib_core::NAME_MAX_CHARS)
}

/// A server's list of names for a one-line message: the first ten, then how many more.
fn short_list(items: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut out: Vec<String> = items
        .iter()
        .take(SHOWN)
        .map(|m| short(m).into_owned())
        .collect();
    if items.len() > SHOWN {
        out.push(format!("… and {} more", items.len() - SHOWN));
    }
    out.join(", ")
}

impl From<HttpError> for ProbeError {
    fn from(e: HttpError) -> Self {
        ProbeError::Client(e.to_string())
    }
}
