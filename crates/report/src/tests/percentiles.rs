//! `--percentiles` through the exporters: a row whose summaries carry p99.9 shows it in the
//! Markdown and HTML section, keeps it in `results.json` (valid against the schema, which
//! refuses a broken item), and writes vLLM's `p99.9_*_ms` keys; a run without it renders no
//! section and no key.

use crate::{Format, Report, vllm_result};
use llmib_core::{CellResult, CellStatus, Phase, RateFigures, Summary};
use serde_json::{Value, json};
use std::path::Path;

fn golden() -> Report {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    Report::load(&dir).expect("golden")
}

/// TTFT of ten requests, 1..=10 ms: p99.9 = 9.991 (numpy), p75 = 7.75.
fn ttft(ps: &[f64]) -> Option<Summary> {
    Summary::of_vec_at(&mut (1..=10).map(f64::from).collect(), ps)
}

/// The golden run with its first valid decode row's TTFT summarised at `ps`.
fn with_ttft(ps: &[f64]) -> Report {
    let mut r = golden();
    r.info.plan.settings.percentiles = ps.to_vec();
    let row = (r.cells.iter_mut())
        .find(|c| c.phase == Phase::Decode && c.status == CellStatus::Valid)
        .expect("a valid decode row");
    row.ttft_ms = ttft(ps);
    r
}

fn render(r: &Report, f: Format) -> String {
    f.exporter().render(r).expect("renders")
}

#[test]
fn the_reports_show_the_extra_percentiles_and_only_with_them() {
    let r = with_ttft(&[75.0, 99.9]);
    let md = render(&r, Format::Markdown);
    assert!(md.contains("Latency percentiles"), "{md}");
    let section = md.split("Latency percentiles").nth(1).unwrap_or_default();
    let head = section
        .lines()
        .find(|l| l.starts_with("| Cell"))
        .unwrap_or_default();
    assert!(
        head.contains("| p50 | p75 | p90 | p99 | p99.9 | Max |"),
        "{head}"
    );
    let line = section
        .lines()
        .find(|l| l.contains("| TTFT |"))
        .unwrap_or_default();
    // 10 samples; p50 5.5, p75 7.75, p90 9.1, p99 9.91, p99.9 9.991, max 10.
    let want = "| 10 | 5.5 ms | 7.8 ms | 9.1 ms | 9.9 ms | 10.0 ms | 10.0 ms |";
    assert!(line.ends_with(want), "{line}");
    let html = render(&r, Format::Html);
    assert!(html.contains("id=\"percentiles\"") && html.contains("p99.9"));
    let plain = with_ttft(&[]);
    for f in [Format::Markdown, Format::Html] {
        let text = render(&plain, f);
        assert!(!text.contains("Latency percentiles"), "{f:?}");
    }
}

#[test]
fn results_json_keeps_them_and_the_schema_checks_them() {
    let doc: Value =
        serde_json::from_str(&render(&with_ttft(&[99.9]), Format::Json)).expect("JSON");
    assert_eq!(doc["run"]["percentiles"], json!([99.9]));
    let at = (doc["cells"].as_array().expect("cells"))
        .iter()
        .position(|c| c["ttft_ms"]["percentiles"].is_array())
        .expect("a row with them");
    let p = &doc["cells"][at]["ttft_ms"]["percentiles"][0];
    assert_eq!(p["p"], json!(99.9));
    assert!(
        (p["value"].as_f64().unwrap_or(0.0) - 9.991).abs() < 1e-9,
        "{p}"
    );
    let errs = super::schema::errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    for bad in [
        json!([{ "p": 99.9 }]),
        json!([{ "p": 99.9, "value": "9.9" }]),
        json!(99.9),
    ] {
        let mut broken = doc.clone();
        broken["cells"][at]["ttft_ms"]["percentiles"] = bad.clone();
        assert!(!super::schema::errors(&broken).is_empty(), "{bad}");
    }
    let mut broken = doc.clone();
    broken["run"]["percentiles"] = json!(["99.9"]);
    assert!(!super::schema::errors(&broken).is_empty());
    // Without the flag the document has neither key.
    let plain = render(&with_ttft(&[]), Format::Json);
    assert!(!plain.contains("percentiles"), "{plain}");
}

/// A rate row whose summaries carry p99.9.
fn rate_row(ps: &[f64]) -> CellResult {
    let mut c = CellResult::empty(Phase::Rate, 512, "512", 0, CellStatus::Valid);
    c.request_rate = Some(2.0);
    c.completed_requests = Some(10);
    c.output_tokens = Some(100);
    c.tokens_per_chunk = Some(1.0);
    let s = ttft(ps);
    c.rate = Some(Box::new(RateFigures {
        arrival: "poisson".into(),
        scheduled: 10,
        schedule_rate: None,
        max_concurrency: None,
        max_in_flight: 3,
        unfinished_requests: 0,
        never_sent: 0,
        output_tok_per_s: Some(20.0),
        input_tok_per_s: None,
        input_output_tok_per_s: None,
        peak_output_tok_per_s: None,
        span_s: Some(5.0),
        ttft_ms: s.clone(),
        tpot_ms: s.clone(),
        itl_ms: s.clone(),
        e2e_ms: s,
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

#[test]
fn the_vllm_file_has_vllms_keys_for_them() {
    let info = golden().info;
    let r = vllm_result(&info, &rate_row(&[75.0, 99.9]), None).expect("exported");
    for metric in ["ttft", "tpot", "itl", "e2el"] {
        let v = r.stats.get(&format!("p99.9_{metric}_ms")).copied();
        assert!(
            v.is_some_and(|v| (v - 9.991).abs() < 1e-9),
            "{metric}: {:?}",
            r.stats
        );
        assert_eq!(r.stats.get(&format!("p75_{metric}_ms")), Some(&7.75));
    }
    let plain = vllm_result(&info, &rate_row(&[]), None).expect("exported");
    assert!(
        !plain
            .stats
            .keys()
            .any(|k| k.starts_with("p75") || k.starts_with("p99.9"))
    );
}
