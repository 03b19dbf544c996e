//! Known answers for the status rules and the rows built from observations.

use super::*;
use crate::cell::{CellKey, Phase};
use crate::record::Chunk;

const MS: u64 = 1_000_000;

fn facts<'a>(errors: &'a ErrorTally) -> DecodeFacts<'a> {
    DecodeFacts {
        concurrency: 8,
        fault: None,
        errors,
        readiness: ReadinessBy::GaugesAndFirstTokens,
        readiness_timeout_s: 120.0,
        queued_samples: 0,
        max_waiting: Some(0.0),
        queue_wait: None,
        ttft_over: None,
        output_tokens: 100,
    }
}

#[test]
fn decode_status_known_answers() {
    let none = ErrorTally::default();
    let mut http = ErrorTally::default();
    http.add("http_500", 2, || "HTTP 500: boom".into());
    let mut mismatch = ErrorTally::default();
    mismatch.add("prompt_mismatch", 1, || "prompt length mismatch".into());
    let base = facts(&none);
    // (name, facts, status, words the reason must contain)
    let cases: Vec<(&str, DecodeFacts<'_>, CellStatus, &str)> = vec![
        ("plain valid", base.clone(), CellStatus::Valid, ""),
        (
            "a broken collector fails the cell",
            DecodeFacts {
                fault: Some("the collector panicked"),
                ..base.clone()
            },
            CellStatus::Failed,
            "the measurement failed: the collector panicked",
        ),
        (
            "request errors fail it, even when also queued",
            DecodeFacts {
                errors: &http,
                queued_samples: 3,
                ..base.clone()
            },
            CellStatus::Failed,
            "requests errored",
        ),
        (
            "a prompt mismatch alone says so",
            DecodeFacts {
                errors: &mismatch,
                ..base.clone()
            },
            CellStatus::Failed,
            "usage.prompt_tokens differs",
        ),
        (
            "no token inside the window is never Valid with 0 tok/s",
            DecodeFacts {
                output_tokens: 0,
                ..base.clone()
            },
            CellStatus::Failed,
            "no token arrived",
        ),
        (
            "a stalled queue",
            DecodeFacts {
                readiness: ReadinessBy::QueueStalled,
                ..base.clone()
            },
            CellStatus::RequestsQueued,
            "would not run all 8",
        ),
        (
            "readiness limit",
            DecodeFacts {
                readiness: ReadinessBy::Timeout,
                ..base.clone()
            },
            CellStatus::RequestsQueued,
            "within the readiness limit of 120 s",
        ),
        (
            "the ramp stopped on an errored request (its record lost)",
            DecodeFacts {
                readiness: ReadinessBy::RequestsErrored,
                ..base.clone()
            },
            CellStatus::Failed,
            "errored before the window opened",
        ),
        (
            "queue gauge in the window, nothing sent inside it",
            DecodeFacts {
                queued_samples: 1,
                max_waiting: Some(4.0),
                ..base.clone()
            },
            CellStatus::RequestsQueued,
            "queue gauge was above zero (max 4)",
        ),
        (
            "queue gauge in the window, requests waited long",
            DecodeFacts {
                queued_samples: 3,
                max_waiting: Some(4.0),
                queue_wait: Some((900.0, 114.0)),
                ..base.clone()
            },
            CellStatus::RequestsQueued,
            "waited 900 ms on average",
        ),
        (
            "queue gauge caught re-sends waiting one step each",
            DecodeFacts {
                queued_samples: 3,
                max_waiting: Some(1.0),
                queue_wait: Some((16.0, 114.0)),
                ..base.clone()
            },
            CellStatus::Valid,
            "",
        ),
        (
            "no gauge: TTFT over the threshold",
            DecodeFacts {
                max_waiting: None,
                readiness: ReadinessBy::FirstTokens,
                ttft_over: Some((3, 450.0)),
                ..base.clone()
            },
            CellStatus::RequestsQueued,
            "3 requests waited over 450 ms",
        ),
        (
            "no gauge, every TTFT under the threshold",
            DecodeFacts {
                max_waiting: None,
                readiness: ReadinessBy::FirstTokens,
                ttft_over: Some((0, 450.0)),
                ..base.clone()
            },
            CellStatus::Valid,
            "",
        ),
    ];
    for (name, f, status, words) in cases {
        let v = decode_verdict(&f);
        assert_eq!(v.status, status, "{name}");
        assert!(
            v.reason.as_deref().unwrap_or("").contains(words),
            "{name}: {:?}",
            v.reason
        );
        assert_eq!(v.reason.is_none(), status == CellStatus::Valid, "{name}");
    }
    assert_eq!(ttft_queue_threshold_ms(Some(100.0), 5.0), 450.0);
    assert_eq!(ttft_queue_threshold_ms(None, 5.0), 70.0);
}

