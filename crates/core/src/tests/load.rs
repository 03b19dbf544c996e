//! Known-answer tests of the open-loop rows: a rate cell's figures, SLO verdict and pacing
//! warning; the closed-loop SLO; the capacity row; auto rates and `--request-rate` parsing.

use super::*;
use crate::arrival::ArrivalPattern;
use crate::capacity_search::Capacity;
use crate::cell::SloRow;
use crate::cell::{CellResult, CellStatus, Phase};
use crate::counting::CountReport;
use crate::figures::Window;
use crate::load_settings::{LoadSettings, RateSpec};
use crate::meta::TokenCountSource;
use crate::record::{Chunk, Outcome, RequestRecord};
use crate::slo::Slo;

const MS: u64 = 1_000_000;

/// Request `i`: sent at `sent` ms, tokens at `chunks` ms (one each), ended at the last chunk.
fn rec(i: u32, sent: u64, chunks: &[u64]) -> RequestRecord {
    RequestRecord {
        stream: i,
        sent_ns: sent * MS,
        headers_ns: None,
        chunks: chunks
            .iter()
            .map(|t| Chunk {
                t_ns: t * MS,
                tokens: 1,
            })
            .collect(),
        end_ns: chunks.last().copied().unwrap_or(sent) * MS,
        outcome: Outcome::Finished {
            reason: "length".into(),
        },
        prompt_tokens_reported: Some(100),
        completion_tokens_reported: Some(chunks.len() as u64),
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

fn obs<'a>(
    records: &'a [RequestRecord],
    due_ns: &'a [u64],
    waited: &'a [bool],
    slo: Option<&'a Slo>,
) -> RateObservation<'a> {
    RateObservation {
        records,
        scheduled_ns: due_ns,
        waited,
        requested_rate: 10.0,
        arrival: ArrivalPattern::Constant,
        max_concurrency: None,
        max_in_flight: 2,
        slo,
        count: CountReport::new(),
        nominal_source: TokenCountSource::ServerUsagePerChunk,
        expected_prompt_tokens: 100,
        prompt_tolerance: 0,
        expected_prompts: None,
        workload: None,
        stop_reason: None,
        fault: None,
    }
}

/// Three requests due every 100 ms, each sent 50 µs late; the third is slow to start.
fn three() -> (Vec<RequestRecord>, Vec<u64>) {
    let late = 50_000; // 50 µs
    let mut rs = vec![
        rec(0, 100, &[150, 160, 170, 180]),
        rec(1, 200, &[250, 270, 290]),
        rec(2, 300, &[800, 810]),
    ];
    for r in &mut rs {
        r.sent_ns += late;
        for c in &mut r.chunks {
            c.t_ns += late;
        }
        r.end_ns += late;
    }
    (rs, vec![100 * MS, 200 * MS, 300 * MS])
}

