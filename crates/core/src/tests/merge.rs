//! Known answers for the merge of a sharded run: halves of a known record set, one shard's
//! clock late by 2 ms, merge to exactly the figures of the whole set; a failed or not-ready
//! shard marks the row; schedules that disagree fail the cell.

use super::*;
use crate::arrival::ArrivalPattern;
use crate::cell::ShardCell;
use crate::cell::{CellKey, CellStatus, Phase};
use crate::figures::decode_figures;
use crate::plan::Settings;
use crate::record::{Chunk, Outcome};

const MS: u64 = 1_000_000;
const LATE: u64 = 2 * MS;
const DUE: u64 = 1_700_000_000_000_000_000;

fn rec(stream: u32, sent: u64, first: u64, gap: u64, end: u64, finished: bool) -> RequestRecord {
    let chunks = (0..)
        .map(|k| first + k * gap)
        .take_while(|t| *t <= end)
        .map(|t_ns| Chunk { t_ns, tokens: 1 })
        .collect();
    RequestRecord {
        stream,
        sent_ns: sent,
        headers_ns: Some(sent + MS),
        chunks,
        end_ns: end,
        outcome: if finished {
            Outcome::Finished {
                reason: "length".into(),
            }
        } else {
            Outcome::Cancelled
        },
        prompt_tokens_reported: None,
        completion_tokens_reported: None,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

/// Four closed-loop streams over a [1 s, 3 s] window: each a finished request, then one cut
/// at the close; TTFTs and gaps differ per stream so the percentiles are not trivial.
fn whole() -> Vec<RequestRecord> {
    let mut v = Vec::new();
    for i in 0..4u32 {
        let d = u64::from(i);
        let sent = 100 * MS + d * MS;
        let end = 1_800 * MS + d * 37 * MS;
        v.push(rec(
            i,
            sent,
            sent + (150 + 20 * d) * MS,
            (30 + 5 * d) * MS,
            end,
            true,
        ));
        v.push(rec(
            i,
            end,
            end + (90 + 7 * d) * MS,
            (33 + 4 * d) * MS,
            3_000 * MS,
            false,
        ));
    }
    v
}

fn moved(records: &[RequestRecord], back: u64) -> Vec<RequestRecord> {
    to_common_clock(records, -i128::from(back))
}

fn decode_cell(n: u32) -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase: Phase::Decode,
            context_tokens: 1024,
            concurrency: n,
            rate_mrps: 0,
        },
        label: "1K".into(),
        over_capacity: false,
    }
}

fn plan() -> Plan {
    Plan::build(Settings::default(), Some(1_000_000), None)
}

fn shard_cell(index: u32, late: u64, requests: u64) -> ShardCell {
    ShardCell {
        index,
        count: 2,
        origin_due_unix_ns: DUE,
        origin_unix_ns: DUE + late,
        open_ns: Some(1_000 * MS),
        close_ns: Some(3_000 * MS),
        ready_at_open: Some(true),
        requests,
        server_generation_tokens: Some(240.0),
        clock: None,
        slot: None,
    }
}

fn decode_row(index: u32, late: u64, source: TokenCountSource) -> CellResult {
    let mut r = CellResult::empty(Phase::Decode, 1024, "1K", 4, CellStatus::Valid);
    r.shard = Some(Box::new(shard_cell(index, late, 2)));
    r.token_count_source = Some(source);
    r.queue = Some(QueueObservation {
        readiness_by: Some("first_tokens".into()),
        ready: true,
        ..Default::default()
    });
    r
}

/// Shard 0 holds streams 0 and 2 on time; shard 1 streams 1 and 3, its origin 2 ms late (so
/// its own records read 2 ms earlier than the common clock).
fn halves() -> (Vec<CellResult>, Vec<Vec<RequestRecord>>) {
    let all = whole();
    let mine = |s: u32| -> Vec<RequestRecord> {
        all.iter().filter(|r| r.stream % 2 == s).cloned().collect()
    };
    let rows = vec![
        decode_row(0, 0, TokenCountSource::ServerUsagePerChunk),
        decode_row(1, LATE, TokenCountSource::Tokenizer),
    ];
    (rows, vec![mine(0), moved(&mine(1), LATE)])
}

fn parts<'a>(rows: &'a [CellResult], recs: &'a [Vec<RequestRecord>]) -> Vec<ShardPart<'a>> {
    rows.iter()
        .zip(recs)
        .enumerate()
        .map(|(i, (row, records))| ShardPart {
            index: i as u32,
            row,
            records,
            schedule: None,
        })
        .collect()
}

fn merge_decode(
    rows: &[CellResult],
    recs: &[Vec<RequestRecord>],
) -> (CellResult, Vec<RequestRecord>) {
    let p = plan();
    let inputs = DecodeMergeInputs {
        plan: &p,
        warm_ttft_ms: None,
    };
    merge_decode_cell(&decode_cell(4), inputs, &parts(rows, recs))
}

