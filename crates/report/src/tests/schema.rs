//! `results.json` against the checked-in `schemas/results.schema.json`.
//!
//! The `jsonschema` crate would pull in a regex engine, an HTTP client feature set and more for
//! one test, so this is a focused validator of the JSON Schema keywords our schema uses. It
//! refuses any keyword it does not implement, so the schema cannot quietly rely on one that is
//! not checked here.

use crate::{Format, Report};
use serde_json::{Value, json};
use std::path::Path;

const KNOWN: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "items",
    "minimum",
    "anyOf",
    "allOf",
    "if",
    "then",
];

fn type_ok(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        other => panic!("unknown type {other}"),
    }
}

/// Errors of `v` against `schema` (empty when valid), each with its JSON pointer.
fn validate(root: &Value, schema: &Value, v: &Value, at: &str, errs: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        panic!("schema at {at} is not an object");
    };
    for k in s.keys() {
        assert!(
            KNOWN.contains(&k.as_str()),
            "unsupported keyword {k} at {at}"
        );
    }
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("local $ref");
        let target = &root["$defs"][name];
        assert!(!target.is_null(), "dangling $ref {r}");
        validate(root, target, v, at, errs);
    }
    if let Some(t) = s.get("type") {
        let ok = match t {
            Value::String(t) => type_ok(v, t),
            Value::Array(ts) => ts.iter().any(|t| type_ok(v, t.as_str().unwrap_or(""))),
            _ => panic!("bad type at {at}"),
        };
        if !ok {
            errs.push(format!("{at}: {v} is not of type {t}"));
            return;
        }
    }
    if let Some(c) = s.get("const")
        && c != v
    {
        errs.push(format!("{at}: {v} is not {c}"));
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array)
        && !e.contains(v)
    {
        errs.push(format!("{at}: {v} is not one of {e:?}"));
    }
    if let (Some(m), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64())
        && x < m
    {
        errs.push(format!("{at}: {x} < {m}"));
    }
    if let Some(obj) = v.as_object() {
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = r.as_str().unwrap_or_default();
            if !obj.contains_key(key) {
                errs.push(format!("{at}: missing required `{key}`"));
            }
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (k, sub) in props {
                if let Some(x) = obj.get(k) {
                    validate(root, sub, x, &format!("{at}/{k}"), errs);
                }
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            validate(root, items, x, &format!("{at}/{i}"), errs);
        }
    }
    if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
        let ok = any.iter().any(|sub| {
            let mut e = Vec::new();
            validate(root, sub, v, at, &mut e);
            e.is_empty()
        });
        if !ok {
            errs.push(format!("{at}: matches none of anyOf"));
        }
    }
    for sub in s
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        validate(root, sub, v, at, errs);
    }
    if let Some(cond) = s.get("if") {
        let mut e = Vec::new();
        validate(root, cond, v, at, &mut e);
        if e.is_empty()
            && let Some(then) = s.get("then")
        {
            validate(root, then, v, at, errs);
        }
    }
}

fn schema() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/results.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("schema file")).expect("schema JSON")
}

fn golden_doc() -> Value {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let report = Report::load(&dir).expect("golden");
    let text = Format::Json.exporter().render(&report).expect("json");
    serde_json::from_str(&text).expect("valid JSON")
}

pub(crate) fn errors(doc: &Value) -> Vec<String> {
    let root = schema();
    let mut errs = Vec::new();
    validate(&root, &root, doc, "", &mut errs);
    errs
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
