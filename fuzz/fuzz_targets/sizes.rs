//! Size, context-list and duration parsers on any text: an answer within bounds or an error.
#![no_main]
use libfuzzer_sys::fuzz_target;
use llmib_core::{MAX_DURATION_S, parse_context_list, parse_duration, parse_tokens};

fuzz_target!(|s: &str| {
    let _ = parse_tokens(s);
    let _ = parse_context_list(s);
    if let Ok(d) = parse_duration(s) {
        assert!(d.as_secs_f64() > 0.0 && d.as_secs_f64() <= MAX_DURATION_S);
    }
});