#[test]
fn a_rate_cell_has_the_figures_method_defines() {
    let (rs, due) = three();
    let slo: Slo = "ttft_p50=100ms,tpot_p99=25ms".parse().expect("slo");
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false; 3], Some(&slo)),
    );
    assert_eq!(row.phase, Phase::Rate);
    assert_eq!(row.status, CellStatus::Valid);
    assert_eq!(row.request_rate, Some(10.0));
    // Sends 100 ms apart: (3 − 1) / 0.2 s.
    let achieved = row.achieved_request_rate.flatten().expect("achieved");
    assert!((achieved - 10.0).abs() < 1e-9, "{achieved}");
    assert_eq!(
        (row.requests_sent, row.completed_requests),
        (Some(3), Some(3))
    );
    assert_eq!(row.failed_requests, Some(Some(0)));
    // 9 tokens from the first send (100.05 ms) to the last end (810.05 ms).
    assert_eq!(row.output_tokens, Some(9));
    let tok_s = row.total_tok_per_s.expect("tok/s");
    assert!((tok_s - 9.0 / 0.71).abs() < 1e-9, "{tok_s}");
    let f = row.rate.as_ref().expect("rate figures");
    // Three finished prompts of 100 tokens by the server's count over the same 0.71 s; with
    // the 9 output tokens, 309.
    let input = f.input_tok_per_s.expect("input tok/s");
    assert!((input - 300.0 / 0.71).abs() < 1e-9, "{input}");
    let both = f.input_output_tok_per_s.expect("input + output tok/s");
    assert!((both - 309.0 / 0.71).abs() < 1e-9, "{both}");
    // A finished request without a prompt count: no input figure from part of them.
    let mut partial = rs.clone();
    partial[1].prompt_tokens_reported = None;
    let p = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&partial, &due, &[false; 3], None),
    );
    assert_eq!(p.rate.as_ref().and_then(|f| f.input_tok_per_s), None);
    // TTFT 50, 50, 500 ms; TPOT 10, 20, 10 ms; E2E 80, 90, 510 ms.
    let ttft = f.ttft_ms.as_ref().expect("ttft");
    assert_eq!((ttft.min, ttft.p50, ttft.max), (50.0, 50.0, 500.0));
    let tpot = f.tpot_ms.as_ref().expect("tpot");
    assert!((tpot.p50 - 10.0).abs() < 1e-9 && (tpot.max - 20.0).abs() < 1e-9);
    let e2e = f.e2e_ms.as_ref().expect("e2e");
    assert!((e2e.max - 510.0).abs() < 1e-9, "{e2e:?}");
    let user = f.per_user_tok_per_s.as_ref().expect("per user");
    assert!((user.p50 - 100.0).abs() < 1e-6 && (user.min - 50.0).abs() < 1e-6);
    assert!((row.per_request_tok_per_s.expect("p50") - 100.0).abs() < 1e-6);
    // Every request 50 µs late: queue and pacing error say so; no warning at 100 ms gaps.
    let pacing = f.pacing_error_us.as_ref().expect("pacing");
    assert!((pacing.p99 - 50.0).abs() < 1e-6, "{pacing:?}");
    assert!((f.queue_ms.as_ref().expect("queue").p50 - 0.05).abs() < 1e-9);
    assert_eq!(f.pacing_warning, None);
    assert_eq!(f.schedule_rate, Some(10.0));
    // SLO: TTFT p50 = 50 ms holds; TPOT p99 ≈ 19.8 ms holds; the third request (TTFT 500)
    // misses the per-request TTFT limit: 2 of 3 met.
    let s = f.slo.as_ref().expect("slo");
    assert_eq!((s.judged, s.met, s.holds), (3, 2, true));
    assert_eq!(row.slo_attainment, Some(Some(2.0 / 3.0)));
    let goodput = row.goodput_rps.flatten().expect("goodput");
    assert!((goodput - 2.0 / 0.71).abs() < 1e-9);
    let good_tok = row.goodput_tok_per_s.flatten().expect("goodput tok/s");
    assert!((good_tok - 7.0 / 0.71).abs() < 1e-9);
    assert_eq!(row.key().rate_mrps, 10_000);
}

#[test]
fn failures_and_drain_cuts_count_against_attainment_and_the_cell_is_kept() {
    let (mut rs, due) = three();
    rs[1].outcome = Outcome::Error {
        kind: "http_500".into(),
        message: "boom".into(),
    };
    rs[2].outcome = Outcome::Cancelled;
    let slo: Slo = "e2e_p50=1s".parse().expect("slo");
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false; 3], Some(&slo)),
    );
    assert_eq!(
        row.status,
        CellStatus::Valid,
        "a cell with a finished request is kept"
    );
    assert_eq!(row.failed_requests, Some(Some(2)));
    assert_eq!(row.completed_requests, Some(1));
    assert_eq!(row.slo_attainment, Some(Some(1.0 / 3.0)));
    assert_eq!(row.errors.get("http_500"), Some(&1));
    assert_eq!(row.errors.get("drain_cut"), Some(&1));
    assert_eq!(row.rate.as_ref().map(|f| f.unfinished_requests), Some(1));
    // Failed requests are the worst values: E2E p50 of (90 ms, ∞, ∞) breaks 1 s.
    assert!(
        !row.rate
            .as_ref()
            .and_then(|f| f.slo.clone())
            .expect("slo")
            .holds
    );
    for r in &mut rs {
        r.outcome = Outcome::Cancelled;
    }
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false; 3], Some(&slo)),
    );
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.slo_attainment, Some(Some(0.0)), "kept with its figures");
    assert_eq!(row.goodput_rps, Some(Some(0.0)));
}

