//! The vLLM export on known answers: a hand-made rate cell (figures chosen so every derived
//! figure is easy arithmetic) with and without per-request records, and which cells are left out.

use super::*;
use llmib_core::{CellStatus, Chunk, RunInfo};

fn info() -> RunInfo {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let mut info = Report::load(&dir).expect("golden run").info;
    info.finished_at = Some("2026-12-06T20:23:56.123Z".into());
    info
}

fn summary(p50: f64, p90: f64, p99: f64, mean: f64) -> Summary {
    Summary {
        n: 10,
        min: p50 / 2.0,
        p50,
        p90,
        p99,
        max: p99 * 2.0,
        mean,
        std: None,
        percentiles: Vec::new(),
    }
}

/// 10 requests at 2/s over a 5 s span, 9 completed (one failed), 900 output tokens.
fn cell(arrival: &str) -> CellResult {
    let mut c = CellResult::empty(Phase::Rate, 512, "512", 0, CellStatus::Valid);
    c.request_rate = Some(2.0);
    c.completed_requests = Some(9);
    c.output_tokens = Some(900);
    c.failed_requests = Some(Some(1));
    c.tokens_per_chunk = Some(2.0);
    c.rate = Some(Box::new(RateFigures {
        arrival: arrival.into(),
        scheduled: 10,
        schedule_rate: None,
        max_concurrency: Some(4),
        max_in_flight: 3,
        unfinished_requests: 0,
        never_sent: 0,
        output_tok_per_s: Some(180.0),
        input_tok_per_s: None,
        input_output_tok_per_s: None,
        peak_output_tok_per_s: Some(250.0),
        span_s: Some(5.0),
        ttft_ms: Some(summary(100.0, 150.0, 190.0, 110.0)),
        tpot_ms: Some(summary(10.0, 12.0, 14.0, 10.5)),
        itl_ms: Some(summary(9.0, 11.0, 13.0, 9.5)),
        e2e_ms: Some(summary(1100.0, 1300.0, 1500.0, 1150.0)),
        per_user_tok_per_s: None,
        queue_ms: None,
        pacing_error_us: None,
        pacing_warning: None,
        slo: None,
        workload: None,
        stop_reason: None,
    }));
    c
}

const MS: u64 = 1_000_000;

