//! vLLM: `/version`, `/v1/models` (`max_model_len`, `root`), `vllm:*` Prometheus metrics (the
//! KV capacity is in the labels of `vllm:cache_config_info`), `/tokenize` and `/detokenize`,
//! and, only with `VLLM_SERVER_DEV_MODE=1`, `/server_info` with the whole engine config.
//!
//! Metric names from vllm-project/vllm `vllm/v1/metrics/loggers.py`; `num_requests_waiting`
//! carries a `reason` label (capacity/deferred) on recent builds, so it is summed.

use llmib_core::{EngineInfo, ModelInfo};
use serde_json::{Map, Value};

use super::dialect::{Dialect, Gauges, MetricsKind, SpecCounters, SpecPositions, TokenizerKind};
use super::discovery::Discovery;
use super::util::{as_u64, commit_from_version, quantization_label, sourced, str_at, u64_at};
use crate::server::metrics::Metrics;

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: true,
    min_tokens: false,
    include_usage: true,
    continuous_usage: true,
    metrics: MetricsKind::Prometheus,
    tokenizer: TokenizerKind::OpenAiStyle,
    abort_by_rid: false,
};

pub(crate) fn gauges(m: &Metrics<'_>) -> Gauges {
    Gauges {
        running: m.sum("vllm:num_requests_running"),
        waiting: m.sum("vllm:num_requests_waiting"),
        generation_tokens_total: m.sum("vllm:generation_tokens_total"),
        prompt_tokens_total: m.sum("vllm:prompt_tokens_total"),
        cached_prompt_tokens_total: m.sum_first(&[
            "vllm:prompt_tokens_cached_total",
            "vllm:prefix_cache_hits_total",
            "vllm:gpu_prefix_cache_hits_total",
        ]),
        prefix_cache_queries_total: m.sum_first(&[
            "vllm:prefix_cache_queries_total",
            "vllm:gpu_prefix_cache_queries_total",
        ]),
        preemptions_total: m.sum("vllm:num_preemptions_total"),
        kv_usage: m
            .mean("vllm:kv_cache_usage_perc")
            .or_else(|| m.mean("vllm:gpu_cache_usage_perc")),
        spec_accept_rate: None,
        spec_accept_length: None,
        prompt_seconds_total: m.sum("vllm:request_prefill_time_seconds_sum"),
        spec_counters: match (
            m.sum("vllm:spec_decode_num_drafts_total"),
            m.sum("vllm:spec_decode_num_draft_tokens_total"),
            m.sum("vllm:spec_decode_num_accepted_tokens_total"),
        ) {
            (Some(drafts), Some(draft_tokens), Some(accepted_tokens)) => Some(SpecCounters {
                drafts,
                draft_tokens,
                accepted_tokens,
                accepted_per_pos: accepted_per_pos(m),
            }),
            _ => None,
        },
    }
}

