//! The HTTP server: routes, API-key checks, and the generation endpoints.
//!
//! A generation handler checks the request, draws its faults, submits it to the engine and
//! turns the engine's token events into SSE events (or one JSON body) as they arrive. The
//! request's [`AbortGuard`] lives inside the response stream: when the client goes away, hyper
//! drops the stream, the guard tells the engine, and the request's KV is freed.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::config::{Flavor, SimConfig};
use crate::engine::{AbortGuard, NewRequest, TokenEvent};
use crate::faults::{self, FaultPlan};
use crate::reply::{json_response, reject};
use crate::request::{self, GenRequest, Reject};
use crate::rng::hash_tokens;
use crate::stamps::{ArrivalStamp, ChunkStamp, StampLog};
use crate::state::{AppState, unix_now};
use crate::wire::{self, Kind, Writer};
use crate::{abort, info, metrics};

/// A rejection for load (queue full, quota spent) with `faults.queue_full_status` and, when
/// `faults.retry_after_s` is set, the `Retry-After` a client should honour.
fn refuse_for_load(cfg: &SimConfig, message: &str) -> Response {
    let status = cfg.faults.queue_full_status;
    let err_type = if status == 429 {
        "TooManyRequestsError"
    } else {
        "ServiceUnavailableError"
    };
    let mut r = reject(
        cfg,
        &Reject {
            status,
            err_type,
            message: message.into(),
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
/// scheme), SGLang everything but `/health*` and `/metrics` (exact `Bearer <key>`).
async fn auth(State(st): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = st.cfg.api_key.as_deref() {
        let path = req.uri().path();
        let protected = req.method() != Method::OPTIONS
            && match st.cfg.flavor {
                Flavor::Vllm => path.starts_with("/v1"),
                Flavor::Sglang => !(path.starts_with("/health") || path.starts_with("/metrics")),
            };
        if protected {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let ok = match st.cfg.flavor {
                Flavor::Sglang => given.strip_prefix("Bearer ") == Some(key),
                Flavor::Vllm => given
                    .split_once(' ')
                    .is_some_and(|(scheme, k)| scheme.eq_ignore_ascii_case("bearer") && k == key),
            };
            if !ok {
                return json_response(
                    StatusCode::UNAUTHORIZED,
                    "{\"error\":\"Unauthorized\"}".into(),
                );
            }
        }
    }
    next.run(req).await
}

async fn completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(st, Kind::Completion, body).await
}

async fn chat_completions(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    generate(st, Kind::Chat, body).await
}

async fn generate(st: Arc<AppState>, kind: Kind, body: Bytes) -> Response {
    // Taken first: the request's arrival as the server saw it (the body is already read).
    let arrived = std::time::Instant::now();
    let cfg = Arc::clone(&st.cfg);
    let req = match request::parse(&cfg, kind, &body) {
        Ok(r) => r,
        Err(e) => return reject(&cfg, &e),
    };
    if let Some(refused) = refuse_if_overloaded(&st) {
        return refused;
    }
    let (id, plan) = draw_id_and_faults(&st, kind, req.max_tokens);
    // SGLang answers with the client's `rid` as the response id.
    let id = match (&req.rid, cfg.flavor) {
        (Some(rid), Flavor::Sglang) => rid.clone(),
        _ => id,
    };
    if let Some(d) = plan.slow_first_byte {
        tokio::time::sleep(d).await;
    }
    if plan.http_error {
        return reject(&cfg, &injected_server_error(&cfg));
    }
    let writer = Writer {
        flavor: cfg.flavor,
        kind,
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
    };
    let script = cfg
        .answer_accuracy
        .and_then(|p| crate::answers::script(&body, p, cfg.answer_words));
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
    });
    if cfg.stamp_chunks {
        st.stamps.push_arrival(ArrivalStamp {
            request: guard.id(),
            prompt_tokens: writer.prompt_tokens,
            at: arrived,
        });
    }
    if req.stream {
        let stamps = cfg.stamp_chunks.then(|| Arc::clone(&st.stamps));
        stream_response(cfg.flavor, req, writer, plan, rx, guard, stamps).await
    } else {
        full_response(&cfg, writer, plan, rx, guard).await
    }
}

