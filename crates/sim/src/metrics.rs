//! `GET /metrics`: the engine's state as Prometheus text, named and labelled per engine.
//!
//! The layout is what Python's `prometheus_client` writes: `# HELP` / `# TYPE` before each
//! family, counters with a `_total` sample followed by a `_created` gauge, floats printed
//! the Python way (`3.0`, not `3`). SGLang labels its series with `model_name` (plus its
//! engine and rank labels), vLLM V1 with `engine` and `model_name`.
//!
//! Speculative decoding (`spec_tokens` > 1 only, as an engine without it has none): SGLang's
//! `spec_accept_length` / `spec_accept_rate` gauges, vLLM's `spec_decode_*` counters (see
//! `engine::spec`). Foreign load (`foreign_running`, `foreign_waiting`) is added to the running
//! and waiting gauges.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use crate::config::Flavor;
use crate::engine::Stats;
use crate::state::AppState;

/// Formats a float like Python's `repr` for the values we emit.
fn py_float(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

struct Out {
    text: String,
    labels: String,
    started: u64,
}

impl Out {
    fn gauge(&mut self, name: &str, help: &str, v: f64) {
        let _ = write!(
            self.text,
            "# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{}}} {}\n",
            self.labels,
            py_float(v)
        );
    }

    /// `base` without `_total`; writes `base_total` and `base_created`.
    fn counter(&mut self, base: &str, help: &str, v: u64) {
        self.counter_family(base, help, &[(String::new(), v)]);
    }

    /// A counter with one sample per `(extra labels, value)`: `base_total` for each, then
    /// `base_created` for each.
    fn counter_family(&mut self, base: &str, help: &str, samples: &[(String, u64)]) {
        let l = &self.labels;
        let _ = write!(
            self.text,
            "# HELP {base}_total {help}\n# TYPE {base}_total counter\n"
        );
        for (extra, v) in samples {
            let _ = writeln!(
                self.text,
                "{base}_total{{{l}{extra}}} {}",
                py_float(*v as f64)
            );
        }
        let _ = write!(
            self.text,
            "# HELP {base}_created {help}\n# TYPE {base}_created gauge\n"
        );
        for (extra, _) in samples {
            let _ = writeln!(
                self.text,
                "{base}_created{{{l}{extra}}} {}",
                py_float(self.started as f64)
            );
        }
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Renders the Prometheus text for the current stats.
pub(crate) fn render(st: &AppState, s: &Stats) -> String {
    let model = st.cfg.model.replace('\\', "\\\\").replace('"', "\\\"");
    match st.cfg.flavor {
        Flavor::Sglang => render_sglang(st, s, &model),
        Flavor::Vllm => render_vllm(st, s, &model),
    }
}

/// SGLang's families: scheduler gauges labelled with engine and ranks, then token counters.
fn render_sglang(st: &AppState, s: &Stats, model: &str) -> String {
    let mut o = Out {
        text: String::new(),
        labels: format!(
            "engine_type=\"unified\",model_name=\"{model}\",pp_rank=\"0\",tp_rank=\"0\""
        ),
        started: st.started,
    };
    let cfg = &st.cfg;
    o.gauge(
        "sglang:num_running_reqs",
        "The number of running requests.",
        (s.running + cfg.foreign_running as usize) as f64,
    );
    o.gauge(
        "sglang:num_used_tokens",
        "The number of used tokens.",
        s.used as f64,
    );
    o.gauge(
        "sglang:token_usage",
        "The token usage.",
        ratio(s.used, s.capacity),
    );
    o.gauge(
        "sglang:gen_throughput",
        "The generation throughput (token/s).",
        s.last_gen_throughput,
    );
    o.gauge(
        "sglang:num_queue_reqs",
        "The number of requests in the waiting queue.",
        (s.queued + cfg.foreign_waiting as usize) as f64,
    );
    o.gauge(
        "sglang:cache_hit_rate",
        "The prefix cache hit rate.",
        ratio(s.cache_hit_tokens, s.cache_query_tokens),
    );
    o.gauge(
        "sglang:max_total_num_tokens",
        "Maximum total number of tokens in the KV cache pool.",
        s.capacity as f64,
    );
    if cfg.spec_tokens > 1 {
        sglang_spec_gauges(&mut o, s);
    }
    o.labels = format!("model_name=\"{model}\"");
    o.counter(
        "sglang:prompt_tokens",
        "Number of prefill tokens processed.",
        s.prompt_tokens_total,
    );
    o.counter(
        "sglang:generation_tokens",
        "Number of generation tokens processed.",
        s.generation_tokens_total,
    );
    o.counter(
        "sglang:cached_tokens",
        "Number of cached prompt tokens.",
        s.cache_hit_tokens,
    );
    o.counter(
        "sglang:num_requests",
        "Number of requests processed.",
        s.finished_requests + s.aborted_requests,
    );
    o.counter(
        "sglang:num_aborted_requests",
        "Number of requests aborted.",
        s.aborted_requests,
    );
    o.text
}

/// SGLang's speculative-decoding gauges (over its last log interval, `engine::spec`).
fn sglang_spec_gauges(o: &mut Out, s: &Stats) {
    o.gauge(
        "sglang:spec_accept_length",
        "The average acceptance length of speculative decoding.",
        s.spec_accept_length,
    );
    o.gauge(
        "sglang:spec_accept_rate",
        "The average acceptance rate of speculative decoding (`accepted tokens / total draft tokens` in batch).",
        s.spec_accept_rate,
    );
}

/// vLLM V1's families: the cache-config info gauge, scheduler gauges, then token counters.
fn render_vllm(st: &AppState, s: &Stats, model: &str) -> String {
    let cfg = &st.cfg;
    let bs = u64::from(cfg.block_size.max(1));
    let mut o = Out {
        text: String::new(),
        labels: cache_config_labels(st, s, bs),
        started: st.started,
    };
    o.gauge(
        "vllm:cache_config_info",
        "Information of the LLMEngine CacheConfig",
        1.0,
    );
    o.labels = format!("engine=\"0\",model_name=\"{model}\"");
    o.gauge(
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        (s.running + cfg.foreign_running as usize) as f64,
    );
    o.gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        (s.queued + cfg.foreign_waiting as usize) as f64,
    );
    // vLLM counts KV in whole blocks.
    let used_blocks = s.used.div_ceil(bs);
    o.gauge(
        "vllm:kv_cache_usage_perc",
        "KV-cache usage. 1 means 100 percent usage.",
        ratio(used_blocks, s.capacity / bs),
    );
    o.counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        s.cache_query_tokens,
    );
    o.counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        s.cache_hit_tokens,
    );
    o.counter(
        "vllm:prompt_tokens",
        "Number of prefill tokens processed.",
        s.prompt_tokens_total,
    );
    o.counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        s.generation_tokens_total,
    );
    if cfg.spec_tokens > 1 {
        vllm_spec_counters(&mut o, s, cfg.spec_tokens - 1);
    }
    o.labels = format!("engine=\"0\",finished_reason=\"length\",model_name=\"{model}\"");
    o.counter(
        "vllm:request_success",
        "Count of successfully processed requests.",
        s.finished_requests,
    );
    o.text
}

