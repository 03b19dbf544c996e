//! Tests of the Messages and Responses parsers: every event's meaning, the cache trap, errors,
//! and whole streams (recorded from vLLM 0.32 on CPU, and written by hand from the APIs'
//! references) read the same at every byte boundary.

use super::*;
use crate::wire::sse::SseDecoder;
use llmib_core::{Api, InputReading};

/// What a whole stream said, as the measured stream reads it.
#[derive(Debug, Default, PartialEq)]
struct Summary {
    content: String,
    reasoning: String,
    text_events: usize,
    finish: Option<String>,
    completion: Option<u64>,
    prompt: Option<u64>,
    cached: Option<u64>,
    done: bool,
    error: Option<String>,
}

/// Decodes `parts` one after another and folds every event into a [`Summary`] (the prompt's
/// length read from all Messages reports by `reading`).
fn summarize(api: Api, parts: &[&[u8]], reading: InputReading) -> Summary {
    let mut dec = SseDecoder::new();
    let mut s = Summary::default();
    let mut reports = Vec::new();
    let mut fold = |ev: &SseEvent<'_>, s: &mut Summary| {
        let item = crate::wire::events::parse_event_of(api, ev).expect("parses");
        let c = match item {
            StreamItem::Done => {
                s.done = true;
                return;
            }
            StreamItem::Error(e) => {
                s.error = Some(e.to_string());
                return;
            }
            StreamItem::Final(c) => {
                s.done = true;
                c
            }
            StreamItem::Chunk(c) => c,
        };
        if c.has_text() {
            s.text_events += 1;
        }
        s.content.push_str(c.content.as_deref().unwrap_or(""));
        s.reasoning.push_str(c.reasoning.as_deref().unwrap_or(""));
        if let Some(f) = c.finish_reason {
            s.finish = Some(f.into_owned());
        }
        if let Some(u) = c.usage {
            s.completion = u.completion_tokens.or(s.completion);
            s.prompt = u.prompt_tokens.or(s.prompt);
            s.cached = u.cached_tokens.or(s.cached);
        }
        reports.extend(c.messages_usage);
    };
    for p in parts {
        dec.push(p);
        while let Some(ev) = dec.next_event() {
            fold(&ev.expect("valid sse"), &mut s);
        }
    }
    if let Some(ev) = dec.finish() {
        fold(&ev.expect("valid sse"), &mut s);
    }
    if let Ok(Some((n, _))) = llmib_core::request_prompt_tokens(&reports, reading) {
        s.prompt = Some(n);
    }
    s
}

fn whole(api: Api, text: &str) -> Summary {
    summarize(api, &[text.as_bytes()], InputReading::Exclusive)
}

/// Every split of `text` in two reads as the whole does.
fn same_at_every_split(api: Api, text: &str) {
    let b = text.as_bytes();
    let all = whole(api, text);
    for k in 0..=b.len() {
        let got = summarize(api, &[&b[..k], &b[k..]], InputReading::Exclusive);
        assert_eq!(got, all, "split at byte {k}");
    }
}

/// A Messages stream as Anthropic's reference gives it, with vLLM 0.32's usage: the start
/// event's whole prompt, the end event's uncached rest and cache write. A thinking block
/// first, a ping, and an event this parser does not know.
const MESSAGES_HAND: &str = concat!(
    "event: message_start\n",
    "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":1758,\"output_tokens\":0}}}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n",
    "event: ping\ndata: {\"type\": \"ping\"}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Hmm\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"abc\"}}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
    "event: content_block_start\n",
    "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi \\u00e9\"}}\n\n",
    "event: content_block_delta\n",
    "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"there\"}}\n\n",
    "event: some_future_event\ndata: {\"type\":\"some_future_event\",\"x\":[1,2]}\n\n",
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
    "event: message_delta\n",
    "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":94,\"output_tokens\":3,\"cache_creation_input_tokens\":1664,\"cache_read_input_tokens\":0}}\n\n",
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
);

/// A Responses stream as OpenAI's reference gives it: a reasoning item, then text, cut at
/// `max_output_tokens`.
const RESPONSES_HAND: &str = concat!(
    "event: response.created\n",
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"usage\":null}}\n\n",
    "event: response.in_progress\n",
    "data: {\"type\":\"response.in_progress\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"usage\":null}}\n\n",
    "event: response.output_item.added\n",
    "data: {\"type\":\"response.output_item.added\",\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\"}}\n\n",
    "event: response.reasoning_text.delta\n",
    "data: {\"type\":\"response.reasoning_text.delta\",\"sequence_number\":3,\"item_id\":\"rs_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Let me\"}\n\n",
    "event: response.function_call_arguments.delta\n",
    "data: {\"type\":\"response.function_call_arguments.delta\",\"sequence_number\":4,\"delta\":{\"odd\":true}}\n\n",
    "event: response.output_text.delta\n",
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":5,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\"Hello\",\"logprobs\":[]}\n\n",
    "event: response.output_text.delta\n",
    "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":6,\"item_id\":\"msg_1\",\"output_index\":1,\"content_index\":0,\"delta\":\" world\",\"logprobs\":[]}\n\n",
    "event: response.output_text.done\n",
    "data: {\"type\":\"response.output_text.done\",\"sequence_number\":7,\"text\":\"Hello world\"}\n\n",
    "event: response.incomplete\n",
    "data: {\"type\":\"response.incomplete\",\"sequence_number\":8,\"response\":{\"id\":\"resp_1\",\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":120,\"input_tokens_details\":{\"cached_tokens\":64},\"output_tokens\":4,\"output_tokens_details\":{\"reasoning_tokens\":2},\"total_tokens\":124}}}\n\n",
);