/// Counts a checked request and refuses it when the queue is full (`faults.max_queue_len`)
/// or the simulated quota is spent (`faults.refuse_after_requests`).
fn refuse_if_overloaded(st: &AppState) -> Option<Response> {
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
fn draw_id_and_faults(st: &AppState, kind: Kind, max_tokens: u32) -> (String, FaultPlan) {
    let mut rng = match st.rng.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let prefix = if kind == Kind::Chat {
        "chatcmpl-"
    } else {
        "cmpl-"
    };
    let id = wire::make_id(prefix, &mut rng);
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
    }
}

/// Waits for the whole output, then answers one JSON body.
async fn full_response(
    cfg: &SimConfig,
    mut writer: Writer,
    plan: FaultPlan,
    mut rx: UnboundedReceiver<TokenEvent>,
    mut guard: AbortGuard,
) -> Response {
    let mut text = String::new();
    while let Some(ev) = rx.recv().await {
        text.push_str(&ev.text);
        writer.cached_tokens = ev.cached_tokens;
        let broken = [plan.stream_error_after, plan.disconnect_after]
            .iter()
            .flatten()
            .any(|&n| ev.completion_tokens >= n);
        if broken && ev.finish.is_none() {
            let r = Reject {
                status: 500,
                err_type: "InternalServerError",
                message: "Simulated failure during generation (fault injection).".into(),
            };
            return reject(cfg, &r);
        }
        if let Some(f) = ev.finish {
            guard.disarm();
            return json_response(
                StatusCode::OK,
                writer.full_response(&text, u64::from(ev.completion_tokens), f.as_str()),
            );
        }
    }
    let r = Reject {
        status: 503,
        err_type: "ServiceUnavailableError",
        message: "The server is shutting down.".into(),
    };
    reject(cfg, &r)
}

/// The `malformed_at` fault: the event's JSON cut in half (at a char boundary), so the client
/// must survive a chunk it cannot parse.
fn cut_in_half(e: &str) -> String {
    let cut = e.len() / 2;
    let cut = (0..=cut)
        .rev()
        .find(|&i| e.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}\n\n", &e[..cut])
}

type Item = Result<Bytes, std::io::Error>;

/// The state of one SSE response.
struct Sse {
    writer: Writer,
    req: GenRequest,
    plan: FaultPlan,
    rx: UnboundedReceiver<TokenEvent>,
    guard: AbortGuard,
    pending: VecDeque<Item>,
    first: bool,
    done: bool,
    /// The `stall` fault fired: the body stays open and silent until the client leaves.
    stalled: bool,
    /// Where content chunks are stamped (`stamp_chunks`).
    stamps: Option<Arc<StampLog>>,
}

impl Sse {
    /// Turns one engine step into SSE events (plus the faults that fire at this point).
    fn push_event(&mut self, ev: TokenEvent) {
        // Known since the engine admitted the request; every usage object reports it.
        self.writer.cached_tokens = ev.cached_tokens;
        let n = ev.completion_tokens;
        let prev = n - ev.n;
        let crosses = |at: Option<u32>| at.is_some_and(|a| prev < a && n >= a);
        self.push_tokens(&ev, prev, crosses(self.plan.malformed_at));
        if ev.finish.is_some() {
            self.push_end(n);
        } else if crosses(self.plan.stream_error_after) {
            self.push_stream_error();
        } else if crosses(self.plan.stall_after) {
            self.stalled = true;
        } else if crosses(self.plan.disconnect_after) {
            self.push_disconnect();
        }
    }