#[test]
fn decode_halves_merge_to_the_whole() {
    let (rows, recs) = halves();
    let (row, union) = merge_decode(&rows, &recs);
    let mut all = whole();
    all.sort_by_key(|r| (r.stream, r.sent_ns));
    assert_eq!(union, all, "the union on the common clock is the whole set");
    let want = decode_figures(
        &all,
        Window {
            start_ns: 1_000 * MS,
            end_ns: 3_000 * MS,
        },
    );
    assert_eq!(row.status, CellStatus::Valid, "{:?}", row.status_reason);
    assert_eq!(row.output_tokens, Some(want.output_tokens));
    assert_eq!(row.completed_requests, Some(4));
    assert_eq!(row.requests_sent, Some(8));
    assert_eq!(row.ttft_ms, want.ttft_ms, "percentiles of the raw union");
    assert_eq!(row.tbt_ms, want.tbt_ms);
    assert_eq!(
        row.per_request_tok_per_s_summary,
        want.per_request_tok_per_s
    );
    assert_eq!(row.total_tok_per_s, Some(want.total_tok_per_s));
    assert_eq!(row.server_generation_tokens, Some(240.0));
    assert_eq!(row.token_count_source, Some(TokenCountSource::Tokenizer));
    assert!(row.shard.is_none());
    let m = row.merged.expect("merged");
    assert!(m.complete);
    assert_eq!(m.shards.len(), 2);
    assert_eq!(m.shards[1].origin_late_ms, 2.0);
    assert_eq!(m.shards[1].requests, 2);
}

#[test]
fn a_failed_shard_fails_the_row_and_is_named() {
    let (mut rows, recs) = halves();
    rows[1].status = CellStatus::Failed;
    rows[1].status_reason = Some("requests errored".into());
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(
        row.status_reason.as_deref(),
        Some("shard 1 failed: requests errored")
    );
    assert_eq!(row.total_tok_per_s, None, "a Failed row has no figures");
    assert!(!row.merged.expect("merged").complete);
}

#[test]
fn a_shard_not_ready_at_open_marks_the_row_queued() {
    let (mut rows, recs) = halves();
    rows[1].shard.as_mut().expect("shard").ready_at_open = Some(false);
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::RequestsQueued);
    assert_eq!(
        row.status_reason.as_deref(),
        Some("shard 1 was not ready when the window opened")
    );
    assert!(
        row.output_tokens.is_some(),
        "a queued row keeps its figures"
    );
    assert!(!row.merged.expect("merged").complete);
}

#[test]
fn a_shard_with_no_streams_is_fine_and_one_that_skipped_its_part_is_not() {
    // N = 1 on two shards: shard 1 has no stream.
    let all: Vec<RequestRecord> = whole().into_iter().filter(|r| r.stream == 0).collect();
    let mut idle = CellResult::empty(Phase::Decode, 1024, "1K", 1, CellStatus::NotRun);
    idle.status_reason = Some("no streams on this shard".into());
    idle.shard = Some(Box::new(shard_cell(1, 0, 0)));
    let mut zero = decode_row(0, 0, TokenCountSource::ServerUsagePerChunk);
    zero.concurrency = 1;
    let rows = vec![zero, idle];
    let recs = vec![all, Vec::new()];
    let p = plan();
    let inputs = DecodeMergeInputs {
        plan: &p,
        warm_ttft_ms: None,
    };
    let (row, _) = merge_decode_cell(&decode_cell(1), inputs, &parts(&rows, &recs));
    assert_eq!(row.status, CellStatus::Valid, "{:?}", row.status_reason);
    assert!(row.merged.expect("merged").complete);
    // At N = 4 shard 1 owns two streams: Not run there makes the merged row Not run.
    let (mut rows, recs) = halves();
    rows[1].status = CellStatus::NotRun;
    rows[1].status_reason = Some("the run was interrupted during this cell".into());
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::NotRun);
    assert!(
        row.status_reason
            .as_deref()
            .is_some_and(|r| r.contains("shard 1 did not run its part")),
        "{:?}",
        row.status_reason
    );
}

#[test]
fn windows_that_disagree_fail_the_cell() {
    let (mut rows, recs) = halves();
    rows[1].shard.as_mut().expect("shard").close_ns = Some(3_500 * MS);
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::Failed);
    assert!(
        row.status_reason
            .as_deref()
            .is_some_and(|r| r.contains("windows disagree")),
        "{:?}",
        row.status_reason
    );
}