fn cell(n: u32) -> PlannedCell {
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

/// A request with one-token chunks at `ts` (ms), sent at 0, prompt usage `prompt`.
fn req(stream: u32, ts: &[u64], prompt: Option<u64>, outcome: Outcome) -> RequestRecord {
    RequestRecord {
        stream,
        sent_ns: 0,
        headers_ns: None,
        chunks: ts
            .iter()
            .map(|&t| Chunk {
                t_ns: t * MS,
                tokens: 1,
            })
            .collect(),
        end_ns: ts.last().copied().unwrap_or(0) * MS,
        outcome,
        prompt_tokens_reported: prompt,
        completion_tokens_reported: None,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

fn observation<'a>(records: &'a [RequestRecord], readiness: ReadinessBy) -> DecodeObservation<'a> {
    DecodeObservation {
        records,
        window: Window {
            start_ns: 100 * MS,
            end_ns: 200 * MS,
        },
        readiness,
        queue: QueueObservation {
            max_waiting: Some(0.0),
            ..Default::default()
        },
        queued_samples: 0,
        readiness_timeout_s: 120.0,
        warm_ttft_ms: None,
        warmup_errors: ErrorTally::default(),
        expected_prompt_tokens: 1024,
        prompt_tolerance: 0,
        count: CountReport {
            source: Some(TokenCountSource::ServerUsagePerChunk),
            tokenize_failures: 0,
            first_failure: None,
            local_tokenizer: false,
        },
        nominal_source: TokenCountSource::ServerUsagePerChunk,
        server_generation_tokens: Some(22.0),
        fault: None,
        client_delay_ms: Vec::new(),
        kernel_stamps: None,
        speculative: None,
    }
}

#[test]
fn a_valid_row_carries_figures_the_ramp_and_its_readiness_rule() {
    let recs = [
        req(0, &[50, 90, 110, 150], Some(1024), Outcome::Cancelled),
        req(1, &[120, 130], Some(1024), Outcome::Cancelled),
    ];
    let row = decode_result(
        &cell(2),
        observation(&recs, ReadinessBy::GaugesAndFirstTokens),
    );
    assert_eq!(row.status, CellStatus::Valid);
    assert_eq!(row.output_tokens, Some(4));
    assert_eq!(row.server_generation_tokens, Some(22.0));
    assert_eq!(
        row.token_count_source,
        Some(TokenCountSource::ServerUsagePerChunk)
    );
    let q = row.queue.expect("queue");
    assert!(q.ready);
    assert_eq!(q.readiness_by.as_deref(), Some("gauges_and_first_tokens"));
    assert_eq!(
        q.ramp_tokens,
        Some(2),
        "chunks at 50 and 90 ms came before the window"
    );
    assert_eq!(row.prompt_check.map(|p| p.mismatched), Some(0));
}

#[test]
fn a_failed_row_has_null_figures_and_keeps_every_error() {
    let recs = [
        req(0, &[110, 150], Some(1025), Outcome::Cancelled),
        req(
            1,
            &[120],
            Some(1024),
            Outcome::Error {
                kind: "stream_error".into(),
                message: "error inside the stream: boom".into(),
            },
        ),
    ];
    let mut o = observation(&recs, ReadinessBy::GaugesAndFirstTokens);
    o.warmup_errors
        .add("warmup_http_500", 1, || "HTTP 500".into());
    let row = decode_result(&cell(2), o);
    assert_eq!(row.status, CellStatus::Failed);
    assert!(row.total_tok_per_s.is_none() && row.output_tokens.is_none());
    assert!(row.token_count_source.is_none() && row.server_generation_tokens.is_none());
    assert_eq!(row.requests_sent, Some(2));
    assert_eq!(row.errors.get("warmup_http_500"), Some(&1));
    assert_eq!(row.errors.get("stream_error"), Some(&1));
    assert_eq!(row.errors.get("prompt_mismatch"), Some(&1));
    assert_eq!(row.first_error.as_deref(), Some("HTTP 500"));
}

#[test]
fn a_fault_with_no_records_is_failed_not_valid_with_zero_tokens() {
    // What a dead collector used to produce: no records at all.
    let mut o = observation(&[], ReadinessBy::GaugesAndFirstTokens);
    o.fault = Some("a stream worker panicked".into());
    let row = decode_result(&cell(4), o);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.first_error.as_deref(), Some("a stream worker panicked"));
    assert!(row.output_tokens.is_none());
    // And without the fault, still not Valid: nothing arrived.
    let row = decode_result(&cell(4), observation(&[], ReadinessBy::FirstTokens));
    assert_eq!(row.status, CellStatus::Failed);
}