/// `vllm:spec_decode_num_accepted_tokens_per_pos_total{position="k"}` (vLLM's
/// `vllm/v1/spec_decode/metrics.py`), summed over engines; empty without the family.
fn accepted_per_pos(m: &Metrics<'_>) -> SpecPositions {
    let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
    let samples: Vec<(usize, f64)> = (m.samples_of(name))
        .filter_map(|s| Some((s.label("position")?.parse().ok()?, s.value)))
        .collect();
    if samples.len() < m.samples_of(name).count() {
        // A sample without a readable position: which rate is whose cannot be told.
        return SpecPositions::default();
    }
    SpecPositions::from_samples(samples)
}

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, model: &mut ModelInfo) -> Option<String> {
    let caps = &mut info.capabilities;
    caps.ignore_eos = Some(true);
    caps.min_tokens = Some(true);
    caps.token_id_prompts = Some(true);
    caps.continuous_usage_stats = Some(true);
    // Cached tokens appear in usage only with --enable-prompt-tokens-details: unknown here.

    if let Some(v) = d.version.as_ref() {
        info.version = str_at(v, "version");
        info.commit = info.version.as_deref().and_then(commit_from_version);
    }
    if let Some(c) = super::discovery::model_max_len(d, &model.served_model) {
        info.context_length = Some(sourced(c.value, "vllm /v1/models max_model_len"));
    }
    model.model_path =
        d.models
            .as_ref()
            .and_then(|m| {
                m.get("data")?.as_array()?.iter().find(|e| {
                    e.get("id").and_then(Value::as_str) == Some(model.served_model.as_str())
                })
            })
            .and_then(|e| str_at(e, "root"));

    if let Some(body) = d.metrics.as_deref() {
        let m = Metrics::parse(body);
        let infos: Vec<_> = m.samples_of("vllm:cache_config_info").collect();
        let sum_label = |key: &str| -> Option<u64> {
            let mut total = 0u64;
            for s in &infos {
                total = total.checked_add(s.label(key)?.parse::<u64>().ok()?)?;
            }
            (!infos.is_empty()).then_some(total)
        };
        let blocks = || -> Option<u64> {
            let mut total = 0u64;
            for s in &infos {
                let n: u64 = s.label("num_gpu_blocks")?.parse().ok()?;
                let b: u64 = s.label("block_size")?.parse().ok()?;
                total = total.checked_add(n.checked_mul(b)?)?;
            }
            (!infos.is_empty()).then_some(total)
        };
        info.kv_capacity_tokens = sum_label("kv_cache_size_tokens")
            .map(|n| sourced(n, "vllm:cache_config_info kv_cache_size_tokens"))
            .or_else(|| {
                blocks().map(|n| sourced(n, "vllm:cache_config_info num_gpu_blocks × block_size"))
            });
        if let Some(first) = infos.first() {
            info.kv_cache_dtype = first.label("cache_dtype").map(str::to_owned);
            let labels: Map<String, Value> = first
                .labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), Value::String(v.to_string())))
                .collect();
            info.extra
                .insert("cache_config".to_owned(), Value::Object(labels));
        }
    }

    let cfg = d.extra("/server_info")?.get("vllm_config")?;
    if !cfg.is_object() {
        return None;
    }
    info.extra.insert("vllm_config".to_owned(), cfg.clone());
    Some(from_config(cfg, info, model))
}

/// Reads the dev-mode `/server_info` config into the cards and rebuilds `vllm serve …` from it.
fn from_config(cfg: &Value, info: &mut EngineInfo, model: &mut ModelInfo) -> String {
    let c = Sections::of(cfg);
    if let Some(q) = str_at(c.model, "quantization") {
        info.quantization = Some(quantization_label(&q));
    }
    if let Some(k) = str_at(c.cache, "cache_dtype") {
        info.kv_cache_dtype = Some(k);
    }
    info.tp_size = u64_at(c.parallel, "tensor_parallel_size");
    if let Some(n) = u64_at(c.parallel, "decode_context_parallel_size").filter(|&n| n > 1) {
        info.dcp_size = Some(n);
    }
    info.speculative_algorithm = str_at(c.spec, "method");
    if let Some(p) = str_at(c.model, "model") {
        model.model_path = Some(p);
    }
    model.revision = str_at(c.model, "revision");
    launch_command(&c)
}

/// The sections of a vLLM config (`Null` where one is missing).
struct Sections<'a> {
    model: &'a Value,
    cache: &'a Value,
    parallel: &'a Value,
    scheduler: &'a Value,
    spec: &'a Value,
}

