//! The seed's guards end to end (issue 32), each against a simulator that plants what the
//! guard is for: a model that loops (the repetition guard), another client's requests on the
//! server (the drain barrier), an SGLang that keeps generating for dropped streams (the
//! targeted abort); and a trace replayed on a server too small for the default
//! `--max-output`, which used to be dropped without a word.

use crate::common::*;
use crate::e2e::Bench;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

/// 64 bytes, starting with a space so that two copies tokenize as one copy twice.
const SENTENCE: &str = " The cache is warm and the batch is full, so we wait here again.";

/// A tiny (SGLang-flavoured, 4K context) simulator with `set` applied to its config.
fn tiny(set: impl FnOnce(&mut llmib_sim::SimConfig)) -> Sim {
    let mut cfg = llmib_sim::builtin_profile("tiny").expect("tiny profile");
    set(&mut cfg);
    Sim::start(cfg)
}

/// A decode-only run at 512 tokens, N = 1 and 2, with `extra` flags; its output and rows.
fn decode_run(sim: &Sim, name: &str, extra: &[&str]) -> (Output, Vec<Value>, PathBuf) {
    let dir = out_dir(name);
    let d = dir.to_str().unwrap_or_default();
    let mut args = vec![
        "run",
        "--url",
        &sim.url,
        "--contexts",
        "512",
        "--concurrency",
        "1,2",
        "--duration",
        "3s",
        "--max-output",
        "1500",
        "--skip-prefill",
        "--save-requests",
        "--output",
        d,
        "--format",
        "md",
    ];
    args.extend_from_slice(extra);
    let o = run_bin(&args);
    let rows = cells(&dir);
    (o, rows, dir)
}

fn decode_rows(rows: &[Value]) -> Vec<&Value> {
    rows.iter().filter(|r| r["phase"] == "decode").collect()
}

#[test]
fn a_looping_model_fails_its_cells_with_the_evidence() {
    assert_eq!(SENTENCE.len(), 64);
    let sim = tiny(|c| c.answer_loop = Some(SENTENCE.into()));
    let (o, rows, dir) = decode_run(&sim, "guards-loop", &[]);
    // Every measured cell failed: the run says so and exits non-zero.
    assert!(!o.status.success(), "{}", text(&o));
    let decode = decode_rows(&rows);
    assert_eq!(decode.len(), 2, "{rows:#?}");
    for row in decode {
        assert_eq!(row["status"], "failed", "{row:#}");
        assert!(row["total_tok_per_s"].is_null(), "{row:#}");
        let reason = row["status_reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("loop: stream "), "{reason}");
        let ev = &row["loop_guard"];
        assert_eq!(ev["finding"]["cycle_bytes"], 64, "{row:#}");
        assert_eq!(ev["finding"]["channel"], "content", "{row:#}");
        // The answer is the sentence from its first byte.
        assert!(
            ev["finding"]["start_byte"].as_u64().is_some_and(|b| b < 64),
            "{row:#}"
        );
        assert!(SENTENCE.starts_with(ev["finding"]["sample"].as_str().unwrap_or("?")));
        assert!(
            row["errors"]["loop"].as_u64().is_some_and(|n| n >= 1),
            "{row:#}"
        );
    }
    // The report names the loop.
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("loop: stream"), "{md}");
}

#[test]
fn without_the_guard_a_looping_model_measures_as_before() {
    let sim = tiny(|c| c.answer_loop = Some(SENTENCE.into()));
    let (o, rows, _) = decode_run(&sim, "guards-loop-off", &["--no-loop-detection"]);
    assert!(o.status.success(), "{}", text(&o));
    for row in decode_rows(&rows) {
        assert_eq!(row["status"], "valid", "{row:#}");
        assert!(row["loop_guard"].is_null(), "{row:#}");
    }
}

#[test]
fn a_loop_in_the_reasoning_is_caught_on_its_own_channel() {
    let sim = tiny(|c| {
        c.answer_loop = Some(SENTENCE.into());
        c.answer_loop_reasoning = true;
    });
    let (_, rows, _) = decode_run(&sim, "guards-loop-reasoning", &["--api", "chat"]);
    let decode = decode_rows(&rows);
    assert!(!decode.is_empty(), "{rows:#?}");
    for row in decode {
        assert_eq!(row["status"], "failed", "{row:#}");
        assert_eq!(
            row["loop_guard"]["finding"]["channel"], "reasoning",
            "{row:#}"
        );
    }
}

#[test]
fn another_clients_load_fails_the_cells_as_server_busy() {
    let sim = tiny(|c| c.foreign_running = 3);
    let (o, rows, _) = decode_run(&sim, "guards-busy", &["--busy-timeout", "1s"]);
    assert!(!o.status.success(), "{}", text(&o));
    let decode = decode_rows(&rows);
    assert_eq!(decode.len(), 2, "{rows:#?}");
    for row in decode {
        assert_eq!(row["status"], "failed", "{row:#}");
        let reason = row["status_reason"].as_str().unwrap_or_default();
        assert!(reason.starts_with("server busy: 3 running"), "{reason}");
        assert_eq!(row["errors"]["server_busy"], 1, "{row:#}");
        let b = &row["queue"]["start_barrier"];
        assert_eq!(b["idle"], false, "{row:#}");
        assert!(num(b, "waited_s") >= 1.0, "{row:#}");
        // Nothing was measured: no request went out.
        assert!(
            row["requests_sent"].is_null() || row["requests_sent"] == 0,
            "{row:#}"
        );
    }
}

#[test]
fn sglang_aborts_exactly_the_streams_the_window_dropped() {
    // Without the abort a dropped stream keeps its slot for 20 s: the next cell's barrier
    // would wait it out and fail the cell as server busy.
    let sim = tiny(|c| c.drop_keeps_running_ms = 20_000);
    let (o, rows, _) = decode_run(&sim, "guards-abort", &["--busy-timeout", "5s"]);
    assert!(o.status.success(), "{}", text(&o));
    for row in decode_rows(&rows) {
        assert_eq!(row["status"], "valid", "{row:#}");
        let q = &row["queue"];
        let n = row["concurrency"].as_u64().unwrap_or(0);
        // A 1,500-token answer outlasts the 3 s window: every stream was cut and aborted.
        assert_eq!(q["aborted_requests"].as_u64(), Some(n), "{row:#}");
        assert_eq!(q["end_barrier"]["idle"], true, "{row:#}");
        assert!(num(&q["start_barrier"], "waited_s") < 5.0, "{row:#}");
    }
}

#[test]
fn a_trace_replays_where_the_default_max_output_leaves_no_context() {
    // The seed's default --max-output 4096 leaves no room in the tiny server's 4K context:
    // every planned context is dropped, and the replay used to go with them, exit 0.
    let sim = tiny(|_| {});
    let dir = out_dir("guards-trace-small");
    let trace = dir.join("trace.jsonl");
    std::fs::create_dir_all(&dir).expect("dir");
    let lines: String = (0..6)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 200, \"output_length\": 8}}\n",
                i * 100
            )
        })
        .collect();
    std::fs::write(&trace, lines).expect("trace");
    let workload = format!("mooncake:{}", trace.display());
    let out = dir.join("run");
    let o = Bench::run(&sim.url)
        .set("--workload", &workload)
        .args(["--skip-decode", "--skip-prefill"])
        .out_at(&out)
        .go()
        .output;
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&out);
    let rate: Vec<&Value> = rows.iter().filter(|r| r["phase"] == "rate").collect();
    assert_eq!(rate.len(), 1, "{rows:#?}");
    assert_eq!(rate[0]["requests_sent"], 6, "{:#}", rate[0]);
}
