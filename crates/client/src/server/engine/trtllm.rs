//! NVIDIA TensorRT-LLM's `trtllm-serve`: `/version`, `/v1/models` (`owned_by: tensorrt_llm`),
//! and a JSON `/metrics` of per-iteration stats (tensorrt_llm/serve/openai_server.py
//! `get_iteration_stats`).
//!
//! That `/metrics` is a queue drained by each read: a reader gets the iterations since the last
//! read, and two readers steal from each other. An empty list means no iteration ran: the
//! engine was idle, read as 0 running and 0 waiting. The KV capacity is `maxNumBlocks ×
//! tokensPerBlock` of an iteration's `kvCacheStats`, so it is known at probe time only if the
//! engine has run since start. There is no cumulative token counter, and no tokenize endpoint.

use llmib_core::{EngineInfo, ModelInfo};

use super::dialect::{Dialect, Gauges, MetricsKind, TokenizerKind};
use super::discovery::Discovery;
use super::util::{commit_from_version, sourced, str_at};
use crate::server::metrics::{TrtLlmStats, parse_trtllm_json};

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: true,
    min_tokens: false,
    include_usage: true,
    continuous_usage: true,
    metrics: MetricsKind::TrtLlmJson,
    tokenizer: TokenizerKind::None,
    abort_by_rid: false,
};

/// `/metrics` answered a JSON list (TensorRT-LLM's iteration stats), not Prometheus text.
pub(crate) fn looks_like_metrics(d: &Discovery) -> bool {
    d.metrics
        .as_deref()
        .is_some_and(|b| b.trim_start().starts_with('[') && parse_trtllm_json(b).is_ok())
}

pub(crate) fn gauges(s: &TrtLlmStats) -> Gauges {
    let idle = s.iterations == 0;
    Gauges {
        running: if idle { Some(0.0) } else { s.active_requests },
        waiting: if idle { Some(0.0) } else { s.queued_requests },
        generation_tokens_total: None,
        prompt_tokens_total: None,
        cached_prompt_tokens_total: None,
        kv_usage: s.kv_usage(),
        ..Default::default()
    }
}

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, _model: &mut ModelInfo) -> Option<String> {
    let caps = &mut info.capabilities;
    caps.ignore_eos = Some(true);
    caps.min_tokens = Some(true);
    caps.token_id_prompts = Some(true);
    caps.continuous_usage_stats = Some(true);
    if let Some(v) = d.version.as_ref() {
        info.version = str_at(v, "version");
        info.commit = info.version.as_deref().and_then(commit_from_version);
    }
    if let Some(kv) = d
        .metrics
        .as_deref()
        .and_then(|b| parse_trtllm_json(b).ok())
        .and_then(|s| s.kv_capacity_tokens())
    {
        info.kv_capacity_tokens = Some(sourced(
            kv,
            "tensorrt-llm /metrics kvCacheStats maxNumBlocks × tokensPerBlock",
        ));
    }
    None
}
