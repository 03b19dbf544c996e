//! Hugging Face Text Generation Inference: `/info` (model, version, `max_total_tokens`,
//! `max_batch_total_tokens`), `tgi_*` Prometheus metrics, and `/tokenize` (no detokenize).
//!
//! TGI's request types have no `ignore_eos` or `min_tokens`, so a TGI run cannot force the
//! output length: requests that stop early end with `finish_reason: "stop"`, which the driver
//! sees. Its token counters are histogram sums of finished requests
//! (`tgi_request_generated_tokens_sum`). SSE lines come as `data:` without a space (axum).
//! Field names from huggingface/text-generation-inference `router/src/lib.rs` (`Info`).

use llmib_core::{EngineInfo, ModelInfo};
use serde_json::Value;

use super::dialect::{Dialect, Gauges, MetricsKind, TokenizerKind};
use super::discovery::Discovery;
use super::util::{sourced, str_at, u64_at};
use crate::server::metrics::Metrics;

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: false,
    min_tokens: false,
    include_usage: true,
    continuous_usage: false,
    metrics: MetricsKind::Prometheus,
    tokenizer: TokenizerKind::Tgi,
    abort_by_rid: false,
};

/// A TGI `/info` answer.
pub(crate) fn looks_like(v: &Value) -> bool {
    v.get("model_id").is_some()
        && (v.get("router").is_some()
            || v.get("max_total_tokens").is_some()
            || v.get("docker_label").is_some())
}

pub(crate) fn gauges(m: &Metrics<'_>) -> Gauges {
    Gauges {
        running: m.sum("tgi_batch_current_size"),
        waiting: m.sum("tgi_queue_size"),
        generation_tokens_total: m.sum("tgi_request_generated_tokens_sum"),
        prompt_tokens_total: m.sum("tgi_request_input_length_sum"),
        cached_prompt_tokens_total: None,
        ..Default::default()
    }
}

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, model: &mut ModelInfo) -> Option<String> {
    let caps = &mut info.capabilities;
    caps.ignore_eos = Some(false);
    caps.min_tokens = Some(false);
    caps.token_id_prompts = Some(false);
    caps.continuous_usage_stats = Some(false);
    caps.cached_tokens = Some(false);
    let i = d.tgi_info.as_ref()?;
    info.version = str_at(i, "version");
    info.commit = str_at(i, "sha");
    info.build = str_at(i, "docker_label");
    info.backend = str_at(i, "model_device_type");
    if let Some(n) = u64_at(i, "max_total_tokens") {
        info.context_length = Some(sourced(n, "tgi /info max_total_tokens"));
    }
    if let Some(n) = u64_at(i, "max_batch_total_tokens") {
        info.kv_capacity_tokens = Some(sourced(n, "tgi /info max_batch_total_tokens"));
    }
    model.model_path = str_at(i, "model_id");
    model.revision = str_at(i, "model_sha");
    info.extra.insert("info".to_owned(), i.clone());
    None
}
