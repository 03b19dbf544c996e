//! `/v1/messages` and `/v1/responses` over HTTP: each route's event sequence and bodies, the
//! cache accounting of `/v1/messages` (the whole prompt in `message_start`, Anthropic's split
//! in `message_delta`, and the `messages_usage = "inclusive"` reading), reasoning as thinking
//! blocks and reasoning items, `x-api-key`, `count_tokens`, and that both routes share chat's
//! prompt tokens, prefix cache, stamps and metrics.

use std::net::SocketAddr;

use serde_json::{Value, json};

use super::raw::{events, exchange, exchange_with, named_events, post, wait_metric};
use crate::{SimConfig, builtin_profile, served_requests};

/// The `tiny-vllm` profile with fast steps.
pub(crate) fn vllm() -> SimConfig {
    SimConfig {
        decode_step_ms: vec![(1, 0.5)],
        ..builtin_profile("tiny-vllm").expect("tiny-vllm")
    }
}

/// A user message of about `words` prompt tokens (one token per 3-letter word).
pub(crate) fn long_text(words: usize) -> String {
    (0..words)
        .map(|i| ["cat", "dog", "fox", "owl"][i % 4])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A streamed `/v1/messages` request for `text`.
pub(crate) fn messages_body(text: &str, max_tokens: u32, stream: bool) -> Value {
    json!({
        "model": "sim/tiny", "max_tokens": max_tokens, "stream": stream, "ignore_eos": true,
        "system": "Be brief.", "messages": [{"role": "user", "content": text}],
    })
}

/// A `/v1/responses` request for `text`.
pub(crate) fn responses_body(text: &str, max_tokens: u32, stream: bool) -> Value {
    json!({
        "model": "sim/tiny", "max_output_tokens": max_tokens, "stream": stream,
        "ignore_eos": true, "instructions": "Be brief.", "input": text,
    })
}

/// The event names of a stream, checking each `event:` line against its data's `type`.
fn names(evs: &[(String, Value)]) -> Vec<String> {
    for (name, data) in evs {
        assert_eq!(data["type"], name.as_str(), "{name}: {data}");
    }
    evs.iter().map(|(n, _)| n.clone()).collect()
}

/// Chat's prompt and cached tokens for the same conversation.
async fn chat_usage(addr: SocketAddr, text: &str) -> (u64, u64) {
    let body = json!({
        "model": "sim/tiny", "max_tokens": 4, "ignore_eos": true,
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
    });
    let v: Value =
        serde_json::from_str(&post(addr, "/v1/chat/completions", &body).await).expect("chat JSON");
    let u = &v["usage"];
    (
        u["prompt_tokens"].as_u64().expect("prompt"),
        u["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .expect("cached"),
    )
}

#[tokio::test]
async fn messages_stream_the_anthropic_event_sequence() {
    let sim = crate::spawn(vllm()).await.expect("starts");
    let addr = sim.addr();
    let body = post(addr, "/v1/messages", &messages_body("Say hi", 5, true)).await;
    let evs = named_events(&body);
    let mut want = vec!["message_start", "content_block_start"];
    want.extend(["content_block_delta"; 5]);
    want.extend(["content_block_stop", "message_delta", "message_stop"]);
    assert_eq!(names(&evs), want, "{body}");
    assert!(!body.contains("[DONE]"), "{body}");
    let start = &evs[0].1["message"];
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["usage"]["output_tokens"], 0);
    assert_eq!(
        evs[1].1["content_block"],
        json!({"type": "text", "text": ""})
    );
    let text: String = evs[2..7]
        .iter()
        .map(|(_, e)| e["delta"]["text"].as_str().expect("text delta"))
        .collect();
    assert_eq!(text.split_whitespace().count(), 5, "{text}");
    let delta = &evs[8].1;
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
    assert_eq!(delta["usage"]["output_tokens"], 5);
    // The same conversation on chat: the same prompt tokens.
    let (prompt, _) = chat_usage(addr, "Say hi").await;
    assert_eq!(start["usage"]["input_tokens"], prompt);
    let (status, counted) = exchange(
        addr,
        "POST",
        "/v1/messages/count_tokens",
        Some(&messages_body("Say hi", 5, false).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{counted}");
    let counted: Value = serde_json::from_str(&counted).expect("count JSON");
    assert_eq!(counted["input_tokens"], prompt);
    sim.shutdown().await;
}

/// `message_start`'s input tokens and `message_delta`'s usage of one streamed request.
async fn messages_usage(addr: SocketAddr, text: &str) -> (u64, Value) {
    let evs = named_events(&post(addr, "/v1/messages", &messages_body(text, 3, true)).await);
    let start = evs[0].1["message"]["usage"]["input_tokens"]
        .as_u64()
        .expect("start input");
    let delta = evs
        .iter()
        .find(|(n, _)| n == "message_delta")
        .expect("message_delta");
    (start, delta.1["usage"].clone())
}

#[tokio::test]
async fn messages_usage_splits_the_prompt_as_vllm_does() {
    let text = long_text(1700);
    // The chat route on a server of its own: the prompt and what a warm call is served.
    let chat = crate::spawn(vllm()).await.expect("starts");
    let (prompt, cold_chat) = chat_usage(chat.addr(), &text).await;
    let (_, warm_chat) = chat_usage(chat.addr(), &text).await;
    chat.shutdown().await;
    assert!((1700..1800).contains(&prompt), "{prompt}");
    assert_eq!(cold_chat, 0);
    assert!(warm_chat > 1600, "{warm_chat}");

    let sim = crate::spawn(vllm()).await.expect("starts");
    let addr = sim.addr();
    let num = |u: &Value, k: &str| u[k].as_u64().unwrap_or_else(|| panic!("{k} in {u}"));
    // Cold: the whole blocks are written to the cache, the partial last block is the input.
    let (start, cold) = messages_usage(addr, &text).await;
    assert_eq!(start, prompt, "message_start: the whole prompt");
    assert_eq!(num(&cold, "cache_read_input_tokens"), 0);
    assert_eq!(num(&cold, "cache_creation_input_tokens"), prompt / 16 * 16);
    assert_eq!(num(&cold, "input_tokens"), prompt % 16);
    // Warm: read what chat's warm call is served; the three still sum to the prompt.
    let (start, warm) = messages_usage(addr, &text).await;
    assert_eq!(start, prompt);
    assert_eq!(num(&warm, "cache_read_input_tokens"), warm_chat);
    let sum = [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ]
    .iter()
    .map(|k| num(&warm, k))
    .sum::<u64>();
    assert_eq!(sum, prompt, "{warm}");
    assert!(num(&warm, "input_tokens") < start, "the trap: {warm}");
    sim.shutdown().await;

    // The other reading: the whole prompt on both events, the read a part of it.
    let mut cfg = vllm();
    cfg.apply_override("messages_usage=inclusive")
        .expect("a valid knob");
    let sim = crate::spawn(cfg).await.expect("starts");
    let _ = messages_usage(sim.addr(), &text).await;
    let (start, warm) = messages_usage(sim.addr(), &text).await;
    assert_eq!((start, num(&warm, "input_tokens")), (prompt, prompt));
    assert_eq!(num(&warm, "cache_read_input_tokens"), warm_chat);
    sim.shutdown().await;
}

#[tokio::test]
async fn reasoning_streams_as_a_thinking_block_then_text() {
    let sim = crate::spawn(SimConfig {
        reasoning_tokens: 2,
        ..vllm()
    })
    .await
    .expect("starts");
    let addr = sim.addr();
    let evs = named_events(&post(addr, "/v1/messages", &messages_body("Think", 4, true)).await);
    let blocks: Vec<(String, Value, Value)> = evs
        .iter()
        .filter(|(n, _)| n.starts_with("content_block"))
        .map(|(n, e)| {
            let what = e
                .get("content_block")
                .or(e.get("delta"))
                .map_or(Value::Null, |b| b["type"].clone());
            (n.clone(), e["index"].clone(), what)
        })
        .collect();
    let b = |n: &str, i: u64, t: Value| (n.to_string(), json!(i), t);
    assert_eq!(
        blocks,
        vec![
            b("content_block_start", 0, json!("thinking")),
            b("content_block_delta", 0, json!("thinking_delta")),
            b("content_block_delta", 0, json!("thinking_delta")),
            b("content_block_delta", 0, json!("signature_delta")),
            b("content_block_stop", 0, Value::Null),
            b("content_block_start", 1, json!("text")),
            b("content_block_delta", 1, json!("text_delta")),
            b("content_block_delta", 1, json!("text_delta")),
            b("content_block_stop", 1, Value::Null),
        ]
    );
    // Responses: a reasoning item, then the message item.
    let evs = named_events(&post(addr, "/v1/responses", &responses_body("Think", 4, true)).await);
    let deltas: Vec<&str> = evs
        .iter()
        .filter(|(n, _)| n.ends_with(".delta"))
        .map(|(n, _)| n.as_str())
        .collect();
    assert_eq!(
        deltas,
        [
            "response.reasoning_text.delta",
            "response.reasoning_text.delta",
            "response.output_text.delta",
            "response.output_text.delta"
        ]
    );
    let done = &evs.last().expect("an end").1["response"];
    assert_eq!(done["output"][0]["type"], "reasoning");
    assert_eq!(done["output"][1]["type"], "message");
    assert_eq!(
        done["usage"]["output_tokens_details"]["reasoning_tokens"],
        2
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn responses_stream_the_openai_event_sequence() {
    let sim = crate::spawn(vllm()).await.expect("starts");
    let addr = sim.addr();
    let body = post(addr, "/v1/responses", &responses_body("Say hi", 3, true)).await;
    let evs = named_events(&body);
    let mut want = vec![
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ];
    want.extend(["response.output_text.delta"; 3]);
    want.extend([
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]);
    assert_eq!(names(&evs), want, "{body}");
    assert!(!body.contains("[DONE]"));
    let seq: Vec<u64> = evs
        .iter()
        .map(|(_, e)| e["sequence_number"].as_u64().expect("numbered"))
        .collect();
    assert_eq!(seq, (0..evs.len() as u64).collect::<Vec<_>>());
    assert_eq!(evs[0].1["response"]["status"], "in_progress");
    assert_eq!(evs[0].1["response"]["usage"], Value::Null);
    let text: String = evs[4..7]
        .iter()
        .map(|(_, e)| e["delta"].as_str().expect("delta"))
        .collect();
    assert_eq!(evs[7].1["text"], text.as_str());
    let end = &evs[10].1["response"];
    // A length stop: vLLM's `response.completed` with an incomplete response.
    assert_eq!(end["status"], "incomplete");
    assert_eq!(end["incomplete_details"]["reason"], "max_output_tokens");
    assert_eq!(end["output"][0]["content"][0]["text"], text.as_str());
    // One more than chat's: the second BOS.
    let prompt = chat_usage(addr, "Say hi").await.0 + 1;
    let u = &end["usage"];
    assert_eq!(
        (&u["input_tokens"], &u["output_tokens"], &u["total_tokens"]),
        (&json!(prompt), &json!(3), &json!(prompt + 3))
    );
    // Warm: the cached tokens are part of the input tokens.
    let evs = named_events(&post(addr, "/v1/responses", &responses_body("Say hi", 3, true)).await);
    let u = &evs.last().expect("an end").1["response"]["usage"];
    assert_eq!(u["input_tokens"], prompt);
    assert_eq!(u["input_tokens_details"]["cached_tokens"], prompt);
    sim.shutdown().await;
}

#[tokio::test]
async fn non_streamed_bodies_carry_the_whole_answer() {
    let sim = crate::spawn(SimConfig {
        reasoning_tokens: 1,
        ..vllm()
    })
    .await
    .expect("starts");
    let addr = sim.addr();
    let (status, body) = exchange(
        addr,
        "POST",
        "/v1/messages",
        Some(&messages_body("Say hi", 3, false).to_string()),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let m: Value = serde_json::from_str(&body).expect("message JSON");
    assert_eq!(
        (&m["type"], &m["role"]),
        (&json!("message"), &json!("assistant"))
    );
    assert_eq!(m["content"][0]["type"], "thinking");
    assert_eq!(m["content"][1]["type"], "text");
    assert_eq!(m["stop_reason"], "max_tokens");
    let u = &m["usage"];
    assert_eq!(u["output_tokens"], 3);
    let (prompt, _) = chat_usage(addr, "Say hi").await;
    let sum = u["input_tokens"].as_u64().unwrap_or(0)
        + u["cache_creation_input_tokens"].as_u64().unwrap_or(0)
        + u["cache_read_input_tokens"].as_u64().unwrap_or(0);
    assert_eq!(sum, prompt, "{u}");

    let r: Value = serde_json::from_str(
        &post(addr, "/v1/responses", &responses_body("Say hi", 3, false)).await,
    )
    .expect("response JSON");
    assert_eq!(r["object"], "response");
    assert_eq!(r["status"], "incomplete");
    assert_eq!(r["output"][0]["type"], "reasoning");
    assert_eq!(r["output"][1]["content"][0]["type"], "output_text");
    assert_eq!(r["usage"]["output_tokens"], 3);
    sim.shutdown().await;
}

#[tokio::test]
async fn x_api_key_opens_the_messages_route_only_when_asked() {
    let keyed = |x_api_key| SimConfig {
        api_key: Some("k1".into()),
        messages_x_api_key: x_api_key,
        ..vllm()
    };
    let m = messages_body("Say hi", 2, false);
    let anthropic = "x-api-key: k1\r\nanthropic-version: 2023-06-01\r\n";
    let bearer = "Authorization: Bearer k1\r\nanthropic-version: 2023-06-01\r\n";
    // vLLM reads Bearer only: Anthropic's header alone is refused, in the common 401 body.
    let sim = crate::spawn(keyed(false)).await.expect("starts");
    let (status, body) = exchange_with(sim.addr(), "/v1/messages", anthropic, &m).await;
    assert_eq!(
        (status, body.as_str()),
        (401, "{\"error\":\"Unauthorized\"}")
    );
    let (status, _) = exchange_with(sim.addr(), "/v1/messages", bearer, &m).await;
    assert_eq!(status, 200);
    sim.shutdown().await;

    let sim = crate::spawn(keyed(true)).await.expect("starts");
    let addr = sim.addr();
    let status = |r: (u16, String)| r.0;
    for (path, headers, want) in [
        ("/v1/messages", "", 401),
        ("/v1/messages", anthropic, 200),
        ("/v1/messages", bearer, 200),
        ("/v1/messages", "x-api-key: nope\r\n", 401),
        ("/v1/messages/count_tokens", "x-api-key: k1\r\n", 200),
        // Anthropic's header is for Anthropic's route only.
        ("/v1/responses", "x-api-key: k1\r\n", 401),
        ("/v1/responses", bearer, 200),
    ] {
        let body = if path == "/v1/responses" {
            responses_body("Say hi", 2, false)
        } else {
            m.clone()
        };
        let got = status(exchange_with(addr, path, headers, &body).await);
        assert_eq!(got, want, "{path} with {headers:?}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn errors_take_each_route_shape() {
    let sim = crate::spawn(vllm()).await.expect("starts");
    let addr = sim.addr();
    let long = long_text(5000);
    for (path, body) in [
        ("/v1/messages", messages_body(&long, 10, true)),
        ("/v1/responses", responses_body(&long, 10, true)),
    ] {
        // Streamed or not, a prompt over the context is a JSON 400, not a stream.
        let (status, text) = exchange(addr, "POST", path, Some(&body.to_string())).await;
        assert_eq!(status, 400, "{text}");
        let e: Value = serde_json::from_str(&text).expect("error JSON");
        let message = if path == "/v1/messages" {
            // vLLM keeps its own error type inside Anthropic's shape.
            assert_eq!(
                (&e["type"], &e["error"]["type"]),
                (&json!("error"), &json!("BadRequestError"))
            );
            &e["error"]["message"]
        } else {
            assert_eq!(e["error"]["param"], "input_tokens");
            &e["error"]["message"]
        };
        assert!(
            message
                .as_str()
                .is_some_and(|m| m.contains("maximum context length is 4096 tokens")),
            "{e}"
        );
    }
    // Prompt + output over the context is not refused: the output is cut to fit.
    let fits = long_text(4000);
    let m: Value =
        serde_json::from_str(&post(addr, "/v1/messages", &messages_body(&fits, 500, false)).await)
            .expect("message JSON");
    let u = &m["usage"];
    let total: u64 = [
        "input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
    ]
    .iter()
    .map(|k| u[k].as_u64().unwrap_or(0))
    .sum();
    assert_eq!(
        (total, &m["stop_reason"]),
        (4096, &json!("max_tokens")),
        "{m}"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn stamps_and_metrics_count_both_routes() {
    let sim = crate::spawn(SimConfig {
        stamp_chunks: true,
        ..vllm()
    })
    .await
    .expect("starts");
    let addr = sim.addr();
    let text = long_text(100);
    let m = events(&post(addr, "/v1/messages", &messages_body(&text, 4, true)).await);
    let prompt = m[0]["message"]["usage"]["input_tokens"]
        .as_u64()
        .expect("prompt");
    let _ = post(addr, "/v1/messages", &messages_body(&text, 4, true)).await;
    let _ = post(addr, "/v1/responses", &responses_body(&text, 6, true)).await;
    let served = served_requests(&sim.take_arrival_stamps(), &sim.take_chunk_stamps());
    let seen: Vec<(u64, u32, bool, u64)> = served
        .iter()
        .map(|r| (r.prompt_tokens, r.tokens, r.finished, r.cached_tokens))
        .collect();
    // The second request is served the first's prompt from the prefix cache; the Responses
    // prompt starts with a second BOS, so it shares no block with them.
    assert_eq!(
        seen,
        vec![
            (prompt, 4, true, 0),
            (prompt, 4, true, prompt),
            (prompt + 1, 6, true, 0)
        ]
    );
    let p = prompt as f64;
    for (name, want) in [
        ("vllm:generation_tokens_total", 14.0),
        ("vllm:prompt_tokens_total", 3.0 * p + 1.0),
        ("vllm:prefix_cache_hits_total", p),
    ] {
        assert_eq!(wait_metric(addr, name, want).await, want, "{name}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn a_ping_only_when_asked_and_sglang_serves_the_same_routes() {
    let sim = crate::spawn(SimConfig {
        messages_ping: true,
        ..vllm()
    })
    .await
    .expect("starts");
    let evs = named_events(&post(sim.addr(), "/v1/messages", &messages_body("Hi", 2, true)).await);
    let first: Vec<&str> = evs.iter().take(3).map(|(n, _)| n.as_str()).collect();
    assert_eq!(first, ["message_start", "ping", "content_block_start"]);
    sim.shutdown().await;

    let sim = crate::spawn(SimConfig {
        decode_step_ms: vec![(1, 0.5)],
        ..builtin_profile("tiny").expect("tiny")
    })
    .await
    .expect("starts");
    let addr = sim.addr();
    for (path, body, end) in [
        ("/v1/messages", messages_body("Hi", 3, true), "message_stop"),
        (
            "/v1/responses",
            responses_body("Hi", 3, true),
            "response.completed",
        ),
    ] {
        let evs = named_events(&post(addr, path, &body).await);
        assert_eq!(evs.last().map(|(n, _)| n.as_str()), Some(end), "{path}");
        assert!(!evs.iter().any(|(n, _)| n == "ping"), "{path}");
    }
    sim.shutdown().await;
}