/// vLLM's speculative-decoding counters (`vllm/v1/spec_decode/metrics.py`).
/// `drafted` tokens per draft (one `position` per draft token).
fn vllm_spec_counters(o: &mut Out, s: &Stats, drafted: u32) {
    o.counter(
        "vllm:spec_decode_num_drafts",
        "Number of spec decoding drafts.",
        s.spec_drafts,
    );
    o.counter(
        "vllm:spec_decode_num_draft_tokens",
        "Number of draft tokens.",
        s.spec_draft_tokens,
    );
    o.counter(
        "vllm:spec_decode_num_accepted_tokens",
        "Number of accepted tokens.",
        s.spec_accepted_tokens,
    );
    let per_pos: Vec<(String, u64)> = (0..drafted as usize)
        .map(|p| {
            let v = s.spec_accepted_per_pos.get(p).copied().unwrap_or(0);
            (format!(",position=\"{p}\""), v)
        })
        .collect();
    o.counter_family(
        "vllm:spec_decode_num_accepted_tokens_per_pos",
        "Accepted tokens per draft position.",
        &per_pos,
    );
}

/// The labels of `vllm:cache_config_info`: vLLM's CacheConfig fields, as vLLM prints them.
fn cache_config_labels(st: &AppState, s: &Stats, bs: u64) -> String {
    let cfg = &st.cfg;
    format!(
        "block_size=\"{bs}\",gpu_memory_utilization=\"0.9\",swap_space=\"4\",cache_dtype=\"{}\",is_attention_free=\"False\",num_gpu_blocks_override=\"None\",sliding_window=\"None\",enable_prefix_caching=\"{}\",prefix_caching_hash_algo=\"builtin\",cpu_offload_gb=\"0\",calculate_kv_scales=\"False\",num_gpu_blocks=\"{}\",num_cpu_blocks=\"None\",engine=\"0\"",
        cfg.server_args
            .get("kv_cache_dtype")
            .and_then(|v| v.as_str())
            .unwrap_or("auto"),
        if cfg.prefix_cache_tokens > 0 {
            "True"
        } else {
            "False"
        },
        s.capacity / bs
    )
}

/// `GET /metrics`.
pub(crate) async fn metrics(State(st): State<Arc<AppState>>) -> Response {
    let text = render(&st, &st.engine.stats());
    let mut r = text.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}