impl<'a> Sections<'a> {
    fn of(cfg: &'a Value) -> Sections<'a> {
        const NULL: &Value = &Value::Null;
        let at = |k: &str| cfg.get(k).unwrap_or(NULL);
        Sections {
            model: at("model_config"),
            cache: at("cache_config"),
            parallel: at("parallel_config"),
            scheduler: at("scheduler_config"),
            spec: at("speculative_config"),
        }
    }
}

/// `vllm serve MODEL` with every setting that differs from vLLM's default.
fn launch_command(c: &Sections<'_>) -> String {
    let (mc, cc, pc, sc, spec) = (c.model, c.cache, c.parallel, c.scheduler, c.spec);
    let mut parts = vec!["vllm".to_owned(), "serve".to_owned()];
    if let Some(m) = str_at(mc, "model") {
        parts.push(m);
    }
    let served = mc.get("served_model_name").and_then(|v| match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => a.first().and_then(Value::as_str).map(str::to_owned),
        _ => None,
    });
    let flags: [(&str, Option<String>, Option<&str>); 13] = [
        ("--served-model-name", served, None),
        (
            "--tensor-parallel-size",
            num(pc, "tensor_parallel_size"),
            Some("1"),
        ),
        (
            "--pipeline-parallel-size",
            num(pc, "pipeline_parallel_size"),
            Some("1"),
        ),
        (
            "--data-parallel-size",
            num(pc, "data_parallel_size"),
            Some("1"),
        ),
        (
            "--decode-context-parallel-size",
            num(pc, "decode_context_parallel_size"),
            Some("1"),
        ),
        ("--max-model-len", num(mc, "max_model_len"), None),
        ("--quantization", str_at(mc, "quantization"), None),
        ("--dtype", str_at(mc, "dtype"), Some("auto")),
        ("--kv-cache-dtype", str_at(cc, "cache_dtype"), Some("auto")),
        ("--block-size", num(cc, "block_size"), None),
        (
            "--gpu-memory-utilization",
            cc.get("gpu_memory_utilization")
                .filter(|v| v.is_number())
                .map(Value::to_string),
            None,
        ),
        ("--max-num-seqs", num(sc, "max_num_seqs"), None),
        (
            "--max-num-batched-tokens",
            num(sc, "max_num_batched_tokens"),
            None,
        ),
    ];
    for (flag, value, default) in flags {
        if let Some(v) = value
            && Some(v.as_str()) != default
        {
            parts.push(flag.to_owned());
            parts.push(v);
        }
    }
    if spec.is_object() {
        let mut s = Map::new();
        for k in ["method", "model", "num_speculative_tokens"] {
            if let Some(v) = spec.get(k).filter(|v| !v.is_null()) {
                s.insert(k.to_owned(), v.clone());
            }
        }
        if !s.is_empty() {
            parts.push("--speculative-config".to_owned());
            parts.push(format!("'{}'", Value::Object(s)));
        }
    }
    parts.join(" ")
}

fn num(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(as_u64).map(|n| n.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vLLM page with the per-position family (two engines, positions out of order, as a
    /// Prometheus page may list them): summed per position; without it, or with a gap in the
    /// positions, none.
    #[test]
    fn accepted_tokens_per_position_are_read_per_position() {
        let page = concat!(
            "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n",
            "vllm:spec_decode_num_drafts_total{engine=\"0\",model_name=\"m\"} 100\n",
            "vllm:spec_decode_num_draft_tokens_total{engine=\"0\",model_name=\"m\"} 300\n",
            "vllm:spec_decode_num_accepted_tokens_total{engine=\"0\",model_name=\"m\"} 150\n",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"1\"} 40\n",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"0\"} 80\n",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"1\",model_name=\"m\",position=\"0\"} 5\n",
            "vllm:spec_decode_num_accepted_tokens_per_pos_total{engine=\"0\",model_name=\"m\",position=\"2\"} 25\n",
            "vllm:spec_decode_num_accepted_tokens_per_pos_created{engine=\"0\",model_name=\"m\",position=\"0\"} 1.7e9\n",
        );
        let c = gauges(&Metrics::parse(page))
            .spec_counters
            .expect("counters");
        assert_eq!(c.accepted_per_pos.as_slice(), [85.0, 40.0, 25.0]);
        let without = page
            .lines()
            .filter(|l| !l.contains("per_pos"))
            .collect::<Vec<_>>()
            .join("\n");
        let c = gauges(&Metrics::parse(&without))
            .spec_counters
            .expect("counters");
        assert!(c.accepted_per_pos.as_slice().is_empty());
        let gap = page.replace("position=\"1\"", "position=\"3\"");
        let c = gauges(&Metrics::parse(&gap))
            .spec_counters
            .expect("counters");
        assert!(
            c.accepted_per_pos.as_slice().is_empty(),
            "position 1 missing"
        );
        let far = SpecPositions::from_samples([
            (0, 1.0),
            (super::super::dialect::MAX_SPEC_POSITIONS, 1.0),
        ]);
        assert!(far.as_slice().is_empty());
    }
}
