//! Simulator suite: the built-in engine measured from outside, with a plain HTTP client.
//!
//! Every test starts its own simulator on `127.0.0.1:0` with short step times, so the suite
//! stays fast; timing bounds are loose because CI machines are small and shared.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use llmib_sim::{Flavor, SimConfig, SimHandle};
use serde_json::{Value, json};

mod raw;

use raw::{Event, get, get_json, metric, post_json, send, stream};

fn tiny(flavor: Flavor) -> SimConfig {
    let mut c = llmib_sim::builtin_profile("tiny").expect("tiny profile");
    c.flavor = flavor;
    c
}

async fn start(cfg: SimConfig) -> SimHandle {
    llmib_sim::spawn(cfg).await.expect("simulator starts")
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Gaps in ms between consecutive content chunks of one stream (the first token excluded).
fn gaps_ms(events: &[Event]) -> Vec<f64> {
    let content: Vec<&Event> = events
        .iter()
        .filter(|e| {
            e.json()["choices"]
                .as_array()
                .is_some_and(|c| !c.is_empty())
        })
        .collect();
    content
        .windows(2)
        .map(|w| (w[1].at - w[0].at).as_secs_f64() * 1000.0)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_sse_shapes_and_usage() {
    let sim = start(tiny(Flavor::Sglang)).await;
    let base = sim.addr();
    let prompt = "Hello, simulated world: count these tokens please.";
    let (_, tok) = post_json(base, "/tokenize", json!({"prompt": prompt})).await;
    let count = tok["count"].as_u64().expect("count");
    assert!(
        count > 1 && count < prompt.len() as u64,
        "not one token per char: {count}"
    );
    assert_eq!(tok["tokens"].as_array().map(Vec::len), Some(count as usize));

    let (_, ev) = stream(
        base,
        "/v1/completions",
        json!({
        "model": "whatever", "prompt": prompt, "max_tokens": 5, "ignore_eos": true,
        "stream": true, "stream_options": {"include_usage": true}}),
    )
    .await;
    assert_eq!(ev.last().map(|e| e.data.as_str()), Some("[DONE]"));
    let first = ev[0].json();
    assert!(first["id"].as_str().is_some_and(|s| s.starts_with("cmpl-")));
    assert_eq!(first["object"], "text_completion");
    assert_eq!(
        first["model"], "whatever",
        "SGLang echoes the request's model"
    );
    let keys: Vec<&str> = first["choices"][0]
        .as_object()
        .expect("choice")
        .keys()
        .map(String::as_str)
        .collect();
    for k in ["index", "text", "logprobs", "finish_reason", "matched_stop"] {
        assert!(keys.contains(&k), "{k} in {keys:?}");
    }
    assert!(first.get("usage").is_some_and(Value::is_null));
    let usage_chunk = ev[ev.len() - 2].json();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], count);
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 5);
    let last_content = ev[ev.len() - 3].json();
    assert_eq!(last_content["choices"][0]["finish_reason"], "length");
    assert!(
        ev[0].data.starts_with("{\"id\":\"cmpl-"),
        "field order: {}",
        ev[0].data
    );

    let (_, chat) = stream(
        base,
        "/v1/chat/completions",
        json!({
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": true}),
    )
    .await;
    let role = chat[0].json();
    assert_eq!(role["object"], "chat.completion.chunk");
    assert_eq!(role["choices"][0]["delta"]["role"], "assistant");
    assert_eq!(role["choices"][0]["delta"]["content"], "");
    let fin = chat[chat.len() - 2].json();
    assert_eq!(fin["choices"][0]["finish_reason"], "length");
    assert!(
        fin["choices"][0]["delta"]["content"].is_null(),
        "SGLang's finish chunk has an empty delta"
    );
    assert_eq!(chat.len(), 1 + 3 + 1 + 1, "role, 3 tokens, finish, [DONE]");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_sse_shapes_with_continuous_usage() {
    let sim = start(tiny(Flavor::Vllm)).await;
    let base = sim.addr();
    let models = get_json(base, "/v1/models").await;
    assert_eq!(models["data"][0]["max_model_len"], 4096);
    assert_eq!(models["data"][0]["owned_by"], "vllm");
    let (_, ev) = stream(
        base,
        "/v1/completions",
        json!({
        "model": "sim/tiny", "prompt": [11, 12, 13, 14], "max_tokens": 4, "min_tokens": 4,
        "stream": true, "stream_options": {"include_usage": true, "continuous_usage_stats": true}}),
    )
    .await;
    let chunks: Vec<Value> = ev.iter().map(Event::json).collect();
    assert_eq!(ev.last().map(|e| e.data.as_str()), Some("[DONE]"));
    for (i, c) in chunks[..4].iter().enumerate() {
        assert_eq!(c["usage"]["completion_tokens"], i as u64 + 1);
        assert_eq!(c["usage"]["prompt_tokens"], 4);
        assert!(
            c["choices"][0].get("stop_reason").is_some(),
            "vLLM has stop_reason"
        );
    }
    assert_eq!(chunks[4]["choices"], json!([]));
    assert_eq!(
        chunks[4]["usage"],
        json!({"prompt_tokens": 4, "total_tokens": 8, "completion_tokens": 4,
               "prompt_tokens_details": {"cached_tokens": 0}})
    );
    let (status, body) = post_json(
        base,
        "/v1/completions",
        json!({"model": "nope", "prompt": "x"}),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["type"], "NotFoundError");

    let (_, chat) = stream(base, "/v1/chat/completions", json!({
        "model": "sim/tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "stream": true})).await;
    assert!(
        chat[0]
            .data
            .contains("\"delta\":{\"role\":\"assistant\",\"content\":\"\"}"),
        "{}",
        chat[0].data
    );
    assert!(chat[1].json()["choices"][0]["delta"].get("role").is_none());
    assert_eq!(chat[2].json()["choices"][0]["finish_reason"], "length");
    assert_eq!(
        chat.len(),
        4,
        "role, 2 tokens (the last with finish_reason), [DONE]"
    );
    let (_, detok) = post_json(base, "/detokenize", json!({"tokens": [256, 300]})).await;
    assert!(
        detok["prompt"].is_string(),
        "vLLM answers {{\"prompt\"}}: {detok}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_prompt_counts_like_tokenize() {
    let sim = start(tiny(Flavor::Sglang)).await;
    let base = sim.addr();
    for prompt in ["a", "The quick brown fox, jumps!", "ünïcode\nand  spaces"] {
        let (_, tok) = post_json(base, "/tokenize", json!({"prompt": prompt})).await;
        let (status, out) = post_json(
            base,
            "/v1/completions",
            json!({"prompt": prompt, "max_tokens": 2}),
        )
        .await;
        assert_eq!(status, 200);
        assert_eq!(out["usage"]["prompt_tokens"], tok["count"], "{prompt}");
        let (_, de) = post_json(base, "/detokenize", json!({"tokens": tok["tokens"]})).await;
        assert_eq!(
            de["text"], prompt,
            "SGLang answers {{\"text\"}} and round-trips"
        );
        let text = out["choices"][0]["text"].as_str().expect("text");
        let (_, t2) = post_json(
            base,
            "/tokenize",
            json!({"prompt": text, "add_special_tokens": false}),
        )
        .await;
        assert_eq!(
            t2["count"], 2,
            "generated text re-tokenizes to completion_tokens"
        );
    }
}

// The guard is held across awaits on purpose: it only orders tests on different threads
// (each has its own runtime), so it cannot deadlock a runtime.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decode_gaps_follow_the_step_table() {
    let _serial = crate::common::timing_lock();
    let mut cfg = tiny(Flavor::Sglang);
    cfg.decode_step_ms = vec![(1, 8.0), (8, 16.0)];
    let sim = start(cfg).await;
    let base = sim.addr();
    let body = |i: u32| json!({"prompt": [i + 1, 2, 3], "max_tokens": 30, "ignore_eos": true, "stream": true});
    let (_, ev) = stream(base, "/v1/completions", body(0)).await;
    let g1 = median(gaps_ms(&ev));
    assert!(
        (6.0..=14.0).contains(&g1),
        "batch 1 median gap {g1:.2} ms, configured 8"
    );

    let tasks: Vec<_> = (0..8)
        .map(|i| tokio::spawn(async move { stream(base, "/v1/completions", body(i)).await }))
        .collect();
    let mut gaps = Vec::new();
    for t in tasks {
        let (_, ev) = t.await.expect("task");
        gaps.push(median(gaps_ms(&ev)));
    }
    let g8 = median(gaps);
    assert!(
        (13.0..=26.0).contains(&g8),
        "batch 8 median gap {g8:.2} ms, configured 16"
    );
}

/// Starts `n` long streams, each holding `prompt_len + max_tokens` of KV.
fn long_streams(
    base: SocketAddr,
    n: u32,
    prompt_len: usize,
    max_tokens: u32,
) -> Vec<tokio::task::JoinHandle<(Instant, Vec<Event>)>> {
    (0..n).map(|i| {

        let mut prompt = vec![7u32; prompt_len];
        prompt[0] = 1000 + i; // distinct prompts: no cache sharing
        tokio::spawn(async move {
            stream(base, "/v1/completions", json!({"prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true, "stream": true})).await
        })
    }).collect()
}

/// Polls `/metrics` until `name` reads `want` (or gives up after 3 s).
async fn wait_metric(base: SocketAddr, name: &str, want: f64) -> f64 {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let v = metric(base, name).await;
        if v == want || Instant::now() > deadline {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queueing_starts_exactly_past_kv_capacity() {
    let (p, m) = (100usize, 300u32);
    let need = p as u64 + u64::from(m);
    for (capacity, queued) in [(4 * need, 0.0), (4 * need - 1, 1.0)] {
        let mut cfg = tiny(Flavor::Sglang);
        cfg.kv_capacity_tokens = capacity;
        cfg.prefix_cache_tokens = 0;
        let sim = start(cfg).await;
        let base = sim.addr();
        let tasks = long_streams(base, 4, p, m);
        let running = wait_metric(base, "sglang:num_running_reqs", 4.0 - queued).await;
        assert_eq!(running, 4.0 - queued, "capacity {capacity}");
        let q = wait_metric(base, "sglang:num_queue_reqs", queued).await;
        assert_eq!(metric(base, "sglang:num_running_reqs").await, 4.0 - queued);
        assert_eq!(
            q,
            queued,
            "capacity {capacity} = 4 x {need} {}",
            if queued > 0.0 { "- 1" } else { "" }
        );
        let max_total = metric(base, "sglang:max_total_num_tokens").await;
        assert_eq!(max_total, capacity as f64);
        for t in tasks {
            t.abort();
        }
    }
}

// The guard is held across awaits on purpose: it only orders tests on different threads
// (each has its own runtime), so it cannot deadlock a runtime.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_cache_hit_cuts_ttft() {
    let _serial = crate::common::timing_lock();
    let mut cfg = tiny(Flavor::Vllm);
    cfg.prefill_tok_per_s = 20_000.0; // 2000 tokens: 100 ms cold
    let sim = start(cfg).await;
    let base = sim.addr();
    let prompt: Vec<u32> = (0..2000).map(|i| 300 + i).collect();
    let body = json!({"model": "sim/tiny", "prompt": prompt, "max_tokens": 1, "stream": true});
    let (sent, cold) = stream(base, "/v1/completions", body.clone()).await;
    let cold_ms = (cold[0].at - sent).as_secs_f64() * 1000.0;
    let (sent, warm) = stream(base, "/v1/completions", body).await;
    let warm_ms = (warm[0].at - sent).as_secs_f64() * 1000.0;
    assert!(cold_ms >= 90.0, "cold TTFT {cold_ms:.1} ms, expected ~100");
    assert!(
        warm_ms < cold_ms / 4.0,
        "warm TTFT {warm_ms:.1} ms vs cold {cold_ms:.1} ms"
    );
    // Counters are published by the scheduler's next iteration: read them as they settle.
    assert_eq!(
        wait_metric(base, "vllm:prefix_cache_queries_total", 4000.0).await,
        4000.0
    );
    assert_eq!(
        wait_metric(base, "vllm:prefix_cache_hits_total", 2000.0).await,
        2000.0
    );
}

// The guard is held across awaits on purpose: it only orders tests on different threads
// (each has its own runtime), so it cannot deadlock a runtime.
#[allow(clippy::await_holding_lock)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_frees_capacity() {
    let _serial = crate::common::timing_lock();
    let mut cfg = tiny(Flavor::Sglang);
    cfg.kv_capacity_tokens = 500; // room for one request of 100 + 300
    let sim = start(cfg).await;
    let base = sim.addr();
    let body = |first: u32| json!({"prompt": [first, 2, 3], "max_tokens": 300, "ignore_eos": true, "stream": true});
    let mut a = send(base, "POST", "/v1/completions", None, Some(&body(1))).await;
    let _ = a.next_chunk().await; // A is running
    assert_eq!(wait_metric(base, "sglang:num_running_reqs", 1.0).await, 1.0);
    let b = tokio::spawn(async move { stream(base, "/v1/completions", body(2)).await });
    assert_eq!(
        wait_metric(base, "sglang:num_queue_reqs", 1.0).await,
        1.0,
        "B waits for A's KV"
    );
    let dropped = Instant::now();
    drop(a); // the client goes away mid-stream
    let (_, ev) = b.await.expect("B");
    let b_first = ev[0].at - dropped;
    // A alone would have needed 300 steps of 1.5 ms; B starts right after the disconnect.
    assert!(
        b_first < Duration::from_millis(200),
        "B's first token {b_first:?} after A left"
    );
    assert_eq!(wait_metric(base, "sglang:num_queue_reqs", 0.0).await, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_tokens_arrive_three_per_chunk() {
    let mut cfg = tiny(Flavor::Vllm);
    cfg.spec_tokens = 3;
    let sim = start(cfg).await;
    let base = sim.addr();
    let (_, ev) = stream(
        base,
        "/v1/completions",
        json!({
        "model": "sim/tiny", "prompt": "spec", "max_tokens": 10, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true}}),
    )
    .await;
    let chunks: Vec<Value> = ev
        .iter()
        .map(Event::json)
        .filter(|c| c["choices"].as_array().is_some_and(|a| !a.is_empty()))
        .collect();
    let counts: Vec<u64> = chunks
        .iter()
        .map(|c| c["usage"]["completion_tokens"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(
        counts,
        vec![1, 4, 7, 10],
        "first token from prefill, then 3 per step"
    );
    for c in &chunks[1..] {
        let text = c["choices"][0]["text"].as_str().expect("text");
        let (_, t) = post_json(
            base,
            "/tokenize",
            json!({"prompt": text, "add_special_tokens": false}),
        )
        .await;
        assert_eq!(t["count"], 3, "one chunk carries 3 tokens: {text:?}");
    }
    let usage = ev[ev.len() - 2].json();
    assert_eq!(usage["usage"]["completion_tokens"], 10);
    // The counter is published after the iteration that sent the last token: it may lag the
    // finished response on a loaded host, so it is read until it settles (the value checked
    // is the same).
    assert_eq!(
        wait_metric(base, "vllm:generation_tokens_total", 10.0).await,
        10.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_agree_with_state() {
    let sim = start(tiny(Flavor::Sglang)).await;
    let base = sim.addr();
    let mut prompt_total = 0;
    for (i, m) in [3u32, 5, 7].iter().enumerate() {
        let (s, out) = post_json(
            base,
            "/v1/completions",
            json!({"prompt": format!("request number {i}"), "max_tokens": m}),
        )
        .await;
        assert_eq!(s, 200);
        prompt_total += out["usage"]["prompt_tokens"].as_u64().expect("usage");
    }
    // The scheduler publishes its counters after the iteration that sent the last token: on a
    // loaded host the response can arrive first, so let them catch up.
    assert_eq!(
        wait_metric(base, "sglang:generation_tokens_total", 15.0).await,
        15.0
    );
    // The same snapshot holds these, but each is read as it settles all the same: a read
    // right after a response must never depend on the scheduler having published.
    assert_eq!(
        wait_metric(base, "sglang:prompt_tokens_total", prompt_total as f64).await,
        prompt_total as f64
    );
    assert_eq!(wait_metric(base, "sglang:num_running_reqs", 0.0).await, 0.0);
    assert_eq!(wait_metric(base, "sglang:num_queue_reqs", 0.0).await, 0.0);
    assert_eq!(wait_metric(base, "sglang:token_usage", 0.0).await, 0.0);
    let tasks = long_streams(base, 2, 50, 400);
    assert_eq!(wait_metric(base, "sglang:num_running_reqs", 2.0).await, 2.0);
    assert!(metric(base, "sglang:token_usage").await > 0.0);
    for t in tasks {
        t.abort();
    }
    assert_eq!(
        wait_metric(base, "sglang:num_running_reqs", 0.0).await,
        0.0,
        "aborted streams leave"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_long_prompt_is_400_in_each_engines_shape() {
    let prompt = vec![5u32; 4000];
    let sg = start(tiny(Flavor::Sglang)).await;
    let (s, body) = post_json(
        sg.addr(),
        "/v1/completions",
        json!({"prompt": prompt, "max_tokens": 96}),
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(body["object"], "error");
    assert_eq!(body["code"], 400);
    assert!(
        body["message"].as_str().is_some_and(|m| m.starts_with(
            "Requested token count exceeds the model's maximum context length of 4096"
        )),
        "{body}"
    );
    let vl = start(tiny(Flavor::Vllm)).await;
    let (s, ok) = post_json(
        vl.addr(),
        "/v1/completions",
        json!({"prompt": prompt, "max_tokens": 96}),
    )
    .await;
    assert_eq!(
        s, 200,
        "vLLM allows prompt + max_tokens == max_model_len: {ok}"
    );
    let (s, body) = post_json(
        vl.addr(),
        "/v1/completions",
        json!({"prompt": prompt, "max_tokens": 97}),
    )
    .await;
    assert_eq!(s, 400);
    assert_eq!(body["error"]["type"], "BadRequestError");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("maximum context length is 4096 tokens")),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_key_is_enforced_like_each_engine() {
    for flavor in [Flavor::Sglang, Flavor::Vllm] {
        let mut cfg = tiny(flavor);
        cfg.api_key = Some("sekret".into());
        let sim = start(cfg).await;
        for auth in [None, Some("Bearer wrong"), Some("Basic sekret")] {
            let (status, body) = get(sim.addr(), "/v1/models", auth).await;
            assert_eq!(status, 401, "{flavor:?} {auth:?}");
            assert_eq!(body, "{\"error\":\"Unauthorized\"}");
        }
        assert_eq!(
            get(sim.addr(), "/v1/models", Some("Bearer sekret")).await.0,
            200
        );
        assert_eq!(
            get(sim.addr(), "/health", None).await.0,
            200,
            "health is open"
        );
        let tokenize_open = flavor == Flavor::Vllm; // vLLM guards /v1/* only
        let conn = send(
            sim.addr(),
            "POST",
            "/tokenize",
            None,
            Some(&json!({"prompt": "x"})),
        )
        .await;
        assert_eq!(
            conn.status == 200,
            tokenize_open,
            "{flavor:?} /tokenize without a key"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_profile_reports_the_seed_server() {
    let cfg = llmib_sim::builtin_profile("seed").expect("seed");
    let sim = start(cfg).await;
    let (status, text) = get(sim.addr(), "/get_server_info", Some("Bearer sk-sim-seed")).await;
    assert_eq!(status, 200);
    let info: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(info["max_total_num_tokens"], 33152);
    assert_eq!(info["context_length"], 16384);
    assert_eq!(info["tp_size"], 8);
    assert_eq!(info["kv_cache_dtype"], "fp8_e4m3");
    assert_eq!(info["speculative_algorithm"], "DFLASH");
    assert_eq!(info["version"], "0.5.6.post3.dev11345+g028ac64f7");
    assert_eq!(
        info["api_key"], "sk-sim-seed",
        "SGLang leaks its key here; clients must redact it"
    );
    assert_eq!(info["served_model_name"], "zai-org/GLM-5.3-Flash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_are_seeded_and_visible() {
    let mut cfg = tiny(Flavor::Sglang);
    cfg.faults.http_error_rate = 0.5;
    let run = |cfg: SimConfig| async move {
        let sim = start(cfg).await;
        let mut statuses = Vec::new();
        for _ in 0..12 {
            let (s, _) = post_json(
                sim.addr(),
                "/v1/completions",
                json!({"prompt": "x", "max_tokens": 1}),
            )
            .await;
            statuses.push(s);
        }
        statuses
    };
    let a = run(cfg.clone()).await;
    assert_eq!(a, run(cfg.clone()).await, "same seed, same failures");
    assert!(a.contains(&500) && a.contains(&200), "{a:?}");

    let mut cfg = tiny(Flavor::Vllm);
    cfg.faults.stream_error_rate = 1.0;
    let sim = start(cfg).await;
    let (_, ev) = stream(
        sim.addr(),
        "/v1/completions",
        json!({"prompt": "x", "max_tokens": 20, "stream": true}),
    )
    .await;
    let err = &ev[ev.len() - 2];
    assert!(
        err.data.starts_with("{\"error\": {\"message\": "),
        "{}",
        err.data
    );
    assert_eq!(ev.last().map(|e| e.data.as_str()), Some("[DONE]"));

    let mut cfg = tiny(Flavor::Sglang);
    cfg.faults.disconnect_rate = 1.0;
    let sim = start(cfg).await;
    let mut conn = send(
        sim.addr(),
        "POST",
        "/v1/completions",
        None,
        Some(&json!({"prompt": "x", "max_tokens": 20, "stream": true})),
    )
    .await;
    let mut broke = false;
    while let Some(c) = conn.next_chunk().await {
        if c.is_err() {
            broke = true;
        }
    }
    assert!(broke, "the body ends with a transport error, not [DONE]");
}
