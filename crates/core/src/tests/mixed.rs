//! Known answers of the mixed-prefill cells: their plan (P × N, dropped prompts and streams'
//! contexts with their reasons, Over capacity) and one cell's figures from hand-made records.

use super::*;
use crate::cell::{CellKey, Phase};
use crate::mixed_plan::*;
use crate::record::{Chunk, Outcome};
use crate::size::ContextSpec;

const MS: u64 = 1_000_000;

fn settings(prompts: &[u64]) -> MixedPrefillSettings {
    MixedPrefillSettings {
        prompt_tokens: prompts.to_vec(),
        concurrency: Vec::new(),
        stream_context: None,
        span_s: DEFAULT_MIXED_SPAN_S,
        standalone_repeats: DEFAULT_STANDALONE_REPEATS,
    }
}

fn input<'a>(decode: &'a [u64], limit: Option<u64>, kv: Option<u64>) -> MixedPlanInput<'a> {
    MixedPlanInput {
        run_concurrency: &[1, 4],
        decode_contexts: decode,
        max_output: 64,
        context_length: limit,
        kv_capacity: kv,
    }
}

#[test]
fn cells_are_p_by_n_at_the_smallest_decode_context() {
    let plan = mixed_prefill_plan(&settings(&[1000, 3000]), input(&[512, 2048], None, None));
    assert_eq!(plan.stream_context, Some(512));
    let keys: Vec<(u64, u32)> = plan
        .cells
        .iter()
        .map(|c| (c.key.context_tokens, c.key.concurrency))
        .collect();
    assert_eq!(keys, [(1000, 1), (1000, 4), (3000, 1), (3000, 4)]);
    assert!(
        plan.cells
            .iter()
            .all(|c| c.key.phase == Phase::MixedPrefill)
    );
    assert!(plan.cells.iter().all(|c| !c.over_capacity));
    assert!(plan.dropped.is_empty());
    // Its own N and C, where given.
    let mut s = settings(&[1000]);
    s.concurrency = vec![8];
    s.stream_context = Some(100);
    let plan = mixed_prefill_plan(&s, input(&[512], None, None));
    assert_eq!(plan.stream_context, Some(100));
    assert_eq!(plan.cells.len(), 1);
    assert_eq!(plan.cells[0].key.concurrency, 8);
}

#[test]
fn a_prompt_too_long_for_the_server_is_dropped_with_the_flag_to_change() {
    // 4,095 + 1 fits a 4,096-token server; 4,096 + 1 does not.
    let plan = mixed_prefill_plan(&settings(&[4095, 4096]), input(&[512], Some(4096), None));
    assert_eq!(plan.cells.len(), 2, "4,095 at N = 1 and 4");
    assert_eq!(plan.dropped.len(), 1);
    assert_eq!(plan.dropped[0].spec, ContextSpec::Tokens(4096));
    assert!(
        plan.dropped[0].reason.contains("--mixed-prefill"),
        "{:?}",
        plan.dropped
    );
}

#[test]
fn without_a_streams_context_every_prompt_is_dropped_with_the_reason() {
    let plan = mixed_prefill_plan(&settings(&[1000, 2000]), input(&[], None, None));
    assert_eq!(plan.stream_context, None);
    assert!(plan.cells.is_empty());
    assert_eq!(plan.dropped.len(), 2);
    assert!(plan.dropped[0].reason.contains("--mixed-context"));
    // A streams' context that cannot run with its M.
    let mut s = settings(&[1000]);
    s.stream_context = Some(4090);
    let plan = mixed_prefill_plan(&s, input(&[512], Some(4096), None));
    assert!(plan.cells.is_empty());
    assert!(
        plan.dropped[0].reason.contains("4090 + --max-output 64"),
        "{:?}",
        plan.dropped
    );
}

#[test]
fn over_capacity_counts_the_streams_and_the_injected_prompt() {
    // N = 4 streams of 512 + 64 = 2,304 tokens, plus 1,000 + 1 injected = 3,305.
    assert_eq!(mixed_kv_needed(4, 512, 64, 1000), 3305);
    let plan = mixed_prefill_plan(&settings(&[1000]), input(&[512], None, Some(3305)));
    assert!(plan.cells.iter().all(|c| !c.over_capacity));
    let plan = mixed_prefill_plan(&settings(&[1000]), input(&[512], None, Some(3304)));
    let over: Vec<u32> = plan
        .cells
        .iter()
        .filter(|c| c.over_capacity)
        .map(|c| c.key.concurrency)
        .collect();
    assert_eq!(over, [4]);
}

