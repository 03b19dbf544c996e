//! Known answers for the AIPerf import on the `profile_export_aiperf.json` files `aiperf
//! profile` 0.13.0 wrote against the simulator (`testdata/aiperf/`): the rows hold exactly the
//! figures of the files, a rate run becomes a rate row and a concurrency run a decode row, and
//! bad files, mixed models and repeated cells are refused.

use super::*;

const RATE10: &[u8] =
    include_bytes!("../../../../testdata/aiperf/rate10/profile_export_aiperf.json");
const C4: &[u8] = include_bytes!("../../../../testdata/aiperf/c4/profile_export_aiperf.json");

fn file(name: &str, bytes: &[u8]) -> ImportFile {
    ImportFile {
        name: name.to_string(),
        sha256: "ab".repeat(32),
        bytes: bytes.to_vec(),
    }
}

#[test]
fn a_rate_run_is_a_rate_row_with_aiperfs_figures() {
    let r = parse_aiperf_export("rate10", RATE10).expect("parses");
    let row = aiperf_cell(&r);
    assert_eq!((row.phase, row.status), (Phase::Rate, CellStatus::Valid));
    assert_eq!(row.status_reason, None);
    // Prompts of 68 to 90 tokens by the server's count, 77.95 on average: ≈78.
    assert_eq!(
        (row.context_tokens, row.context_label.as_str()),
        (78, "≈78")
    );
    assert_eq!((row.concurrency, row.request_rate), (0, Some(10.0)));
    assert_eq!(row.achieved_request_rate, Some(None));
    assert_eq!(row.total_tok_per_s, Some(352.2346636642184));
    assert_eq!(row.measured_s, Some(1.620863744));
    assert_eq!(row.completed_requests, Some(20));
    assert_eq!(
        (row.requests_sent, row.failed_requests),
        (Some(20), Some(Some(0)))
    );
    assert_eq!(row.output_tokens, Some(640));
    assert_eq!(row.ttft_ms_p50, Some(2.0016285));
    assert_eq!(row.tbt_ms_p50, Some(1.511091));
    assert_eq!(row.per_request_tok_per_s, Some(654.836103085049));
    let ttft = row.ttft_ms.as_ref().expect("ttft");
    assert_eq!(
        (ttft.n, ttft.p99, ttft.mean),
        (20, 9.070459049999993, 2.5900121)
    );
    // AIPerf's own deviation, as its file has it.
    assert_eq!(ttft.std, Some(1.8410061244398104));
    let f = row.rate.as_ref().expect("rate figures");
    let tpot = f
        .tpot_ms
        .as_ref()
        .expect("tpot: AIPerf's inter_token_latency");
    assert_eq!(
        (tpot.n, tpot.p50, tpot.p99),
        (20, 1.5271974677419355, 1.759576659032258)
    );
    let itl = f
        .itl_ms
        .as_ref()
        .expect("itl: AIPerf's inter_chunk_latency");
    assert_eq!((itl.n, itl.p50), (620, 1.511091));
    assert_eq!(row.tbt_ms.as_ref(), Some(itl));
    assert_eq!(f.e2e_ms.as_ref().map(|s| s.p50), Some(50.550774));
    assert_eq!(
        f.per_user_tok_per_s.as_ref().map(|s| s.p50),
        Some(654.836103085049)
    );
    assert_eq!(
        (f.arrival.as_str(), f.scheduled, f.max_in_flight),
        ("poisson", 20, 3)
    );
    assert_eq!(
        (f.output_tok_per_s, f.span_s),
        (Some(352.2346636642184), Some(1.620863744))
    );
    // AIPerf's total_isl and total_osl over its benchmark_duration.
    assert_eq!(
        (f.input_tok_per_s, f.input_output_tok_per_s),
        (Some(1559.0 / 1.620863744), Some(2199.0 / 1.620863744))
    );
    assert_eq!((f.queue_ms.as_ref(), f.max_concurrency), (None, None));
}

