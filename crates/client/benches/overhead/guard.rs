//! The repetition guard's own cost on the hot path: CPU per chunk of pushing one token's text
//! into a request's `LoopGuard`, with its periodic scans, one guard per 4,096-token request as a
//! stream would have. Two texts: varied prose (the filter rules every scan out) and text that
//! repeats itself without looping (a 1,400-byte passage three times, then another: the filter
//! passes every scan to the full pass, which finds nothing) — the cost's two ends.

use crate::host::{cpu_seconds, ticks_per_second};
use llmib_core::LoopGuard;

const PER_REQUEST: usize = 4096;

/// Words of about 5 bytes; `repeating`: each 1,400-byte passage comes three times in a row
/// (three copies are below the rule's four, so never a loop).
fn words(repeating: bool) -> Vec<String> {
    let mut out = Vec::with_capacity(PER_REQUEST);
    let mut passage = 0usize;
    while out.len() < PER_REQUEST {
        let words: Vec<String> = (0..200)
            .map(|i| format!(" w{}", (passage * 200 + i) * 7919 % 99_991))
            .collect();
        let copies = if repeating { 3 } else { 1 };
        for _ in 0..copies {
            out.extend(words.iter().cloned());
        }
        passage += 1;
    }
    out.truncate(PER_REQUEST);
    out
}

/// CPU nanoseconds per chunk of one token, scans included.
pub fn loop_guard_cost(repeating: bool) -> f64 {
    const N: usize = 20_000_000;
    let words = words(repeating);
    let ticks = ticks_per_second();
    let cpu0 = cpu_seconds("self", ticks).unwrap_or(0.0);
    let mut found = 0usize;
    let mut guard = LoopGuard::default();
    for i in 0..N {
        guard.push(Some(&words[i % PER_REQUEST]), None);
        if i % PER_REQUEST == PER_REQUEST - 1 {
            found += usize::from(std::mem::take(&mut guard).finish().is_some());
        }
    }
    let cpu = cpu_seconds("self", ticks).unwrap_or(0.0) - cpu0;
    assert_eq!(found, 0, "neither text is a loop");
    cpu * 1e9 / N as f64
}

/// Prints both texts' cost beside the client code's own `us` µs per chunk.
pub fn print_costs(us: f64) {
    for (repeating, text) in [(false, "varied text"), (true, "text that repeats, no loop")] {
        let ns = loop_guard_cost(repeating);
        println!(
            "Repetition guard alone ({text}, one token per chunk, scans included): {ns:.0} ns \
             CPU per chunk = {:.1} % of the client code alone",
            ns / (us * 1e3) * 100.0
        );
    }
}
