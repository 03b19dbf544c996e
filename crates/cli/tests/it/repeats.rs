//! `run --num-runs K` (issue 44, item 4: vLLM's repeated runs) end to end against the
//! simulator: K whole runs in `DIR/run-I`, each with prompts of its own, and the summary's
//! spread recomputed here from the runs' own rows; `report DIR` writes it again; what cannot
//! be repeated is refused in one line.

use crate::common::*;
use crate::e2e::Bench;
use crate::run::exact_sim;
use serde_json::Value;

/// The sample mean and standard deviation of `v`.
fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let ss: f64 = v.iter().map(|x| (x - mean).powi(2)).sum();
    (mean, (ss / (n - 1.0)).sqrt())
}

#[test]
fn three_runs_are_measured_apart_and_summarised_from_their_rows() {
    let _timed = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("repeats");
    let ran = Bench::run(&sim.url)
        .small("512", "2", "1s", "16")
        .args(["--num-runs", "3"])
        .out_at(&dir)
        .ok();
    assert!(ran.stdout().contains("## Repeated runs"), "{}", ran.text());

    let mut tok = Vec::new();
    let mut seeds = std::collections::BTreeSet::new();
    for i in 1..=3 {
        let run = dir.join(format!("run-{i}"));
        let row = cell(&cells(&run), "decode", 512, 2).clone();
        assert_eq!(row["status"], "valid", "{row:#}");
        tok.push(row["total_tok_per_s"].as_f64().expect("tok/s"));
        seeds.insert(run_json(&run)["plan"]["settings"]["prompt_seed"].to_string());
    }
    assert_eq!(seeds.len(), 3, "each run has prompts of its own: {seeds:?}");

    let summary: Value =
        serde_json::from_slice(&std::fs::read(dir.join("repeats.json")).expect("repeats.json"))
            .expect("json");
    assert_eq!(summary["planned_runs"], 3);
    assert_eq!(
        summary["runs"],
        serde_json::json!(["run-1", "run-2", "run-3"])
    );
    let decode = summary["cells"]
        .as_array()
        .and_then(|c| {
            c.iter()
                .find(|c| c["key"]["phase"] == "decode" && c["key"]["concurrency"] == 2)
        })
        .unwrap_or_else(|| panic!("no decode cell in {summary:#}"));
    assert_eq!(
        (&decode["runs"], &decode["measured"]),
        (&Value::from(3), &Value::from(3))
    );
    let s = &decode["figures"]["total_tok_per_s"];
    let (mean, std) = mean_std(&tok);
    let near = |a: &Value, b: f64| (a.as_f64().expect("a number") - b).abs() <= 1e-9 * b.abs();
    assert!(
        near(&s["mean"], mean) && near(&s["std"], std),
        "{s:#} against {tok:?}"
    );
    assert!(near(&s["cv"], std / mean), "{s:#}");
    let (lo, hi) = tok
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), v| (a.min(*v), b.max(*v)));
    assert!(near(&s["min"], lo) && near(&s["max"], hi), "{s:#}");

    let md = std::fs::read_to_string(dir.join("repeats.md")).expect("repeats.md");
    assert!(
        md.contains("| Sustained decode 512 × 2 | 3 of 3 | total_tok_per_s |"),
        "{md}"
    );
    // `report DIR` writes the summary again from the runs.
    std::fs::remove_file(dir.join("repeats.md")).expect("remove");
    let d = dir.to_str().expect("utf-8 path");
    let listed = Bench::cmd(&["report", d]).ok().stdout();
    assert!(listed.contains("repeats.md"), "{listed}");
    assert_eq!(
        std::fs::read_to_string(dir.join("repeats.md")).ok(),
        Some(md)
    );
    // `compare DIR` sets the runs side by side, each against the first.
    let compared = Bench::cmd(&["compare", d]).ok().stdout();
    for i in 1..=3 {
        assert!(compared.contains(&format!("run-{i}")), "{compared}");
    }
}

#[test]
fn what_cannot_be_repeated_is_refused() {
    let sim = Sim::start(exact_sim());
    let zero = Bench::run(&sim.url)
        .small("512", "1", "1s", "16")
        .args(["--num-runs", "0"])
        .out("repeats-zero")
        .go()
        .refusal();
    assert!(zero.contains("at least 1"), "{zero}");
    let dir = out_dir("repeats-resume");
    let resumed = Bench::cmd(&["run", "--num-runs", "2", "--resume"])
        .arg(dir.to_str().expect("utf-8 path"))
        .go()
        .refusal();
    assert!(resumed.contains("--resume DIR/run-I"), "{resumed}");
}