#[test]
fn a_late_client_is_warned_and_a_cap_is_queue_time_not_pacing_error() {
    let (mut rs, due) = three();
    // The third request 5 ms late against 100 ms gaps: p99 over 1 ms and 10 ms? 5 ms < 10 ms
    // (a tenth of the gap): no warning yet.
    rs[2].sent_ns = 305 * MS;
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false; 3], None),
    );
    assert_eq!(
        row.rate.as_ref().and_then(|f| f.pacing_warning.clone()),
        None
    );
    // 30 ms late: a warning that names the achieved rate.
    rs[2].sent_ns = 330 * MS;
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false; 3], None),
    );
    let w = row
        .rate
        .as_ref()
        .and_then(|f| f.pacing_warning.clone())
        .expect("warning");
    assert!(w.contains("could not keep the schedule's rate"), "{w}");
    // The same delay behind a cap is client queue time, not a pacing error.
    let waited = [false, false, true];
    let capped = RateObservation {
        max_concurrency: Some(2),
        ..obs(&rs, &due, &waited, None)
    };
    let row = rate_result(&rate_cell(100, "100", 10.0), capped);
    let f = row.rate.as_ref().expect("figures");
    assert_eq!(f.pacing_warning, None);
    assert!((f.queue_ms.as_ref().expect("queue").max - 30.0).abs() < 1e-3);
    assert!(f.pacing_error_us.as_ref().expect("pacing").max < 100.0);
    // No SLO: the goodput columns are null, not 0.
    assert_eq!(row.slo_attainment, Some(None));
    assert_eq!(row.goodput_rps, Some(None));
}

#[test]
fn the_rate_rows_contract_names_are_written_and_read_back() {
    let (rs, due) = three();
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false; 3], None),
    );
    let line = serde_json::to_string(&row).expect("json");
    let v: serde_json::Value = serde_json::from_str(&line).expect("value");
    assert_eq!(v["phase"], "rate");
    for k in [
        "request_rate",
        "achieved_request_rate",
        "requests_sent",
        "completed_requests",
        "failed_requests",
        "slo_attainment",
        "goodput_rps",
        "goodput_tok_per_s",
    ] {
        assert!(v.get(k).is_some(), "{k} missing from {line}");
    }
    assert!(v["slo_attainment"].is_null(), "null without an SLO");
    let back: CellResult = serde_json::from_str(&line).expect("read back");
    assert_eq!(back.key(), row.key());
    assert_eq!(back.achieved_request_rate, row.achieved_request_rate);
    assert_eq!(back.rate.as_ref().map(|f| f.scheduled), Some(3));
    assert_eq!(
        back.slo_attainment,
        Some(None),
        "null reads back as null, not absent"
    );
    // A decode row carries none of them.
    let decode = crate::cell::CellResult::empty(Phase::Decode, 100, "100", 1, CellStatus::Valid);
    let d = serde_json::to_value(&decode).expect("json");
    assert!(d.get("request_rate").is_none() && d.get("goodput_rps").is_none());
}

fn decode_row(n: u32, holds: Option<bool>) -> CellResult {
    let mut r = CellResult::empty(Phase::Decode, 100, "100", n, CellStatus::Valid);
    r.measured_s = Some(10.0);
    r.slo = holds.map(|holds| SloRow {
        slo: "ttft_p99=1000ms".into(),
        judged: 10,
        met: 10 * u64::from(holds),
        attainment: Some(if holds { 1.0 } else { 0.0 }),
        holds,
        limits: vec![],
    });
    r
}

#[test]
fn capacity_concurrency_is_the_largest_n_with_every_smaller_n_holding() {
    let rows = vec![
        decode_row(1, Some(true)),
        decode_row(2, Some(true)),
        decode_row(4, Some(false)),
        decode_row(8, Some(true)),
    ];
    assert_eq!(
        capacity_concurrency(&rows, 100).map(|r| r.concurrency),
        Some(2)
    );
    assert_eq!(capacity_concurrency(&rows, 200), None, "another context");
    let none = vec![decode_row(1, Some(false)), decode_row(2, Some(true))];
    assert_eq!(capacity_concurrency(&none, 100), None);
}

