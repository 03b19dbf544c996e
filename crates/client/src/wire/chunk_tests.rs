//! Tests of the chunk parser on recorded and hand-written transcripts of every engine.

use super::*;
use crate::wire::sse::{OwnedSseEvent, SseDecoder};

fn events(fx: &str) -> Vec<OwnedSseEvent> {
    let mut d = SseDecoder::new();
    let mut v = d.push_collect(fx.as_bytes()).expect("valid sse");
    if let Some(Ok(e)) = d.finish() {
        v.push(e.to_owned_event());
    }
    v
}

fn items(fx: &str) -> Vec<StreamItem<'static>> {
    events(fx)
        .into_iter()
        .map(|e| {
            let ev = SseEvent {
                event: &e.event,
                data: &e.data,
            };
            into_owned(parse_event(&ev).expect("parses"))
        })
        .collect()
}

fn into_owned(i: StreamItem<'_>) -> StreamItem<'static> {
    match i {
        StreamItem::Done => StreamItem::Done,
        StreamItem::Error(e) => StreamItem::Error(e),
        StreamItem::Final(c) => match into_owned(StreamItem::Chunk(c)) {
            StreamItem::Chunk(c) => StreamItem::Final(c),
            other => other,
        },
        StreamItem::Chunk(c) => StreamItem::Chunk(Chunk {
            choices: c.choices,
            content: c.content.map(|x| Cow::Owned(x.into_owned())),
            reasoning: c.reasoning.map(|x| Cow::Owned(x.into_owned())),
            finish_reason: c.finish_reason.map(|x| Cow::Owned(x.into_owned())),
            usage: c.usage,
            cache_n: c.cache_n,
            messages_usage: c.messages_usage,
            tool_name: c.tool_name.map(|x| Cow::Owned(x.into_owned())),
            tool_args: c.tool_args.map(|x| Cow::Owned(x.into_owned())),
        }),
    }
}

fn chunk<'a>(i: &'a StreamItem<'static>) -> &'a Chunk<'static> {
    match i {
        StreamItem::Chunk(c) => c,
        other => panic!("expected a chunk, got {other:?}"),
    }
}

#[test]
fn sglang_continuous_usage_and_final_usage_chunk() {
    let it = items(include_str!(
        "../../fixtures/transcripts/sglang/completions_stream.sse"
    ));
    assert_eq!(it.len(), 6);
    let c0 = chunk(&it[0]);
    assert_eq!(c0.content.as_deref(), Some(" The"));
    assert_eq!(c0.usage.and_then(|u| u.completion_tokens), Some(1));
    // A speculative-decoding style chunk carries three tokens.
    assert_eq!(
        chunk(&it[1]).usage.and_then(|u| u.completion_tokens),
        Some(4)
    );
    assert_eq!(chunk(&it[3]).finish_reason.as_deref(), Some("length"));
    let last = chunk(&it[4]);
    assert_eq!(last.choices, 0);
    assert!(last.content.is_none());
    let u = last.usage.expect("usage");
    assert_eq!(
        (
            u.prompt_tokens,
            u.completion_tokens,
            u.total_tokens,
            u.cached_tokens
        ),
        (Some(12), Some(8), Some(20), Some(0))
    );
    assert_eq!(it[5], StreamItem::Done);
    // prompt_tokens_details: null is tolerated.
    assert_eq!(c0.usage.and_then(|u| u.cached_tokens), None);
}

#[test]
fn chat_role_only_first_chunk_is_not_text() {
    for fx in [
        include_str!("../../fixtures/transcripts/sglang/chat_stream.sse"),
        include_str!("../../fixtures/transcripts/vllm/chat_stream.sse"),
        include_str!("../../fixtures/transcripts/generic/chat_stream_crlf.sse"),
    ] {
        let it = items(fx);
        assert!(!chunk(&it[0]).has_text(), "{fx}");
        assert!(chunk(&it[1]).has_text());
        assert_eq!(*it.last().expect("items"), StreamItem::Done);
    }
    let c = parse_data(r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}"#)
        .expect("parses");
    let StreamItem::Chunk(c) = c else {
        panic!("chunk")
    };
    assert_eq!(c.content, None);
    assert_eq!(c.choices, 1);
}

#[test]
fn vllm_usage_on_empty_choices_chunk() {
    let it = items(include_str!(
        "../../fixtures/transcripts/vllm/completions_stream.sse"
    ));
    let fin = chunk(&it[2]);
    assert_eq!(fin.finish_reason.as_deref(), Some("length"));
    let u = chunk(&it[3]).usage.expect("usage");
    assert_eq!(chunk(&it[3]).choices, 0);
    assert_eq!(u.cached_tokens, Some(384));
}

