//! Known answers of the probes' figures: only probes sent inside the span count; finished,
//! failed and unfinished ones apart; TTFT, TPOT and E2E from the records.

use super::*;
use crate::record::Chunk;

const MS: u64 = 1_000_000;

/// A probe sent at `sent` ms whose one-token chunks arrive at `chunks` ms, ending as `outcome`.
fn probe(sent: u64, chunks: &[u64], outcome: Outcome) -> RequestRecord {
    RequestRecord {
        stream: 0,
        sent_ns: sent * MS,
        headers_ns: None,
        chunks: chunks
            .iter()
            .map(|&t| Chunk {
                t_ns: t * MS,
                tokens: 1,
            })
            .collect(),
        end_ns: chunks.last().map_or(sent, |t| *t) * MS,
        outcome,
        prompt_tokens_reported: Some(130),
        completion_tokens_reported: None,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

fn done() -> Outcome {
    Outcome::Finished {
        reason: "length".into(),
    }
}

#[test]
fn probes_inside_the_span_are_judged_and_split_by_how_they_ended() {
    let records = vec![
        // Before the span: left out.
        probe(100, &[150, 160], done()),
        // TTFT 50, then 3 tokens in 30 ms: TPOT 10, E2E 80.
        probe(1000, &[1050, 1060, 1070, 1080], done()),
        // TTFT 150, 1 more token 10 ms later: TPOT 10, E2E 160.
        probe(2000, &[2150, 2160], done()),
        probe(
            3000,
            &[],
            Outcome::Error {
                kind: "http_503".into(),
                message: "busy".into(),
            },
        ),
        // Cut at the cell's end after its first token: its TTFT counts, nothing else.
        probe(4000, &[4100], Outcome::Cancelled),
        // After the span: left out.
        probe(9000, &[9050], done()),
    ];
    let f = probe_figures(1.0, &records, (500 * MS, 5000 * MS)).expect("figures");
    assert_eq!((f.sent, f.completed, f.failed, f.unfinished), (4, 2, 1, 1));
    let ttft = f.ttft_ms.expect("ttft");
    assert_eq!((ttft.n, ttft.min, ttft.max), (3, 50.0, 150.0));
    let tpot = f.tpot_ms.expect("tpot");
    assert_eq!((tpot.n, tpot.min, tpot.max), (2, 10.0, 10.0));
    let e2e = f.e2e_ms.expect("e2e");
    assert_eq!((e2e.min, e2e.max), (80.0, 160.0));
    assert_eq!(f.prompt_tokens.map(|s| s.p50), Some(130.0));
    assert_eq!(f.first_error.as_deref(), Some("http_503: busy"));
    assert!(probe_figures(1.0, &records, (5000 * MS, 8000 * MS)).is_none());
}
