//! Speculative decoding's figures and loop mode, over HTTP.
//!
//! - SGLang's `spec_accept_length` / `spec_accept_rate` gauges and vLLM's `spec_decode_*`
//!   counters report the steps the engine really ran: the chunk sizes a client reads back,
//!   with `spec_accept_length` below `spec_tokens` as well as at full acceptance; an engine
//!   without speculative decoding exports none of them.
//! - `answer_loop`: every answer is one sentence repeated to `max_tokens`, in the content or
//!   (`answer_loop_reasoning`) in the reasoning, and it re-tokenizes to exactly the usage.

use serde_json::{Value, json};

use super::raw::{events, exchange, metric, post, wait_metric};
use crate::{Flavor, SimConfig, builtin_profile};

fn tiny(flavor: Flavor, spec_tokens: u32, accept: Option<f64>) -> SimConfig {
    SimConfig {
        flavor,
        spec_tokens,
        spec_accept_length: accept,
        ..builtin_profile("tiny").expect("tiny")
    }
}

/// Streams one completion with usage on every chunk; returns the cumulative
/// `completion_tokens` of its content chunks.
async fn chunk_counts(addr: std::net::SocketAddr, prompt: &str, max_tokens: u32) -> Vec<u64> {
    let body = json!({
        "model": "sim/tiny", "prompt": prompt, "max_tokens": max_tokens, "ignore_eos": true,
        "stream": true,
        "stream_options": {"include_usage": true, "continuous_usage_stats": true},
    });
    events(&post(addr, "/v1/completions", &body).await)
        .iter()
        .filter(|e| e["choices"].as_array().is_some_and(|c| !c.is_empty()))
        .filter_map(|e| e["usage"]["completion_tokens"].as_u64())
        .collect()
}

#[tokio::test]
async fn sglang_gauges_report_the_tokens_each_step_emitted() {
    // Two tokens per step where three are drafted: length 2, rate 2/3 (SGLang divides by the
    // step's width), the chunks 1 (prefill), then +2 each.
    let sim = crate::spawn(tiny(Flavor::Sglang, 3, Some(2.0)))
        .await
        .expect("starts");
    let addr = sim.addr();
    let counts = chunk_counts(addr, "two per step", 21).await;
    assert_eq!(counts, (0..=10).map(|i| 1 + 2 * i).collect::<Vec<u64>>());
    assert_eq!(
        wait_metric(addr, "sglang:generation_tokens_total", 21.0).await,
        21.0
    );
    let length = metric(addr, "sglang:spec_accept_length").await;
    let rate = metric(addr, "sglang:spec_accept_rate").await.expect("rate");
    assert_eq!(length, Some(2.0));
    assert!((rate - 2.0 / 3.0).abs() < 1e-9, "{rate}");
    let (_, info) = exchange(addr, "GET", "/get_server_info", None).await;
    let info: Value = serde_json::from_str(&info).expect("server info");
    assert_eq!(info["internal_states"][0]["avg_spec_accept_length"], 2.0);
    assert_eq!(info["speculative_num_draft_tokens"], 3);
    sim.shutdown().await;

    // Every draft accepted: length 3, rate 1.
    let sim = crate::spawn(tiny(Flavor::Sglang, 3, None))
        .await
        .expect("starts");
    let counts = chunk_counts(sim.addr(), "all accepted", 10).await;
    assert_eq!(counts, [1, 4, 7, 10]);
    assert_eq!(
        metric(sim.addr(), "sglang:spec_accept_length").await,
        Some(3.0)
    );
    assert_eq!(
        metric(sim.addr(), "sglang:spec_accept_rate").await,
        Some(1.0)
    );
    sim.shutdown().await;

    // No speculative decoding: no acceptance figures at all.
    let sim = crate::spawn(tiny(Flavor::Sglang, 1, None))
        .await
        .expect("starts");
    chunk_counts(sim.addr(), "plain", 5).await;
    let (_, text) = exchange(sim.addr(), "GET", "/metrics", None).await;
    assert!(!text.contains("spec_accept"), "{text}");
    sim.shutdown().await;
}

