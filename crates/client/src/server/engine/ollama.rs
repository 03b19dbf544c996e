//! Ollama: `/api/version`, `/api/show` (quantization, architecture, trained context) and
//! `/api/ps` (the context the loaded model actually runs with). No metrics, no tokenizer
//! endpoint, and its OpenAI layer takes neither `ignore_eos` nor `min_tokens` nor token-id
//! prompts (ollama/ollama `openai/openai.go`), so outputs may end early with `stop`.
//!
//! The context length is `/api/ps` `context_length` of the loaded model; the model's trained
//! context (`<arch>.context_length` in `/api/show`) is kept in `extra` only, since Ollama
//! truncates prompts to its configured `num_ctx`, usually far less.

use llmib_core::{EngineInfo, ModelInfo};
use serde_json::{Map, Value};

use super::dialect::{Dialect, MetricsKind, TokenizerKind};
use super::discovery::Discovery;
use super::util::{sourced, str_at, u64_at};

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: false,
    min_tokens: false,
    include_usage: true,
    continuous_usage: false,
    metrics: MetricsKind::None,
    tokenizer: TokenizerKind::None,
    abort_by_rid: false,
};

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, model: &mut ModelInfo) -> Option<String> {
    let caps = &mut info.capabilities;
    caps.ignore_eos = Some(false);
    caps.min_tokens = Some(false);
    caps.token_id_prompts = Some(false);
    caps.continuous_usage_stats = Some(false);
    caps.cached_tokens = Some(false);
    if let Some(v) = d.ollama_version.as_ref() {
        info.version = str_at(v, "version");
    }
    let mut extra = Map::new();
    if let Some(show) = d.extra("/api/show") {
        if let Some(det) = show.get("details") {
            info.quantization = str_at(det, "quantization_level");
            for k in ["format", "family", "parameter_size", "quantization_level"] {
                if let Some(v) = det.get(k) {
                    extra.insert(k.to_owned(), v.clone());
                }
            }
        }
        if let Some(mi) = show.get("model_info")
            && let Some(arch) = str_at(mi, "general.architecture")
        {
            if let Some(n) = u64_at(mi, &format!("{arch}.context_length")) {
                extra.insert("trained_context_length".to_owned(), Value::from(n));
            }
            extra.insert("architecture".to_owned(), Value::String(arch));
        }
    }
    if let Some(m) = d
        .extra("/api/ps")
        .and_then(|ps| ps.get("models")?.as_array())
        .and_then(|a| {
            a.iter().find(|m| {
                str_at(m, "name").as_deref() == Some(model.served_model.as_str())
                    || str_at(m, "model").as_deref() == Some(model.served_model.as_str())
            })
        })
    {
        if let Some(n) = u64_at(m, "context_length") {
            info.context_length = Some(sourced(n, "ollama /api/ps context_length (loaded model)"));
        }
        model.revision = str_at(m, "digest");
    }
    if !extra.is_empty() {
        info.extra.insert("ollama".to_owned(), Value::Object(extra));
    }
    None
}
