//! Known answers for the GuideLLM import on the benchmarks reports `guidellm run` 0.8.1 wrote
//! against the simulator (`testdata/guidellm/`): the rows hold exactly the figures of the
//! reports, a constant-rate benchmark becomes a rate row and a concurrent one a decode row, and
//! bad files, unknown strategies, mixed models and repeated cells are refused.

use super::*;

const RATE10: &[u8] = include_bytes!("../../../../testdata/guidellm/rate10.json");
const C4: &[u8] = include_bytes!("../../../../testdata/guidellm/c4.json");

fn file(name: &str, bytes: &[u8]) -> ImportFile {
    ImportFile {
        name: name.to_string(),
        sha256: "cd".repeat(32),
        bytes: bytes.to_vec(),
    }
}

#[test]
fn a_constant_rate_benchmark_is_a_rate_row_with_guidellms_figures() {
    let r = parse_guidellm_report("rate10.json", RATE10).expect("parses");
    assert_eq!((r.version.as_str(), r.benchmarks.len()), ("0.8.1", 1));
    let row = guidellm_cell(&r, &r.benchmarks[0]);
    assert_eq!((row.phase, row.status), (Phase::Rate, CellStatus::Valid));
    // Prompts of 88 to 108 tokens by the server's count, 97.15 on average: ≈97.
    assert_eq!(
        (row.context_tokens, row.context_label.as_str()),
        (97, "≈97")
    );
    assert_eq!((row.concurrency, row.request_rate), (0, Some(10.0)));
    assert_eq!(row.achieved_request_rate, Some(None));
    assert_eq!(row.total_tok_per_s, Some(328.612526293793));
    assert_eq!(row.measured_s, Some(1.947582483291626));
    assert_eq!(
        (row.requests_sent, row.completed_requests),
        (Some(20), Some(20))
    );
    assert_eq!(row.failed_requests, Some(Some(0)));
    assert_eq!(row.output_tokens, Some(640));
    assert_eq!(row.ttft_ms_p50, Some(2.5229454040527344));
    // No per-gap ITL in GuideLLM's report: null, never derived.
    assert_eq!((row.tbt_ms_p50, row.tbt_ms.as_ref()), (None, None));
    assert_eq!(row.per_request_tok_per_s, None);
    let ttft = row.ttft_ms.as_ref().expect("ttft");
    assert_eq!((ttft.n, ttft.p99), (20, 3.452777862548828));
    // GuideLLM's own deviation (std_dev), as its file has it.
    assert_eq!(ttft.std, Some(0.43583253409461));
    let f = row.rate.as_ref().expect("rate figures");
    let tpot = f
        .tpot_ms
        .as_ref()
        .expect("tpot: GuideLLM's inter_token_latency_ms");
    assert_eq!(
        (tpot.n, tpot.p50, tpot.p99),
        (620, 1.4985761334819179, 1.5076437304096837)
    );
    assert_eq!(
        (f.itl_ms.as_ref(), f.per_user_tok_per_s.as_ref()),
        (None, None)
    );
    let e2e = f.e2e_ms.as_ref().expect("e2e");
    assert_eq!(e2e.p50, 0.04939103126525879 * 1000.0);
    assert_eq!(
        (f.arrival.as_str(), f.scheduled, f.max_in_flight),
        ("constant", 20, 1)
    );
    assert_eq!((f.unfinished_requests, f.max_concurrency), (0, None));
}

#[test]
fn a_concurrent_benchmark_is_a_decode_row_at_its_streams() {
    let r = parse_guidellm_report("c4.json", C4).expect("parses");
    let row = guidellm_cell(&r, &r.benchmarks[0]);
    assert_eq!((row.phase, row.concurrency), (Phase::Decode, 4));
    assert_eq!((row.status, row.request_rate), (CellStatus::Valid, None));
    assert_eq!(row.total_tok_per_s, Some(1659.1741074463835));
    assert_eq!(row.ttft_ms_p50, Some(7.772922515869141));
    assert_eq!(row.measured_s, Some(0.38573408126831055));
    assert!(row.rate.is_none());
}