#[test]
fn a_messages_stream_reads_text_thinking_stop_and_the_trap_summed() {
    let s = whole(Api::Messages, MESSAGES_HAND);
    assert_eq!(s.content, "Hi éthere");
    assert_eq!(s.reasoning, "Hmm");
    assert_eq!(
        s.text_events, 3,
        "thinking and two text deltas; the signature is no text"
    );
    assert_eq!(s.finish.as_deref(), Some("length"));
    assert_eq!(s.completion, Some(3));
    // 94 uncached + 1,664 written to the cache: the start event's 1,758 agrees.
    assert_eq!(s.prompt, Some(1758));
    assert_eq!(s.cached, Some(0));
    assert!(s.done);
    assert_eq!(s.error, None);
}

#[test]
fn a_responses_stream_reads_reasoning_text_and_the_end_events_usage() {
    let s = whole(Api::Responses, RESPONSES_HAND);
    assert_eq!(s.content, "Hello world");
    assert_eq!(s.reasoning, "Let me");
    assert_eq!(s.finish.as_deref(), Some("length"));
    assert_eq!(
        (s.prompt, s.cached, s.completion),
        (Some(120), Some(64), Some(4))
    );
    assert!(s.done, "the end event ends the stream: no [DONE] follows");
}

#[test]
fn hand_written_streams_read_the_same_at_every_byte_boundary() {
    same_at_every_split(Api::Messages, MESSAGES_HAND);
    same_at_every_split(Api::Responses, RESPONSES_HAND);
}

fn ev<'a>(event: &'a str, data: &'a str) -> SseEvent<'a> {
    SseEvent { event, data }
}

#[test]
fn stop_reasons_take_chats_words() {
    let delta = |r: &str| {
        format!(
            r#"{{"type":"message_delta","delta":{{"stop_reason":"{r}"}},"usage":{{"output_tokens":2}}}}"#
        )
    };
    for (given, want) in [
        ("max_tokens", "length"),
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("refusal", "refusal"),
    ] {
        let d = delta(given);
        let StreamItem::Chunk(c) = parse_messages_event(&ev("message_delta", &d)).expect("ok")
        else {
            panic!("a chunk");
        };
        assert_eq!(c.finish_reason.as_deref(), Some(want), "{given}");
        assert_eq!(c.messages_usage, None, "no input_tokens, no prompt report");
    }
    let done = r#"{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":5,"output_tokens":1}}}"#;
    let StreamItem::Final(c) = parse_responses_event(&ev("response.completed", done)).expect("ok")
    else {
        panic!("the end");
    };
    assert_eq!(c.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn errors_in_the_stream_keep_the_servers_words() {
    let e = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded  now"}}"#;
    let StreamItem::Error(err) = parse_messages_event(&ev("error", e)).expect("ok") else {
        panic!("an error");
    };
    assert_eq!(err.to_string(), "Overloaded now (overloaded_error)");
    let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"KV cache full"}}}"#;
    let StreamItem::Error(err) = parse_responses_event(&ev("response.failed", failed)).expect("ok")
    else {
        panic!("an error");
    };
    assert_eq!(err.to_string(), "KV cache full (code server_error)");
    let top = r#"{"type":"error","code":"invalid_prompt","message":"too long","param":null}"#;
    let StreamItem::Error(err) = parse_responses_event(&ev("error", top)).expect("ok") else {
        panic!("an error");
    };
    assert_eq!(err.to_string(), "too long (code invalid_prompt)");
}