#[tokio::test]
async fn vllm_counters_grow_with_the_tokens_generated() {
    // 2.5 tokens per step on average: each request's steps emit 2, 3, 2, 3 after its first.
    let sim = crate::spawn(tiny(Flavor::Vllm, 3, Some(2.5)))
        .await
        .expect("starts");
    let addr = sim.addr();
    for prompt in ["first", "second"] {
        assert_eq!(chunk_counts(addr, prompt, 11).await, [1, 3, 6, 8, 11]);
    }
    assert_eq!(
        wait_metric(addr, "vllm:generation_tokens_total", 22.0).await,
        22.0
    );
    let m = |name: &'static str| async move { metric(addr, name).await.expect(name) };
    let drafts = m("vllm:spec_decode_num_drafts_total").await;
    let draft_tokens = m("vllm:spec_decode_num_draft_tokens_total").await;
    let accepted = m("vllm:spec_decode_num_accepted_tokens_total").await;
    // 8 steps of 2 draft tokens; 1 + 2 + 1 + 2 accepted per request.
    assert_eq!((drafts, draft_tokens, accepted), (8.0, 16.0, 12.0));
    // Every generated token is a prefill's first token, a step's sampled one or an accepted
    // draft: the counters add up to what the engine generated.
    assert_eq!(drafts + accepted + 2.0, 22.0);
    let (_, text) = exchange(addr, "GET", "/metrics", None).await;
    let pos = |p: u32| {
        let needle = format!("position=\"{p}\"}} ");
        text.lines()
            .find(|l| {
                l.starts_with("vllm:spec_decode_num_accepted_tokens_per_pos_total")
                    && l.contains(&needle)
            })
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
    };
    assert_eq!((pos(0), pos(1)), (Some(8.0), Some(4.0)), "{text}");
    sim.shutdown().await;

    let sim = crate::spawn(tiny(Flavor::Vllm, 1, None))
        .await
        .expect("starts");
    chunk_counts(sim.addr(), "plain", 5).await;
    let (_, text) = exchange(sim.addr(), "GET", "/metrics", None).await;
    assert!(!text.contains("spec_decode"), "{text}");
    sim.shutdown().await;
}

/// 64 characters; its copies meet at ".T", which tokenizes as two copies do.
const SENTENCE: &str = "The cache is warm and the batch is full, so we wait here, again.";

#[tokio::test]
async fn loop_mode_repeats_one_sentence_to_max_tokens() {
    assert_eq!(SENTENCE.len(), 64);
    for flavor in [Flavor::Sglang, Flavor::Vllm] {
        let cfg = SimConfig {
            answer_loop: Some(SENTENCE.into()),
            // A model that would stop at once, and does not: a loop runs to max_tokens.
            eos_rate: 1.0,
            ..tiny(flavor, 1, None)
        };
        let sim = crate::spawn(cfg).await.expect("starts");
        let addr = sim.addr();
        let body = json!({"model": "sim/tiny", "prompt": "Go", "max_tokens": 50});
        let v: Value = serde_json::from_str(&post(addr, "/v1/completions", &body).await)
            .expect("completion JSON");
        let text = v["choices"][0]["text"].as_str().expect("text");
        assert_eq!(v["choices"][0]["finish_reason"], "length", "{v}");
        assert_eq!(v["usage"]["completion_tokens"], 50);
        assert!(text.len() > 2 * SENTENCE.len(), "{text}");
        assert!(SENTENCE.repeat(4).starts_with(text), "{text}");
        // It re-tokenizes to exactly the tokens counted.
        let t = json!({"prompt": text, "add_special_tokens": false});
        let count: Value = serde_json::from_str(&post(addr, "/tokenize", &t).await).expect("json");
        assert_eq!(count["count"], 50, "{flavor:?}");

        // A streamed chat answer: all content, no reasoning.
        let (content, reasoning) = chat(addr, 30).await;
        assert!(
            SENTENCE.repeat(2).starts_with(&content) && content.len() > 64,
            "{content}"
        );
        assert_eq!(reasoning, "");
        sim.shutdown().await;

        let cfg = SimConfig {
            answer_loop: Some(SENTENCE.into()),
            answer_loop_reasoning: true,
            ..tiny(flavor, 1, None)
        };
        let sim = crate::spawn(cfg).await.expect("starts");
        let (content, reasoning) = chat(sim.addr(), 30).await;
        assert_eq!(content, "", "{flavor:?}: the loop stays in the thinking");
        assert!(SENTENCE.repeat(2).starts_with(&reasoning) && reasoning.len() > 64);
        sim.shutdown().await;
    }
    let bad = SimConfig {
        answer_loop: Some("runs on".into()),
        ..SimConfig::default()
    };
    assert!(
        bad.validate().is_err(),
        "a word running on across the seam is refused"
    );
}

/// Streams a chat answer of `max_tokens`; returns its content and its reasoning.
async fn chat(addr: std::net::SocketAddr, max_tokens: u32) -> (String, String) {
    let body = json!({
        "model": "sim/tiny", "messages": [{"role": "user", "content": "Loop?"}],
        "max_tokens": max_tokens, "stream": true, "stream_options": {"include_usage": true},
    });
    let evs = events(&post(addr, "/v1/chat/completions", &body).await);
    let field = |f: &str| -> String {
        evs.iter()
            .filter_map(|e| e["choices"][0]["delta"][f].as_str())
            .collect()
    };
    let usage = &evs.last().expect("usage chunk")["usage"];
    assert_eq!(usage["completion_tokens"], max_tokens, "{usage}");
    (field("content"), field("reasoning_content"))
}
