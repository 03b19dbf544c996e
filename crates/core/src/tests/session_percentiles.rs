//! `--percentiles` in a session row: the measured turns' TTFT and TPOT summaries carry the
//! run's extra percentiles (known answers), and a row without them is the row as before.

use super::*;
use crate::cell::CellKey;
use crate::cell::{CellStatus, Phase};
use crate::plan::PlannedCell;
use crate::record::Chunk;
use crate::session::tests::observe;

const MS: u64 = 1_000_000;

/// Session `s`'s turn `k`: sent at `at` ms, first token `ttft` ms later, then 3 tokens
/// `gap` ms apart; 100 prompt tokens, none cached.
fn turn(s: u32, k: u32, at: u64, ttft: u64, gap: u64) -> TurnRecord {
    let chunks: Vec<Chunk> = (0..4)
        .map(|i| Chunk {
            t_ns: (at + ttft + gap * i) * MS,
            tokens: 1,
        })
        .collect();
    TurnRecord {
        session: s,
        turn: k,
        prompt_tokens: 100,
        predicted_cached_tokens: 0,
        record: RequestRecord {
            stream: s,
            sent_ns: at * MS,
            headers_ns: None,
            end_ns: chunks.last().map_or(0, |c| c.t_ns),
            chunks,
            outcome: Outcome::Finished {
                reason: "length".into(),
            },
            prompt_tokens_reported: Some(100),
            completion_tokens_reported: Some(4),
            cached_tokens_reported: Some(0),
            repetition: None,
            structured: None,
            text: None,
        },
    }
}

#[test]
fn a_session_row_carries_the_runs_extra_percentiles() {
    // Warm-ups (turn 0) are not measured; the measured TTFTs are 50 and 150 ms, the TPOTs
    // 10 and 30 ms.
    let turns = [
        turn(0, 0, 0, 999, 1),
        turn(1, 0, 0, 999, 1),
        turn(0, 1, 2_000, 50, 10),
        turn(1, 1, 2_000, 150, 30),
    ];
    let cell = PlannedCell {
        key: CellKey {
            phase: Phase::Session,
            context_tokens: 100,
            concurrency: 2,
            rate_mrps: 0,
        },
        label: "100".into(),
        over_capacity: false,
    };
    let row = session_result_at(&cell, observe(&turns), &[99.9]);
    assert_eq!(row.status, CellStatus::Valid, "{:?}", row.status_reason);
    let ttft = row.ttft_ms.as_ref().and_then(|s| s.at(99.9)).unwrap_or(0.0);
    assert!((ttft - 149.9).abs() < 1e-9, "{ttft}");
    let tpot = row.session.tpot_ms.clone().flatten();
    let tpot = tpot.and_then(|s| s.at(99.9)).unwrap_or(0.0);
    assert!((tpot - 29.98).abs() < 1e-9, "{tpot}");
    let plain = session_result(&cell, observe(&turns));
    assert!(
        plain
            .ttft_ms
            .as_ref()
            .is_some_and(|s| s.percentiles.is_empty())
    );
    // Everything else of the row is the same.
    let mut same = row.clone();
    same.ttft_ms = plain.ttft_ms.clone();
    same.session.tpot_ms = plain.session.tpot_ms.clone();
    assert_eq!(same, plain);
}