#[test]
fn a_capacity_row_keeps_every_point_and_says_none_where_none_holds() {
    let (rs, due) = three();
    let slo: Slo = "ttft_p50=100ms".parse().expect("slo");
    let mut points = vec![];
    for rate in [10.0, 20.0] {
        points.push(rate_result(
            &rate_cell(100, "100", rate),
            RateObservation {
                requested_rate: rate,
                ..obs(&rs, &due, &[false; 3], Some(&slo))
            },
        ));
    }
    let rows = vec![decode_row(1, Some(true)), decode_row(2, Some(true))];
    let row = capacity_result(
        &capacity_cell(100, "100"),
        CapacityInputs {
            slo: &slo,
            precision: 0.05,
            answer: Capacity::Found {
                rate: 20.0,
                failed_at: 21.0,
            },
            rate_rows: &points,
            rows: &rows,
            synchronous_rate: Some(2.0),
            saturation_rate: Some(30.0),
        },
    );
    assert_eq!(row.phase, Phase::Capacity);
    assert_eq!(row.capacity_request_rate, Some(Some(20.0)));
    assert_eq!(row.capacity_concurrency, Some(Some(2)));
    assert_eq!(row.goodput_rps, points[1].goodput_rps);
    let c = row.capacity.as_ref().expect("search");
    assert_eq!(c.points.len(), 2);
    assert_eq!((c.outcome.as_str(), c.failed_at), ("found", Some(21.0)));
    assert_eq!(c.concurrency_goodput_rps, Some(1.0));
    let none = capacity_result(
        &capacity_cell(100, "100"),
        CapacityInputs {
            answer: Capacity::None,
            rows: &[],
            ..CapacityInputs {
                slo: &slo,
                precision: 0.05,
                answer: Capacity::None,
                rate_rows: &points,
                rows: &[],
                synchronous_rate: None,
                saturation_rate: None,
            }
        },
    );
    assert_eq!(none.capacity_request_rate, Some(None));
    assert_eq!(none.capacity_concurrency, Some(None));
    assert_eq!(none.status_reason.as_deref(), Some("no rate meets the SLO"));
    let v = serde_json::to_value(&none).expect("json");
    assert!(v["capacity_request_rate"].is_null() && v.get("capacity_request_rate").is_some());
}

#[test]
fn a_decode_cell_is_judged_on_the_requests_that_ended_in_its_window() {
    let (mut rs, _) = three();
    rs[1].outcome = Outcome::Cancelled; // cut by the window's close: not judged
    let slo: Slo = "ttft_p50=100ms".parse().expect("slo");
    let w = Window {
        start_ns: 0,
        end_ns: 900 * MS,
    };
    let s = closed_loop_slo(&slo, &rs, w);
    assert_eq!((s.judged, s.met), (2, 1));
    assert_eq!(s.attainment, Some(0.5));
    assert_eq!(s.limits[0].key, "ttft_p50");
}

#[test]
fn auto_rates_span_the_synchronous_rate_and_saturation() {
    assert_eq!(auto_rates(1.0, 9.0, 5), Some(vec![1.0, 3.0, 5.0, 7.0, 9.0]));
    // A server that runs one request at a time: from half the synchronous rate to it.
    assert_eq!(auto_rates(2.0, 2.0, 3), Some(vec![1.0, 1.5, 2.0]));
    assert_eq!(auto_rates(0.0, 2.0, 3), None);
    assert_eq!(round_rate(1.234_567), 1.235);
    assert_eq!(round_rate(1234.567), 1235.0);
    assert_eq!(round_rate(0.012_345), 0.012);
}

