//! The Prometheus text parser on any text: metrics and a skipped-line count, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|s: &str| {
    let m = llmib_client::Metrics::parse(s);
    let _ = m.skipped_lines();
});
