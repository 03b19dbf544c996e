//! Probing: does the server answer, does the key work, is the model served, which engine is it,
//! and what does it tell about itself. Everything runs with a short per-request timeout, so a
//! wrong URL or key fails in seconds with one line that says what to do.
//!
//! Detection fetches each engine's own endpoints at once and takes the first that answers in
//! that engine's shape: SGLang `/get_server_info` (not `/health`, which runs a generation),
//! llama.cpp `/props`, TGI `/info`, Ollama `/api/version`, then vLLM vs TensorRT-LLM by `/version`
//! and `/metrics` (`vllm:` Prometheus text vs a JSON list); anything else is a generic
//! OpenAI-compatible endpoint.

use std::time::Duration;

use llmib_core::redact_json;
use llmib_core::{EngineInfo, EngineKind, ModelInfo, Sourced};
use serde_json::Value;

use super::dialect::{Dialect, MetricsKind};
use super::discovery::{Discovery, model_max_len};
use super::dispatch::{dialect_of, gauges_from};
use super::options::{ProbeError, ProbeOptions};
use super::{generic, llamacpp, ollama, sglang, tgi, trtllm, vllm};
use crate::server::metrics::Metrics;
use crate::wire::http::{describe_request_error, describe_status};

/// The server root: no trailing slash, no trailing `/v1`.
pub(crate) fn normalize_base_url(url: &str) -> Result<String, ProbeError> {
    let t = url.trim().trim_end_matches('/');
    let t = t.strip_suffix("/v1").unwrap_or(t).trim_end_matches('/');
    let ok = (t.starts_with("http://") || t.starts_with("https://"))
        && t.split("://").nth(1).is_some_and(|h| !h.is_empty());
    if !ok {
        return Err(ProbeError::InvalidUrl(url.to_owned()));
    }
    Ok(t.to_owned())
}

/// What the probe found: the engine's parts that come from the server (the dispatcher makes
/// the [`super::Engine`] from them and the options).
pub(crate) struct Found {
    /// The engine, detected or forced.
    pub kind: EngineKind,
    /// The server root, credentials dropped where a key is given.
    pub base_url: String,
    /// The client every request goes through (the key in the API's headers).
    pub client: reqwest::Client,
    /// The Engine card, overrides applied and extras redacted.
    pub info: EngineInfo,
    /// The Model card.
    pub model: ModelInfo,
    /// The launch command, where the engine tells it.
    pub launch_command: Option<String>,
    /// The engine's request dialect.
    pub dialect: Dialect,
    /// Every model id `/v1/models` listed.
    pub served_models: Vec<String>,
    /// What is worth telling that did not stop the probe.
    pub notes: Vec<String>,
}

/// Probes the server (see [`ProbeOptions`]).
pub(crate) async fn probe(opts: &ProbeOptions) -> Result<Found, ProbeError> {
    let mut base = normalize_base_url(&opts.base_url)?;
    let mut notes = Vec::new();
    // The HTTP client turns URL credentials into Basic auth, which replaces the key's Bearer
    // header: with a key, the key is what the user means, so the URL's credentials go.
    if opts.api_key.is_some() {
        let bare = llmib_core::strip_url_userinfo(&base);
        if bare != base {
            notes.push(
                "the URL's user:password was dropped: the API key is sent as Bearer instead (give no --api-key to send the URL's credentials)".to_string(),
            );
            base = bare;
        }
    }
    let client = super::route::client_for(opts)?;
    let t = opts.timeout;

    // 1. The server answers, the key works, the model exists.
    let (served, served_models, listed) = find_model(&client, &base, opts).await?;

    // 2. Which engine, and what it tells.
    let mut d = Discovery {
        models: listed,
        ..Discovery::default()
    };
    let kind = match opts.engine {
        Some(k) => {
            fetch_for(&client, &base, t, k, &mut d).await;
            k
        }
        None => detect(&client, &base, t, &mut d).await,
    };
    fetch_extra(&client, &base, t, kind, &served, &mut d).await;
    let (mut info, model, launch) = describe(kind, &d, served);
    let dialect = dialect_of(kind);
    metric_capabilities(kind, dialect, &d, &mut info, &mut notes);
    notes.extend(super::route::route_note(opts, kind));
    apply_overrides(opts, &mut info);
    for v in info.extra.values_mut() {
        redact_json(v);
    }

    Ok(Found {
        kind,
        base_url: base,
        client,
        info,
        model,
        launch_command: launch,
        dialect,
        served_models,
        notes,
    })
}

