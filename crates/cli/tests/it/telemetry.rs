//! Telemetry over time, end to end: a tiny matrix against the simulator (on this machine, so
//! the hardware monitor's series are kept too) writes one `telemetry.jsonl` line per measured
//! cell, whose server counters rise with the cell's tokens, and the report draws a small
//! multiple per cell.

use crate::common::*;
use crate::run::{exact_sim, run_small};
use serde_json::Value;

/// The telemetry lines of `dir`.
fn telemetry(dir: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("telemetry.jsonl")).expect("telemetry.jsonl");
    text.lines()
        .map(|l| serde_json::from_str(l).expect("a telemetry line is JSON"))
        .collect()
}

/// A column's numbers (nulls left out).
fn column(series: &Value, key: &str) -> Vec<f64> {
    series[key]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_f64).collect())
        .unwrap_or_default()
}

/// The line of `row`'s cell.
fn line_of<'a>(lines: &'a [Value], row: &Value) -> &'a Value {
    lines
        .iter()
        .find(|l| {
            let c = &l["cell"];
            c["phase"] == row["phase"]
                && c["context_tokens"] == row["context_tokens"]
                && c["concurrency"] == row["concurrency"]
        })
        .unwrap_or_else(|| panic!("no telemetry line for {row:#} in {lines:#?}"))
}

#[test]
fn a_tiny_matrix_writes_a_series_per_cell_and_the_report_draws_them() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("telemetry");
    let o = run_small(&sim.url, &dir, "2K", "1,4", "2s", "128", &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let lines = telemetry(&dir);
    let measured: Vec<&Value> = rows.iter().filter(|r| r["status"] == "valid").collect();
    assert_eq!(measured.len(), 3, "{rows:#?}");
    assert_eq!(lines.len(), measured.len(), "one line per measured cell");
    for row in &measured {
        let l = line_of(&lines, row);
        let dur = num(l, "dur");
        assert!(l["t0"].is_string() && dur > 0.0, "{l:#}");
        // The server's series: its counters only rise, and they rose in the cell.
        let srv = &l["srv"];
        let t = column(srv, "t");
        let gen_tokens = column(srv, "gen");
        let prompt = column(srv, "prompt");
        assert!(t.len() >= 2, "{l:#}");
        assert_eq!(
            gen_tokens.len(),
            t.len(),
            "every read has the counter: {l:#}"
        );
        assert!(t.windows(2).all(|w| w[0] <= w[1]) && t[t.len() - 1] <= dur + 0.01);
        for c in [&gen_tokens, &prompt] {
            assert!(c.windows(2).all(|w| w[0] <= w[1]), "{l:#}");
        }
        let first_last = |c: &[f64]| c[c.len() - 1] - c[0];
        if row["phase"] == "prefill" {
            // A prefill cell ends with its one token, and a server publishes its counters
            // after the pass that sent it (the simulator, like vLLM, a moment later): the
            // prompt is counted by the next cell's first read, not always by this cell's end.
            let next = lines
                .iter()
                .find(|n| n["cell"]["phase"] == "decode")
                .expect("a decode cell's line");
            let later = column(&next["srv"], "prompt");
            assert!(later[0] >= prompt[0] + 2048.0, "{l:#}\n{next:#}");
        } else {
            assert!(first_last(&prompt) > 0.0, "{l:#}");
            assert!(first_last(&gen_tokens) > 0.0, "{l:#}");
        }
        // This machine's series: the CPU read twice a second (a prefill shorter than half a
        // second may have no sample). Without a GPU here, the row has no verdict.
        let hw = &l["hw"];
        if dur >= 1.0 {
            assert!(!column(hw, "t").is_empty(), "{l:#}");
            assert!(!column(&hw["cpu"], "u").is_empty(), "{l:#}");
        }
        if hw.get("gpus").is_none() {
            assert!(row.get("hardware_verdict").is_none(), "{row:#}");
        }
        if row["phase"] == "decode" {
            decode_counters_match_the_row(row, l, &t, &gen_tokens);
        }
    }

    let d = dir.to_str().expect("utf-8 path");
    let o = run_bin(&["report", d, "--format", "html"]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("<section class=\"panel\" id=\"telemetry\">"));
    assert_eq!(
        html.matches("<figure class=\"tele\"").count(),
        measured.len(),
        "one small multiple per cell"
    );
    assert_eq!(html.matches("data-strip=\"gen\"").count(), measured.len());
    assert!(html.contains("data-strip=\"cpu\""));
    assert!(html.contains("class=\"band meas\""));
}

/// A decode cell: its window lies in the recording, and the server's generation counter over
/// the whole cell holds at least the window's tokens and no more than the window's rate allows
/// over the cell.
fn decode_counters_match_the_row(row: &Value, l: &Value, t: &[f64], gen_tokens: &[f64]) {
    let win = l["win"].as_array().expect("a decode cell's window");
    let (open, close) = (
        win[0].as_f64().unwrap_or(-1.0),
        win[1].as_f64().unwrap_or(-1.0),
    );
    assert!(
        0.0 < open && open < close && close <= num(l, "dur"),
        "{l:#}"
    );
    assert_close("window length", close - open, num(row, "measured_s"), 2.0);
    let stages: Vec<&str> = l["ph"]
        .as_array()
        .expect("stages")
        .iter()
        .filter_map(|p| p[1].as_str())
        .collect();
    assert!(stages.contains(&"window"), "{stages:?}");
    let delta = gen_tokens[gen_tokens.len() - 1] - gen_tokens[0];
    let output = num(row, "output_tokens");
    assert!(
        delta >= num(row, "server_generation_tokens"),
        "{l:#}\n{row:#}"
    );
    assert!(
        delta >= 0.97 * output,
        "Δ {delta} against {output} in the window"
    );
    let span = t[t.len() - 1] - t[0];
    let most = num(row, "total_tok_per_s") * span * 1.1;
    assert!(delta <= most, "Δ {delta} over {span} s, at most {most}");
}
