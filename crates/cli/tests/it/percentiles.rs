//! `--percentiles` end to end (issue 44): a short run against the simulator with
//! `--percentiles 50,90,99,99.9` keeps p99.9 in every decode and rate row's latency summaries
//! (between p99 and max, as the one quantile rule makes it), shows it in the Markdown report,
//! writes vLLM's `p99.9_*_ms` keys and reads them back on import; the same run without the
//! flag writes no `percentiles` anywhere; a bad value is refused in one line.

use crate::common::*;
use crate::e2e::Bench;
use serde_json::Value;
use std::path::Path;

/// The p99.9 of `s` (a summary), checked to lie between its p99 and its max.
fn p999(s: &Value, what: &str) -> f64 {
    let list = s["percentiles"].as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), 1, "{what}: {s:#}");
    assert_eq!(list[0]["p"], 99.9, "{what}: {s:#}");
    let v = list[0]["value"].as_f64().unwrap_or(f64::NAN);
    let (p99, max) = (s["p99"].as_f64(), s["max"].as_f64());
    assert!(
        p99.zip(max).is_some_and(|(a, b)| a <= v && v <= b),
        "{what}: {s:#}"
    );
    v
}

/// The vLLM files `report --format vllm` writes for `run`.
fn vllm_files(run: &Path, out: &Path) -> Vec<String> {
    let words = [
        "report",
        run.to_str().unwrap_or_default(),
        "--format",
        "vllm",
    ];
    let ran = Bench::cmd(&words)
        .set("--output", out.to_str().unwrap_or_default())
        .ok();
    ran.stdout().lines().map(str::to_string).collect()
}

#[test]
fn extra_percentiles_reach_the_rows_the_report_and_vllms_files() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let dir = out_dir("percentiles");
    let run = dir.join("run");
    let ran = Bench::run(&sim.url)
        .small("512", "1,2", "1s", "16")
        .set("--request-rate", "8")
        .args([
            "--percentiles",
            "50,90,99,99.9",
            "--format",
            "md",
            "--save-requests",
        ])
        .out_at(&run)
        .ok();
    assert_eq!(
        ran.run_json()["plan"]["settings"]["percentiles"],
        serde_json::json!([99.9])
    );
    let decode = ran.rows_of("decode");
    assert!(!decode.is_empty());
    for r in decode.iter().filter(|r| r["status"] == "valid") {
        p999(&r["ttft_ms"], "decode TTFT");
        p999(&r["tbt_ms"], "decode TBT");
    }
    let rate = ran.only("rate");
    for m in ["ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"] {
        p999(&rate["rate"][m], m);
    }
    let md = ran.file("report.md");
    assert!(
        md.contains("Latency percentiles") && md.contains("p99.9"),
        "{md}"
    );

    // vLLM's keys, and back through the import.
    let files = vllm_files(&run, &dir.join("vllm"));
    assert_eq!(files.len(), 1, "{files:?}");
    let file: Value = serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap_or_default())
        .expect("a vLLM file");
    let ttft = p999(&rate["rate"]["ttft_ms"], "rate TTFT");
    assert_eq!(file["p99.9_ttft_ms"].as_f64(), Some(ttft), "{file:#}");
    for k in ["p99.9_tpot_ms", "p99.9_e2el_ms"] {
        assert!(file[k].is_number(), "{k}: {file:#}");
    }
    let back = dir.join("imported");
    let source = format!("vllm:{}", files[0]);
    let words = ["import", source.as_str()];
    let imported = Bench::cmd(&words).out_at(&back).ok();
    let row = imported.only("rate");
    assert_eq!(p999(&row["rate"]["ttft_ms"], "imported TTFT"), ttft);

    // Without the flag: nothing of it in any file.
    let plain = Bench::run(&sim.url)
        .small("512", "1", "1s", "16")
        .set("--request-rate", "8")
        .out_at(&dir.join("plain"))
        .ok();
    for name in ["cells.jsonl", "run.json"] {
        assert!(!plain.file(name).contains("percentiles"), "{name}");
    }
}

#[test]
fn a_bad_percentile_is_refused_in_one_line() {
    for bad in ["0", "100.5", "abc"] {
        let ran = Bench::run("http://127.0.0.1:9")
            .args(["--percentiles", bad])
            .go();
        assert!(!ran.output.status.success(), "{bad}: {}", ran.text());
        let err = ran.stderr();
        let line = err
            .lines()
            .find(|l| l.contains("--percentiles"))
            .unwrap_or_default();
        assert!(line.contains(bad) && line.starts_with("error"), "{err}");
    }
}