/// `/v1/models`: the server answers, the key works, and the model to use (with every model
/// listed, and the list itself for the engine's own reading).
async fn find_model(
    client: &reqwest::Client,
    base: &str,
    opts: &ProbeOptions,
) -> Result<(String, Vec<String>, Option<Value>), ProbeError> {
    let listed = match fetch(client, format!("{base}/v1/models"), opts.timeout).await {
        Fetch::Json(v) => Some(v),
        Fetch::Transport(m) => return Err(ProbeError::Unreachable(m)),
        Fetch::Status(401 | 403, m) => return Err(ProbeError::Auth(m)),
        Fetch::Status(404, _) if opts.model.is_none() => {
            return Err(ProbeError::NotAnApi {
                url: base.to_owned(),
            });
        }
        // Some endpoints do not list models; a given --model is then trusted.
        Fetch::Status(_, _) | Fetch::NotJson => None,
    };
    let served_models = listed.as_ref().map(model_ids).unwrap_or_default();
    // Without --model, the one base model: LoRA adapters are listed beside it (with the base
    // model as their `parent`), and a request names one only when asked (`run --lora`).
    let bases = listed.as_ref().map(base_model_ids).unwrap_or_default();
    let candidates = match opts.model {
        None if !bases.is_empty() => &bases,
        _ => &served_models,
    };
    let served = choose_model(base, opts.model.as_deref(), candidates, listed.is_some())?;
    Ok((served, served_models, listed))
}

/// The Engine and Model cards from what the engine's endpoints answered, and the launch
/// command where the engine exposes it.
fn describe(
    kind: EngineKind,
    d: &Discovery,
    served: String,
) -> (EngineInfo, ModelInfo, Option<String>) {
    let mut info = EngineInfo {
        kind: Some(kind),
        name: Some(kind.name().to_owned()),
        repository: kind.repository().map(str::to_owned),
        ..EngineInfo::default()
    };
    let mut model = ModelInfo {
        served_model: served,
        ..ModelInfo::default()
    };
    let launch = match kind {
        EngineKind::Sglang => sglang::fill(d, &mut info, &mut model),
        EngineKind::Vllm => vllm::fill(d, &mut info, &mut model),
        EngineKind::LlamaCpp => llamacpp::fill(d, &mut info, &mut model),
        EngineKind::Tgi => tgi::fill(d, &mut info, &mut model),
        EngineKind::TrtLlm => trtllm::fill(d, &mut info, &mut model),
        EngineKind::Ollama => ollama::fill(d, &mut info, &mut model),
        EngineKind::Generic => generic::fill(d, &mut info, &mut model),
    };
    if info.context_length.is_none() {
        info.context_length = model_max_len(d, &model.served_model);
    }
    (info, model, launch)
}

/// Picks the model: the one asked for (which must be listed, when the server lists models), or
/// the only one listed.
fn choose_model(
    url: &str,
    wanted: Option<&str>,
    listed: &[String],
    could_list: bool,
) -> Result<String, ProbeError> {
    match wanted {
        Some(m) => {
            if !listed.is_empty() && !listed.iter().any(|x| x == m) {
                return Err(ProbeError::ModelNotFound {
                    url: url.to_owned(),
                    model: m.to_owned(),
                    available: listed.to_vec(),
                });
            }
            Ok(m.to_owned())
        }
        None => match listed {
            [one] => Ok(one.clone()),
            [] if could_list => Err(ProbeError::NoModel(format!(
                "{url}/v1/models lists no model"
            ))),
            [] => Err(ProbeError::NoModel(format!(
                "{url}/v1/models did not answer a model list"
            ))),
            many => Err(ProbeError::SeveralModels {
                url: url.to_owned(),
                models: many.to_vec(),
            }),
        },
    }
}

