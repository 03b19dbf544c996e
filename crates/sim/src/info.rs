//! The informational endpoints: models, server info, version, health, (de)tokenize.
//!
//! `/get_server_info` mirrors SGLang's dump of its `ServerArgs` plus scheduler facts; like the
//! real one it shows the API key, which is why clients must redact it. The `server_args` map of
//! the profile supplies the launch flags (`tp_size`, `kv_cache_dtype`, ...); the values the
//! simulator really runs with (`context_length`, KV capacity, host, port, key) always win.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use crate::config::Flavor;
use crate::engine::CACHE_BLOCK_TOKENS;
use crate::reply::{json_response, reject};
use crate::request::{Reject, parse_messages};
use crate::state::AppState;
use crate::tokenizer;

/// A JSON object that keeps its keys in insertion order.
struct Ordered(Vec<(String, Value)>);

impl Serialize for Ordered {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

fn ordered_json(pairs: Vec<(&str, Value)>) -> String {
    let o = Ordered(pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
    serde_json::to_string(&o).unwrap_or_default()
}

/// `GET /health` (and `/ping`, `/health_generate`): 200 with an empty body.
pub(crate) async fn health() -> StatusCode {
    StatusCode::OK
}

/// `GET /version` (vLLM).
pub(crate) async fn version(State(st): State<Arc<AppState>>) -> Response {
    json_response(
        StatusCode::OK,
        ordered_json(vec![("version", json!(st.cfg.version))]),
    )
}

/// `POST /flush_cache` (SGLang) and `/reset_prefix_cache` (vLLM).
pub(crate) async fn flush_cache(State(st): State<Arc<AppState>>) -> Response {
    st.engine.flush_cache();
    let mut r = Response::new(axum::body::Body::from("Cache flushed.\n"));
    *r.status_mut() = StatusCode::OK;
    r
}

/// `GET /v1/models`, with `max_model_len` (vLLM also lists a permission object).
pub(crate) async fn models(State(st): State<Arc<AppState>>) -> Response {
    let cfg = &st.cfg;
    let mut card = vec![
        ("id", json!(cfg.model)),
        ("object", json!("model")),
        ("created", json!(st.started)),
        ("owned_by", json!(cfg.flavor.as_str())),
        ("root", json!(cfg.model)),
        ("parent", Value::Null),
        ("max_model_len", json!(cfg.context_length)),
    ];
    let mut perm = None;
    if cfg.flavor == Flavor::Vllm {
        let p = json!([{
            "id": format!("modelperm-{:032x}", u128::from(cfg.seed) << 64 | u128::from(st.started)),
            "object": "model_permission", "created": st.started, "allow_create_engine": false,
            "allow_sampling": true, "allow_logprobs": true, "allow_search_indices": false,
            "allow_view": true, "allow_fine_tuning": false, "organization": "*", "group": null,
            "is_blocking": false
        }]);
        card.push(("permission", p.clone()));
        perm = Some(p);
    }
    // The base model first, then each LoRA adapter, as both engines list them.
    let cards: Vec<String> = std::iter::once(card)
        .chain(crate::lora::cards(cfg, st.started, perm.as_ref()))
        .map(|c| {
            let c = Ordered(c.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
            serde_json::to_string(&c).unwrap_or_default()
        })
        .collect();
    let list = format!("{{\"object\":\"list\",\"data\":[{}]}}", cards.join(","));
    json_response(StatusCode::OK, list)
}

/// SGLang `ServerArgs` fields in their declaration order, with the defaults the simulator
/// reports when the profile does not set them.
fn server_arg_defaults() -> Vec<(&'static str, Value)> {
    vec![
        ("model_path", Value::Null),
        ("tokenizer_path", Value::Null),
        ("tokenizer_mode", json!("auto")),
        ("skip_tokenizer_init", json!(false)),
        ("load_format", json!("auto")),
        ("trust_remote_code", json!(false)),
        ("context_length", Value::Null),
        ("is_embedding", json!(false)),
        ("revision", Value::Null),
        ("host", Value::Null),
        ("port", Value::Null),
        ("dtype", json!("auto")),
        ("quantization", Value::Null),
        ("kv_cache_dtype", json!("auto")),
        ("mem_fraction_static", json!(0.88)),
        ("max_running_requests", Value::Null),
        ("max_total_tokens", Value::Null),
        ("chunked_prefill_size", Value::Null),
        ("schedule_policy", json!("fcfs")),
        ("page_size", json!(1)),
        ("device", json!("cuda")),
        ("tp_size", json!(1)),
        ("pp_size", json!(1)),
        ("dp_size", json!(1)),
        ("random_seed", Value::Null),
        ("api_key", Value::Null),
        ("served_model_name", Value::Null),
        ("reasoning_parser", Value::Null),
        ("tool_call_parser", Value::Null),
        ("attention_backend", Value::Null),
        ("speculative_algorithm", Value::Null),
        ("speculative_draft_model_path", Value::Null),
        ("speculative_num_draft_tokens", Value::Null),
        ("enable_metrics", json!(false)),
        // Every usage object carries `prompt_tokens_details.cached_tokens` (SGLang needs
        // --enable-cache-report for that), but a profile's launch command is its own: the
        // seed's server ran without the flag, so the default stays off (a profile may set it).
        ("enable_cache_report", json!(false)),
    ]
}

/// `GET /get_server_info` (SGLang).
pub(crate) async fn server_info(State(st): State<Arc<AppState>>) -> Response {
    let cfg = &st.cfg;
    let stats = st.engine.stats();
    let spec = (cfg.spec_tokens > 1).then(|| json!(cfg.spec_tokens));
    let derived: Vec<(&str, Value)> = vec![
        ("context_length", json!(cfg.context_length)),
        ("host", json!(st.addr.ip().to_string())),
        ("port", json!(st.addr.port())),
        ("random_seed", json!(cfg.seed)),
        (
            "api_key",
            cfg.api_key.as_ref().map_or(Value::Null, |k| json!(k)),
        ),
        (
            "max_running_requests",
            cfg.max_running_requests.map_or(Value::Null, |m| json!(m)),
        ),
        ("chunked_prefill_size", json!(cfg.chunked_prefill_tokens)),
        // The prefix cache the simulator really runs, in its own blocks: a client sizes its
        // cache predictions and a shard's ramps by them.
        ("disable_radix_cache", json!(cfg.prefix_cache_tokens == 0)),
        ("page_size", json!(CACHE_BLOCK_TOKENS)),
    ];
    let mut fields: Vec<(String, Value)> = Vec::new();
    let mut set = |k: &str, v: Value| match fields.iter_mut().find(|(n, _)| n == k) {
        Some(slot) => slot.1 = v,
        None => fields.push((k.to_string(), v)),
    };
    for (k, v) in server_arg_defaults() {
        set(k, v);
    }
    set("model_path", json!(cfg.model));
    set("tokenizer_path", json!(cfg.model));
    set("served_model_name", json!(cfg.model));
    if let Some(s) = spec {
        set("speculative_num_draft_tokens", s);
    }
    for (k, v) in &cfg.server_args {
        set(k, v.clone());
    }
    for (k, v) in derived {
        set(k, v);
    }
    // SGLang's cumulative mean tokens per request-step (before any step: the configured one).
    let accept = if cfg.spec_tokens > 1 {
        json!(if stats.spec_drafts > 0 {
            1.0 + stats.spec_accepted_tokens as f64 / stats.spec_drafts as f64
        } else {
            cfg.spec_accept_length
                .unwrap_or_else(|| f64::from(cfg.spec_tokens))
        })
    } else {
        Value::Null
    };
    set("max_total_num_tokens", json!(stats.capacity));
    set(
        "max_req_input_len",
        json!(cfg.context_length.saturating_sub(1)),
    );
    set(
        "internal_states",
        json!([{
            "avg_spec_accept_length": accept,
            "last_gen_throughput": stats.last_gen_throughput,
            "memory_usage": {"token_capacity": stats.capacity}
        }]),
    );
    set("version", json!(cfg.version));
    json_response(
        StatusCode::OK,
        serde_json::to_string(&Ordered(fields)).unwrap_or_default(),
    )
}

/// `GET /get_model_info` (SGLang).
pub(crate) async fn model_info(State(st): State<Arc<AppState>>) -> Response {
    let cfg = &st.cfg;
    let arg = |k: &str, d: Value| cfg.server_args.get(k).cloned().unwrap_or(d);
    json_response(
        StatusCode::OK,
        ordered_json(vec![
            ("model_path", json!(cfg.model)),
            ("tokenizer_path", json!(cfg.model)),
            ("is_generation", json!(true)),
            ("preferred_sampling_params", Value::Null),
            ("weight_version", json!("default")),
            ("has_image_understanding", json!(false)),
            ("has_audio_understanding", json!(false)),
            ("model_type", arg("model_type", json!("glm"))),
            (
                "architectures",
                arg("architectures", json!(["GlmForCausalLM"])),
            ),
        ]),
    )
}

#[derive(Debug, Deserialize)]
struct TokenizeBody {
    prompt: Option<Value>,
    messages: Option<Vec<Value>>,
    add_special_tokens: Option<bool>,
    add_generation_prompt: Option<bool>,
    return_token_strs: Option<bool>,
    /// vLLM's chat tokenize takes the tools the template renders (`crate::tools`).
    tools: Option<Vec<Value>>,
}

/// `POST /tokenize`: vLLM answers `{count, max_model_len, tokens, token_strs}`, SGLang
/// `{tokens, count, max_model_len}`. A string prompt counts exactly as in a completion.
pub(crate) async fn tokenize(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    let cfg = &st.cfg;
    let b: TokenizeBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return reject(cfg, &Reject::bad(format!("invalid request body: {e}"))),
    };
    let ids = match (&b.prompt, &b.messages) {
        (Some(Value::String(p)), None) => {
            tokenizer::encode(p, b.add_special_tokens.unwrap_or(true) && cfg.add_bos)
        }
        (None, Some(m)) => match parse_messages(m, crate::tools::ToolShape::Chat) {
            Ok(msgs) => tokenizer::encode_chat(
                &crate::tools::with_tools(msgs, b.tools.as_deref()),
                b.add_generation_prompt.unwrap_or(true),
            ),
            Err(e) => return reject(cfg, &e),
        },
        _ => {
            return reject(
                cfg,
                &Reject::bad("Exactly one of 'prompt' (a string) or 'messages' must be provided."),
            );
        }
    };
    let body = match cfg.flavor {
        Flavor::Vllm => {
            let strs = if b.return_token_strs.unwrap_or(false) {
                json!(tokenizer::token_strs(&ids))
            } else {
                Value::Null
            };
            ordered_json(vec![
                ("count", json!(ids.len())),
                ("max_model_len", json!(cfg.context_length)),
                ("tokens", json!(ids)),
                ("token_strs", strs),
            ])
        }
        Flavor::Sglang => ordered_json(vec![
            ("tokens", json!(ids)),
            ("count", json!(ids.len())),
            ("max_model_len", json!(cfg.context_length)),
        ]),
    };
    json_response(StatusCode::OK, body)
}

#[derive(Debug, Deserialize)]
struct DetokenizeBody {
    tokens: Vec<u32>,
    skip_special_tokens: Option<bool>,
}

/// `POST /detokenize`: vLLM answers `{"prompt": …}`, SGLang `{"text": …}`.
pub(crate) async fn detokenize(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    let cfg = &st.cfg;
    let b: DetokenizeBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => return reject(cfg, &Reject::bad(format!("invalid request body: {e}"))),
    };
    let body = match cfg.flavor {
        Flavor::Vllm => ordered_json(vec![("prompt", json!(tokenizer::decode(&b.tokens, false)))]),
        Flavor::Sglang => {
            let skip = b.skip_special_tokens.unwrap_or(true);
            ordered_json(vec![("text", json!(tokenizer::decode(&b.tokens, skip)))])
        }
    };
    json_response(StatusCode::OK, body)
}
