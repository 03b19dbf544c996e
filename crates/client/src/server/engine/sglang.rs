//! SGLang: `/get_server_info` (its `server_args`, the scheduler's `max_total_num_tokens`, the
//! version), `sglang:*` Prometheus metrics (with `--enable-metrics`), and vLLM-style
//! `/tokenize` / `/detokenize`.
//!
//! `/get_server_info` returns `dataclasses.asdict(server_args)` merged with the scheduler info
//! and the version (sgl-project/sglang `python/sglang/srt/entrypoints/http_server.py`), so the
//! launch command can be rebuilt from the effective arguments. Its `/health` runs a one-token
//! generation, which is why the probe never calls it.

use llmib_core::{EngineInfo, ModelInfo};
use llmib_core::{REDACTED, is_secret_name};
use serde_json::{Map, Value};

use super::dialect::{Dialect, Gauges, MetricsKind, TokenizerKind};
use super::discovery::Discovery;
use super::util::{commit_from_version, quantization_label, sourced, str_at, u64_at};
use crate::server::metrics::Metrics;

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: true,
    min_tokens: false,
    include_usage: true,
    continuous_usage: true,
    metrics: MetricsKind::Prometheus,
    tokenizer: TokenizerKind::OpenAiStyle,
    abort_by_rid: true,
};

/// A `/get_server_info` answer: SGLang's server args carry `model_path` and the scheduler info
/// `max_total_num_tokens`.
pub(crate) fn looks_like(v: &Value) -> bool {
    v.is_object()
        && (v.get("max_total_num_tokens").is_some()
            || (v.get("model_path").is_some() && v.get("tp_size").is_some()))
}

/// Whether the server speculates, by its server args: SGLang exports `spec_accept_rate` (0)
/// and `spec_accept_length` even without a draft model, and a row must not claim speculative
/// figures for a server that has none. `false` only where the args are known and name neither
/// an algorithm nor draft tokens; unknown args keep the gauges (a hosted SGLang may hide them).
pub(crate) fn speculates(extra: &serde_json::Map<String, Value>) -> bool {
    let Some(args) = extra.get("server_args").and_then(Value::as_object) else {
        return true;
    };
    let set = |k: &str| args.get(k).is_some_and(|v| !v.is_null());
    set("speculative_algorithm") || set("speculative_num_draft_tokens")
}

pub(crate) fn gauges(m: &Metrics<'_>) -> Gauges {
    Gauges {
        running: m.sum("sglang:num_running_reqs"),
        waiting: m.sum("sglang:num_queue_reqs"),
        generation_tokens_total: m.sum("sglang:generation_tokens_total"),
        prompt_tokens_total: m.sum("sglang:prompt_tokens_total"),
        cached_prompt_tokens_total: m.sum("sglang:cached_tokens_total"),
        prefix_cache_queries_total: None,
        // The counter, not `num_retracted_reqs` (the last batch's gauge).
        preemptions_total: m.sum("sglang:num_retracted_requests_total"),
        kv_usage: m.mean("sglang:token_usage"),
        spec_accept_rate: m.mean("sglang:spec_accept_rate"),
        spec_accept_length: m.mean("sglang:spec_accept_length"),
        spec_counters: None,
        prompt_seconds_total: None,
    }
}

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, model: &mut ModelInfo) -> Option<String> {
    let caps = &mut info.capabilities;
    caps.ignore_eos = Some(true);
    caps.min_tokens = Some(true);
    caps.token_id_prompts = Some(true);
    caps.continuous_usage_stats = Some(true);
    let s = d.sglang_info.as_ref()?;
    info.version = str_at(s, "version");
    info.commit = info.version.as_deref().and_then(commit_from_version);
    info.quantization = str_at(s, "quantization").map(|q| quantization_label(&q));
    info.kv_cache_dtype = str_at(s, "kv_cache_dtype");
    info.backend = str_at(s, "device");
    info.speculative_algorithm = str_at(s, "speculative_algorithm");
    info.tp_size = u64_at(s, "tp_size");
    // Cached-token counts are only in usage with --enable-cache-report.
    info.capabilities.cached_tokens = s.get("enable_cache_report").and_then(Value::as_bool);

    let dp = u64_at(s, "dp_size").filter(|&n| n > 1);
    if let Some(kv) = u64_at(s, "max_total_num_tokens") {
        // Each data-parallel rank (replica or DP-attention rank) has its own pool of this size.
        info.kv_capacity_tokens = Some(match dp {
            Some(n) => sourced(
                kv.saturating_mul(n),
                format!("sglang /get_server_info max_total_num_tokens × dp_size {n}"),
            ),
            None => sourced(kv, "sglang /get_server_info max_total_num_tokens"),
        });
    }
    if let Some(dcp) = u64_at(s, "dcp_size").filter(|&n| n > 1) {
        info.dcp_size = Some(dcp);
    }
    if let Some(c) = u64_at(s, "context_length") {
        info.context_length = Some(sourced(c, "sglang server_args context_length"));
    }
    // The effective context length is what /v1/models reports (model config + flag).
    if let Some(c) = super::discovery::model_max_len(d, &model.served_model) {
        info.context_length = Some(sourced(c.value, "sglang /v1/models max_model_len"));
    }
    model.model_path = str_at(s, "model_path");
    model.revision = str_at(s, "revision");

    let mut args = serde_json::Map::new();
    if let Value::Object(o) = s {
        for (k, v) in o {
            if k != "internal_states" {
                args.insert(k.clone(), v.clone());
            }
        }
    }
    info.extra
        .insert("server_args".to_owned(), Value::Object(args));
    Some(launch_command(s))
}

