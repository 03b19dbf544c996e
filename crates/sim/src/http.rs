//! The HTTP server: routes, API-key checks, and the generation endpoints.
//!
//! Every generation route (`/v1/completions`, `/v1/chat/completions`, `/v1/messages`,
//! `/v1/responses`) runs the same handler: it parses the body the route's way, counts the
//! request, draws its faults, submits it to the engine and hands the token events to `sse`
//! with the route's framing (`frames`, `messages_api`, `responses_api`). So the prefix cache,
//! faults, stamps, metrics and the API key behave the same on every route.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};

use crate::api::Api;
use crate::config::{Flavor, SimConfig};
use crate::engine::NewRequest;
use crate::faults::{self, FaultPlan};
use crate::frames::{Frames, OpenAiFrames};
use crate::messages_api::{self, MessagesFrames};
use crate::reply::{json_response, reject_on};
use crate::request::{self, GenRequest, Reject};
use crate::responses_api::ResponsesFrames;
use crate::rng::hash_tokens;
use crate::stamps::ArrivalStamp;
use crate::state::{AppState, unix_now};
use crate::wire::Writer;
use crate::{abort, agent_request, info, metrics, sse};

/// A rejection for load (queue full, quota spent) with `faults.queue_full_status` and, when
/// `faults.retry_after_s` is set, the `Retry-After` a client should honour.
fn refuse_for_load(cfg: &SimConfig, api: Api, message: &str) -> Response {
    let status = cfg.faults.queue_full_status;
    let err_type = if status == 429 {
        "TooManyRequestsError"
    } else {
        "ServiceUnavailableError"
    };
    let mut r = reject_on(
        cfg,
        api,
        &Reject {
            status,
            err_type,
            message: message.into(),
            param: None,
        },
    );
    if let Some(s) = cfg.faults.retry_after_s {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(s));
    }
    r
}

/// The router for one simulated engine.
pub(crate) fn router(state: Arc<AppState>) -> Router {
    if state.cfg.hosted {
        // A gateway exposes the OpenAI surface only.
        let r = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", get(info::models))
            .route("/health", get(info::health));
        return finish_router(r, state);
    }
    let mut r = Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/v1/responses", post(responses))
        .route("/v1/models", get(info::models))
        .route("/tokenize", post(info::tokenize))
        .route("/detokenize", post(info::detokenize))
        .route("/health", get(info::health));
    if state.cfg.metrics_enabled {
        r = r.route("/metrics", get(metrics::metrics));
    }
    // The simulator's own: what it aborted, for tests (no engine has it).
    r = r.route("/sim/aborts", get(abort::aborts));
    r = match state.cfg.flavor {
        Flavor::Sglang => r
            .route("/get_server_info", get(info::server_info))
            .route("/server_info", get(info::server_info))
            .route("/get_model_info", get(info::model_info))
            .route("/model_info", get(info::model_info))
            .route("/health_generate", get(info::health))
            .route("/abort_request", post(abort::abort_request))
            .route(
                "/flush_cache",
                post(info::flush_cache).get(info::flush_cache),
            ),
        Flavor::Vllm => r
            .route("/version", get(info::version))
            .route("/ping", get(info::health))
            .route("/reset_prefix_cache", post(info::flush_cache)),
    };
    finish_router(r, state)
}

/// The layers every router gets: the API key check and a body limit.
fn finish_router(r: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    r.layer(middleware::from_fn_with_state(Arc::clone(&state), auth))
        // A 1M-token prompt is several MB of JSON; real engines accept it, axum's default
        // 2 MB limit would not.
        .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
        .with_state(state)
}

/// The API key check, where each engine applies it: vLLM guards `/v1/*` only (case-blind
/// scheme), SGLang everything but `/health*` and `/metrics` (exact `Bearer <key>`). With
/// `messages_x_api_key`, `/v1/messages*` also takes Anthropic's `x-api-key: <key>`; an
/// `anthropic-version` header is ignored either way, as vLLM ignores it.
async fn auth(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = st.cfg.api_key.as_deref() {
        let path = req.uri().path();
        let protected = req.method() != Method::OPTIONS
            && match st.cfg.flavor {
                Flavor::Vllm => path.starts_with("/v1"),
                Flavor::Sglang => !(path.starts_with("/health") || path.starts_with("/metrics")),
            };
        if protected && !key_given(&st.cfg, key, &req) {
            return json_response(
                StatusCode::UNAUTHORIZED,
                "{\"error\":\"Unauthorized\"}".into(),
            );
        }
    }
    next.run(req).await
}