#[test]
fn without_a_gauge_the_ttft_rule_is_kept_in_the_row() {
    // TTFTs 110 and 700 ms; warm TTFT 100 ms: threshold 450 ms, one over.
    let recs = [
        req(0, &[110, 150, 190], Some(1024), Outcome::Cancelled),
        req(1, &[700], Some(1024), Outcome::Cancelled),
    ];
    let mut o = observation(&recs, ReadinessBy::FirstTokens);
    o.queue.max_waiting = None;
    o.warm_ttft_ms = Some(100.0);
    o.count.tokenize_failures = 2;
    o.count.first_failure = Some("HTTP 500".into());
    o.count.source = Some(TokenCountSource::ChunkCount);
    let row = decode_result(&cell(2), o);
    assert_eq!(row.status, CellStatus::RequestsQueued);
    let q = row.queue.as_ref().expect("queue");
    assert_eq!(q.ttft_queue_threshold_ms, Some(450.0));
    assert_eq!(q.ttft_over_threshold, Some(1));
    assert_eq!(row.token_count_source, Some(TokenCountSource::ChunkCount));
    assert!(
        row.token_count_note
            .as_deref()
            .is_some_and(|n| n.contains("failed on 2 chunk texts")),
        "{row:?}"
    );
}

#[test]
fn prefill_rows() {
    let mut c = cell(1);
    c.key.phase = Phase::Prefill;
    let ok = req(
        0,
        &[200],
        Some(1024),
        Outcome::Finished {
            reason: "length".into(),
        },
    );
    let row = prefill_result(&c, &ok, 1024, 0);
    assert_eq!(row.status, CellStatus::Valid);
    assert!((row.prompt_tok_per_s.expect("rate") - 1024.0 / 0.2).abs() < 1e-6);

    let off = req(
        0,
        &[200],
        Some(1025),
        Outcome::Finished {
            reason: "length".into(),
        },
    );
    let row = prefill_result(&c, &off, 1024, 0);
    assert_eq!(row.status, CellStatus::Failed);
    assert!(
        row.prompt_tok_per_s.is_none(),
        "a failed row has no figures"
    );
    assert_eq!(row.errors.get("prompt_mismatch"), Some(&1));
    assert_eq!(row.prompt_check.and_then(|p| p.max_diff), Some(1));
    // An estimated prompt may be off by the tolerance: Valid, with the difference kept.
    let row = prefill_result(&c, &off, 1024, 2);
    assert_eq!(row.status, CellStatus::Valid);
    let pc = row.prompt_check.expect("check");
    assert_eq!((pc.mismatched, pc.max_diff), (0, Some(1)));
    assert_eq!((pc.reported_min, pc.reported_max), (Some(1025), Some(1025)));
    // The server's reported lengths are kept, smallest and largest.
    let recs = [1023, 1026, 1024].map(|n| {
        req(
            0,
            &[200],
            Some(n),
            Outcome::Finished {
                reason: "length".into(),
            },
        )
    });
    let pc = crate::verdict::prompt_check(1024, 5, &recs);
    assert_eq!((pc.checked, pc.mismatched, pc.max_diff), (3, 0, Some(2)));
    assert_eq!((pc.reported_min, pc.reported_max), (Some(1023), Some(1026)));
    assert_eq!(crate::plan::estimate_tolerance(1024), 5);
    assert_eq!(
        crate::plan::estimate_tolerance(100),
        2,
        "never under two tokens"
    );

    let none = req(
        0,
        &[],
        None,
        Outcome::Finished {
            reason: "length".into(),
        },
    );
    assert_eq!(
        prefill_result(&c, &none, 1024, 0).errors.get("no_token"),
        Some(&1)
    );
    let gone = req(0, &[], None, Outcome::Cancelled);
    assert_eq!(
        prefill_result(&c, &gone, 1024, 0).status,
        CellStatus::NotRun
    );
}

#[test]
fn over_capacity_rows_say_the_arithmetic() {
    let row = over_capacity_result(&cell(128), 256, 100_000);
    assert_eq!(row.status, CellStatus::OverCapacity);
    assert_eq!(
        row.status_reason.as_deref(),
        Some("128 × (1024 + 256) tokens exceeds the KV capacity of 100000")
    );
    assert!(row.total_tok_per_s.is_none());
}

