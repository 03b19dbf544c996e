//! Known answers for the vLLM import on files `vllm bench serve` wrote against the simulator
//! (`testdata/vllm-bench-serve/`): the rows hold exactly the figures of the files, a rate file
//! becomes a rate row and an `inf` file a decode row, and bad files, mixed models and repeated
//! cells are refused.

use super::*;
use crate::record::{Chunk, Outcome, RequestRecord};

const RATE10: &[u8] = include_bytes!("../../../../testdata/vllm-bench-serve/rate10.json");
const INF_C4: &[u8] = include_bytes!("../../../../testdata/vllm-bench-serve/inf-c4.json");

fn file(name: &str, bytes: &[u8]) -> VllmFile {
    VllmFile {
        name: name.to_string(),
        sha256: "00".repeat(32),
        bytes: bytes.to_vec(),
    }
}

#[test]
fn a_rate_file_is_a_rate_row_with_vllms_figures() {
    let r = parse_vllm_result("rate10.json", RATE10).expect("parses");
    let row = vllm_cell(&r);
    assert_eq!(row.phase, Phase::Rate);
    assert_eq!(row.status, CellStatus::Valid);
    assert_eq!(row.status_reason, None);
    // 1288 prompt tokens over 20 requests of 64 or 66 tokens: ≈64.
    assert_eq!(
        (row.context_tokens, row.context_label.as_str()),
        (64, "≈64")
    );
    assert_eq!(row.concurrency, 0);
    assert_eq!(row.request_rate, Some(10.0));
    assert_eq!(row.achieved_request_rate, Some(None));
    assert_eq!(row.total_tok_per_s, Some(311.3080648062443));
    assert_eq!(row.measured_s, Some(2.0558413750004547));
    assert_eq!(row.completed_requests, Some(20));
    assert_eq!(row.failed_requests, Some(Some(0)));
    assert_eq!(row.requests_sent, Some(20));
    assert_eq!(row.output_tokens, Some(640));
    assert_eq!(row.ttft_ms_p50, Some(2.5889049993566005));
    assert_eq!(row.tbt_ms_p50, Some(1.5068395005073398));
    assert_eq!(row.per_request_tok_per_s, None);
    let ttft = row.ttft_ms.as_ref().expect("ttft summary");
    assert_eq!(
        (ttft.n, ttft.p99, ttft.mean),
        (20, 16.372442290285107, 4.410594149794633)
    );
    // Not saved by vLLM: computed from its samples, numpy-linear (numpy gives 7.97131569906925).
    assert!((ttft.p90 - 7.97131569906925).abs() < 1e-9, "{}", ttft.p90);
    assert!((ttft.max - 16.386314000556013).abs() < 1e-9);
    let f = row.rate.as_ref().expect("rate figures");
    let tpot = f.tpot_ms.as_ref().expect("tpot");
    assert_eq!(
        (tpot.n, tpot.p50, tpot.p99),
        (20, 1.5112590000435668, 1.9328583212817676)
    );
    let itl = f.itl_ms.as_ref().expect("itl");
    assert_eq!(
        (itl.n, itl.p50, itl.p99),
        (620, 1.5068395005073398, 6.006658860223968)
    );
    assert_eq!(row.tbt_ms.as_ref(), Some(itl));
    assert_eq!(f.output_tok_per_s, Some(311.3080648062443));
    // vLLM's input and total token throughput: its totals over its duration (the file's own
    // total_token_throughput is 937.8155452288111).
    assert_eq!(f.input_tok_per_s, Some(1288.0 / 2.0558413750004547));
    assert_eq!(f.input_output_tok_per_s, Some(937.8155452288111));
    assert_eq!((f.arrival.as_str(), f.scheduled), ("poisson", 20));
    assert_eq!(f.max_in_flight, 4);
    // vLLM saved no E2E figures by default: the summary is its samples'.
    assert_eq!(f.e2e_ms.as_ref().map(|s| s.n), Some(20));
    assert_eq!(f.per_user_tok_per_s, None);
}

