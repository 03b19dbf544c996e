//! Who else is on the engine, and ending requests early, over HTTP:
//! - `foreign_running` / `foreign_waiting` add another client's requests to the gauges;
//! - SGLang's `POST /abort_request` ends the named requests at once (slot and KV freed, the
//!   stream ending with finish reason `abort`), `abort_all` every one, and `/sim/aborts` and
//!   `sglang:num_aborted_requests_total` say exactly which;
//! - `drop_keeps_running_ms`: a dropped stream stays running and generating for that long
//!   (unless aborted), as SGLang does until it notices; without it, it is freed at once.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::raw::{OpenStream, events, exchange, metric, post, wait_metric};
use crate::{AbortCause, Flavor, SimConfig, builtin_profile};

fn tiny(flavor: Flavor) -> SimConfig {
    SimConfig {
        flavor,
        // Slow enough that a long answer is still running when the test acts.
        decode_step_ms: vec![(1, 4.0)],
        ..builtin_profile("tiny").expect("tiny")
    }
}

/// A long streamed completion with this `rid`.
fn long(rid: &str) -> Value {
    json!({
        "model": "sim/tiny", "prompt": format!("request {rid}"), "max_tokens": 3000,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true},
        "rid": rid,
    })
}

/// `(rid, cause)` of every request the simulator aborted, from `GET /sim/aborts`.
async fn aborted(addr: SocketAddr) -> Vec<(String, String)> {
    let (status, body) = exchange(addr, "GET", "/sim/aborts", None).await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("aborts JSON");
    v["aborted"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|a| {
            let rid = a["rid"].as_str().unwrap_or("-").to_string();
            (rid, a["cause"].as_str().unwrap_or("").to_string())
        })
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn foreign_load_shows_in_the_running_and_waiting_gauges() {
    for (flavor, running, waiting) in [
        (
            Flavor::Sglang,
            "sglang:num_running_reqs",
            "sglang:num_queue_reqs",
        ),
        (
            Flavor::Vllm,
            "vllm:num_requests_running",
            "vllm:num_requests_waiting",
        ),
    ] {
        let cfg = SimConfig {
            foreign_running: 3,
            foreign_waiting: 2,
            ..tiny(flavor)
        };
        let sim = crate::spawn(cfg).await.expect("starts");
        let addr = sim.addr();
        assert_eq!(metric(addr, running).await, Some(3.0), "{flavor:?} idle");
        assert_eq!(metric(addr, waiting).await, Some(2.0));
        // One request of ours on top of theirs.
        let s = OpenStream::open(addr, "/v1/completions", &long("ours")).await;
        assert_eq!(wait_metric(addr, running, 4.0).await, 4.0, "{flavor:?}");
        drop(s);
        assert_eq!(
            wait_metric(addr, running, 3.0).await,
            3.0,
            "never below theirs"
        );
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn abort_request_ends_exactly_the_named_streams() {
    let sim = crate::spawn(tiny(Flavor::Sglang)).await.expect("starts");
    let addr = sim.addr();
    let mut a = OpenStream::open(addr, "/v1/completions", &long("a")).await;
    let b = OpenStream::open(addr, "/v1/completions", &long("b")).await;
    let c = OpenStream::open(addr, "/v1/completions", &long("c")).await;
    // SGLang answers with the client's rid as the response id.
    assert!(a.raw.contains(r#""id":"a""#), "{}", a.raw);
    assert_eq!(wait_metric(addr, "sglang:num_running_reqs", 3.0).await, 3.0);

    let (status, body) = exchange(addr, "POST", "/abort_request", Some(r#"{"rid":"b"}"#)).await;
    assert_eq!((status, body.as_str()), (200, ""));
    // Answered once the engine's state shows it: no wait needed.
    assert_eq!(metric(addr, "sglang:num_running_reqs").await, Some(2.0));
    let b = b.finish().await;
    let evs = events(&b);
    let last_choice = evs.iter().rev().find(|e| e["choices"][0].is_object());
    assert_eq!(
        last_choice.expect("a choice")["choices"][0]["finish_reason"],
        "abort"
    );
    let usage = &evs.last().expect("usage")["usage"];
    assert!(
        usage["completion_tokens"]
            .as_u64()
            .is_some_and(|n| n < 3000),
        "{usage}"
    );
    assert!(b.contains("data: [DONE]"), "{b}");
    assert_eq!(aborted(addr).await, pairs(&[("b", "abort_request")]));
    // The others go on.
    let seen = a.raw.matches("data: ").count();
    a.read_until_count("data: ", seen + 3).await;

    // Unknown ids change nothing; abort_all ends the rest, in arrival order.
    exchange(addr, "POST", "/abort_request", Some(r#"{"rid":"zz"}"#)).await;
    assert_eq!(metric(addr, "sglang:num_running_reqs").await, Some(2.0));
    let all = r#"{"rid":"","abort_all":true}"#;
    exchange(addr, "POST", "/abort_request", Some(all)).await;
    assert_eq!(metric(addr, "sglang:num_running_reqs").await, Some(0.0));
    assert!(c.finish().await.contains(r#""finish_reason":"abort""#));
    assert!(a.finish().await.contains("data: [DONE]"));
    let want = [
        ("b", "abort_request"),
        ("a", "abort_request"),
        ("c", "abort_request"),
    ];
    assert_eq!(aborted(addr).await, pairs(&want));
    assert_eq!(
        wait_metric(addr, "sglang:num_aborted_requests_total", 3.0).await,
        3.0
    );
    assert_eq!(sim.aborts().len(), 3);
    sim.shutdown().await;

    // vLLM has no such endpoint.
    let sim = crate::spawn(tiny(Flavor::Vllm)).await.expect("starts");
    let (status, _) = exchange(sim.addr(), "POST", "/abort_request", Some(r#"{"rid":"b"}"#)).await;
    assert_eq!(status, 404);
    sim.shutdown().await;
}

#[tokio::test]
async fn abort_request_removes_a_queued_request() {
    let cfg = SimConfig {
        max_running_requests: Some(1),
        ..tiny(Flavor::Sglang)
    };
    let sim = crate::spawn(cfg).await.expect("starts");
    let addr = sim.addr();
    let _running = OpenStream::open(addr, "/v1/completions", &long("r")).await;
    let q = long("q");
    let queued = tokio::spawn(async move { post(addr, "/v1/completions", &q).await });
    assert_eq!(wait_metric(addr, "sglang:num_queue_reqs", 1.0).await, 1.0);
    exchange(addr, "POST", "/abort_request", Some(r#"{"rid":["q"]}"#)).await;
    assert_eq!(metric(addr, "sglang:num_queue_reqs").await, Some(0.0));
    let body = queued.await.expect("the queued stream");
    assert!(body.contains(r#""finish_reason":"abort""#), "{body}");
    assert_eq!(metric(addr, "sglang:num_running_reqs").await, Some(1.0));
    assert_eq!(aborted(addr).await, pairs(&[("q", "abort_request")]));
    sim.shutdown().await;
}

#[tokio::test]
async fn a_dropped_stream_keeps_running_until_its_time_is_up() {
    let cfg = SimConfig {
        drop_keeps_running_ms: 400,
        ..tiny(Flavor::Sglang)
    };
    let sim = crate::spawn(cfg).await.expect("starts");
    let addr = sim.addr();
    let s = OpenStream::open(addr, "/v1/completions", &long("d")).await;
    drop(s);
    let dropped = Instant::now();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = metric(addr, "sglang:generation_tokens_total")
        .await
        .expect("counter");
    assert_eq!(
        metric(addr, "sglang:num_running_reqs").await,
        Some(1.0),
        "still running"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = metric(addr, "sglang:generation_tokens_total")
        .await
        .expect("counter");
    assert!(after > before, "still generating: {before} then {after}");
    assert!(aborted(addr).await.is_empty());
    assert_eq!(wait_metric(addr, "sglang:num_running_reqs", 0.0).await, 0.0);
    assert!(
        dropped.elapsed() >= Duration::from_millis(400),
        "not before its time"
    );
    assert_eq!(aborted(addr).await, pairs(&[("d", "dropped")]));
    // The log holds what it generated after the drop too.
    let tokens = sim.aborts()[0].completion_tokens;
    assert!(
        f64::from(tokens) >= after,
        "{tokens} tokens, {after} counted"
    );
    assert_eq!(sim.aborts()[0].cause, AbortCause::Dropped);

    // An abort does not wait for the time to be up.
    let s = OpenStream::open(addr, "/v1/completions", &long("e")).await;
    drop(s);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(metric(addr, "sglang:num_running_reqs").await, Some(1.0));
    exchange(addr, "POST", "/abort_request", Some(r#"{"rid":"e"}"#)).await;
    assert_eq!(metric(addr, "sglang:num_running_reqs").await, Some(0.0));
    let log = aborted(addr).await;
    assert_eq!(log, pairs(&[("d", "dropped"), ("e", "abort_request")]));
    sim.shutdown().await;

    // Without the setting a dropped stream is freed at once.
    let sim = crate::spawn(tiny(Flavor::Sglang)).await.expect("starts");
    let s = OpenStream::open(sim.addr(), "/v1/completions", &long("f")).await;
    drop(s);
    let start = Instant::now();
    assert_eq!(
        wait_metric(sim.addr(), "sglang:num_running_reqs", 0.0).await,
        0.0
    );
    assert!(start.elapsed() < Duration::from_millis(300));
    assert_eq!(aborted(sim.addr()).await, pairs(&[("f", "dropped")]));
    sim.shutdown().await;
}