fn model_ids(v: &Value) -> Vec<String> {
    v.get("data")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The ids of `/v1/models` entries that are no adapter of another (no `parent`).
fn base_model_ids(v: &Value) -> Vec<String> {
    v.get("data")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|m| m.get("parent").is_none_or(Value::is_null))
                .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Engine detection: all candidate endpoints at once, first match in a fixed order.
async fn detect(
    client: &reqwest::Client,
    base: &str,
    t: Duration,
    d: &mut Discovery,
) -> EngineKind {
    let get = |p: &str| fetch(client, format!("{base}{p}"), t);
    let (sg, props, info, ov, ver, met) = tokio::join!(
        get("/get_server_info"),
        get("/props"),
        get("/info"),
        get("/api/version"),
        get("/version"),
        fetch_text(client, format!("{base}/metrics"), t),
    );
    d.sglang_info = sg.json().filter(sglang::looks_like);
    d.props = props.json().filter(llamacpp::looks_like);
    d.tgi_info = info.json().filter(tgi::looks_like);
    d.ollama_version = ov.json().filter(|v| v.get("version").is_some());
    d.version = ver.json().filter(|v| v.get("version").is_some());
    set_metrics(d, met);
    if d.sglang_info.is_none() {
        // Newer SGLang builds also answer at /server_info.
        if let Fetch::Json(v) = get("/server_info").await
            && sglang::looks_like(&v)
        {
            d.sglang_info = Some(v);
        }
    }
    let prom = d.metrics.as_deref().map(Metrics::parse);
    let owned_by = d.models.as_ref().and_then(|m| {
        m.get("data")?
            .get(0)?
            .get("owned_by")?
            .as_str()
            .map(str::to_owned)
    });
    if d.sglang_info.is_some() {
        EngineKind::Sglang
    } else if d.props.is_some() {
        EngineKind::LlamaCpp
    } else if d.tgi_info.is_some() {
        EngineKind::Tgi
    } else if d.ollama_version.is_some() {
        EngineKind::Ollama
    } else if prom.as_ref().is_some_and(|m| m.has_prefix("vllm:"))
        || (d.version.is_some() && owned_by.as_deref() == Some("vllm"))
    {
        EngineKind::Vllm
    } else if prom.as_ref().is_some_and(|m| m.has_prefix("sglang:")) {
        EngineKind::Sglang
    } else if d.version.is_some()
        && (owned_by.as_deref() == Some("tensorrt_llm") || trtllm::looks_like_metrics(d))
    {
        EngineKind::TrtLlm
    } else {
        // A bare `/version` (proxies have one too) is not enough to call it vLLM.
        EngineKind::Generic
    }
}

/// With `--engine` forced, only that engine's endpoints are fetched.
async fn fetch_for(
    client: &reqwest::Client,
    base: &str,
    t: Duration,
    k: EngineKind,
    d: &mut Discovery,
) {
    let get = |p: &str| fetch(client, format!("{base}{p}"), t);
    match k {
        EngineKind::Sglang => {
            d.sglang_info = get("/get_server_info").await.json();
            if d.sglang_info.is_none() {
                d.sglang_info = get("/server_info").await.json().filter(sglang::looks_like);
            }
        }
        EngineKind::Vllm | EngineKind::TrtLlm => d.version = get("/version").await.json(),
        EngineKind::LlamaCpp => d.props = get("/props").await.json(),
        EngineKind::Tgi => d.tgi_info = get("/info").await.json(),
        EngineKind::Ollama => d.ollama_version = get("/api/version").await.json(),
        EngineKind::Generic => {}
    }
    if dialect_of(k).metrics != MetricsKind::None {
        let m = fetch_text(client, format!("{base}/metrics"), t).await;
        set_metrics(d, m);
    }
}

/// Answers an engine needs beyond detection.
async fn fetch_extra(
    client: &reqwest::Client,
    base: &str,
    t: Duration,
    k: EngineKind,
    served: &str,
    d: &mut Discovery,
) {
    match k {
        EngineKind::Ollama => {
            let show = post(
                client,
                format!("{base}/api/show"),
                serde_json::json!({"model": served}),
                t,
            );
            let ps = fetch(client, format!("{base}/api/ps"), t);
            let (show, ps) = tokio::join!(show, ps);
            if let Fetch::Json(v) = show {
                d.extra.push(("/api/show".into(), v));
            }
            if let Fetch::Json(v) = ps {
                d.extra.push(("/api/ps".into(), v));
            }
        }
        EngineKind::Vllm => {
            // Only with VLLM_SERVER_DEV_MODE=1; a 404 otherwise.
            if let Fetch::Json(v) =
                fetch(client, format!("{base}/server_info?config_format=json"), t).await
            {
                d.extra.push(("/server_info".into(), v));
            }
        }
        _ => {}
    }
}

fn set_metrics(d: &mut Discovery, f: Fetch<String>) {
    match f {
        Fetch::Json(body) => d.metrics = Some(body),
        Fetch::Status(_, _) => d.metrics_missing = true,
        Fetch::Transport(_) | Fetch::NotJson => {}
    }
}

/// Queue gauge and generation counter availability, from the probe's metrics read.
fn metric_capabilities(
    kind: EngineKind,
    dialect: Dialect,
    d: &Discovery,
    info: &mut EngineInfo,
    notes: &mut Vec<String>,
) {
    let caps = &mut info.capabilities;
    match dialect.metrics {
        MetricsKind::None => {
            caps.queue_gauge = Some(false);
            caps.generation_counter = Some(false);
        }
        MetricsKind::TrtLlmJson => {
            caps.queue_gauge = Some(d.metrics.is_some());
            caps.generation_counter = Some(false);
        }
        MetricsKind::Prometheus => match d.metrics.as_deref() {
            Some(body) => {
                let g = gauges_from(kind, &Metrics::parse(body));
                caps.queue_gauge = Some(g.waiting.is_some());
                caps.generation_counter = Some(g.generation_tokens_total.is_some());
            }
            None if d.metrics_missing => {
                caps.queue_gauge = Some(false);
                caps.generation_counter = Some(false);
                notes.push(format!(
                    "{} has no /metrics ({}); queueing is detected from TTFT and no server token counter is kept",
                    kind.name(),
                    match kind {
                        EngineKind::Sglang => "start it with --enable-metrics",
                        EngineKind::LlamaCpp => "start llama-server with --metrics",
                        _ => "metrics are off",
                    }
                ));
            }
            None => {}
        },
    }
}

/// `--kv-capacity` replaces the capacity; `--dcp-size` multiplies the reported one.
fn apply_overrides(opts: &ProbeOptions, info: &mut EngineInfo) {
    if let Some(dcp) = opts.dcp_size.filter(|&n| n > 0) {
        info.dcp_size = Some(dcp);
        if let Some(kv) = info.kv_capacity_tokens.take() {
            info.kv_capacity_tokens = Some(Sourced {
                value: kv.value.saturating_mul(dcp),
                source: format!("{} × --dcp-size {dcp}", kv.source),
            });
        }
    }
    if let Some(kv) = opts.kv_capacity {
        info.kv_capacity_tokens = Some(Sourced {
            value: kv,
            source: "--kv-capacity".to_owned(),
        });
    }
}

/// One probe GET/POST outcome.
pub(crate) enum Fetch<T = Value> {
    /// 200 with a body of the wanted type.
    Json(T),
    /// An error status, with a one-line message.
    Status(u16, String),
    /// No HTTP answer, with a one-line message.
    Transport(String),
    /// 200 but not JSON.
    NotJson,
}

impl Fetch<Value> {
    fn json(self) -> Option<Value> {
        match self {
            Fetch::Json(v) => Some(v),
            _ => None,
        }
    }
}

async fn fetch(client: &reqwest::Client, url: String, t: Duration) -> Fetch<Value> {
    to_json(fetch_text(client, url, t).await)
}

async fn post(client: &reqwest::Client, url: String, body: Value, t: Duration) -> Fetch<Value> {
    let r = client.post(&url).json(&body).timeout(t).send().await;
    to_json(read(r, &url).await)
}

async fn fetch_text(client: &reqwest::Client, url: String, t: Duration) -> Fetch<String> {
    read(client.get(&url).timeout(t).send().await, &url).await
}

async fn read(r: Result<reqwest::Response, reqwest::Error>, url: &str) -> Fetch<String> {
    let resp = match r {
        Ok(r) => r,
        Err(e) => return Fetch::Transport(describe_request_error(&e, url)),
    };
    let status = resp.status();
    match resp.text().await {
        Ok(body) if status.is_success() => Fetch::Json(body),
        Ok(body) => Fetch::Status(status.as_u16(), describe_status(status, &body, url)),
        Err(e) => Fetch::Transport(describe_request_error(&e, url)),
    }
}

fn to_json(f: Fetch<String>) -> Fetch<Value> {
    match f {
        Fetch::Json(body) => match serde_json::from_str(&body) {
            Ok(v) => Fetch::Json(v),
            Err(_) => Fetch::NotJson,
        },
        Fetch::Status(c, m) => Fetch::Status(c, m),
        Fetch::Transport(m) => Fetch::Transport(m),
        Fetch::NotJson => Fetch::NotJson,
    }
}