#[test]
fn request_rates_read_as_lists_or_auto() {
    assert_eq!("1,2.5, 4".parse(), Ok(RateSpec::List(vec![1.0, 2.5, 4.0])));
    assert_eq!("auto".parse(), Ok(RateSpec::Auto { points: 8 }));
    assert_eq!("auto:5".parse(), Ok(RateSpec::Auto { points: 5 }));
    assert!("auto:1".parse::<RateSpec>().is_err());
    let e = "2,-1".parse::<RateSpec>().expect_err("negative");
    assert!(e.to_string().contains("`-1`"), "{e}");
    let l = LoadSettings {
        rates: Some(RateSpec::Auto { points: 3 }),
        arrival: "gamma:0.5".parse().expect("gamma"),
        slo: Some("ttft_p99=2s".parse().expect("slo")),
        find_capacity: true,
        precision: 0.05,
        max_concurrency: Some(8),
        drain_s: 60.0,
        skip_decode: false,
        input_len: None,
        output_len: None,
        workload: None,
        time_scale: None,
        prompts: None,
    };
    let json = serde_json::to_string(&l).expect("json");
    assert!(
        json.contains("\"gamma:0.5\"") && json.contains("ttft_p99=2000ms"),
        "{json}"
    );
    assert_eq!(
        serde_json::from_str::<LoadSettings>(&json).expect("back"),
        l
    );
}

#[test]
fn a_closed_batch_rate_is_finished_requests_over_the_span() {
    let (mut rs, _) = three();
    // 3 finished from 100.05 ms to 810.05 ms.
    let r = closed_batch_rate(&rs).expect("rate");
    assert!((r - 3.0 / 0.71).abs() < 1e-9, "{r}");
    rs[0].outcome = Outcome::Cancelled;
    let r = closed_batch_rate(&rs).expect("rate");
    assert!(
        (r - 2.0 / 0.71).abs() < 1e-9,
        "a cut request is not counted"
    );
    assert_eq!(closed_batch_rate(&[]), None);
}

#[test]
fn every_row_of_a_rate_cell_carries_its_rate() {
    let cell = rate_cell(100, "100", 2.5);
    let row = crate::verdict::failed_result(&cell, "schedule", "no request".into());
    assert_eq!(row.request_rate, Some(2.5));
    assert_eq!(row.key(), cell.key);
    let row = crate::verdict::interrupted_result(&cell);
    assert_eq!(row.key(), cell.key);
}

#[test]
fn a_cells_schedule_is_refused_with_the_reason_past_its_bounds() {
    let c = ArrivalPattern::Constant;
    // 2/s over 3 s: due at 0.5, 1.0, 1.5, 2.0, 2.5 s.
    let due = cell_schedule(c, 2.0, 3.0, 1, 1024).expect("fits");
    assert_eq!(due.len(), 5);
    let none = cell_schedule(c, 0.1, 3.0, 1, 1024)
        .expect_err("none in the window")
        .to_string();
    assert!(none.contains("lengthen --duration"), "{none}");
    let many = cell_schedule(c, 20_000.0, 3.0, 1, 1)
        .expect_err("too many")
        .to_string();
    assert!(many.contains("more than 50000 per cell"), "{many}");
    // 1,000 prompts of 256K tokens = 256 M tokens > 128 M.
    let big = cell_schedule(c, 100.0, 10.0, 1, 262_144)
        .expect_err("too much memory")
        .to_string();
    assert!(big.contains("128 M prompt tokens"), "{big}");
    assert!(cell_schedule(c, -1.0, 3.0, 1, 1).is_err());
}

/// With a cap, a request still waiting for it when the drain limit cuts the cell was never
/// sent: it is no send (achieved rate, requests sent, queue time), but a failure against the
/// attainment.
#[test]
fn a_request_never_sent_is_no_send_but_fails_the_slo() {
    let (mut rs, mut due) = three();
    let cut_at = 2_000 * MS;
    rs.push(RequestRecord::never_sent(3, cut_at));
    due.push(400 * MS);
    let slo: Slo = "ttft_p50=1s".parse().expect("slo");
    let row = rate_result(
        &rate_cell(100, "100", 10.0),
        obs(&rs, &due, &[false, false, false, true], Some(&slo)),
    );
    assert_eq!(row.requests_sent, Some(3));
    let achieved = row.achieved_request_rate.flatten().expect("achieved");
    assert!(
        (achieved - 10.0).abs() < 1e-9,
        "the cut instant is no send: {achieved}"
    );
    assert_eq!(row.failed_requests, Some(Some(1)));
    assert_eq!(row.errors.get(crate::record::NEVER_SENT), Some(&1));
    let f = row.rate.as_ref().expect("rate figures");
    assert_eq!(f.never_sent, 1);
    // Queue time over the three sent (50 µs each), not the 1.6 s the cut would add.
    assert!(f.queue_ms.as_ref().expect("queue").max < 1.0);
    // Three of four scheduled requests met the SLO.
    assert_eq!(row.slo_attainment, Some(Some(0.75)));
}

