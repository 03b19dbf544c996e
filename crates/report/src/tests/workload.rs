//! Workloads in the Load section: a trace replay's rate row (varying lengths, a time scale, a
//! prefix prediction, stopped by the trace's end) through every exporter and the schema.

use crate::{Format, Report};
use llmib_core::{
    CellRequest, LengthSource, StopReason, Workload, WorkloadKind, WorkloadRequest, WorkloadSpec,
    workload_figures,
};

/// The Load fixture plus a replay's row at a context of its own (key 3903, as the Mooncake
/// sample's mean prompt): four requests of 1K to 4K prompt tokens.
pub(crate) fn workload_report() -> Report {
    let mut r = super::load::load_report();
    let w = Workload {
        source: WorkloadSpec {
            kind: WorkloadKind::Mooncake,
            path: "trace.jsonl".into(),
        },
        requests: (1..=4u64)
            .map(|i| WorkloadRequest {
                line: i as usize,
                arrival_s: Some(i as f64),
                input_tokens: 1024 * i,
                output_tokens: 16 * i,
                prefix_blocks: vec![0, i],
            })
            .collect(),
        skipped: 0,
    };
    let reqs: Vec<CellRequest> = w
        .requests
        .iter()
        .map(|q| CellRequest {
            input_tokens: q.input_tokens,
            output_tokens: q.output_tokens,
            prefix_blocks: q.prefix_blocks.clone(),
            prompt: None,
        })
        .collect();
    let sent: Vec<&CellRequest> = reqs.iter().collect();
    let mut f = workload_figures(LengthSource::Replay(&w), &sent).expect("figures");
    f.time_scale = Some(2.0);
    f.trace_rate = Some(1.0);
    f.predicted_cached_tokens = Some(1536);
    let mut row = r
        .cells
        .iter()
        .find(|c| c.phase == llmib_core::Phase::Rate)
        .expect("a rate row")
        .clone();
    row.context_tokens = 3903;
    row.context_label = "mooncake:trace.jsonl".into();
    row.request_rate = Some(2.0);
    if let Some(rate) = row.rate.as_mut() {
        rate.workload = Some(f);
        rate.stop_reason = Some(StopReason::TraceEnd);
    }
    r.cells.push(row);
    r.cells.sort_by_key(llmib_core::CellResult::key);
    r
}

/// A CSV line's fields (a quoted field may hold commas; no field here holds a quote).
fn fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    for ch in line.chars() {
        match ch {
            '"' => quoted = !quoted,
            ',' if !quoted => out.push(String::new()),
            _ => out.last_mut().expect("a field").push(ch),
        }
    }
    out
}

#[test]
fn every_exporter_shows_the_workload() {
    let r = workload_report();
    let md = Format::Markdown.exporter().render(&r).expect("md");
    assert!(md.contains("### Workloads: lengths asked and sent"), "{md}");
    let line = md
        .lines()
        .find(|l| l.contains("mooncake:trace.jsonl") && l.contains("trace's end"))
        .unwrap_or_else(|| panic!("a workload row: {md}"));
    for want in [
        "2×",
        "1,024 / 2,048 / 4,096, 2,560.0",
        "0.000",
        "1,536 (15.0%)",
    ] {
        assert!(line.contains(want), "{want} in {line}");
    }
    let csv = Format::Csv.exporter().render(&r).expect("csv");
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let col = |n: &str| {
        header
            .iter()
            .position(|h| *h == n)
            .unwrap_or_else(|| panic!("{n}"))
    };
    let row = fields(
        csv.lines()
            .find(|l| l.contains("trace.jsonl"))
            .expect("csv row"),
    );
    assert_eq!(row[col("Workload")], "mooncake:trace.jsonl");
    assert_eq!(row[col("Time scale")], "2");
    assert_eq!(row[col("Input length p50")], "2048");
    assert_eq!(row[col("Output length mean")], "40");
    assert_eq!(row[col("Predicted cached tokens")], "1536");
    assert_eq!(row[col("Stop reason")], "the trace's end");
    let html = Format::Html.exporter().render(&r).expect("html");
    for id in [
        "id=\"workload-table\"",
        "-input\"",
        "-output\"",
        "class=\"expected\"",
    ] {
        assert!(html.contains(id), "{id}");
    }
    // Rows of fixed lengths have no workload: the table is absent without one.
    let plain = Format::Markdown
        .exporter()
        .render(&super::load::load_report())
        .expect("md");
    assert!(!plain.contains("Workloads"));
}