/// Whether `req` carries `key` in a form its route accepts.
fn key_given(cfg: &SimConfig, key: &str, req: &Request) -> bool {
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .unwrap_or("")
    };
    let given = header(header::AUTHORIZATION.as_str());
    let bearer = match cfg.flavor {
        Flavor::Sglang => given.strip_prefix("Bearer ") == Some(key),
        Flavor::Vllm => given
            .split_once(' ')
            .is_some_and(|(scheme, k)| scheme.eq_ignore_ascii_case("bearer") && k == key),
    };
    // vLLM reads Bearer only; an Anthropic-style server also takes `x-api-key`.
    bearer
        || (cfg.messages_x_api_key
            && req.uri().path().starts_with("/v1/messages")
            && header("x-api-key") == key)
}

async fn completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(st, Api::Completions, body).await
}

async fn chat_completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(st, Api::Chat, body).await
}

async fn messages(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(st, Api::Messages, body).await
}

async fn responses(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(st, Api::Responses, body).await
}

/// `POST /v1/messages/count_tokens`: the prompt tokens `/v1/messages` would report for the
/// same `model`, `system` and `messages`.
async fn count_tokens(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    match agent_request::count_message_tokens(&st.cfg, &body) {
        Ok(n) => json_response(StatusCode::OK, messages_api::count_tokens_json(n)),
        Err(e) => reject_on(&st.cfg, Api::Messages, &e),
    }
}

/// Parses a body the route's way.
fn parse(cfg: &SimConfig, api: Api, body: &[u8]) -> Result<GenRequest, Reject> {
    match api {
        Api::Completions | Api::Chat => request::parse(cfg, api.kind(), body),
        Api::Messages => agent_request::parse_messages(cfg, body),
        Api::Responses => agent_request::parse_responses(cfg, body),
    }
}

/// The route's framing of `req`, answered by `writer`.
fn frames_for(cfg: &SimConfig, api: Api, req: &GenRequest, writer: Writer) -> Box<dyn Frames> {
    match api {
        Api::Completions | Api::Chat => Box::new(OpenAiFrames {
            writer,
            include_usage: req.include_usage,
            continuous_usage: req.continuous_usage,
        }),
        Api::Messages => Box::new(MessagesFrames::new(writer, cfg)),
        Api::Responses => Box::new(ResponsesFrames::new(
            writer,
            req.echo.clone(),
            req.max_tokens,
            cfg.prefix_cache_tokens > 0,
        )),
    }
}

/// The writer of a request's answers: its id, model, reported prompt tokens and thinking.
fn writer_for(cfg: &SimConfig, api: Api, req: &GenRequest, id: String) -> Writer {
    Writer {
        flavor: cfg.flavor,
        kind: api.kind(),
        id,
        created: unix_now(),
        model: req.model.clone(),
        prompt_tokens: (req.prompt.len() as i64 + cfg.faults.usage_prompt_tokens_offset).max(0)
            as u64,
        cached_tokens: 0,
        // A loop in the thinking never leaves it.
        reasoning_tokens: if cfg.answer_loop.is_some() && cfg.answer_loop_reasoning {
            u32::MAX
        } else {
            cfg.reasoning_tokens
        },
    }
}