#[test]
fn a_concurrency_run_is_a_decode_row_at_n() {
    let r = parse_aiperf_export("c4", C4).expect("parses");
    let row = aiperf_cell(&r);
    assert_eq!((row.phase, row.concurrency), (Phase::Decode, 4));
    assert_eq!((row.status, row.request_rate), (CellStatus::Valid, None));
    assert_eq!(row.total_tok_per_s, Some(1706.5030153028365));
    assert_eq!(row.ttft_ms_p50, Some(6.727266999999999));
    assert_eq!(row.tbt_ms_p50, Some(1.9260465));
    assert_eq!(row.completed_requests, Some(20));
    assert!(row.rate.is_none());
}

#[test]
fn the_run_names_aiperf_its_version_the_files_and_the_definitions() {
    let run = import_aiperf(&[file("c4", C4), file("rate10", RATE10)]).expect("imports");
    assert_eq!(run.cells.len(), 2);
    // The plan's order: decode before rate.
    assert_eq!(
        (run.cells[0].phase, run.cells[1].phase),
        (Phase::Decode, Phase::Rate)
    );
    let i = &run.info;
    assert_eq!(
        (i.tool.name.as_str(), i.tool.version.as_str()),
        (AIPERF, "0.13.0")
    );
    assert_eq!(i.model.served_model, "tiny-llama");
    assert_eq!(i.started_at, "2026-12-06T21:00:58.203805Z");
    assert_eq!(
        i.finished_at.as_deref(),
        Some("2026-12-06T21:01:11.230953Z")
    );
    assert_eq!(i.plan.cells.len(), 2);
    assert_eq!(i.plan.settings.max_output, 32);
    let notes = i.notes.join("\n");
    assert!(notes.contains(&"ab".repeat(32)), "{notes}");
    assert!(notes.contains("rate10: sha256"), "{notes}");
    assert!(
        notes.contains("token counts from the server's usage"),
        "{notes}"
    );
    for d in AIPERF_DEFINITIONS {
        assert!(notes.contains(d));
    }
    assert_eq!(i.engine.extra["imported_from"], AIPERF);
}

#[test]
fn failures_make_a_failed_row_without_figures() {
    let mut v: Value = serde_json::from_slice(RATE10).expect("JSON");
    v["error_request_count"] = serde_json::json!({"unit": "requests", "avg": 2.0});
    v["error_summary"] = serde_json::json!([
        {"error_details": {"code": 500, "type": "HTTPError", "message": "boom"}, "count": 2}
    ]);
    let bytes = serde_json::to_vec(&v).expect("JSON");
    let row = aiperf_cell(&parse_aiperf_export("x", &bytes).expect("parses"));
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(
        row.status_reason.as_deref(),
        Some("AIPerf: 2 of 22 requests failed")
    );
    assert_eq!(
        (row.requests_sent, row.failed_requests),
        (Some(22), Some(Some(2)))
    );
    assert_eq!(row.errors.get(AIPERF_ERROR_KIND), Some(&2));
    assert_eq!(row.first_error.as_deref(), Some("boom"));
    assert_eq!(
        (row.total_tok_per_s, row.ttft_ms_p50, row.rate.is_none()),
        (None, None, true)
    );
}

#[test]
fn bad_files_mixed_models_and_repeated_cells_are_refused() {
    let e = parse_aiperf_export("x.json", b"{\"aiperf_version\": ").expect_err("not JSON");
    assert!(e.to_string().starts_with("x.json: not an AIPerf"), "{e}");
    let e = parse_aiperf_export("v.json", b"{\"date\": \"x\"}").expect_err("not AIPerf's");
    assert!(matches!(e, ImportError::BadFile { .. }), "{e}");
    let mut v: Value = serde_json::from_slice(C4).expect("JSON");
    v["input_config"]["models"]["items"][0]["name"] = "other".into();
    let other = serde_json::to_vec(&v).expect("JSON");
    let e = import_aiperf(&[file("a", RATE10), file("b", &other)]).expect_err("two models");
    assert!(matches!(e, ImportError::ModelsDiffer { .. }), "{e}");
    let e = import_aiperf(&[file("a", RATE10), file("b", RATE10)]).expect_err("one cell");
    assert!(matches!(e, ImportError::SameCell { .. }), "{e}");
    assert!(matches!(import_aiperf(&[]), Err(ImportError::NoFiles)));
}