#[test]
fn an_inf_file_is_a_decode_row_at_its_concurrency_cap() {
    let r = parse_vllm_result("inf-c4.json", INF_C4).expect("parses");
    let row = vllm_cell(&r);
    assert_eq!((row.phase, row.concurrency), (Phase::Decode, 4));
    assert_eq!(row.status, CellStatus::Valid);
    assert_eq!(row.request_rate, None);
    assert_eq!(row.total_tok_per_s, Some(1889.6890921689785));
    assert_eq!(row.ttft_ms_p50, Some(5.1819909995174385));
    assert_eq!(row.tbt_ms_p50, Some(1.9291160006105201));
    assert_eq!(row.ttft_ms.as_ref().map(|s| s.p99), Some(14.71805393017348));
    assert_eq!(row.rate, None);
    assert_eq!(row.avg_active_requests, None);
}

#[test]
fn failures_fail_the_row_with_the_first_error_and_no_figures() {
    let mut v: serde_json::Value = serde_json::from_slice(RATE10).expect("json");
    v["completed"] = 19.into();
    v["failed"] = 1.into();
    v["errors"][3] = "Bad Request".into();
    let r = parse_vllm_result("x.json", &serde_json::to_vec(&v).expect("bytes")).expect("parses");
    let row = vllm_cell(&r);
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(
        row.status_reason.as_deref(),
        Some("vllm bench serve: 1 of 20 requests failed")
    );
    assert_eq!(row.first_error.as_deref(), Some("Bad Request"));
    assert_eq!(row.errors.get(VLLM_ERROR_KIND), Some(&1));
    assert_eq!((row.total_tok_per_s, row.ttft_ms_p50), (None, None));
    assert_eq!(row.completed_requests, Some(19));
}

#[test]
fn a_sweep_of_one_model_is_one_run_in_plan_order() {
    let run =
        import_vllm(&[file("rate10.json", RATE10), file("inf-c4.json", INF_C4)]).expect("imports");
    let phases: Vec<Phase> = run.cells.iter().map(|c| c.phase).collect();
    assert_eq!(phases, [Phase::Decode, Phase::Rate]);
    assert_eq!(run.info.model.served_model, "tiny-llama");
    assert_eq!(run.info.tool.name, VLLM_BENCH);
    assert_eq!(run.info.started_at, "2026-12-06T20:23:56Z");
    assert_eq!(
        run.info.finished_at.as_deref(),
        Some("2026-12-06T20:24:31Z")
    );
    assert_eq!(run.info.plan.cells.len(), 2);
    assert_eq!(run.info.plan.settings.max_output, 32);
    let notes = run.info.notes.join("\n");
    assert!(
        notes.contains(&format!("rate10.json: sha256 {}", "00".repeat(32))),
        "{notes}"
    );
    assert!(notes.contains("backend openai"), "{notes}");
    assert!(notes.contains("TPOT: vLLM's is (E2E - TTFT)"), "{notes}");
}

#[test]
fn mixed_models_repeated_cells_and_bad_files_are_refused() {
    let mut v: serde_json::Value = serde_json::from_slice(INF_C4).expect("json");
    v["model_id"] = "other".into();
    let other = serde_json::to_vec(&v).expect("bytes");
    let e = import_vllm(&[file("a.json", RATE10), file("b.json", &other)]).expect_err("models");
    assert!(matches!(e, ImportError::ModelsDiffer { .. }), "{e}");
    let e = import_vllm(&[file("a.json", RATE10), file("c.json", RATE10)]).expect_err("cell");
    assert_eq!(
        e.to_string(),
        "c.json: its cell rate 10/s at ≈64 was already imported from a.json"
    );
    let e = import_vllm(&[file("d.json", b"{\"date\": 1")]).expect_err("bad");
    assert!(
        e.to_string()
            .starts_with("d.json: not a vllm bench serve result file"),
        "{e}"
    );
    assert!(matches!(import_vllm(&[]), Err(ImportError::NoFiles)));
}

