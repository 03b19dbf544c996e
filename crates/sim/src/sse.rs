//! Turning a request's engine events into its response, on any route: an SSE body built as the
//! tokens arrive, or one JSON body at the end, with the request's faults applied where they
//! fire. What the events look like is the route's [`Frames`]; when they are sent, stamped,
//! cut or broken off is decided here once for every route.
//!
//! The request's [`AbortGuard`] lives inside the response stream: when the client goes away,
//! hyper drops the stream, the guard tells the engine, and the request's KV is freed.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::sync::mpsc::UnboundedReceiver;

use crate::api::Api;
use crate::config::{Flavor, SimConfig};
use crate::engine::{AbortGuard, TokenEvent};
use crate::faults::FaultPlan;
use crate::frames::{Answer, Frames, Step};
use crate::reply::{json_response, reject_on};
use crate::request::Reject;
use crate::stamps::{ChunkStamp, StampLog};
use crate::wire::Kind;

/// The message of every injected mid-generation failure.
const FAILURE: &str = "Simulated failure during generation (fault injection).";

/// Whether the step that ends at `completion` tokens (after `prev`) is the model's thinking:
/// the first `reasoning_tokens` of a chat-like answer are.
fn is_reasoning(frames: &dyn Frames, prev: u32) -> bool {
    let w = frames.writer();
    w.kind == Kind::Chat && prev < w.reasoning_tokens
}

/// Waits for the whole output, then answers one JSON body (or the route's error).
pub(crate) async fn full_response(
    cfg: &SimConfig,
    api: Api,
    mut frames: Box<dyn Frames>,
    plan: FaultPlan,
    mut rx: UnboundedReceiver<TokenEvent>,
    mut guard: AbortGuard,
) -> Response {
    let mut answer = Answer::default();
    while let Some(ev) = rx.recv().await {
        let prev = ev.completion_tokens - ev.n;
        if is_reasoning(&*frames, prev) {
            answer.reasoning.push_str(&ev.text);
        } else {
            answer.text.push_str(&ev.text);
        }
        frames.set_cached_tokens(ev.cached_tokens);
        let broken = [plan.stream_error_after, plan.disconnect_after]
            .iter()
            .flatten()
            .any(|&n| ev.completion_tokens >= n);
        if broken && ev.finish.is_none() {
            let r = Reject {
                status: 500,
                err_type: "InternalServerError",
                message: FAILURE.into(),
                param: None,
            };
            return reject_on(cfg, api, &r);
        }
        if let Some(f) = ev.finish {
            guard.disarm();
            return json_response(
                StatusCode::OK,
                frames.body(&answer, ev.completion_tokens, f),
            );
        }
    }
    let r = Reject {
        status: 503,
        err_type: "ServiceUnavailableError",
        message: "The server is shutting down.".into(),
        param: None,
    };
    reject_on(cfg, api, &r)
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
    frames: Box<dyn Frames>,
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
    fn push_all(&mut self, events: Vec<String>) {
        self.pending
            .extend(events.into_iter().map(|e| Ok(Bytes::from(e))));
    }

    /// Turns one engine step into SSE events (plus the faults that fire at this point).
    fn push_event(&mut self, ev: TokenEvent) {
        // Known since the engine admitted the request; every usage object reports it.
        self.frames.set_cached_tokens(ev.cached_tokens);
        let n = ev.completion_tokens;
        let prev = n - ev.n;
        let crosses = |at: Option<u32>| at.is_some_and(|a| prev < a && n >= a);
        self.push_tokens(&ev, prev, crosses(self.plan.malformed_at));
        if let Some(f) = ev.finish {
            let end = self.frames.closing(n, f);
            self.push_all(end);
            self.guard.disarm();
            self.done = true;
        } else if crosses(self.plan.stream_error_after) {
            let failure = self.frames.failure(FAILURE);
            self.push_all(failure);
            self.done = true;
        } else if crosses(self.plan.stall_after) {
            self.stalled = true;
        } else if crosses(self.plan.disconnect_after) {
            self.push_disconnect();
        }
    }

    /// The route's opening events before the first step, then the step's events (the
    /// token-carrying one cut in half when `malformed`, and stamped).
    fn push_tokens(&mut self, ev: &TokenEvent, prev: u32, malformed: bool) {
        if self.first {
            let opening = self.frames.opening();
            self.push_all(opening);
        }
        self.first = false;
        let step = Step {
            text: &ev.text,
            completion: ev.completion_tokens,
            finish: ev.finish,
            reasoning: is_reasoning(&*self.frames, prev),
        };
        let out = self.frames.step(&step);
        for (i, e) in out.events.into_iter().enumerate() {
            let carrier = out.carrier == Some(i);
            let e = if malformed && carrier {
                cut_in_half(&e)
            } else {
                e
            };
            // The token-carrying event is stamped once its bytes are built, just before
            // `next_item` yields them to hyper. (An abort's last event carries none.)
            if carrier
                && ev.n > 0
                && let Some(log) = &self.stamps
            {
                let w = self.frames.writer();
                log.push(ChunkStamp {
                    request: self.guard.id(),
                    prompt_tokens: w.prompt_tokens,
                    cached_tokens: w.cached_tokens,
                    completion_tokens: ev.completion_tokens,
                    at: std::time::Instant::now(),
                    finished: ev.finish.is_some(),
                });
            }
            self.pending.push_back(Ok(Bytes::from(e)));
        }
    }

    /// The `disconnect_after` fault: the body fails (after half an event, when asked).
    fn push_disconnect(&mut self) {
        if self.plan.disconnect_mid_event {
            // Half of the next event, cut inside its JSON: what a proxy that dies mid-write
            // leaves on the wire.
            let torn = self.frames.torn_event();
            self.pending
                .push_back(Ok(Bytes::from_static(torn.as_bytes())));
        }
        self.pending.push_back(Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "simulated mid-stream disconnect",
        )));
        self.done = true;
    }

    /// The next piece of the body, or `None` at its end.
    async fn next_item(&mut self) -> Option<Item> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                if item.is_err() {
                    // hyper drops what it has not written yet when the body fails; a moment
                    // first lets the bytes before the cut (half an event) reach the socket.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
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

/// Streams the request's events as SSE in the route's framing.
pub(crate) async fn stream_response(
    flavor: Flavor,
    frames: Box<dyn Frames>,
    plan: FaultPlan,
    mut rx: UnboundedReceiver<TokenEvent>,
    guard: AbortGuard,
    stamps: Option<Arc<StampLog>>,
) -> Response {
    let mut sse = Sse {
        frames,
        plan,
        rx: tokio::sync::mpsc::unbounded_channel().1,
        guard,
        pending: VecDeque::new(),
        first: true,
        done: false,
        stalled: false,
        stamps,
    };
    let greeting = sse.frames.greeting();
    sse.push_all(greeting);
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