    /// The chat role chunk before the first step, then the step's chunks (cut in half when
    /// `malformed`), the first one stamped.
    fn push_tokens(&mut self, ev: &TokenEvent, prev: u32, malformed: bool) {
        let n = ev.completion_tokens;
        if self.first && self.req.kind == Kind::Chat {
            let role = self.writer.role_chunk(self.req.continuous_usage);
            self.pending.push_back(Ok(Bytes::from(role)));
        }
        self.first = false;
        let finish = ev.finish.map(|f| f.as_str());
        // The first `reasoning_tokens` of a chat answer are the model's thinking.
        let reasoning = self.req.kind == Kind::Chat && prev < self.writer.reasoning_tokens;
        let events = self.writer.token_events(
            &ev.text,
            u64::from(n),
            finish,
            self.req.continuous_usage,
            reasoning,
        );
        for (i, e) in events.into_iter().enumerate() {
            let e = if malformed { cut_in_half(&e) } else { e };
            // The first event carries the tokens; it is stamped once its bytes are built, just
            // before `next_item` yields them to hyper. (An abort's last event carries none.)
            if i == 0
                && ev.n > 0
                && let Some(log) = &self.stamps
            {
                log.push(ChunkStamp {
                    request: self.guard.id(),
                    prompt_tokens: self.writer.prompt_tokens,
                    cached_tokens: self.writer.cached_tokens,
                    completion_tokens: n,
                    at: std::time::Instant::now(),
                    finished: ev.finish.is_some(),
                });
            }
            self.pending.push_back(Ok(Bytes::from(e)));
        }
    }

    /// The `stream_error_after` fault: an error event, `[DONE]`, and the end of the body.
    fn push_stream_error(&mut self) {
        let e = self.writer.stream_error(
            "Simulated failure during generation (fault injection).",
            "InternalServerError",
            500,
        );
        self.pending.push_back(Ok(Bytes::from(e)));
        self.pending
            .push_back(Ok(Bytes::from_static(wire::DONE.as_bytes())));
        self.done = true;
    }

    /// The `disconnect_after` fault: the body fails (after half an event, when asked).
    fn push_disconnect(&mut self) {
        if self.plan.disconnect_mid_event {
            // Half of the next event, cut inside its JSON: what a proxy that dies mid-write
            // leaves on the wire.
            self.pending.push_back(Ok(Bytes::from_static(
                b"data: {\"id\":\"cut\",\"object\":\"text_completion\",\"choi",
            )));
        }
        self.pending.push_back(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "simulated mid-stream disconnect",
        )));
        self.done = true;
    }

    /// The request finished after `n` tokens: the usage chunk when asked for, then `[DONE]`.
    fn push_end(&mut self, n: u32) {
        if self.req.include_usage {
            self.pending
                .push_back(Ok(Bytes::from(self.writer.usage_chunk(u64::from(n)))));
        }
        self.pending
            .push_back(Ok(Bytes::from_static(wire::DONE.as_bytes())));
        self.guard.disarm();
        self.done = true;
    }

    /// The next piece of the body, or `None` at its end.
    async fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            if self.stalled {
                // Silent forever; the client's disconnect drops this future and the request's
                // abort guard with it.
                std::future::pending::<()>().await;
            }
            match self.rx.recv().await {
                Some(ev) => self.push_event(ev),
                // The engine stopped (server shutdown): end the body.
                None => self.done = true,
            }
        }
    }
}

async fn stream_response(
    flavor: Flavor,
    req: GenRequest,
    writer: Writer,
    plan: FaultPlan,
    mut rx: UnboundedReceiver<TokenEvent>,
    guard: AbortGuard,
    stamps: Option<Arc<StampLog>>,
) -> Response {
    let mut sse = Sse {
        writer,
        req,
        plan,
        rx: tokio::sync::mpsc::unbounded_channel().1,
        guard,
        pending: VecDeque::new(),
        first: true,
        done: false,
        stalled: false,
        stamps,
    };
    // SGLang awaits the first chunk before it answers, so its headers arrive with the first
    // token; vLLM answers the headers at once.
    if flavor == Flavor::Sglang {
        match rx.recv().await {
            Some(ev) => sse.push_event(ev),
            None => sse.done = true,
        }
    }
    sse.rx = rx;
    let stream = futures_util::stream::unfold(sse, |mut s| async move {
        let item = s.next_item().await?;
        Some((item, s))
    });
    let mut r = Response::new(Body::from_stream(stream));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream; charset=utf-8"),
    );
    r
}