#[test]
fn an_unlimited_throughput_benchmark_is_a_decode_row_of_all_its_requests() {
    let mut v: Value = serde_json::from_slice(C4).expect("JSON");
    v["benchmarks"][0]["config"]["strategy"] = serde_json::json!({"type_": "throughput"});
    let r = parse_guidellm_report("t", &serde_json::to_vec(&v).expect("JSON")).expect("parses");
    let row = guidellm_cell(&r, &r.benchmarks[0]);
    assert_eq!((row.phase, row.concurrency), (Phase::Decode, 20));
}

#[test]
fn the_run_names_guidellm_its_version_the_files_and_the_definitions() {
    let run =
        import_guidellm(&[file("rate10.json", RATE10), file("c4.json", C4)]).expect("imports");
    assert_eq!(run.cells.len(), 2);
    assert_eq!(
        (run.cells[0].phase, run.cells[1].phase),
        (Phase::Decode, Phase::Rate)
    );
    let i = &run.info;
    assert_eq!(
        (i.tool.name.as_str(), i.tool.version.as_str()),
        (GUIDELLM, "0.8.1")
    );
    assert_eq!(i.model.served_model, "tiny-llama");
    assert!(
        i.started_at.starts_with("2026-12-06T21:01:41"),
        "{}",
        i.started_at
    );
    assert_eq!(i.plan.settings.max_output, 32);
    let notes = i.notes.join("\n");
    assert!(notes.contains(&"cd".repeat(32)), "{notes}");
    assert!(notes.contains("c4.json: sha256"), "{notes}");
    // Each row's note names the cell that benchmark became.
    assert!(notes.contains("-> rate 10/s at ≈97"), "{notes}");
    assert!(notes.contains("-> decode ≈97 × 4"), "{notes}");
    for d in GUIDELLM_DEFINITIONS {
        assert!(notes.contains(d));
    }
}

#[test]
fn errored_requests_make_a_failed_row_without_figures() {
    let mut v: Value = serde_json::from_slice(RATE10).expect("JSON");
    v["benchmarks"][0]["metrics"]["request_totals"] =
        serde_json::json!({"successful": 18, "errored": 2, "incomplete": 0, "total": 20});
    let bytes = serde_json::to_vec(&v).expect("JSON");
    let r = parse_guidellm_report("x", &bytes).expect("parses");
    let row = guidellm_cell(&r, &r.benchmarks[0]);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(
        row.status_reason.as_deref(),
        Some("GuideLLM: 2 of 20 requests errored")
    );
    assert_eq!(row.errors.get(GUIDELLM_ERROR_KIND), Some(&2));
    assert_eq!((row.total_tok_per_s, row.rate.is_none()), (None, true));
}

#[test]
fn bad_files_strategies_models_and_repeated_cells_are_refused() {
    let e = parse_guidellm_report("x.json", b"[1, 2").expect_err("not JSON");
    assert!(e.to_string().starts_with("x.json: not a GuideLLM"), "{e}");
    let e = parse_guidellm_report("v.json", b"{\"date\": \"x\"}").expect_err("not GuideLLM's");
    assert!(
        e.to_string().contains("no metadata.guidellm_version"),
        "{e}"
    );
    let mut v: Value = serde_json::from_slice(RATE10).expect("JSON");
    v["benchmarks"][0]["config"]["strategy"]["type_"] = "trace".into();
    let e = parse_guidellm_report("t", &serde_json::to_vec(&v).expect("JSON")).expect_err("trace");
    assert!(
        e.to_string().contains("strategy \"trace\" is not imported"),
        "{e}"
    );
    let mut v: Value = serde_json::from_slice(C4).expect("JSON");
    v["benchmarks"][0]["config"]["backend"]["model"] = "other".into();
    let other = serde_json::to_vec(&v).expect("JSON");
    let e = import_guidellm(&[file("a", RATE10), file("b", &other)]).expect_err("two models");
    assert!(matches!(e, ImportError::ModelsDiffer { .. }), "{e}");
    let e = import_guidellm(&[file("a", RATE10), file("b", RATE10)]).expect_err("one cell");
    assert!(matches!(e, ImportError::SameCell { .. }), "{e}");
    assert!(matches!(import_guidellm(&[]), Err(ImportError::NoFiles)));
}
