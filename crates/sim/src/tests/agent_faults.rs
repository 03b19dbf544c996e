//! The simulator's faults on `/v1/messages` and `/v1/responses`, each in the route's own shape:
//! a mid-stream error (Anthropic's `error` event with vLLM's `internal_error`; the Responses
//! API's `error` event), a disconnect (the body breaks off before `message_stop` /
//! `response.completed`, half an event first when asked), a malformed event (the route's
//! token event with its JSON cut), a stall, an injected HTTP 500, a slow first byte and a
//! full queue.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::agent_apis::{messages_body, responses_body, vllm};
use super::raw::{Ending, exchange, read_ending};
use crate::{FaultConfig, SimConfig};

/// Both routes: path, a streamed body of 20 tokens, and the event that ends a good stream.
fn routes() -> [(&'static str, Value, &'static str); 2] {
    [
        (
            "/v1/messages",
            messages_body("Go", 20, true),
            "message_stop",
        ),
        (
            "/v1/responses",
            responses_body("Go", 20, true),
            "response.completed",
        ),
    ]
}

fn with_faults(faults: FaultConfig) -> SimConfig {
    SimConfig { faults, ..vllm() }
}

/// Streams each route once on a server with `faults`.
async fn each_route(faults: FaultConfig) -> Vec<(&'static str, Ending, &'static str)> {
    let sim = crate::spawn(with_faults(faults)).await.expect("starts");
    let mut out = Vec::new();
    for (path, body, end) in routes() {
        let e = read_ending(sim.addr(), path, &body, Duration::from_millis(400)).await;
        out.push((path, e, end));
    }
    sim.shutdown().await;
    out
}

/// The `data:` lines of a raw stream that parse, and how many did not.
fn data(raw: &str) -> (Vec<Value>, usize) {
    let mut good = Vec::new();
    let mut bad = 0;
    for d in raw.lines().filter_map(|l| l.strip_prefix("data: ")) {
        match serde_json::from_str(d) {
            Ok(v) => good.push(v),
            Err(_) => bad += 1,
        }
    }
    (good, bad)
}

#[tokio::test]
async fn a_stream_error_is_the_routes_error_event() {
    let runs = each_route(FaultConfig {
        stream_error_rate: 1.0,
        ..FaultConfig::default()
    })
    .await;
    for (path, e, end) in runs {
        let (evs, bad) = data(&e.raw);
        assert_eq!(bad, 0, "{}", e.raw);
        assert!(e.clean, "the body ends normally after the error: {}", e.raw);
        assert!(!e.raw.contains(end), "{path}: {}", e.raw);
        let last = evs.last().expect("events");
        assert_eq!(last["type"], "error", "{path}: {last}");
        assert!(e.raw.contains("event: error\ndata: "), "{}", e.raw);
        if path == "/v1/messages" {
            assert_eq!(last["error"]["type"], "internal_error");
        } else {
            assert!(
                last["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("fault"))
            );
            assert!(last["sequence_number"].is_u64(), "{last}");
        }
    }
}

#[tokio::test]
async fn a_disconnect_breaks_off_before_the_end_event() {
    for mid_event in [false, true] {
        let runs = each_route(FaultConfig {
            disconnect_rate: 1.0,
            disconnect_mid_event: mid_event,
            ..FaultConfig::default()
        })
        .await;
        for (path, e, end) in runs {
            assert!(!e.clean && !e.silent, "{path}: {}", e.raw);
            assert!(!e.raw.contains(end), "{path}: {}", e.raw);
            let (evs, bad) = data(&e.raw);
            assert!(!evs.is_empty(), "some tokens first: {}", e.raw);
            assert_eq!(bad, usize::from(mid_event), "{path}: {}", e.raw);
        }
    }
}

#[tokio::test]
async fn a_malformed_event_is_the_token_event_cut() {
    let runs = each_route(FaultConfig {
        malformed_chunk_rate: 1.0,
        ..FaultConfig::default()
    })
    .await;
    for (path, e, end) in runs {
        let (_, bad) = data(&e.raw);
        assert_eq!(bad, 1, "{path}: {}", e.raw);
        assert!(e.clean && e.raw.contains(end), "{path}: the stream goes on");
        let cut = e
            .raw
            .split("\n\n")
            .find(|ev| {
                ev.lines()
                    .filter_map(|l| l.strip_prefix("data: "))
                    .any(|d| serde_json::from_str::<Value>(d).is_err())
            })
            .expect("the cut event");
        let token_event = if path == "/v1/messages" {
            "event: content_block_delta"
        } else {
            "event: response.output_text.delta"
        };
        assert!(cut.contains(token_event), "{cut}");
    }
}

#[tokio::test]
async fn a_stall_holds_the_stream_open_and_silent() {
    let runs = each_route(FaultConfig {
        stall_rate: 1.0,
        ..FaultConfig::default()
    })
    .await;
    for (path, e, end) in runs {
        assert!(e.silent, "{path}: {}", e.raw);
        assert!(!e.raw.contains(end), "{path}: {}", e.raw);
    }
}

#[tokio::test]
async fn refusals_and_injected_errors_take_each_route_shape() {
    let sim = crate::spawn(with_faults(FaultConfig {
        http_error_rate: 1.0,
        ..FaultConfig::default()
    }))
    .await
    .expect("starts");
    for (path, body, _) in routes() {
        let (status, text) = exchange(sim.addr(), "POST", path, Some(&body.to_string())).await;
        assert_eq!(status, 500, "{text}");
        let v: Value = serde_json::from_str(&text).expect("error JSON");
        if path == "/v1/messages" {
            assert_eq!(
                (&v["type"], &v["error"]["type"]),
                (&"error".into(), &"InternalServerError".into())
            );
        } else {
            assert_eq!(v["error"]["code"], 500, "{v}");
        }
    }
    sim.shutdown().await;

    let sim = crate::spawn(with_faults(FaultConfig {
        max_queue_len: Some(0),
        queue_full_status: 503,
        ..FaultConfig::default()
    }))
    .await
    .expect("starts");
    let (path, body, _) = &routes()[0];
    let (status, text) = exchange(sim.addr(), "POST", path, Some(&body.to_string())).await;
    assert_eq!(status, 503, "{text}");
    let v: Value = serde_json::from_str(&text).expect("error JSON");
    assert_eq!(v["error"]["type"], "ServiceUnavailableError", "{v}");
    sim.shutdown().await;

    // A failure mid-generation of a non-streamed answer is a 500 in the route's shape.
    let sim = crate::spawn(with_faults(FaultConfig {
        stream_error_rate: 1.0,
        ..FaultConfig::default()
    }))
    .await
    .expect("starts");
    let body = super::agent_apis::messages_body("Go", 20, false);
    let (status, text) =
        exchange(sim.addr(), "POST", "/v1/messages", Some(&body.to_string())).await;
    assert_eq!(status, 500, "{text}");
    let v: Value = serde_json::from_str(&text).expect("error JSON");
    assert_eq!(v["type"], "error", "{v}");
    sim.shutdown().await;

    let sim = crate::spawn(with_faults(FaultConfig {
        slow_first_byte_rate: 1.0,
        slow_first_byte_ms: 150,
        ..FaultConfig::default()
    }))
    .await
    .expect("starts");
    for (path, body, end) in routes() {
        let t = Instant::now();
        let e = read_ending(sim.addr(), path, &body, Duration::from_secs(2)).await;
        assert!(t.elapsed() >= Duration::from_millis(150), "{path}");
        assert!(e.clean && e.raw.contains(end), "{path}: {}", e.raw);
    }
    sim.shutdown().await;
}