#[test]
fn littles_law_wait_known_answers() {
    // 0.4 requests waiting on average over 5 s, 128 arrivals: 15.6 ms each.
    let w = queue_wait_ms(0.4, 5.0, 128).expect("arrivals");
    assert!((w - 15.625).abs() < 1e-9, "{w}");
    assert_eq!(queue_wait_ms(2.0, 5.0, 0), None);
    assert!((queue_wait_threshold_ms(Some(16.0)) - 114.0).abs() < 1e-9);
    assert!((queue_wait_threshold_ms(None) - 50.0).abs() < 1e-9);
}

#[test]
fn decode_rows_keep_the_queue_wait_they_were_judged_by() {
    // Two streams, re-sent inside the window (sent at 150 ms), a mean of 0.5 waiting.
    let recs = vec![
        req(0, &[110, 120, 130, 140], Some(1024), Outcome::Cancelled),
        RequestRecord {
            sent_ns: 150 * MS,
            ..req(1, &[160, 170, 180], Some(1024), Outcome::Cancelled)
        },
    ];
    let mut o = observation(&recs, ReadinessBy::GaugesAndFirstTokens);
    o.queue.mean_waiting = Some(0.5);
    o.queue.max_waiting = Some(1.0);
    o.queued_samples = 2;
    let row = decode_result(&cell(2), o);
    let q = row.queue.expect("queue");
    // 0.5 × 0.1 s / 1 arrival = 50 ms; TBT 10 ms → threshold 90 ms: transient, Valid.
    assert!(
        (q.queue_wait_ms.expect("wait") - 50.0).abs() < 1e-6,
        "{q:?}"
    );
    assert!((q.queue_wait_threshold_ms.expect("threshold") - 90.0).abs() < 1e-6);
    assert_eq!(row.status, CellStatus::Valid);
}

#[test]
fn resume_measures_again_what_was_not_measured() {
    let cut = failed_result(&cell(4), "connect", "connection refused".into());
    let warm_cut = failed_result(&cell(4), "warmup_stream_broken", "broke".into());
    let bad = failed_result(&cell(4), "http_500", "HTTP 500".into());
    // The crash came while the cell built its prompts (a tokenize call refused).
    let prompt_cut = failed_result(&cell(4), "prompt_connect", "refused".into());
    let prompt_bad = failed_result(&cell(4), "prompt", "inexact".into());
    let not_run = bare_result(&cell(4), CellStatus::NotRun, None);
    let valid = bare_result(&cell(4), CellStatus::Valid, None);
    // (row, aborted, --retry-failed, measured again)
    let cases = [
        (&not_run, false, false, true),
        (&valid, true, true, false),
        (&cut, true, false, true),
        (&warm_cut, true, false, true),
        (&cut, false, false, false),
        (&bad, true, false, false),
        (&bad, false, true, true),
        (&prompt_cut, true, false, true),
        (&prompt_bad, true, false, false),
    ];
    for (i, (row, aborted, retry, want)) in cases.into_iter().enumerate() {
        assert_eq!(
            measure_again_on_resume(row, aborted, retry),
            want,
            "case {i}"
        );
    }
}

#[test]
fn a_failing_window_ends_ten_seconds_after_its_first_error() {
    assert!(!failing_window_done(None));
    assert!(!failing_window_done(Some(9.99)));
    assert!(failing_window_done(Some(10.0)));
}

#[test]
fn a_run_fails_as_a_whole_only_when_every_measured_cell_failed() {
    let failed = failed_result(&cell(1), "http_500", "HTTP 500: boom".into());
    let over = bare_result(&cell(8), CellStatus::OverCapacity, None);
    let valid = bare_result(&cell(2), CellStatus::Valid, None);
    assert_eq!(
        every_measured_cell_failed(&[failed.clone(), over.clone()]).as_deref(),
        Some("HTTP 500: boom")
    );
    assert_eq!(every_measured_cell_failed(&[failed, valid]), None);
    assert_eq!(
        every_measured_cell_failed(&[over]),
        None,
        "nothing measured"
    );
    assert_eq!(every_measured_cell_failed(&[]), None);
}

#[test]
fn a_run_that_measured_nothing_says_why() {
    let spent = bare_result(
        &cell(1),
        CellStatus::NotRun,
        Some("the --max-time budget was spent".into()),
    );
    let over = bare_result(&cell(8), CellStatus::OverCapacity, None);
    let valid = bare_result(&cell(2), CellStatus::Valid, None);
    assert_eq!(
        nothing_measured(&[over.clone(), spent.clone()]).as_deref(),
        Some("the --max-time budget was spent")
    );
    assert_eq!(nothing_measured(&[spent, valid]), None);
    assert_eq!(
        nothing_measured(&[over]).as_deref(),
        Some("no reason recorded")
    );
    // No rows at all: every section was dropped before a cell was planned.
    let none = nothing_measured(&[]).expect("an empty run measured nothing");
    assert!(none.starts_with("no cell was run"), "{none}");
}

