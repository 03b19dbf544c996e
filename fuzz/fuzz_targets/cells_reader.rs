//! The `cells.jsonl` reader on any bytes (torn lines, invalid UTF-8, hostile JSON): rows and a
//! skipped count, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (cells, skipped) = llmib_core::parse_cells(data);
    assert!(cells.len() + skipped <= data.len() + 1);
});
