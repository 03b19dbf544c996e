//! `merge` over two synthetic shard directories written with `RunDir` (the shard runtime
//! is not needed): a prefill, a decode and a rate cell merge into rows counting both shards'
//! requests; a missing, a doubled and an unsharded shard are refused, each named.

use super::*;
use llmib_core::{
    CellResult, CellStatus, Chunk, ContextSpec, Outcome, Phase, Plan, RequestRecord, RunInfo,
    Settings, ShardCell, ShardSchedule, ShardSpec, Slot, SlotKind, SlotRecord, TimetableSettings,
};

const MS: u64 = 1_000_000;
const DUE: u64 = 1_800_000_000_000_000_000;

fn info(shard: Option<ShardSpec>) -> RunInfo {
    let settings = Settings {
        contexts: vec![ContextSpec::Tokens(1024)],
        concurrency: vec![2],
        save_requests: true,
        shard,
        timetable: Some(TimetableSettings {
            start_at: "2027-01-15T10:00:00Z".into(),
            start_unix_ns: DUE,
            prep_s: 10.0,
            prefill_tok_per_s: 10_000.0,
            cached_prompt_block_tokens: None,
        }),
        ..Settings::default()
    };
    RunInfo {
        schema_version: llmib_core::SCHEMA_VERSION,
        tool: llmib_core::ToolInfo::current(),
        state: llmib_core::RunState::Completed,
        started_at: "2027-01-15T09:59:00Z".into(),
        finished_at: Some("2027-01-15T10:05:00Z".into()),
        url: "http://h:1".into(),
        engine: Default::default(),
        model: llmib_core::ModelInfo {
            served_model: "m".into(),
            ..Default::default()
        },
        hardware: Default::default(),
        launch_command: None,
        launch_command_source: None,
        diagnostics: None,
        sweep: None,
        plan: Plan::build(settings, Some(100_000), None),
        notes: Vec::new(),
    }
}

