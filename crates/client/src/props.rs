//! Property runs over what a hostile or broken server can send (issue 12): the SSE decoder, the
//! chunk parser and the metrics parser answer or error on any bytes, however they are split
//! across reads, and never panic. Each property runs proptest's default 256 cases.

use crate::server::metrics::Metrics;
use crate::wire::chunk::{StreamItem, parse_event};
use crate::wire::events::parse_event_of;
use crate::wire::sse::SseDecoder;
use proptest::prelude::*;

/// Bytes shaped like an SSE stream of OpenAI chunks, with noise mixed in.
fn sse_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(b"data: [DONE]\n\n".to_vec()),
        Just(
            b"data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n"
                .to_vec()
        ),
        Just(
            b"data: {\"choices\":[{\"text\":\"\\u00e9\"}],\"usage\":{\"completion_tokens\":3}}\n\n"
                .to_vec()
        ),
        Just(b"event: error\ndata: {\"error\":{\"message\":\"x\"}}\n\n".to_vec()),
        Just(b": keep-alive\r\n\r\n".to_vec()),
        Just(b"error: {\"code\":500}\n\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..64),
    ];
    proptest::collection::vec(line, 0..12).prop_map(|v| v.concat())
}

/// Bytes shaped like a Messages or Responses stream, with noise and broken events mixed in.
fn agent_bytes() -> impl Strategy<Value = Vec<u8>> {
    let line = prop_oneof![
        Just(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9}}}\n\n".to_vec()),
        Just(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"\\u00e9\"}}\n\n".to_vec()),
        Just(b"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"input_tokens\":1,\"output_tokens\":2,\"cache_read_input_tokens\":8}}\n\n".to_vec()),
        Just(b"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n".to_vec()),
        Just(b"event: error\ndata: {\"type\":\"error\",\"error\":{\"message\":\"x\"}}\n\n".to_vec()),
        Just(b"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n".to_vec()),
        Just(b"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":3}}}\n\n".to_vec()),
        Just(b"data: {\"type\":\"response.failed\",\"response\":{\"error\":7}}\n\n".to_vec()),
        proptest::collection::vec(any::<u8>(), 0..64),
    ];
    proptest::collection::vec(line, 0..12).prop_map(|v| v.concat())
}

proptest! {
    #[test]
    fn agent_events_never_panic_however_split_and_read_alike(
        bytes in agent_bytes(),
        cut in any::<usize>(),
        responses in any::<bool>(),
    ) {
        let api = if responses { llmib_core::Api::Responses } else { llmib_core::Api::Messages };
        // What the stream says, as the items' debug text: the same whatever the split.
        let read = |parts: &[&[u8]]| {
            let mut dec = SseDecoder::new();
            let mut said = Vec::new();
            for p in parts {
                dec.push(p);
                while let Some(ev) = dec.next_event() {
                    if let Ok(ev) = ev {
                        said.push(format!("{:?}", parse_event_of(api, &ev)));
                    }
                }
            }
            if let Some(Ok(ev)) = dec.finish() {
                let item = parse_event_of(api, &ev);
                if let Ok(StreamItem::Chunk(c) | StreamItem::Final(c)) = &item {
                    let _ = llmib_core::request_prompt_tokens(
                        c.messages_usage.as_slice(),
                        llmib_core::InputReading::Exclusive,
                    );
                }
                said.push(format!("{item:?}"));
            }
            said
        };
        let k = cut % (bytes.len() + 1);
        prop_assert_eq!(read(&[&bytes[..k], &bytes[k..]]), read(&[&bytes]));
    }

    #[test]
    fn sse_and_chunks_never_panic_however_split(
        bytes in sse_bytes(),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        points.sort_unstable();
        let mut dec = SseDecoder::new();
        let mut last = 0;
        for p in points.into_iter().chain([bytes.len()]) {
            dec.push(&bytes[last..p]);
            last = p;
            while let Some(ev) = dec.next_event() {
                if let Ok(ev) = ev {
                    let _ = parse_event(&ev);
                }
            }
        }
        if let Some(Ok(ev)) = dec.finish() {
            let _ = parse_event(&ev);
        }
    }

    #[test]
    fn metrics_text_never_panics(text in any::<String>(), extra in "[a-z_:{}=\" 0-9.eE+-]{0,80}") {
        let m = Metrics::parse(&text);
        let _ = m.skipped_lines();
        let joined = format!("{text}\n{extra}\n");
        let _ = Metrics::parse(&joined).skipped_lines();
    }
}