/// The one-second peak counts each chunk's tokens in the whole second after the first send it
/// arrived in: a speculative chunk of 3 brings 3, a chunk at 1.0 s exactly opens the second
/// bucket, a request never sent does not move the first send, and no token gives no figure.
#[test]
fn the_peak_second_counts_tokens_not_chunks_from_the_first_send() {
    let mut a = rec(0, 500, &[600, 900, 1499]);
    a.chunks[1].tokens = 3;
    let b = rec(1, 700, &[1500, 1600, 2400]);
    // From the first send (500 ms): a's 100, 400 and 999 ms are second 0 (1 + 3 + 1 tokens);
    // b's 1000 and 1100 ms second 1, 1900 ms second 1 too (3 tokens).
    assert_eq!(peak_output_tok_per_s(&[a.clone(), b.clone()]), Some(5.0));
    // Counted from a never-sent request's 0, second 0 would hold 4 and second 1 three.
    let mut never = rec(2, 0, &[]);
    never.outcome = Outcome::Error {
        kind: crate::record::NEVER_SENT.into(),
        message: "the drain limit came first".into(),
    };
    assert_eq!(peak_output_tok_per_s(&[never, a, b]), Some(5.0));
    let rs = [rec(0, 0, &[10, 20]), rec(1, 0, &[1000, 1001, 1002])];
    assert_eq!(
        peak_output_tok_per_s(&rs),
        Some(3.0),
        "1.0 s opens bucket 1"
    );
    assert_eq!(peak_output_tok_per_s(&[rec(0, 0, &[])]), None);
}

#[test]
fn a_rate_row_carries_the_runs_extra_percentiles() {
    let (rs, due) = three();
    let cell = rate_cell(100, "100", 10.0);
    let plain = rate_result(&cell, obs(&rs, &due, &[false; 3], None));
    let row = rate_result_at(&cell, obs(&rs, &due, &[false; 3], None), &[75.0, 99.9]);
    let (f, p) = (row.rate.expect("rate"), plain.rate.expect("rate"));
    let at = |s: &Option<crate::stats::Summary>, q: f64| {
        s.as_ref().and_then(|s| s.at(q)).unwrap_or(-1.0)
    };
    // numpy.percentile by hand: TTFT [50, 50, 500] ms, ITL [10, 10, 10, 10, 20, 20] ms,
    // E2E [80, 90, 510] ms, TPOT [10, 20, 10] ms.
    for (got, want) in [
        (at(&f.ttft_ms, 99.9), 50.0 + 0.998 * 450.0),
        (at(&f.ttft_ms, 75.0), 275.0),
        (at(&f.itl_ms, 75.0), 17.5),
        (at(&f.itl_ms, 99.9), 20.0),
        (at(&f.e2e_ms, 99.9), 90.0 + 0.998 * 420.0),
        (at(&f.tpot_ms, 99.9), 10.0 + 0.998 * 10.0),
    ] {
        assert!((got - want).abs() < 1e-6, "{got} against {want}");
    }
    // The fixed figures are the same; without the flag there are none beyond them.
    assert_eq!(
        f.ttft_ms.as_ref().map(|s| s.p99),
        p.ttft_ms.as_ref().map(|s| s.p99)
    );
    for s in [&p.ttft_ms, &p.tpot_ms, &p.itl_ms, &p.e2e_ms] {
        assert!(s.as_ref().is_some_and(|s| s.percentiles.is_empty()));
    }
}