/// Eight requests due every 100 ms, each finished 250 ms after its send.
fn rate_whole() -> (Vec<u64>, Vec<RequestRecord>) {
    let due: Vec<u64> = (0..8).map(|i| i * 100 * MS).collect();
    let recs = due
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let sent = d + 50_000 + i as u64 * 10_000;
            rec(
                i as u32,
                sent,
                sent + 80 * MS,
                20 * MS,
                sent + 250 * MS,
                true,
            )
        })
        .collect();
    (due, recs)
}

fn rate_cell_10() -> PlannedCell {
    crate::load::rate_cell(1024, "1K", 10.0)
}

fn schedule(due: &[u64], index: u32) -> ShardSchedule {
    ShardSchedule {
        cell: rate_cell_10().key,
        due_ns: due.to_vec(),
        mine: (0..due.len() as u32).filter(|i| i % 2 == index).collect(),
        prompt_tokens: None,
        expected_prompt_tokens: 1024,
        slot: None,
        session: None,
    }
}

fn rate_row(index: u32, late: u64) -> CellResult {
    let mut r = crate::verdict::bare_result(&rate_cell_10(), CellStatus::Valid, None);
    let mut sc = shard_cell(index, late, 4);
    (sc.open_ns, sc.close_ns, sc.ready_at_open) = (None, None, None);
    r.shard = Some(Box::new(sc));
    r.token_count_source = Some(TokenCountSource::ServerUsagePerChunk);
    r
}

fn rate_merge(
    scheds: &[ShardSchedule],
    recs: &[Vec<RequestRecord>],
) -> (CellResult, Vec<RequestRecord>) {
    let rows = [rate_row(0, 0), rate_row(1, LATE)];
    let parts: Vec<ShardPart<'_>> = (0..2)
        .map(|i| ShardPart {
            index: i as u32,
            row: &rows[i],
            records: &recs[i],
            schedule: Some(&scheds[i]),
        })
        .collect();
    merge_rate_cell(&rate_cell_10(), &plan(), &parts)
}

#[test]
fn rate_halves_merge_to_the_whole() {
    let (due, all) = rate_whole();
    let half = |s: u32| -> Vec<RequestRecord> {
        all.iter().filter(|r| r.stream % 2 == s).cloned().collect()
    };
    let recs = vec![half(0), moved(&half(1), LATE)];
    let (row, union) = rate_merge(&[schedule(&due, 0), schedule(&due, 1)], &recs);
    assert_eq!(union, all);
    let want = rate_result(
        &rate_cell_10(),
        RateObservation {
            records: &all,
            scheduled_ns: &due,
            waited: &[false; 8],
            requested_rate: 10.0,
            arrival: ArrivalPattern::Poisson,
            max_concurrency: None,
            max_in_flight: 3,
            slo: None,
            count: CountReport {
                source: Some(TokenCountSource::ServerUsagePerChunk),
                ..CountReport::new()
            },
            nominal_source: TokenCountSource::ServerUsagePerChunk,
            expected_prompt_tokens: 1024,
            expected_prompts: None,
            workload: None,
            stop_reason: None,
            prompt_tolerance: 0,
            fault: None,
        },
    );
    assert_eq!(
        max_in_flight(&all),
        3,
        "sends 100 ms apart, each 250 ms long"
    );
    let mut row = row;
    assert!(row.merged.take().expect("merged").complete);
    assert_eq!(row, want, "the merged row is the whole set's");
    assert_eq!(row.requests_sent, Some(8));
}

#[test]
fn schedules_that_disagree_fail_the_rate_cell() {
    let (due, all) = rate_whole();
    let half = |s: u32| -> Vec<RequestRecord> {
        all.iter().filter(|r| r.stream % 2 == s).cloned().collect()
    };
    let mut other = schedule(&due, 1);
    other.due_ns[3] += MS;
    let (row, _) = rate_merge(&[schedule(&due, 0), other], &[half(0), half(1)]);
    assert_eq!(row.status, CellStatus::Failed);
    assert!(
        row.status_reason
            .as_deref()
            .is_some_and(|r| r.contains("schedules disagree")),
        "{:?}",
        row.status_reason
    );
    // A request claimed by both shards is refused too.
    let mut both = schedule(&due, 1);
    both.mine.push(0);
    let (row, _) = rate_merge(&[schedule(&due, 0), both], &[half(0), half(1)]);
    assert_eq!(row.status, CellStatus::Failed);
    assert!(
        row.status_reason
            .as_deref()
            .is_some_and(|r| r.contains("both claim request 0")),
        "{:?}",
        row.status_reason
    );
}

#[test]
fn the_clock_shift_saturates_on_hostile_instants() {
    let r = rec(0, 5, 10, 1, 20, true);
    let early = to_common_clock(std::slice::from_ref(&r), i128::from(u64::MAX) * -2);
    assert_eq!((early[0].sent_ns, early[0].end_ns), (0, 0));
    let late = to_common_clock(std::slice::from_ref(&r), i128::from(u64::MAX));
    assert_eq!(late[0].chunks[0].t_ns, u64::MAX);
    let sc = ShardCell {
        origin_unix_ns: 0,
        origin_due_unix_ns: u64::MAX,
        ..shard_cell(0, 0, 0)
    };
    assert_eq!(origin_late_ns(&sc), -i128::from(u64::MAX));
}