/// The one-second peak is vLLM's own: the rate file's requests rebuilt as records (a chunk per
/// token at vLLM's instants: send + TTFT, then each gap) give the `max_output_tokens_per_s` the
/// file saved, and the import keeps that figure.
#[test]
fn the_one_second_peak_is_vllms_own_figure() {
    let v: serde_json::Value = serde_json::from_slice(RATE10).expect("json");
    let list = |k: &str| v[k].as_array().expect(k).clone();
    let starts: Vec<f64> = list("start_times")
        .iter()
        .filter_map(|x| x.as_f64())
        .collect();
    let first = starts.iter().copied().fold(f64::INFINITY, f64::min);
    let ns = |s: f64| ((s - first) * 1e9).round() as u64;
    let records: Vec<RequestRecord> = starts
        .iter()
        .zip(list("ttfts"))
        .zip(list("itls"))
        .enumerate()
        .map(|(i, ((start, ttft), itls))| {
            let mut t = start + ttft.as_f64().expect("ttft");
            let mut chunks = vec![Chunk {
                t_ns: ns(t),
                tokens: 1,
            }];
            for gap in itls.as_array().expect("itls") {
                t += gap.as_f64().expect("gap");
                chunks.push(Chunk {
                    t_ns: ns(t),
                    tokens: 1,
                });
            }
            let end_ns = chunks.last().map_or(0, |c| c.t_ns);
            RequestRecord {
                stream: i as u32,
                sent_ns: ns(*start),
                headers_ns: None,
                chunks,
                end_ns,
                outcome: Outcome::Finished {
                    reason: "length".into(),
                },
                prompt_tokens_reported: None,
                completion_tokens_reported: None,
                cached_tokens_reported: None,
                repetition: None,
                structured: None,
                text: None,
            }
        })
        .collect();
    assert_eq!(crate::peak_output_tok_per_s(&records), Some(326.0));
    let r = parse_vllm_result("rate10.json", RATE10).expect("parses");
    let row = vllm_cell(&r);
    let f = row.rate.as_ref().expect("rate figures");
    assert_eq!(f.peak_output_tok_per_s, Some(326.0));
}

/// `--metric-percentiles 50,75,99.9` writes `p75_*_ms` and `p99.9_*_ms`: the row's summaries
/// carry them as vLLM wrote them; a file without them gives none.
#[test]
fn vllms_extra_percentiles_are_imported() {
    let mut doc: serde_json::Value = serde_json::from_slice(RATE10).expect("JSON");
    doc["p99.9_ttft_ms"] = serde_json::json!(16.38);
    doc["p75_itl_ms"] = serde_json::json!(1.7);
    doc["p99.9_e2el_ms"] = serde_json::json!(40.5);
    let bytes = serde_json::to_vec(&doc).expect("bytes");
    let row = vllm_cell(&parse_vllm_result("rate10.json", &bytes).expect("parses"));
    let f = row.rate.as_ref().expect("rate figures");
    let at = |s: &Option<Summary>, p: f64| s.as_ref().and_then(|s| s.at(p));
    assert_eq!(at(&row.ttft_ms, 99.9), Some(16.38));
    assert_eq!(at(&f.ttft_ms, 99.9), Some(16.38));
    assert_eq!(at(&f.itl_ms, 75.0), Some(1.7));
    assert_eq!(at(&f.e2e_ms, 99.9), Some(40.5));
    assert_eq!(at(&f.tpot_ms, 99.9), None, "not in the file");
    let plain = vllm_cell(&parse_vllm_result("rate10.json", RATE10).expect("parses"));
    assert!(plain.ttft_ms.is_some_and(|s| s.percentiles.is_empty()));
}
