//! `results.json` against the checked-in `schemas/results.schema.json`.
//!
//! The validator is the library's own (`crate::schema_check`, which the hub runs on every
//! upload); these tests hold the exporter to the schema and the schema to catching breakage.

use crate::{Format, Report};
use serde_json::{Value, json};
use std::path::Path;

fn golden_doc() -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let report = Report::load(&dir).expect("golden");
    let text = Format::Json.exporter().render(&report).expect("json");
    serde_json::from_str(&text).expect("valid JSON")
}

/// Every violation of `doc`, as `path: what` lines (the other test modules assert on these).
pub(crate) fn errors(doc: &Value) -> Vec<String> {
    crate::schema_check::schema_errors(doc)
        .into_iter()
        .map(|v| format!("{}: {}", v.path, v.what))
        .collect()
}

/// The compiled-in schema is the checked-in file, and the public check agrees with `errors`.
#[test]
fn the_compiled_in_schema_is_the_published_file() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/results.schema.json");
    let file = std::fs::read_to_string(p).expect("schema file");
    assert_eq!(file, crate::RESULTS_SCHEMA);
    let mut doc = golden_doc();
    crate::check_results_schema(&doc).expect("golden validates");
    doc["cells"][0]["status"] = json!("great");
    let v = crate::check_results_schema(&doc).expect_err("unknown status");
    assert_eq!(v.path, "/cells/0/status", "{v}");
}

#[test]
fn golden_results_json_validates() {
    let errs = errors(&golden_doc());
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn the_schema_catches_broken_documents() {
    let mut doc = golden_doc();
    doc["cells"][0]["status"] = json!("great");
    assert!(!errors(&doc).is_empty(), "unknown status");

    let mut doc = golden_doc();
    doc["schema_version"] = json!(2);
    assert!(!errors(&doc).is_empty(), "schema version");

    let mut doc = golden_doc();
    if let Some(o) = doc["cells"][3].as_object_mut() {
        o.remove("ttft_ms_p50");
    }
    assert!(!errors(&doc).is_empty(), "missing contract field");

    // A cell that was not run must not carry a 0 instead of null.
    let mut doc = golden_doc();
    let cells = doc["cells"].as_array_mut().expect("cells");
    let over = cells
        .iter_mut()
        .find(|c| c["status"] == "over_capacity")
        .expect("an over-capacity cell");
    over["total_tok_per_s"] = json!(0.0);
    assert!(
        !errors(&doc).is_empty(),
        "0 for a figure that does not apply"
    );

    let mut doc = golden_doc();
    doc["run"]["duration_s"] = json!("30 s");
    assert!(!errors(&doc).is_empty(), "a number as text");
}

/// A row's hardware summary, as the driver writes it, validates; a wrong source does not.
#[test]
fn a_hardware_summary_validates() {
    let mut doc = golden_doc();
    let summary = llmib_core::HwSummary {
        samples: 30,
        gpus: 8,
        source: "nvml".into(),
        gpu_util_pct_mean: Some(93.4),
        vram_used_bytes_max: Some(1 << 40),
        ..Default::default()
    };
    doc["cells"][1]["hardware"] = serde_json::to_value(&summary).expect("summary");
    let errs = errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    doc["cells"][1]["hardware"]["source"] = json!("guess");
    assert!(!errors(&doc).is_empty(), "unknown source");
}

/// A run with open-loop rows (rate cells, capacity rows, the run's load settings) validates;
/// a rate row without a contract column, or with a figure of the wrong type, does not.
#[test]
fn open_loop_rows_validate() {
    let mut report = super::load::load_report();
    report.info.plan.settings.load = Some(llmib_core::LoadSettings {
        rates: Some("1,2,4,8".parse().expect("rates")),
        arrival: "poisson".parse().expect("arrival"),
        slo: Some(super::load::SLO.parse().expect("slo")),
        find_capacity: true,
        precision: 0.05,
        max_concurrency: None,
        drain_s: 60.0,
        skip_decode: false,
        input_len: None,
        output_len: None,
        workload: None,
        time_scale: None,
        prompts: None,
    });
    let text = Format::Json.exporter().render(&report).expect("json");
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    assert!(doc["run"]["load"].is_object());
    // A replay's row, with its workload figures and stop reason, validates too.
    let replay = super::workload::workload_report();
    let replay: Value =
        serde_json::from_str(&Format::Json.exporter().render(&replay).expect("json"))
            .expect("JSON");
    let errs = errors(&replay);
    assert!(errs.is_empty(), "{errs:#?}");
    let errs = errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let rate_at = |doc: &Value| -> usize {
        doc["cells"]
            .as_array()
            .expect("cells")
            .iter()
            .position(|c| c["phase"] == "rate")
            .expect("a rate row")
    };
    let mut broken = doc.clone();
    let i = rate_at(&broken);
    if let Some(o) = broken["cells"][i].as_object_mut() {
        o.remove("failed_requests");
    }
    assert!(!errors(&broken).is_empty(), "a missing open-loop column");
    let mut broken = doc.clone();
    broken["cells"][i]["slo_attainment"] = json!("100%");
    assert!(!errors(&broken).is_empty(), "attainment as text");
    let mut broken = doc.clone();
    let cap = broken["cells"]
        .as_array_mut()
        .expect("cells")
        .iter_mut()
        .find(|c| c["phase"] == "capacity")
        .expect("a capacity row");
    cap["capacity"]["outcome"] = json!("maybe");
    assert!(!errors(&broken).is_empty(), "an unknown outcome");
}