#[test]
fn llama_cpp_usage_on_finish_chunk() {
    // Recorded: 8 text chunks, then text "" + finish_reason + usage + timings, then [DONE];
    // the same with include_usage, and continuous_usage_stats ignored.
    for fx in [
        include_str!("../../fixtures/transcripts/llamacpp/completions_stream.sse"),
        include_str!("../../fixtures/transcripts/llamacpp/completions_stream_usage.sse"),
        include_str!("../../fixtures/transcripts/llamacpp/completions_stream_continuous_usage.sse"),
    ] {
        let it = items(fx);
        assert_eq!(it.len(), 10);
        assert!(
            it[..8]
                .iter()
                .all(|i| chunk(i).has_text() && chunk(i).usage.is_none())
        );
        let fin = chunk(&it[8]);
        assert_eq!(fin.choices, 1);
        assert_eq!(fin.content.as_deref(), Some(""));
        assert!(!fin.has_text());
        assert_eq!(fin.finish_reason.as_deref(), Some("length"));
        let u = fin.usage.expect("usage on the finish chunk");
        assert_eq!((u.completion_tokens, u.prompt_tokens), (Some(8), Some(6)));
        assert!(u.cached_tokens.is_some());
        // What the slot's cache served (`timings.cache_n`): 1 token of the first request's 6,
        // 5 of the later ones', which repeat its prompt.
        assert!(matches!(fin.cache_n, Some(1 | 5)), "{:?}", fin.cache_n);
        assert_eq!(it[9], StreamItem::Done);
    }
    // Prompt + max_tokens over the slot: cut with "length", usage says 14 tokens.
    let it = items(include_str!(
        "../../fixtures/transcripts/llamacpp/completions_stream_truncated.sse"
    ));
    let fin = chunk(&it[it.len() - 2]);
    assert_eq!(fin.finish_reason.as_deref(), Some("length"));
    assert_eq!(fin.usage.and_then(|u| u.completion_tokens), Some(14));
}

#[test]
fn llama_cpp_chat_null_role_chunk_and_separate_usage() {
    let it = items(include_str!(
        "../../fixtures/transcripts/llamacpp/chat_stream_usage.sse"
    ));
    let first = chunk(&it[0]);
    assert_eq!((first.content.as_deref(), first.choices), (None, 1));
    let usage = chunk(&it[it.len() - 2]);
    assert_eq!(usage.choices, 0);
    assert_eq!(usage.usage.and_then(|u| u.completion_tokens), Some(8));
    let texts = it
        .iter()
        .filter(|i| matches!(i, StreamItem::Chunk(c) if c.has_text()));
    assert_eq!(texts.count(), 8);
}

#[test]
fn errors_inside_a_200_stream() {
    let it = items(include_str!(
        "../../fixtures/transcripts/sglang/error_in_stream.sse"
    ));
    let StreamItem::Error(e) = &it[1] else {
        panic!("error expected")
    };
    assert!(e.message.contains("out of memory"));
    assert_eq!(e.code.as_deref(), Some("503"));

    let it = items(include_str!(
        "../../fixtures/transcripts/vllm/error_in_stream.sse"
    ));
    let StreamItem::Error(e) = &it[1] else {
        panic!("error expected")
    };
    assert_eq!(e.kind.as_deref(), Some("InternalServerError"));

    let it = items(include_str!(
        "../../fixtures/transcripts/tgi/error_in_stream.sse"
    ));
    let StreamItem::Error(e) = &it[1] else {
        panic!("error expected")
    };
    assert!(e.message.starts_with("Request failed during generation"));
    // TGI's stream ends after the error, without [DONE].
    assert_eq!(it.len(), 2);

    let it = items(include_str!(
        "../../fixtures/transcripts/ollama/error_in_stream.sse"
    ));
    assert!(matches!(&it[0], StreamItem::Error(e) if e.kind.as_deref() == Some("api_error")));

    // llama.cpp: newer builds send data: {"error": …}, older ones an `error:` field.
    let it = items(
        "error: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n",
    );
    assert!(matches!(&it[0], StreamItem::Error(e) if e.message == "slot unavailable"));
    let it = items(
        "data: {\"error\":{\"code\":400,\"message\":\"too long\",\"type\":\"exceed_context_size_error\"}}\n\n",
    );
    assert!(matches!(&it[0], StreamItem::Error(e) if e.code.as_deref() == Some("400")));
}

#[test]
fn every_fixture_parses() {
    for fx in [
        include_str!("../../fixtures/transcripts/tgi/completions_stream.sse"),
        include_str!("../../fixtures/transcripts/trtllm/completions_stream.sse"),
        include_str!("../../fixtures/transcripts/ollama/completions_stream.sse"),
        include_str!("../../fixtures/transcripts/generic/truncated_cr.sse"),
    ] {
        let it = items(fx);
        assert!(
            it.iter()
                .any(|i| matches!(i, StreamItem::Chunk(c) if c.has_text()))
        );
    }
    let it = items(include_str!(
        "../../fixtures/transcripts/trtllm/completions_stream.sse"
    ));
    assert_eq!(
        chunk(&it[1]).usage.and_then(|u| u.completion_tokens),
        Some(3)
    );
}

