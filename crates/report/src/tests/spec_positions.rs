//! The acceptance rate per draft position through the exporters: a decode row with
//! `speculative.per_position_accept_rate` gets the Speculative decoding table's column (only
//! then) and a `results.json` that the schema accepts, and refuses with a broken list.

use crate::{Format, Report};
use llmib_core::{CellStatus, Phase, SpecFigures};
use serde_json::{Value, json};
use std::path::Path;

fn with_positions(rates: Vec<f64>) -> Report {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let mut r = Report::load(&dir).expect("golden");
    let row = (r.cells.iter_mut())
        .find(|c| c.phase == Phase::Decode && c.status == CellStatus::Valid)
        .expect("a valid decode row");
    row.speculative = Some(SpecFigures {
        accept_rate: Some(0.8),
        accept_length: Some(3.4),
        source: "server counters (delta over the window)".into(),
        per_position_accept_rate: rates,
    });
    r
}

#[test]
fn the_table_shows_rates_by_position_only_where_a_row_has_them() {
    let md = Format::Markdown
        .exporter()
        .render(&with_positions(vec![0.9, 0.8, 0.7]))
        .expect("md");
    assert!(md.contains("Accept rate by draft position"), "{md}");
    assert!(md.contains("| 80.0% | 3.40 |") && md.contains("| 90.0% / 80.0% / 70.0% |"));
    let plain = Format::Markdown
        .exporter()
        .render(&with_positions(Vec::new()))
        .expect("md");
    assert!(plain.contains("## Speculative decoding"));
    assert!(!plain.contains("by draft position"), "{plain}");
}

#[test]
fn results_json_keeps_them_and_the_schema_checks_them() {
    let text = Format::Json
        .exporter()
        .render(&with_positions(vec![0.9, 0.8, 0.7]))
        .expect("json");
    let doc: Value = serde_json::from_str(&text).expect("JSON");
    let errs = super::schema::errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let at = (doc["cells"].as_array().expect("cells"))
        .iter()
        .position(|c| c["speculative"]["per_position_accept_rate"].is_array())
        .expect("the row");
    for bad in [json!(["0.9"]), json!([-0.1]), json!(0.9)] {
        let mut broken = doc.clone();
        broken["cells"][at]["speculative"]["per_position_accept_rate"] = bad.clone();
        assert!(!super::schema::errors(&broken).is_empty(), "{bad}");
    }
}
