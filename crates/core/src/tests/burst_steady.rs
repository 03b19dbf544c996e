//! Known answers of a burst's steady-state window: where it opens and closes (an end before a
//! send at the same instant), what counts inside it, the threshold of N, and the bursts that
//! have none.

use super::*;
use crate::record::Chunk;

const MS: u64 = 1_000_000;

fn rec(sent_ms: u64, chunk_ms: &[u64], usage: Option<u64>) -> RequestRecord {
    RequestRecord {
        stream: 0,
        sent_ns: sent_ms * MS,
        headers_ns: None,
        chunks: chunk_ms
            .iter()
            .map(|t| Chunk {
                t_ns: t * MS,
                tokens: 1,
            })
            .collect(),
        end_ns: chunk_ms.last().copied().unwrap_or(sent_ms) * MS,
        outcome: Outcome::Finished {
            reason: "length".into(),
        },
        prompt_tokens_reported: Some(100),
        completion_tokens_reported: usage,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

/// N = 2: two requests at 0 (ending at 40 and 50 ms), the third sent at 40 as the first ends.
fn burst() -> Vec<RequestRecord> {
    vec![
        rec(0, &[10, 20, 30, 40], Some(4)),
        rec(0, &[20, 30, 40, 50], Some(4)),
        rec(40, &[60, 80, 100], None),
    ]
}

#[test]
fn the_window_is_where_n_were_in_flight() {
    let f = steady_figures(&burst(), 2).expect("a window");
    // Two in flight from 0; at 40 the first ends before the third is sent (ties: end first),
    // so the count dips to 1 and comes back; it last drops below 2 at 50.
    assert_eq!((f.start_s, f.end_s), (0.0, 0.05));
    assert_eq!((f.threshold_requests, f.peak_in_flight), (2, 2));
    // Sent in [0, 50): all three; ended in it: the first only (50 is outside).
    assert_eq!((f.requests_started, f.requests_completed), (3, 1));
    assert!((f.requests_per_s - 20.0).abs() < 1e-9);
    // Chunks in [0, 50): four of the first, three of the second (50 excluded).
    assert!(
        (f.output_tok_per_s - 140.0).abs() < 1e-9,
        "{}",
        f.output_tok_per_s
    );
    assert_eq!(f.input_tok_per_s, Some(6000.0));
    let ttft = f.ttft_ms.expect("ttft");
    assert_eq!(
        (ttft.n, ttft.min, ttft.p50, ttft.max),
        (3, 10.0, 20.0, 20.0)
    );
    // (40 − 10) / 3, (50 − 20) / 3, and the third by its chunks: (100 − 60) / 2.
    let tpot = f.tpot_ms.expect("tpot");
    assert_eq!((tpot.min, tpot.p50, tpot.max), (10.0, 10.0, 20.0));
    assert!(
        f.note
            .as_deref()
            .is_some_and(|n| n.contains("not be representative")),
        "{:?}",
        f.note
    );
}

#[test]
fn the_threshold_is_95_percent_of_n_and_a_burst_below_it_has_no_window() {
    // N = 4 needs all 4 (⌈3.8⌉): three at once never open it.
    let three = burst();
    assert_eq!(steady_figures(&three, 4), None);
    // N = 1: one in flight opens it.
    let f = steady_figures(&three, 1).expect("N = 1");
    assert_eq!(f.threshold_requests, 1);
    // N = 40 needs 38.
    let many: Vec<RequestRecord> = (0..40).map(|i| rec(i, &[100 + i], Some(1))).collect();
    let f = steady_figures(&many, 40).expect("N = 40");
    assert_eq!((f.threshold_requests, f.peak_in_flight), (38, 40));
    // Open at the 38th send (37 ms), closed at the third end (102 ms: 40 → 37).
    assert_eq!((f.start_s, f.end_s), (0.037, 0.102));
    assert_eq!(steady_figures(&[], 2), None);
}

#[test]
fn failed_requests_are_left_out_of_the_count_in_flight() {
    let mut rs = burst();
    rs[1].outcome = Outcome::Error {
        kind: "http_500".into(),
        message: "boom".into(),
    };
    // Without the second, two are never in flight at once.
    assert_eq!(steady_figures(&rs, 2), None);
    // A long burst's window carries no note.
    let long: Vec<RequestRecord> = (0..2)
        .map(|_| rec(0, &[1_000, 20_000, 40_000], Some(3)))
        .collect();
    let f = steady_figures(&long, 2).expect("window");
    assert_eq!(f.duration_s, 40.0);
    assert_eq!(f.note, None);
}