#[test]
fn malformed_json_is_an_error_value() {
    for bad in [
        "{",
        "{\"choices\": 3}",
        "not json",
        "{\"usage\":{\"prompt_tokens\":\"x\"}}",
    ] {
        let e = parse_data(bad).expect_err(bad);
        assert!(e.to_string().starts_with("malformed chunk"));
    }
    assert_eq!(parse_data("  [DONE]  "), Ok(StreamItem::Done));
    // Unknown fields are fine.
    assert!(parse_data(r#"{"foo":{"bar":[1,2]},"choices":[{"text":"x","extra":1}]}"#).is_ok());
}

#[test]
fn escapes_and_reasoning() {
    let StreamItem::Chunk(c) =
        parse_data(r#"{"choices":[{"delta":{"reasoning_content":"think\n","content":null}}]}"#)
            .expect("parses")
    else {
        panic!("chunk")
    };
    assert_eq!(c.reasoning.as_deref(), Some("think\n"));
    assert!(c.has_text());
    assert_eq!(c.text_len(), 6);
}

#[test]
fn non_streaming_error_bodies() {
    assert_eq!(
        error_body_message(
            r#"{"error":{"code":400,"message":"request (4106 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error"}}"#
        ),
        "request (4106 tokens) exceeds the available context size (4096 tokens) (exceed_context_size_error, code 400)"
    );
    assert_eq!(
        error_body_message(
            r#"{"object":"error","message":"The model `x` does not exist.","type":"NotFoundError","param":null,"code":404}"#
        ),
        "The model `x` does not exist. (NotFoundError, code 404)"
    );
    assert_eq!(
        error_body_message(
            r#"{"error":"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096","error_type":"validation"}"#
        ),
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096"
    );
    assert_eq!(
        error_body_message(include_str!(
            "../../fixtures/transcripts/llamacpp/error_context_exceeded_stream.sse"
        )),
        "request (4102 tokens) exceeds the available context size (4096 tokens), try increasing it (exceed_context_size_error, code 400)"
    );
    assert_eq!(
        error_body_message(include_str!(
            "../../fixtures/transcripts/llamacpp/error_unauthorized.json"
        )),
        "Invalid API Key (authentication_error, code 401)"
    );
    assert_eq!(error_body_message(r#"{"detail":"Not Found"}"#), "Not Found");
    assert_eq!(
        error_body_message(r#"{"detail":[{"loc":["body","model"],"msg":"field required"}]}"#),
        "field required"
    );
    assert_eq!(error_body_message("Unauthorized\n"), "Unauthorized");
    assert_eq!(error_body_message(""), "(empty body)");
    assert!(error_body_message(&"x".repeat(1000)).ends_with('…'));
}

/// Ingest cost: decode + parse a realistic stream many times. Run with
/// `cargo test --release -p llmib-client --lib ingest_throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn ingest_throughput() {
    let fx = include_str!("../../fixtures/transcripts/sglang/completions_stream.sse");
    let one: &[u8] = fx.as_bytes();
    let reps = 200_000;
    let mut d = SseDecoder::new();
    let t = std::time::Instant::now();
    let (mut events, mut text) = (0u64, 0usize);
    for _ in 0..reps {
        // Deliver in 3 reads, as TCP might.
        for part in one.chunks(one.len() / 3 + 1) {
            d.push(part);
            while let Some(ev) = d.next_event() {
                let ev = ev.expect("valid");
                if let Ok(StreamItem::Chunk(c)) = parse_event(&ev) {
                    text += c.text_len();
                }
                events += 1;
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!(
        "decode+parse: {events} events in {s:.3}s: {:.2} M events/s, {:.0} MB/s ({text} text bytes)",
        events as f64 / s / 1e6,
        (one.len() * reps) as f64 / s / 1e6
    );
    let t = std::time::Instant::now();
    let mut n = 0u64;
    for _ in 0..reps {
        for part in one.chunks(one.len() / 3 + 1) {
            d.push(part);
            while let Some(ev) = d.next_event() {
                n += u64::from(ev.is_ok());
            }
        }
    }
    let s = t.elapsed().as_secs_f64();
    println!("decode only: {:.2} M events/s", n as f64 / s / 1e6);
}

/// A chat tool-call delta: the name on the first, the arguments as generated text.
#[test]
fn a_tool_call_delta_names_its_function_and_carries_its_arguments() {
    let first = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}"#;
    let StreamItem::Chunk(c) = parse_data(first).expect("parses") else {
        panic!("a chunk")
    };
    assert_eq!(c.tool_name.as_deref(), Some("get_weather"));
    assert!(!c.has_text(), "an empty argument is no token");
    let next = r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": "}}]},"finish_reason":null}]}"#;
    let StreamItem::Chunk(c) = parse_data(next).expect("parses") else {
        panic!("a chunk")
    };
    assert_eq!(c.text_len(), 9);
    assert_eq!(
        (c.tool_name, c.tool_args.as_deref()),
        (None, Some("{\"city\": "))
    );
}