#[test]
fn in_flight_counts_half_open_intervals() {
    let a = rec(0, 0, 5, 1, 10, true);
    let b = rec(1, 10, 15, 1, 20, true);
    assert_eq!(
        max_in_flight(&[a.clone(), b.clone()]),
        1,
        "one ends as the next starts"
    );
    let c = rec(2, 5, 6, 1, 12, true);
    assert_eq!(max_in_flight(&[a, b, c]), 2);
    assert_eq!(max_in_flight(&[RequestRecord::never_sent(3, 4)]), 0);
}

#[test]
fn requests_files_keep_their_cells_and_number_bad_lines() {
    let key = decode_cell(4).key;
    let line = serde_json::json!({"cell": key, "stream": 3, "sent_ns": 1, "headers_ns": null,
        "chunks": [{"t_ns": 2, "tokens": 1}], "end_ns": 3, "outcome": {"end": "cancelled"},
        "prompt_tokens_reported": null, "completion_tokens_reported": null,
        "cached_tokens_reported": null});
    let text = format!("{line}\n\n{line}\n{{\"cell\":");
    let f = crate::store::parse_requests(text.as_bytes());
    assert_eq!(
        (f.rows.len(), f.bad_lines.clone(), f.lines),
        (2, vec![4], 4)
    );
    assert!(f.only_torn_tail());
    let by = crate::store::records_by_cell(f.rows);
    assert_eq!(by[&key].len(), 2);
    assert_eq!(by[&key][0].stream, 3);
    let damaged = crate::store::parse_requests(format!("oops\n{line}\n").as_bytes());
    assert!(!damaged.only_torn_tail());
}

#[test]
fn a_row_naming_no_readiness_rule_is_judged_by_ready_at_open() {
    let (mut rows, recs) = halves();
    for r in &mut rows {
        r.queue = None;
    }
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::Valid, "{:?}", row.status_reason);
    let by = row.queue.and_then(|q| q.readiness_by);
    assert_eq!(by.as_deref(), Some("first_tokens"));
    // No evidence that every shard was ready: the window measured a queue.
    rows[0].shard.as_mut().expect("shard").ready_at_open = None;
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::RequestsQueued);
}

#[test]
fn a_record_of_another_shards_stream_fails_the_cell() {
    let (rows, mut recs) = halves();
    // Shard 1 also holds stream 0 (a copied file): the union would run stream 0 twice.
    let stolen = recs[0][0].clone();
    recs[1].push(stolen);
    let (row, _) = merge_decode(&rows, &recs);
    assert_eq!(row.status, CellStatus::Failed);
    assert!(
        row.status_reason
            .as_deref()
            .is_some_and(|r| r.contains("shard 1 holds a record of stream 0")),
        "{:?}",
        row.status_reason
    );
}

/// A merged cell's faults keep the words they had as strings: they are its reason.
#[test]
fn cell_merge_faults_keep_their_words() {
    let w = |start_ns, end_ns| Window { start_ns, end_ns };
    let cases = [
        (
            CellMergeError::WindowsDisagree {
                first: 0,
                first_window: w(1, 2),
                shard: 1,
                window: w(3, 4),
            },
            "the shards' windows disagree: shard 0 [1, 2] ns, shard 1 [3, 4] ns",
        ),
        (
            CellMergeError::NoWindow,
            "no shard recorded the decode window",
        ),
        (
            CellMergeError::NoSchedule,
            "no shard wrote the cell's schedule (schedules.jsonl)",
        ),
        (
            CellMergeError::SchedulesDisagree {
                first: 0,
                first_due: 5,
                shard: 2,
                due: 6,
            },
            "the shards' schedules disagree: shard 0 has 5 requests due, shard 2 6 (or other instants)",
        ),
        (
            CellMergeError::PastSchedule {
                shard: 1,
                request: 9,
                len: 5,
            },
            "shard 1 claims request 9 of a schedule of 5",
        ),
        (
            CellMergeError::Claimed {
                other: 0,
                shard: 1,
                request: 3,
            },
            "shards 0 and 1 both claim request 3",
        ),
        (
            CellMergeError::ForeignRequest {
                shard: 1,
                request: 4,
            },
            "shard 1 holds a record of request 4, which its schedule does not give it",
        ),
        (
            CellMergeError::ForeignStream {
                shard: 1,
                stream: 2,
            },
            "shard 1 holds a record of stream 2, which is not one of its streams",
        ),
    ];
    for (e, words) in cases {
        assert_eq!(e.to_string(), words);
    }
}
