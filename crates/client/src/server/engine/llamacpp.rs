//! llama.cpp's `llama-server`: `/props` (slots, per-slot context, model path, build),
//! `llamacpp:*` Prometheus metrics (only with `--metrics`), and its own `/tokenize` /
//! `/detokenize` shapes.
//!
//! KV capacity is `default_generation_settings.n_ctx` (the context of one slot, which is also
//! the longest request) × `total_slots`: the server has no KV-capacity metric. `/tokenize` adds
//! no BOS unless asked (`add_special`), while a text prompt gets one; the engine always asks
//! explicitly. Its counters (`tokens_predicted_total`, `prompt_tokens_total`) are updated when
//! a request finishes, not per token. Metric names from ggml-org/llama.cpp
//! `tools/server/server-context.cpp`.

use llmib_core::{EngineInfo, ModelInfo};
use serde_json::{Map, Value};

use super::dialect::{Dialect, Gauges, MetricsKind, TokenizerKind};
use super::discovery::Discovery;
use super::util::{commit_from_version, sourced, str_at, u64_at};
use crate::server::metrics::Metrics;

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: true,
    min_tokens: false,
    // Usage rides on the finish chunk anyway; include_usage is accepted and harmless.
    include_usage: true,
    continuous_usage: false,
    metrics: MetricsKind::Prometheus,
    tokenizer: TokenizerKind::LlamaCpp,
    abort_by_rid: false,
};

/// A `/props` answer: llama.cpp's has `default_generation_settings` or `total_slots`.
pub(crate) fn looks_like(v: &Value) -> bool {
    v.get("default_generation_settings").is_some() || v.get("total_slots").is_some()
}

pub(crate) fn gauges(m: &Metrics<'_>) -> Gauges {
    Gauges {
        running: m.sum("llamacpp:requests_processing"),
        waiting: m.sum("llamacpp:requests_deferred"),
        generation_tokens_total: m.sum("llamacpp:tokens_predicted_total"),
        prompt_tokens_total: m.sum("llamacpp:prompt_tokens_total"),
        cached_prompt_tokens_total: m.sum("llamacpp:prompt_tokens_cached_total"),
        prompt_seconds_total: m.sum("llamacpp:prompt_seconds_total"),
        ..Default::default()
    }
}

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, model: &mut ModelInfo) -> Option<String> {
    let caps = &mut info.capabilities;
    caps.ignore_eos = Some(true);
    // Accepted and silently ignored (seen on a live server).
    caps.min_tokens = Some(false);
    caps.token_id_prompts = Some(true);
    caps.continuous_usage_stats = Some(false);
    caps.cached_tokens = Some(true);
    let p = d.props.as_ref()?;
    let build = str_at(p, "build_info");
    info.version = build
        .as_deref()
        .map(|b| b.split('-').next().unwrap_or(b).to_owned());
    info.commit = build.as_deref().and_then(commit_from_version);
    info.build = build;
    let n_ctx = p
        .get("default_generation_settings")
        .and_then(|g| u64_at(g, "n_ctx"))
        .or_else(|| u64_at(p, "n_ctx"));
    let slots = u64_at(p, "total_slots");
    if let Some(n) = n_ctx {
        info.context_length = Some(sourced(
            n,
            "llama.cpp /props default_generation_settings.n_ctx (per slot)",
        ));
    }
    if let (Some(n), Some(s)) = (n_ctx, slots) {
        info.kv_capacity_tokens = Some(sourced(
            n.saturating_mul(s),
            "llama.cpp /props n_ctx per slot × total_slots",
        ));
    }
    model.model_path = str_at(p, "model_path");
    let mut extra = Map::new();
    for k in ["total_slots", "build_info", "model_path", "modalities"] {
        if let Some(v) = p.get(k) {
            extra.insert(k.to_owned(), v.clone());
        }
    }
    if let Some(n) = n_ctx {
        extra.insert("n_ctx_per_slot".to_owned(), Value::from(n));
    }
    info.extra.insert("props".to_owned(), Value::Object(extra));
    // llama-server does not expose its command line.
    None
}
