//! The SSE decoder and the chunk parser on any bytes, split at a point the input chooses: an
//! answer or an error, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llmib_client::SseDecoder;
use llmib_client::parse_event;

fuzz_target!(|data: &[u8]| {
    let cut = data.first().map_or(0, |&b| usize::from(b)).min(data.len());
    let mut dec = SseDecoder::new();
    for part in [&data[..cut], &data[cut..]] {
        dec.push(part);
        while let Some(ev) = dec.next_event() {
            if let Ok(ev) = ev {
                let _ = parse_event(&ev);
            }
        }
    }
    if let Some(Ok(ev)) = dec.finish() {
        let _ = parse_event(&ev);
    }
});
