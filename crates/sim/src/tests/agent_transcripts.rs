//! The simulator's `/v1/messages` and `/v1/responses` against vLLM 0.32's own bytes, recorded
//! in `crates/client/fixtures/transcripts/vllm/live/` (`messages_*`, `responses_*`): the same
//! events in the same order, every event and body with the same keys in the same order (at
//! every depth), and the prompt-too-long errors byte for byte. Values (ids, text, counts) are
//! the model's and differ; the other tests check them.

use std::path::PathBuf;

use serde_json::Value;

use super::agent_apis::{long_text, messages_body, responses_body, vllm};
use super::raw::{exchange, post};

/// A recorded transcript, as text.
fn recorded(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../client/fixtures/transcripts/vllm/live")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Every object key of a JSON text, in the order written (nested ones where they stand).
fn keys(json: &str) -> Vec<String> {
    let b = json.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'"' {
            i += 1;
            continue;
        }
        let start = i + 1;
        i = start;
        while i < b.len() && b[i] != b'"' {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        let s = &json[start..i.min(b.len())];
        i += 1;
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        if i < b.len() && b[i] == b':' {
            out.push(s.to_string());
        }
    }
    out
}

/// `(event name, key order)` of each event of an SSE body, consecutive events of one name
/// and key order counted once (vLLM may merge a stream's deltas; the simulator sends one per
/// step).
fn shape(sse: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut name = String::new();
    for l in sse.lines() {
        if let Some(n) = l.strip_prefix("event: ") {
            name = n.to_string();
        } else if let Some(d) = l.strip_prefix("data: ") {
            let item = (std::mem::take(&mut name), keys(d));
            if out.last() != Some(&item) {
                out.push(item);
            }
        }
    }
    out
}

#[tokio::test]
async fn messages_match_vllms_events_and_bodies() {
    let sim = crate::spawn(vllm()).await.expect("starts");
    let addr = sim.addr();
    let stream = post(addr, "/v1/messages", &messages_body("Say hello", 8, true)).await;
    assert_eq!(shape(&stream), shape(&recorded("messages_stream.sse")));
    // The recorded body had no system prompt; the keys do not depend on it.
    let body = post(addr, "/v1/messages", &messages_body("Say hello", 8, false)).await;
    assert_eq!(keys(&body), keys(&recorded("messages.json")), "{body}");
    let count = post(
        addr,
        "/v1/messages/count_tokens",
        &messages_body("Say hello", 8, false),
    )
    .await;
    assert_eq!(keys(&count), keys(&recorded("messages_count_tokens.json")));
    sim.shutdown().await;
}

#[tokio::test]
async fn responses_match_vllms_events_and_bodies() {
    let sim = crate::spawn(vllm()).await.expect("starts");
    let addr = sim.addr();
    let stream = post(addr, "/v1/responses", &responses_body("Say hello", 8, true)).await;
    assert_eq!(shape(&stream), shape(&recorded("responses_stream.sse")));
    let body = post(
        addr,
        "/v1/responses",
        &responses_body("Say hello", 8, false),
    )
    .await;
    assert_eq!(keys(&body), keys(&recorded("responses.json")), "{body}");
    let end: Value = serde_json::from_str(&body).expect("response JSON");
    let rec: Value = serde_json::from_str(&recorded("responses.json")).expect("recorded JSON");
    for k in [
        "status",
        "incomplete_details",
        "tool_choice",
        "service_tier",
        "truncation",
    ] {
        assert_eq!(end[k], rec[k], "{k}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn a_prompt_over_the_context_is_refused_byte_for_byte() {
    // The tiny profiles have vLLM's recorded context (4096), so the words match exactly.
    let sim = crate::spawn(vllm()).await.expect("starts");
    let long = long_text(5000);
    for (path, body, file) in [
        (
            "/v1/messages",
            messages_body(&long, 8, true),
            "messages_too_long.json",
        ),
        (
            "/v1/responses",
            responses_body(&long, 8, false),
            "responses_too_long.json",
        ),
    ] {
        let (status, text) = exchange(sim.addr(), "POST", path, Some(&body.to_string())).await;
        assert_eq!((status, text.as_str()), (400, recorded(file).trim_end()));
    }
    sim.shutdown().await;
}
