//! Known answers for the merge of a session cell run on two shards: four sessions of a closed
//! loop (a warm-up and two measured turns each), split j mod 2, shard 1's clock 2 ms late,
//! merge to exactly the row one process makes of the whole set; a session no shard ran, a
//! turn without its record, a failed or absent shard part each say why.

use super::*;
use crate::cell::{CellKey, Phase, ShardCell};
use crate::counting::CountReport;
use crate::merge::{DecodeMergeInputs, merge_cell};
use crate::meta::TokenCountSource;
use crate::plan::Settings;
use crate::record::{Chunk, Outcome};
use crate::session::{SessionPart, TurnMeta};
use crate::timetable::ShardSchedule;

const MS: u64 = 1_000_000;
const LATE: u64 = 2 * MS;
const DUE: u64 = 1_700_000_000_000_000_000;
const PREFILL: f64 = 20_000.0;

fn cell() -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase: Phase::Session,
            context_tokens: 512,
            concurrency: 4,
            rate_mrps: 0,
        },
        label: "512".into(),
        over_capacity: false,
    }
}

fn plan() -> Plan {
    Plan::build(Settings::default(), Some(1_000_000), None)
}

/// Session j's turn k: a 512-token history, then 64-token messages and 16-token answers; the
/// server cached what a 16-token block cache predicts, but for session 3's last turn (its
/// history evicted to the system prompt's 592).
fn turn(j: u32, k: u32) -> TurnRecord {
    let prompt = 512 + 80 * u64::from(k);
    let predicted = if k == 0 { 0 } else { prompt - 64 };
    let cached = if (j, k) == (3, 2) { 592 } else { predicted };
    let sent = (100 + 3 * u64::from(j) + 400 * u64::from(k)) * MS;
    let first = sent + (20 + 5 * u64::from(j) + 10 * u64::from(k)) * MS;
    TurnRecord {
        session: j,
        turn: k,
        prompt_tokens: prompt,
        predicted_cached_tokens: predicted,
        record: RequestRecord {
            stream: j,
            sent_ns: sent,
            headers_ns: Some(sent + MS),
            chunks: (0..16)
                .map(|i| Chunk {
                    t_ns: first + i * 5 * MS,
                    tokens: 1,
                })
                .collect(),
            end_ns: first + 75 * MS,
            outcome: Outcome::Finished {
                reason: "length".into(),
            },
            prompt_tokens_reported: Some(prompt),
            completion_tokens_reported: Some(16),
            cached_tokens_reported: Some(cached),
            repetition: None,
            structured: None,
            text: None,
        },
    }
}

fn whole() -> Vec<TurnRecord> {
    (0..3)
        .flat_map(|k| (0..4).map(move |j| turn(j, k)))
        .collect()
}

fn count() -> CountReport {
    let mut c = CountReport::new();
    c.source = Some(TokenCountSource::ServerUsagePerChunk);
    c
}

/// The row of `turns` as one process judges them.
fn row_of(turns: &[TurnRecord], sessions: u32) -> CellResult {
    session_result(
        &cell(),
        SessionObservation {
            turns,
            sessions,
            max_waiting: Some(0.0),
            prefill_tok_per_s: Some(PREFILL),
            cache_block_tokens: 16,
            kv_capacity: Some(1_000_000),
            cache_flushed: None,
            server_cached_tokens: None,
            slo: None,
            count: count(),
            nominal_source: TokenCountSource::ServerUsagePerChunk,
            prompt_tolerance: 0,
            fault: None,
        },
    )
}

/// Shard `index` of 2: its sessions' turns (records on its own clock, `late` behind the
/// common one), its row and its schedule line.
struct Shard {
    row: CellResult,
    records: Vec<RequestRecord>,
    line: ShardSchedule,
}

fn shard(index: u32, late: u64) -> Shard {
    let mut mine: Vec<TurnRecord> = whole()
        .into_iter()
        .filter(|t| t.session % 2 == index)
        .collect();
    for t in &mut mine {
        t.record = to_common_clock(std::slice::from_ref(&t.record), -i128::from(late))
            .pop()
            .expect("one record");
    }
    let mut row = row_of(&mine, 2);
    row.shard = Some(Box::new(ShardCell {
        index,
        count: 2,
        origin_due_unix_ns: DUE,
        origin_unix_ns: DUE + late,
        open_ns: None,
        close_ns: None,
        ready_at_open: Some(true),
        requests: 2,
        server_generation_tokens: None,
        clock: None,
        slot: None,
    }));
    let line = ShardSchedule {
        cell: cell().key,
        due_ns: vec![0; 4],
        mine: vec![index, index + 2],
        prompt_tokens: None,
        expected_prompt_tokens: 512,
        slot: None,
        session: Some(SessionPart {
            turns: mine.iter().map(TurnMeta::of).collect(),
            max_waiting: Some(0.0),
        }),
    };
    let records = mine.into_iter().map(|t| t.record).collect();
    Shard { row, records, line }
}

