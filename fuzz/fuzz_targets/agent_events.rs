//! The SSE decoder and the agents' two event parsers (Anthropic Messages, OpenAI Responses) on
//! any bytes, split at a point the input chooses, with every Messages usage report read
//! together: an answer or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llmib_client::{ChunkError, SseDecoder, StreamItem, parse_event_of};
use llmib_core::MessagesUsage;
use llmib_core::{Api, InputReading, request_prompt_tokens};

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else {
        return;
    };
    // The first byte picks the API and the reading; the second the split point.
    let api = if first & 1 == 0 {
        Api::Messages
    } else {
        Api::Responses
    };
    let reading = if first & 2 == 0 {
        InputReading::Exclusive
    } else {
        InputReading::Inclusive
    };
    let cut = rest.first().map_or(0, |&b| usize::from(b)).min(rest.len());
    let mut dec = SseDecoder::new();
    let mut reports = Vec::new();
    for part in [&rest[..cut], &rest[cut..]] {
        dec.push(part);
        while let Some(ev) = dec.next_event() {
            if let Ok(ev) = ev {
                take(parse_event_of(api, &ev), &mut reports);
            }
        }
    }
    if let Some(Ok(ev)) = dec.finish() {
        take(parse_event_of(api, &ev), &mut reports);
    }
    let _ = request_prompt_tokens(&reports, reading);
});

/// Keeps a Messages usage report, if the event carried one.
fn take(item: Result<StreamItem<'_>, ChunkError>, reports: &mut Vec<MessagesUsage>) {
    if let Ok(StreamItem::Chunk(c) | StreamItem::Final(c)) = item {
        reports.extend(c.messages_usage);
    }
}