/// Flags in the order SGLang users write them (and the seed shows): `(server_args field, flag)`.
const ORDERED: &[(&str, &str)] = &[
    ("model_path", "--model-path"),
    ("served_model_name", "--served-model-name"),
    ("tokenizer_path", "--tokenizer-path"),
    ("trust_remote_code", "--trust-remote-code"),
    ("tp_size", "--tp"),
    ("dp_size", "--dp"),
    ("pp_size", "--pp"),
    ("ep_size", "--ep"),
    ("enable_dp_attention", "--enable-dp-attention"),
    ("reasoning_parser", "--reasoning-parser"),
    ("tool_call_parser", "--tool-call-parser"),
    ("context_length", "--context-length"),
    ("mem_fraction_static", "--mem-fraction-static"),
    ("max_running_requests", "--max-running-requests"),
    ("max_total_tokens", "--max-total-tokens"),
    ("enable_metrics", "--enable-metrics"),
    ("host", "--host"),
    ("port", "--port"),
    ("api_key", "--api-key"),
    ("kv_cache_dtype", "--kv-cache-dtype"),
    ("dsa_prefill_backend", "--dsa-prefill-backend"),
    ("dsa_decode_backend", "--dsa-decode-backend"),
    ("linear_attn_backend", "--linear-attn-backend"),
    ("attention_backend", "--attention-backend"),
    ("fp8_gemm_backend", "--fp8-gemm-backend"),
    ("moe_runner_backend", "--moe-runner-backend"),
    ("speculative_algorithm", "--speculative-algorithm"),
    (
        "speculative_draft_model_path",
        "--speculative-draft-model-path",
    ),
    ("speculative_num_steps", "--speculative-num-steps"),
    ("speculative_eagle_topk", "--speculative-eagle-topk"),
    (
        "speculative_num_draft_tokens",
        "--speculative-num-draft-tokens",
    ),
    (
        "speculative_draft_attention_backend",
        "--speculative-draft-attention-backend",
    ),
];

/// Backends SGLang always fills in with its default; printing them would be noise.
const DEFAULT_BACKENDS: &[&str] = &[
    "sampling_backend",
    "grammar_backend",
    "lora_backend",
    "disaggregation_transfer_backend",
    "hicache_io_backend",
    "hicache_storage_backend",
];

/// Defaults that are not worth printing (the flag would restate the default).
fn is_default(field: &str, v: &Value, all: &Map<String, Value>) -> bool {
    match field {
        // SGLang fills it with the model path when not given.
        "tokenizer_path" => all.get("model_path") == Some(v),
        "tp_size" | "dp_size" | "pp_size" | "ep_size" => v.as_u64() == Some(1),
        "kv_cache_dtype" => v.as_str() == Some("auto"),
        _ => false,
    }
}

/// Rebuilds `sglang serve …` from the effective server args: the well-known flags in the
/// order above, then any other `*_backend` that is set, then other `enable_*`/`disable_*`
/// switches that are on. Values `null`, `false`, `"auto"`/`"none"` for backends are left out;
/// secrets are redacted. This is the effective configuration, not the literal command line:
/// an argument given with its default value, or one SGLang filled in itself, may differ.
pub(crate) fn launch_command(s: &Value) -> String {
    let mut parts = vec!["sglang".to_owned(), "serve".to_owned()];
    let mut used: Vec<&str> = Vec::new();
    let Value::Object(o) = s else {
        return parts.join(" ");
    };
    let push = |field: &str, flag: &str, v: &Value, parts: &mut Vec<String>| match v {
        Value::Bool(true) => parts.push(flag.to_owned()),
        Value::Bool(false) | Value::Null => {}
        Value::String(x) if x.is_empty() => {}
        Value::String(x) if field.ends_with("_backend") && (x == "auto" || x == "none") => {}
        other => {
            let text = match other {
                Value::String(x) => x.clone(),
                x => x.to_string(),
            };
            let text = if is_secret_name(field) {
                REDACTED.to_owned()
            } else {
                text
            };
            parts.push(flag.to_owned());
            parts.push(shell_quote(&text));
        }
    };
    for (field, flag) in ORDERED {
        if let Some(v) = o.get(*field) {
            used.push(field);
            if !is_default(field, v, o) {
                push(field, flag, v, &mut parts);
            }
        }
    }
    let mut rest: Vec<(&String, &Value)> = o
        .iter()
        .filter(|(k, _)| !used.contains(&k.as_str()))
        .filter(|(k, v)| {
            k.ends_with("_backend")
                || ((k.starts_with("enable_") || k.starts_with("disable_"))
                    && v.as_bool() == Some(true))
        })
        .filter(|(k, _)| !DEFAULT_BACKENDS.contains(&k.as_str()))
        .collect();
    rest.sort_by(|a, b| a.0.cmp(b.0));
    for (k, v) in rest {
        let flag = format!("--{}", k.replace('_', "-"));
        push(k, &flag, v, &mut parts);
    }
    parts.join(" ")
}

/// Quotes a value for a POSIX shell when it needs it.
fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%<>".contains(c))
    {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}