/// A stream whose chunks (one token each) arrive at `times` ms.
fn stream(id: u32, times: impl IntoIterator<Item = u64>) -> RequestRecord {
    let chunks: Vec<Chunk> = times
        .into_iter()
        .map(|t| Chunk {
            t_ns: t * MS,
            tokens: 1,
        })
        .collect();
    RequestRecord {
        stream: id,
        sent_ns: 0,
        headers_ns: None,
        end_ns: chunks.last().map_or(0, |c| c.t_ns),
        chunks,
        outcome: Outcome::Cancelled,
        prompt_tokens_reported: Some(512),
        completion_tokens_reported: None,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

/// The injected request: sent at 1,000 ms, its one token at 1,100 ms.
fn injected(first_ms: Option<u64>) -> RequestRecord {
    let mut r = stream(u32::MAX, first_ms);
    r.sent_ns = 1000 * MS;
    r.end_ns = first_ms.unwrap_or(1100) * MS;
    r.prompt_tokens_reported = Some(3000);
    r.outcome = Outcome::Finished {
        reason: "length".into(),
    };
    r
}

/// Two streams, a chunk every 10 ms, stalled by a prompt sent at 1,000 ms whose first token
/// comes at 1,100 ms: stream 0 waits 1,000 → 1,105, stream 1 995 → 1,110; the window is
/// 0 → 1,300 ms.
fn stalled() -> Vec<RequestRecord> {
    let s0 = (1..=100)
        .map(|k| k * 10)
        .chain((0..20).map(|k| 1105 + k * 10));
    let s1 = (0..100)
        .map(|k| 5 + k * 10)
        .chain((0..19).map(|k| 1110 + k * 10));
    vec![stream(0, s0), stream(1, s1)]
}

fn observation<'a>(streams: &'a [RequestRecord], inj: &'a RequestRecord) -> MixedObservation<'a> {
    MixedObservation {
        streams,
        window: Window {
            start_ns: 0,
            end_ns: 1300 * MS,
        },
        injected: inj,
        standalone_ttft_ms: &[50.0, 40.0, 60.0],
        stream_context_tokens: 512,
        prompt_tokens: 3000,
    }
}

#[test]
fn the_stall_before_during_and_after() {
    let streams = stalled();
    let inj = injected(Some(1100));
    let f = mixed_figures(observation(&streams, &inj)).expect("figures");
    assert_eq!((f.before_s, f.during_s, f.after_s), (1.0, 0.1, 0.2));
    // 100 chunks each in (0, 1000] ms.
    assert_eq!(f.before_tok_per_s, Some(200.0));
    assert_eq!(f.during_tok_per_s, Some(0.0));
    // (1100, 1300]: stream 0 at 1105 … 1295 (20), stream 1 at 1110 … 1290 (19).
    let after = f.after_tok_per_s.expect("after");
    assert!((after - 39.0 / 0.2).abs() < 1e-9, "{after}");
    let g = f.longest_gap_ms.expect("gaps");
    assert_eq!((g.n, g.min, g.max), (2, 105.0, 115.0));
    let b = f.baseline_gap_ms.expect("baseline");
    assert_eq!((b.n, b.min, b.max), (198, 10.0, 10.0));
    assert_eq!(f.injected_ttft_ms, 100.0);
    assert_eq!(f.standalone_ttft_ms.as_ref().map(|s| s.p50), Some(50.0));
    assert_eq!(f.ttft_slowdown, Some(2.0));
}

/// A stream between two requests when the prompt is sent is not a running decode stream: its
/// next request's first token waits on a prefill (its own, behind the injected one), not a
/// decode step, so it has no stall to count. Stream 0's request ends at 995 ms and its next
/// one's first token comes at 1,110; stream 1 runs across the stall (1,000 -> 1,105). Only
/// stream 1 counts; with every stream between requests (one stream, short answers, on real
/// llama.cpp) the figure is empty, never the next request's TTFT.
#[test]
fn a_stream_between_two_requests_at_the_send_has_no_stall_to_count() {
    let mut first = stream(0, (0..100).map(|k| 5 + k * 10));
    first.end_ns = 995 * MS;
    let mut next = stream(0, (0..19).map(|k| 1110 + k * 10));
    next.sent_ns = 996 * MS;
    let other = stream(
        1,
        (1..=100)
            .map(|k| k * 10)
            .chain((0..20).map(|k| 1105 + k * 10)),
    );
    let streams = vec![first.clone(), next.clone(), other];
    let inj = injected(Some(1100));
    let f = mixed_figures(observation(&streams, &inj)).expect("figures");
    let g = f.longest_gap_ms.expect("stream 1 stalled");
    assert_eq!((g.n, g.max), (1, 105.0));
    let alone = vec![first, next];
    let f = mixed_figures(observation(&alone, &inj)).expect("figures");
    assert_eq!(f.longest_gap_ms, None);
}

#[test]
fn the_row_is_valid_queued_or_failed_with_its_reason() {
    let cell = PlannedCell {
        key: CellKey {
            phase: Phase::MixedPrefill,
            context_tokens: 3000,
            concurrency: 2,
            rate_mrps: 0,
        },
        label: "3000".into(),
        over_capacity: false,
    };
    let streams = stalled();
    let inj = injected(Some(1100));
    let row = mixed_result(
        &cell,
        observation(&streams, &inj),
        MixedJudgement::default(),
    );
    assert_eq!(row.status, CellStatus::Valid);
    assert_eq!(row.ttft_ms_p50, Some(100.0));
    assert_eq!(
        row.total_tok_per_s, None,
        "a stalled window is no decode figure"
    );
    assert_eq!(row.mixed.as_ref().map(|m| m.prompt_tokens), Some(3000));
    let queued = MixedJudgement {
        queued: true,
        ..MixedJudgement::default()
    };
    let row = mixed_result(&cell, observation(&streams, &inj), queued);
    assert_eq!(row.status, CellStatus::RequestsQueued);
    // No first token: Failed, said.
    let none = injected(None);
    let row = mixed_result(
        &cell,
        observation(&streams, &none),
        MixedJudgement::default(),
    );
    assert_eq!(row.status, CellStatus::Failed);
    assert!(
        row.errors.contains_key("no_first_token"),
        "{:?}",
        row.errors
    );
    assert!(row.mixed.is_none());
    // The injected prompt counted otherwise by the server: Failed.
    let mut long = injected(Some(1100));
    long.prompt_tokens_reported = Some(3001);
    let row = mixed_result(
        &cell,
        observation(&streams, &long),
        MixedJudgement::default(),
    );
    assert_eq!(row.status, CellStatus::Failed);
    let first = row.first_error.unwrap_or_default();
    assert!(
        first.starts_with("injected prompt length mismatch"),
        "{first}"
    );
}