#[test]
fn a_standalone_prefill_row_is_the_median_with_its_spread() {
    let mut c = cell(1);
    c.key.phase = Phase::Prefill;
    let fin = || Outcome::Finished {
        reason: "length".into(),
    };
    // TTFT 100, 200 and 400 ms for 1024 tokens.
    let rs = [
        req(0, &[100], Some(1024), fin()),
        req(0, &[400], Some(1024), fin()),
        req(0, &[200], Some(1024), fin()),
    ];
    let row = prefill_series_result(&c, &rs, 1024, 0);
    assert_eq!(row.status, CellStatus::Valid);
    let t = row.ttft_ms.expect("spread");
    assert_eq!((t.n, t.min, t.p50, t.max), (3, 100.0, 200.0, 400.0));
    assert_eq!(row.ttft_ms_p50, Some(200.0));
    assert!((row.prompt_tok_per_s.expect("rate") - 1024.0 / 0.2).abs() < 1e-6);
    assert_eq!(row.requests_sent, Some(3));
    // One bad prefill fails the cell with its own reason.
    let mut bad = rs.to_vec();
    bad[1].prompt_tokens_reported = Some(1030);
    let row = prefill_series_result(&c, &bad, 1024, 0);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.errors.get("prompt_mismatch"), Some(&1));
}

#[test]
fn two_cells_in_a_row_without_a_first_token_are_a_stalled_server() {
    let mk = |status: CellStatus, kinds: &[&str]| {
        let mut r = CellResult::empty(Phase::Decode, 1024, "1K", 1, status);
        for k in kinds {
            r.errors.insert((*k).to_string(), 2);
        }
        r
    };
    let stall = || {
        mk(
            CellStatus::Failed,
            &["warmup_timeout_first_token", "timeout_first_token"],
        )
    };
    let skipped = mk(CellStatus::NotRun, &[]);
    assert!(first_token_stall(&[stall(), skipped.clone(), stall()]));
    assert!(!first_token_stall(&[stall()]), "one cell is not a pattern");
    let other = mk(CellStatus::Failed, &["timeout_first_token", "http_500"]);
    assert!(!first_token_stall(&[other, stall()]));
    assert!(!first_token_stall(&[stall(), mk(CellStatus::Valid, &[])]));
    assert!(!first_token_stall(&[mk(CellStatus::Failed, &[]), stall()]));
}

#[test]
fn a_server_busy_at_the_start_barrier_fails_the_cell_unmeasured() {
    let mut o = observation(&[], ReadinessBy::Timeout);
    o.queue.start_barrier = Some(crate::drain::BarrierCheck {
        waited_s: 30.0,
        running: Some(3.0),
        waiting: Some(0.0),
        idle: false,
    });
    let row = decode_result(&cell(2), o);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.total_tok_per_s, None);
    assert_eq!(row.errors.get("server_busy"), Some(&1));
    let why = row.status_reason.expect("a reason");
    assert!(why.starts_with("server busy: 3 running"), "{why}");
    assert_eq!(
        row.queue.and_then(|q| q.start_barrier).map(|b| b.running),
        Some(Some(3.0))
    );
    // An idle start measures as before.
    let recs = [req(0, &[120, 130], Some(1024), Outcome::Cancelled)];
    let mut o = observation(&recs, ReadinessBy::GaugesAndFirstTokens);
    o.queue.start_barrier = Some(crate::drain::BarrierCheck {
        waited_s: 0.01,
        running: Some(0.0),
        waiting: Some(0.0),
        idle: true,
    });
    assert_eq!(decode_result(&cell(1), o).status, CellStatus::Valid);
}

#[test]
fn a_looping_request_fails_a_decode_row() {
    let mut looping = req(0, &[120, 130], Some(1024), Outcome::Cancelled);
    looping.repetition = Some(crate::repetition::LoopFinding {
        channel: crate::repetition::TextChannel::Content,
        cycle_bytes: 64,
        start_byte: 0,
        span_bytes: 4096,
        sample: "x".into(),
    });
    let recs = [looping, req(1, &[120, 140], Some(1024), Outcome::Cancelled)];
    let row = decode_result(
        &cell(2),
        observation(&recs, ReadinessBy::GaugesAndFirstTokens),
    );
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.total_tok_per_s, None);
    assert_eq!(row.loop_guard.map(|l| l.stream), Some(0));
}