/// One request: sent at `sent`, a token every 20 ms from 100 ms after, ended at `end`.
fn rec(stream: u32, sent: u64, end: u64, finished: bool) -> RequestRecord {
    RequestRecord {
        stream,
        sent_ns: sent,
        headers_ns: None,
        chunks: (0..)
            .map(|k| sent + 100 * MS + k * 20 * MS)
            .take_while(|t| *t <= end)
            .map(|t_ns| Chunk { t_ns, tokens: 1 })
            .collect(),
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

fn shard_cell(index: u32, requests: u64, window: bool) -> Box<ShardCell> {
    Box::new(ShardCell {
        index,
        count: 2,
        origin_due_unix_ns: DUE,
        origin_unix_ns: DUE + u64::from(index) * 2 * MS,
        open_ns: window.then_some(500 * MS),
        close_ns: window.then_some(2_000 * MS),
        ready_at_open: window.then_some(true),
        requests,
        server_generation_tokens: None,
        clock: None,
        // A decode part records its preparation: shard I was ready I + 1 s into 10 s.
        slot: window.then(|| SlotRecord {
            slot: Slot {
                start_unix_ns: DUE - 10_000 * MS,
                origin_unix_ns: DUE,
                open_unix_ns: DUE + 500 * MS,
                close_unix_ns: DUE + 2_000 * MS,
                end_unix_ns: DUE + 2_000 * MS,
            },
            sized_from: SlotKind::Decode {
                warm_tokens: 2048,
                stream_tokens: 2048,
                readiness_limit_s: 0.5,
                window_s: 1.5,
            },
            prefill_tok_per_s: 10_000.0,
            ready_ns: Some((u64::from(index) + 1) * 1_000 * MS),
        }),
    })
}

fn row(phase: Phase, n: u32, status: CellStatus) -> CellResult {
    CellResult::empty(phase, 1024, "1K", n, status)
}

/// The rows, records and schedule shard `index` of 2 writes.
fn write_shard(dir: &Path, index: u32) {
    let rd = RunDir::create_new(dir, false).expect("shard dir");
    rd.write_info(&info(ShardSpec::new(index, 2)))
        .expect("run.json");
    let mut prefill = row(Phase::Prefill, 1, CellStatus::NotRun);
    if index == 0 {
        prefill.status = CellStatus::Valid;
        prefill.prompt_tok_per_s = Some(10_000.0);
    } else {
        prefill.status_reason = Some("measured by shard 0".into());
    }
    rd.append_cell(&prefill).expect("prefill row");
    let mut decode = row(Phase::Decode, 2, CellStatus::Valid);
    decode.shard = Some(shard_cell(index, 1, true));
    rd.append_cell(&decode).expect("decode row");
    // Shard 1's clock took its origin 2 ms late: its records read 2 ms earlier.
    let back = u64::from(index) * 2 * MS;
    let d = rec(index, 10 * MS - back, 2_200 * MS - back, false);
    rd.append_requests(decode.key(), &[d])
        .expect("decode records");
    let cell = llmib_core::rate_cell(1024, "1K", 5.0);
    let mut rate = llmib_core::bare_result(&cell, CellStatus::Valid, None);
    rate.shard = Some(shard_cell(index, 2, false));
    rd.append_cell(&rate).expect("rate row");
    let due: Vec<u64> = (0..4).map(|i| i * 200 * MS).collect();
    let mine: Vec<u32> = (0..4).filter(|i| i % 2 == index).collect();
    let recs: Vec<RequestRecord> = mine
        .iter()
        .map(|i| {
            let sent = due[*i as usize] + MS - back;
            rec(*i, sent, sent + 300 * MS, true)
        })
        .collect();
    rd.append_requests(rate.key(), &recs).expect("rate records");
    rd.append_schedule(&ShardSchedule {
        cell: cell.key,
        due_ns: due,
        mine,
        prompt_tokens: None,
        expected_prompt_tokens: 1024,
        slot: None,
        session: None,
    })
    .expect("schedule");
}

#[test]
fn two_shards_merge_into_one_run() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b, out) = (
        tmp.path().join("s0"),
        tmp.path().join("s1"),
        tmp.path().join("out"),
    );
    write_shard(&a, 0);
    write_shard(&b, 1);
    // Named out of order: the merge orders shards by index.
    let written = merge(&[b.clone(), a.clone()], &out, false).expect("merge");
    assert!(written.contains(&out.join(CELLS_FILE)), "{written:?}");
    assert!(
        written.iter().any(|p| p.ends_with("report.html")),
        "{written:?}"
    );
    let run = RunDir::open(&out).expect("out").load().expect("load");
    assert_eq!(run.info.plan.settings.shard, None);
    assert!(run.info.plan.settings.timetable.is_some());
    assert!(run.info.notes.iter().any(|n| n == "merged from 2 shards"));
    let phases: Vec<Phase> = run.cells.iter().map(|r| r.phase).collect();
    assert_eq!(phases, [Phase::Prefill, Phase::Decode, Phase::Rate]);
    let [prefill, decode, rate] = &run.cells[..] else {
        panic!("three rows");
    };
    assert_eq!(prefill.status, CellStatus::Valid);
    assert_eq!(prefill.prompt_tok_per_s, Some(10_000.0));
    assert_eq!(
        decode.status,
        CellStatus::Valid,
        "{:?}",
        decode.status_reason
    );
    assert_eq!(decode.requests_sent, Some(2), "one stream from each shard");
    assert_eq!(rate.status, CellStatus::Valid, "{:?}", rate.status_reason);
    assert_eq!(rate.requests_sent, Some(4), "two requests from each shard");
    assert_eq!(rate.completed_requests, Some(4));
    for r in &run.cells {
        let m = r.merged.as_ref().expect("merged");
        assert!(m.complete, "{:?}", r.key());
        assert_eq!(m.shards.len(), 2);
        assert!(r.shard.is_none());
    }
    let records = RunDir::open(&out)
        .expect("out")
        .load_requests()
        .expect("requests");
    assert_eq!(records.rows.len(), 6, "2 decode + 4 rate records");
    // The decode parts recorded their preparation: shard 1's used the most of its slot's.
    let note = prep_note(&run.cells).expect("a note");
    assert!(
        note.contains(
            "shard 1's of the sustained decode 1K × 2 cell, 2.0 s of its slot's 10.0 s (20 %"
        ),
        "{note}"
    );
    // The same directory again is refused without --force, replaced with it.
    assert!(merge(&[a.clone(), b.clone()], &out, false).is_err());
    merge(&[a.clone(), b.clone()], &out, true).expect("--force replaces");
    // A shard directory as the output is refused even with --force.
    let e = merge(&[a.clone(), b.clone()], &a, true).expect_err("own shard");
    assert!(e.to_string().contains("is one of the shards"), "{e}");
}

#[test]
fn a_missing_doubled_or_unsharded_shard_is_refused_by_name() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (a, b, out) = (
        tmp.path().join("s0"),
        tmp.path().join("s1"),
        tmp.path().join("out"),
    );
    write_shard(&a, 0);
    write_shard(&b, 1);
    let e = merge(std::slice::from_ref(&a), &out, false).expect_err("missing");
    assert_eq!(
        e.to_string(),
        "shards [1] of 2 are missing: a merge needs every shard"
    );
    let e = merge(&[a.clone(), a.clone(), b.clone()], &out, false).expect_err("doubled");
    assert!(e.to_string().starts_with("shard 0 is given twice"), "{e}");
    let plain = tmp.path().join("plain");
    let rd = RunDir::create_new(&plain, false).expect("dir");
    rd.write_info(&info(None)).expect("run.json");
    let e = merge(&[a.clone(), plain.clone()], &out, false).expect_err("unsharded");
    assert!(e.to_string().contains("ran without --shard"), "{e}");
    let e = merge(&[tmp.path().join("nowhere")], &out, false).expect_err("no run.json");
    assert!(e.to_string().contains("run.json"), "{e}");
    assert!(
        !out.exists(),
        "nothing is written when the shards are refused"
    );
}