fn halves() -> Vec<Shard> {
    vec![shard(0, 0), shard(1, LATE)]
}

fn merge(shards: &[Shard]) -> (CellResult, Vec<RequestRecord>) {
    let parts: Vec<ShardPart<'_>> = (0u32..)
        .zip(shards)
        .map(|(index, s)| ShardPart {
            index,
            row: &s.row,
            records: &s.records,
            schedule: Some(&s.line),
        })
        .collect();
    let p = plan();
    let inputs = DecodeMergeInputs {
        plan: &p,
        warm_ttft_ms: None,
    };
    // Through the merge's choice by phase, as `merge_shards` calls it.
    merge_cell(&cell(), inputs, &parts)
}

fn reason(row: &CellResult) -> &str {
    row.status_reason.as_deref().unwrap_or_default()
}

#[test]
fn session_halves_merge_to_the_one_process_row() {
    let (mut row, union) = merge(&halves());
    let mut one = whole();
    one.sort_by_key(|t| t.record.sent_ns);
    let want = row_of(&one, 4);
    // The known answers: 8 measured turns of 592 and 672 prompt tokens; 528 and 608 cached
    // by prediction, the server 16 short on session 3's last turn.
    let s = &row.session;
    assert_eq!(s.turns_completed, Some(Some(8)));
    assert_eq!(s.prompt_tokens, Some(Some(4 * (592 + 672))));
    assert_eq!(s.predicted_cached_tokens, Some(Some(4 * (528 + 608))));
    assert_eq!(s.cached_tokens, Some(Some(4 * 528 + 3 * 608 + 592)));
    let per = s.per_turn.clone().flatten().expect("per turn");
    let cached: Vec<Option<u64>> = per.iter().map(|p| p.cached_tokens).collect();
    assert_eq!(cached, vec![Some(0), Some(4 * 528), Some(3 * 608 + 592)]);
    assert_eq!(
        s.session.as_ref().map(|f| f.sessions),
        Some(4),
        "every shard's sessions"
    );
    // Every other figure is the one process's: TTFTs, their split, TPOT, E2E, rates, status.
    let merged = row.merged.take().expect("merged");
    assert!(merged.complete);
    assert_eq!(merged.shards[1].origin_late_ms, 2.0);
    assert_eq!(row, want);
    // The union's records are the whole set's, on the common clock.
    let mut all: Vec<RequestRecord> = whole().into_iter().map(|t| t.record).collect();
    all.sort_by_key(|r| (r.stream, r.sent_ns));
    assert_eq!(union, all);
}

#[test]
fn a_session_no_shard_ran_fails_the_row() {
    let mut shards = halves();
    // Shard 1's line of schedules.jsonl is lost, its records kept.
    shards[1].line.mine.clear();
    shards[1].line.session = Some(SessionPart {
        turns: Vec::new(),
        max_waiting: None,
    });
    shards[1].records.clear();
    let (row, _) = merge(&shards);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(
        reason(&row),
        "sessions [1, 3] of 4 are in no shard's line of schedules.jsonl: no shard ran them"
    );
}

#[test]
fn a_turn_without_its_record_fails_the_row() {
    let mut shards = halves();
    shards[1].records.pop();
    let (row, _) = merge(&shards);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(
        reason(&row),
        "shard 1: turn 2 of session 3 has no record in requests.jsonl"
    );
    let mut shards = halves();
    shards[0].line.session = None;
    let (row, _) = merge(&shards);
    assert_eq!(
        reason(&row),
        "shard 0's line of schedules.jsonl lists no turns of the session cell"
    );
}

#[test]
fn a_failed_or_absent_shard_part_is_named() {
    let mut shards = halves();
    shards[0].row.status = CellStatus::Failed;
    shards[0].row.status_reason = Some("shard_late".into());
    let (row, _) = merge(&shards);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(reason(&row), "shard 0 failed: shard_late");
    // Shard 1 wrote no row: its two sessions were not run, and the row says so.
    let mut shards = halves();
    shards[1].row = crate::verdict::bare_result(
        &cell(),
        CellStatus::NotRun,
        Some("shard 1 wrote no row for this cell".into()),
    );
    let (row, _) = merge(&shards);
    assert_eq!(row.status, CellStatus::NotRun);
    assert!(
        reason(&row).contains("shard 1 did not run its part: shard 1 wrote no row"),
        "{}",
        reason(&row)
    );
    assert!(!row.merged.expect("merged").complete);
}

#[test]
fn a_queue_one_shard_saw_marks_the_merged_row() {
    let mut shards = halves();
    if let Some(p) = shards[1].line.session.as_mut() {
        p.max_waiting = Some(3.0);
    }
    let (row, _) = merge(&shards);
    assert_eq!(row.status, CellStatus::RequestsQueued);
    assert!(
        reason(&row).contains("queue gauge reached 3"),
        "{}",
        reason(&row)
    );
}