async fn generate(st: Arc<AppState>, api: Api, body: Bytes) -> Response {
    // Taken first: the request's arrival as the server saw it (the body is already read).
    let arrived = std::time::Instant::now();
    let cfg = Arc::clone(&st.cfg);
    let req = match parse(&cfg, api, &body) {
        Ok(r) => r,
        Err(e) => return reject_on(&cfg, api, &e),
    };
    if let Some(refused) = refuse_if_overloaded(&st, api) {
        return refused;
    }
    let (id, plan) = draw_id_and_faults(&st, api, req.max_tokens);
    // SGLang answers with the client's `rid` as the response id.
    let id = match (&req.rid, cfg.flavor) {
        (Some(rid), Flavor::Sglang) => rid.clone(),
        _ => id,
    };
    if let Some(d) = plan.slow_first_byte {
        tokio::time::sleep(d).await;
    }
    if plan.http_error {
        return reject_on(&cfg, api, &injected_server_error(&cfg));
    }
    let writer = writer_for(&cfg, api, &req, id);
    let prompt_tokens = writer.prompt_tokens;
    let mut frames = frames_for(&cfg, api, &req, writer);
    let mut script = cfg
        .answer_accuracy
        .and_then(|p| crate::answers::script(&body, p, cfg.answer_words));
    // A grammar's answer is its schema's instance (`crate::structured`).
    let grammar = crate::structured::answer_for(&st, api, &body, &req);
    if let Some((words, tool)) = grammar.clone() {
        script = Some(words);
        if let (Some(name), Api::Chat) = (tool, api) {
            frames = Box::new(crate::structured::ToolCallFrames {
                inner: frames,
                name,
                first: true,
            });
        }
    }
    let adapter = crate::lora::adapter_of(&cfg, &req.model);
    let (rx, guard) = st.engine.submit(NewRequest {
        prompt_len: req.prompt.len() as u64,
        prompt_hash: hash_tokens(&req.prompt),
        blocks: crate::engine::prompt_blocks(&req.prompt),
        prompt_tail: crate::engine::prompt_tail(&req.prompt),
        max_tokens: req.max_tokens,
        min_tokens: req.min_tokens,
        ignore_eos: req.ignore_eos,
        script,
        rid: req.rid.clone(),
        adapter,
        grammar: grammar.is_some(),
        spec_accept: crate::engine::accept_for(&cfg.spec_accept_by_text, &body),
    });
    if cfg.stamp_chunks {
        st.stamps.push_arrival(ArrivalStamp {
            request: guard.id(),
            prompt_tokens,
            at: arrived,
            adapter: adapter.and_then(|i| cfg.lora_adapters.get(usize::from(i)).cloned()),
        });
    }
    if req.stream {
        let stamps = cfg.stamp_chunks.then(|| Arc::clone(&st.stamps));
        sse::stream_response(cfg.flavor, frames, plan, rx, guard, stamps).await
    } else {
        sse::full_response(&cfg, api, frames, plan, rx, guard).await
    }
}

/// Counts a checked request and refuses it when the queue is full (`faults.max_queue_len`)
/// or the simulated quota is spent (`faults.refuse_after_requests`).
fn refuse_if_overloaded(st: &AppState, api: Api) -> Option<Response> {
    let cfg = &st.cfg;
    let seen = st.generate_requests.fetch_add(1, Ordering::Relaxed);
    let queue_full = cfg
        .faults
        .max_queue_len
        .is_some_and(|max| st.engine.stats().queued >= max);
    let quota_spent = cfg.faults.refuse_after_requests.is_some_and(|n| seen >= n);
    (queue_full || quota_spent).then(|| {
        refuse_for_load(
            cfg,
            api,
            if queue_full {
                "The request queue is full."
            } else {
                "Rate limit reached for requests (simulated quota)."
            },
        )
    })
}

/// The response id and the request's fault plan, drawn from the shared generator in arrival
/// order (so a seed replays the same faults).
fn draw_id_and_faults(st: &AppState, api: Api, max_tokens: u32) -> (String, FaultPlan) {
    let mut rng = match st.rng.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let id = api.make_id(&mut rng);
    (id, faults::plan(&st.cfg.faults, &mut rng, max_tokens))
}

/// The `http_error` fault's 500 (naming the API key when `echo_api_key` asks for the leak).
fn injected_server_error(cfg: &SimConfig) -> Reject {
    Reject {
        status: 500,
        err_type: "InternalServerError",
        message: match (&cfg.api_key, cfg.faults.echo_api_key) {
            (Some(k), true) => {
                format!("Simulated internal server error (fault injection) for key {k}.")
            }
            _ => "Simulated internal server error (fault injection).".into(),
        },
        param: None,
    }
}
