//! Aborting requests: SGLang's `POST /abort_request`, and the simulator's own
//! `GET /sim/aborts`, the log of every request it aborted (for tests: no engine has it).
//!
//! SGLang's body is its `AbortReq`: `{"rid": "<id>", "abort_all": false}`, `rid` being the id
//! the client gave in the generation request's body (`rid`). It answers 200 with an empty body,
//! whether or not a request had that id. The named request stops at once: its KV and slot are
//! freed, its stream ends with an empty chunk whose finish reason is `abort` (then the usage
//! chunk when asked, and `[DONE]`), and it is counted (`sglang:num_aborted_requests_total`).

use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::reply::{json_response, reject};
use crate::request::Reject;
use crate::state::AppState;

/// SGLang's `AbortReq`, as its HTTP server reads it.
#[derive(Debug, Default, Deserialize)]
struct AbortBody {
    /// One id, or a list of ids.
    #[serde(default)]
    rid: Option<Value>,
    #[serde(default)]
    abort_all: bool,
}

/// `POST /abort_request` (SGLang): aborts the requests with that `rid` (every request with
/// `abort_all`), and answers once the engine's state shows it.
pub(crate) async fn abort_request(State(st): State<Arc<AppState>>, body: Bytes) -> Response {
    let b: AbortBody = if body.iter().all(u8::is_ascii_whitespace) {
        AbortBody::default()
    } else {
        match serde_json::from_slice(&body) {
            Ok(b) => b,
            Err(e) => {
                let bad = Reject::bad(format!("invalid request body: {e}"));
                return reject(&st.cfg, &bad);
            }
        }
    };
    let rids: Vec<String> = match b.rid {
        Some(Value::String(s)) if !s.is_empty() => vec![s],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    if !rids.is_empty() || b.abort_all {
        st.engine.abort_rids(rids, b.abort_all).await;
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::OK;
    r
}

/// `GET /sim/aborts`: every request the engine aborted so far, in order:
/// `{"aborted": [{"id": 12, "rid": "a" | null, "cause": "abort_request" | "dropped",
/// "completion_tokens": 17}, ...]}`.
pub(crate) async fn aborts(State(st): State<Arc<AppState>>) -> Response {
    let list: Vec<Value> = st
        .stamps
        .aborts()
        .into_iter()
        .map(|a| {
            json!({
                "id": a.request,
                "rid": a.rid,
                "cause": a.cause.as_str(),
                "completion_tokens": a.completion_tokens,
            })
        })
        .collect();
    json_response(StatusCode::OK, json!({ "aborted": list }).to_string())
}