/// Request 0: sent at 1 s, chunks at +100 ms (1 token), +110 ms (2 tokens), +130 ms (1 token),
/// end at +140 ms. Request 1: sent at 1.5 s, failed after 50 ms.
fn records() -> Vec<RequestRecord> {
    let chunk = |t: u64, tokens| Chunk {
        t_ns: 1000 * MS + t * MS,
        tokens,
    };
    vec![
        RequestRecord {
            stream: 1,
            sent_ns: 1500 * MS,
            headers_ns: None,
            chunks: Vec::new(),
            end_ns: 1550 * MS,
            outcome: Outcome::Error {
                kind: "http_500".into(),
                message: "boom".into(),
            },
            prompt_tokens_reported: None,
            completion_tokens_reported: None,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        },
        RequestRecord {
            stream: 0,
            sent_ns: 1000 * MS,
            headers_ns: None,
            chunks: vec![chunk(100, 1), chunk(110, 2), chunk(130, 1)],
            end_ns: 1140 * MS,
            outcome: Outcome::Finished {
                reason: "length".into(),
            },
            prompt_tokens_reported: Some(510),
            completion_tokens_reported: None,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        },
    ]
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn a_rate_cell_maps_to_vllm_fields() {
    let r = vllm_result(&info(), &cell("poisson"), None).expect("exported");
    assert_eq!(r.date.as_deref(), Some("20261206-202356"));
    assert_eq!(
        (r.backend.as_str(), r.endpoint_type.as_str()),
        ("openai", "openai")
    );
    assert_eq!(r.model_id, "zai-org/GLM-5.3-Flash");
    assert_eq!((r.num_prompts, r.request_rate), (10, 2.0));
    assert_eq!((r.burstiness, r.max_concurrency), (Some(1.0), Some(4)));
    assert_eq!((r.duration, r.completed, r.failed), (5.0, 9, Some(1)));
    // Prompts are exactly C tokens (exact targeting, no workload): 9 × 512.
    assert_eq!(r.total_input_tokens, Some(4608));
    assert_eq!(r.total_output_tokens, 900);
    assert!(close(r.request_throughput, 1.8), "{}", r.request_throughput);
    assert_eq!(r.output_throughput, 180.0);
    assert_eq!(r.total_token_throughput, Some((4608.0 + 900.0) / 5.0));
    assert_eq!(
        r.max_output_tokens_per_s,
        Some(250.0),
        "the row's one-second peak"
    );
    let s = &r.stats;
    for (k, v) in [
        ("median_ttft_ms", 100.0),
        ("p90_ttft_ms", 150.0),
        ("p99_ttft_ms", 190.0),
        ("mean_ttft_ms", 110.0),
        ("median_tpot_ms", 10.0),
        ("p99_tpot_ms", 14.0),
        ("mean_e2el_ms", 1150.0),
        ("p99_e2el_ms", 1500.0),
    ] {
        assert_eq!(s.get(k), Some(&v), "{k}: {s:?}");
    }
    // Two tokens a chunk: METHOD.md's token-weighted ITL is not vLLM's per-chunk one, and no
    // records to compute vLLM's; no standard deviation without the samples.
    assert!(
        !s.keys().any(|k| k.contains("itl") || k.starts_with("std_")),
        "{s:?}"
    );
    assert!(r.detail.is_none());
}

#[test]
fn itl_is_the_cells_where_every_chunk_holds_one_token() {
    let mut c = cell("poisson");
    c.tokens_per_chunk = Some(1.0);
    let r = vllm_result(&info(), &c, None).expect("exported");
    assert_eq!(r.stats.get("median_itl_ms"), Some(&9.0));
    assert_eq!(r.stats.get("p99_itl_ms"), Some(&13.0));
}

#[test]
fn burstiness_follows_the_arrival() {
    let b = |a: &str| {
        vllm_result(&info(), &cell(a), None)
            .expect("exported")
            .burstiness
    };
    assert_eq!(b("poisson"), Some(1.0));
    assert_eq!(b("gamma:0.5"), Some(0.5));
    // vLLM's constant schedule is burstiness inf, which JSON cannot hold.
    assert_eq!(b("constant"), None);
}

#[test]
fn records_give_the_detailed_lists_and_vllms_itl() {
    let recs = records();
    let r = vllm_result(&info(), &cell("poisson"), Some(&recs)).expect("exported");
    let d = r.detail.as_ref().expect("detail");
    // Send order; the server's prompt count where it gave one, else C.
    assert_eq!(d.input_lens, Some(vec![510, 512]));
    assert_eq!(d.output_lens, vec![4, 0]);
    assert_eq!(d.start_times, vec![1.0, 1.5]);
    assert!(close(d.ttfts[0], 0.1) && d.ttfts[1] == 0.0, "{:?}", d.ttfts);
    assert!(close(d.latencies[0], 0.14) && d.latencies[1] == 0.0);
    assert_eq!(d.itls[0].len(), 2, "one gap per chunk: {:?}", d.itls);
    assert!(close(d.itls[0][0], 0.01) && close(d.itls[0][1], 0.02));
    assert_eq!(d.errors, vec![String::new(), "http_500: boom".into()]);
    // Input of the completed requests only.
    assert_eq!(r.total_input_tokens, Some(510));
    let s = &r.stats;
    // vLLM's ITL from the chunk gaps 10 and 20 ms.
    assert!(
        close(s["mean_itl_ms"], 15.0) && close(s["median_itl_ms"], 15.0),
        "{s:?}"
    );
    assert!(close(s["std_itl_ms"], 5.0), "{s:?}");
    // One successful request: its spread is 0; the figures stay the cell's.
    assert_eq!((s["std_ttft_ms"], s["median_ttft_ms"]), (0.0, 100.0));
    assert_eq!(s["std_e2el_ms"], 0.0);
}

#[test]
fn only_rate_cells_with_figures_are_exported() {
    let info = info();
    let mut failed = cell("poisson");
    failed.status = CellStatus::Failed;
    assert!(vllm_result(&info, &failed, None).is_none());
    let decode = CellResult::empty(Phase::Decode, 512, "512", 8, CellStatus::Valid);
    assert!(vllm_result(&info, &decode, None).is_none());
    // The golden run has no rate cell: an empty list.
    let mut report =
        Report::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run"))
            .expect("golden run");
    assert_eq!(
        VllmExporter::default()
            .render(&report)
            .expect("json")
            .trim(),
        "[]"
    );
    report.cells.push(cell("poisson"));
    let files = VllmExporter::default().files(&report).expect("files");
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "vllm-512-2qps-concurrency4.json");
}

#[test]
fn the_file_has_vllms_field_names_and_leaves_out_the_unknown() {
    let mut c = cell("constant");
    c.failed_requests = Some(None);
    let v = serde_json::to_value(vllm_result(&info(), &c, None).expect("exported")).expect("json");
    for k in [
        "date",
        "backend",
        "model_id",
        "num_prompts",
        "request_rate",
        "duration",
    ] {
        assert!(v.get(k).is_some(), "{k}: {v:#}");
    }
    for k in [
        "completed",
        "total_output_tokens",
        "output_throughput",
        "median_ttft_ms",
    ] {
        assert!(v[k].is_number(), "{k}: {v:#}");
    }
    // Null where vLLM writes null; absent where this tool does not know.
    assert!(v["burstiness"].is_null() && v.get("burstiness").is_some());
    for k in [
        "failed",
        "tokenizer_id",
        "ttfts",
        "input_lens",
        "median_itl_ms",
    ] {
        assert!(v.get(k).is_none(), "{k}: {v:#}");
    }
}

#[test]
fn the_date_is_vllms_format() {
    assert_eq!(
        vllm_date("2026-01-02T03:04:05Z").as_deref(),
        Some("20260102-030405")
    );
    assert_eq!(vllm_date("not a date"), None);
    assert_eq!(vllm_date(""), None);
}