#[test]
fn broken_events_are_malformed_never_text() {
    for (api, data) in [
        (
            Api::Messages,
            r#"{"type":"content_block_delta","delta":{"type":"text_delta","te"#,
        ),
        (
            Api::Messages,
            r#"{"type":"message_delta","usage":{"output_tokens":"three"}}"#,
        ),
        (Api::Messages, r#"{"no_type":1}"#),
        (
            Api::Responses,
            r#"{"type":"response.output_text.delta","delta":"#,
        ),
        (Api::Responses, r#"{"type":"response.completed"}"#),
        (Api::Responses, "not json"),
    ] {
        let e = crate::wire::events::parse_event_of(api, &ev("", data)).expect_err(data);
        assert!(e.to_string().starts_with("malformed chunk"), "{e}");
    }
}

#[test]
fn the_viewer_tells_the_api_by_the_events_name() {
    assert_eq!(
        api_of(&ev("response.output_text.delta", "")),
        Api::Responses
    );
    assert_eq!(api_of(&ev("content_block_delta", "")), Api::Messages);
    assert_eq!(api_of(&ev("", "")), Api::Chat);
    assert_eq!(api_of(&ev("error", "")), Api::Chat);
}

/// vLLM 0.32 on CPU, recorded by `scripts/vllm/record_transcripts.sh`.
macro_rules! live {
    ($f:literal) => {
        include_str!(concat!("../../fixtures/transcripts/vllm/live/", $f))
    };
}

#[test]
fn vllms_messages_streams_cold_and_warm_read_the_whole_prompt() {
    let plain = whole(Api::Messages, live!("messages_stream.sse"));
    assert_eq!((plain.prompt, plain.completion), (Some(31), Some(8)));
    assert_eq!(plain.text_events, 8);
    assert_eq!(plain.finish.as_deref(), Some("length"));
    assert!(plain.done && plain.error.is_none());
    // The trap: 44 uncached tokens with 1,664 written (cold) or read (warm); the start
    // event's 1,708 agrees with their sum, never with 44.
    let cold = whole(Api::Messages, live!("messages_stream_long_cold.sse"));
    let warm = whole(Api::Messages, live!("messages_stream_long_warm.sse"));
    assert_eq!((cold.prompt, cold.cached), (Some(1708), Some(0)));
    assert_eq!((warm.prompt, warm.cached), (Some(1708), Some(1664)));
    let system = whole(Api::Messages, live!("messages_stream_system.sse"));
    assert_eq!(system.prompt, Some(54));
    let stop = whole(Api::Messages, live!("messages_stream_stop_sequence.sse"));
    assert_eq!(stop.finish.as_deref(), Some("stop"));
}

#[test]
fn vllms_responses_streams_read_usage_from_the_end_event() {
    let s = whole(Api::Responses, live!("responses_stream.sse"));
    assert_eq!(
        (s.prompt, s.completion, s.cached),
        (Some(32), Some(8), Some(0))
    );
    // Eight tokens in three deltas: tokens are never counted as events.
    assert_eq!(s.text_events, 3);
    assert_eq!(s.finish.as_deref(), Some("length"));
    assert!(
        s.done,
        "response.completed ends the stream; vLLM sends no [DONE]"
    );
    let warm = whole(Api::Responses, live!("responses_stream_long_warm.sse"));
    assert_eq!((warm.prompt, warm.cached), (Some(1710), Some(1664)));
    let stop = whole(Api::Responses, live!("responses_stream_stop.sse"));
    assert_eq!(stop.finish.as_deref(), Some("stop"));
}

#[test]
fn vllms_recorded_streams_read_the_same_at_every_byte_boundary() {
    for t in [
        live!("messages_stream.sse"),
        live!("messages_stream_long_cold.sse"),
        live!("messages_stream_long_warm.sse"),
        live!("messages_stream_stop_sequence.sse"),
    ] {
        same_at_every_split(Api::Messages, t);
    }
    for t in [
        live!("responses_stream.sse"),
        live!("responses_stream_long_warm.sse"),
        live!("responses_stream_stop.sse"),
    ] {
        same_at_every_split(Api::Responses, t);
    }
}

#[test]
fn vllms_error_bodies_on_the_new_routes_say_what_went_wrong() {
    for body in [
        live!("messages_too_long.json"),
        live!("responses_too_long.json"),
    ] {
        let msg = crate::wire::chunk::error_body_message(body);
        assert!(msg.contains("input tokens"), "{msg}");
    }
}

/// Tool calls in both APIs: the name where the call starts, its arguments as they stream
/// (generated text, so a deferred count sees them).
#[test]
fn tool_calls_name_their_function_and_stream_their_arguments() {
    let msg = |data: &'static str| {
        let e = ev("", data);
        match parse_messages_event(&e).expect("parses") {
            StreamItem::Chunk(c) => (
                c.has_text(),
                c.tool_name.map(|s| s.into_owned()),
                c.tool_args.map(|s| s.into_owned()),
            ),
            other => panic!("{other:?}"),
        }
    };
    let start = r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"get_weather","input":{}}}"#;
    assert_eq!(msg(start), (false, Some("get_weather".into()), None));
    let delta = r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\":"}}"#;
    assert_eq!(msg(delta), (true, None, Some("{\"city\":".into())));
    let resp = |data: &'static str| {
        let e = ev("", data);
        match parse_responses_event(&e).expect("parses") {
            StreamItem::Chunk(c) => (
                c.tool_name.map(|s| s.into_owned()),
                c.tool_args.map(|s| s.into_owned()),
            ),
            other => panic!("{other:?}"),
        }
    };
    let added = r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","id":"fc_1","call_id":"c1","name":"get_weather","arguments":""}}"#;
    assert_eq!(resp(added), (Some("get_weather".into()), None));
    let message = r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m"}}"#;
    assert_eq!(resp(message), (None, None));
    let args = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{\"city\""}"#;
    assert_eq!(resp(args), (None, Some("{\"city\"".into())));
}
