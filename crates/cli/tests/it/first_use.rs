//! What a new user meets first (issue 42's defects), end to end with the real binary: the
//! docs' simulator commands run as written and end with the rows the docs promise; a context
//! that does not run is said where the run prints, with the flag that would make it fit; the
//! default 8K prefill is not planned (nor listed as dropped) on a server too small for it; and
//! a closed stdout (`run … | head -1`) ends printing quietly, with the run's rows, reports and
//! exit code intact.

use crate::common::*;
use std::io::{BufRead, Read};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// The commands of `doc`'s shell blocks that call the binary through cargo (`cargo run
/// --release -- …`), each as its arguments after `--`: continuation lines joined, a trailing
/// `&` and comments dropped.
pub(crate) fn doc_commands(doc: &str) -> Vec<Vec<String>> {
    doc_commands_after(doc, "cargo run --release -- ")
}

/// The commands of `doc`'s `sh` blocks that start with `prefix`, continuation lines joined,
/// comments passed over, as the words after the prefix (a trailing `&` dropped).
pub(crate) fn doc_commands_after(doc: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut line = String::new();
    for raw in doc.lines() {
        let t = raw.trim();
        if t.starts_with("```") {
            in_sh = t == "```sh";
            continue;
        }
        if !in_sh || t.starts_with('#') {
            continue;
        }
        line.push_str(t.trim_end_matches('\\').trim());
        line.push(' ');
        if t.ends_with('\\') {
            continue;
        }
        let cmd = std::mem::take(&mut line);
        if let Some(rest) = cmd.trim().strip_prefix(prefix) {
            let rest = rest.trim().trim_end_matches('&').trim();
            out.push(rest.split_whitespace().map(str::to_string).collect());
        }
    }
    out
}

/// A docs simulator example as written: `sim_args` started on a free port (instead of 8000),
/// `run_args` against it with the results in `dir`; the simulator is stopped before returning.
pub(crate) fn run_doc_pair(sim_args: &[String], run_args: &[String], dir: &Path) -> Output {
    let (mut sim, url) = spawn_sim_process(sim_args);
    let mut args: Vec<String> = run_args
        .iter()
        .map(|a| a.replace("http://127.0.0.1:8000", &url))
        .collect();
    args.extend(["--output".into(), dir.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_bin(&args);
    let _ = sim.kill();
    let _ = sim.wait();
    o
}

/// docs/sessions.md's simulator example, as written (the server on a free port instead of
/// 8000, the results in a test directory): every session cell it plans runs, 1K and 2K ×
/// 1, 4 and 8 sessions of 4 measured turns, except 2K × 8, which the 4K simulator's KV cannot
/// hold (8 × (2,048 + 128 + 2 × 32) = 17,920 > 16,384). Before the fix it ran none: the cells'
/// room was judged with `--max-output` (4,096) on a 4K server.
#[test]
fn the_sessions_docs_simulator_example_runs_its_sessions() {
    let _serial = timing_lock();
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/sessions.md"
    ));
    let cmds = doc_commands(doc);
    assert_eq!(
        cmds.len(),
        2,
        "docs/sessions.md's simulator example: {cmds:?}"
    );
    assert_eq!(cmds[0][0], "sim");
    assert_eq!(cmds[1][0], "run");
    let dir = out_dir("first-use-sessions-doc");
    let o = run_doc_pair(&cmds[0], &cmds[1], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(!out.contains("sessions not run"), "{out}");
    let rows = cells(&dir);
    let sessions: Vec<(u64, u64, String, u64)> = rows
        .iter()
        .filter(|r| r["phase"] == "session")
        .map(|r| {
            (
                r["context_tokens"].as_u64().unwrap_or(0),
                r["concurrency"].as_u64().unwrap_or(0),
                r["status"].as_str().unwrap_or("").to_string(),
                r["session"]["turns_sent"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let want: Vec<(u64, u64, String, u64)> =
        [(1024, 1), (1024, 4), (1024, 8), (2048, 1), (2048, 4)]
            .iter()
            .map(|&(c, s)| (c, s, "valid".to_string(), 4 * s))
            .chain([(2048, 8, "over_capacity".to_string(), 0)])
            .collect();
    assert_eq!(sessions, want, "{rows:#?}");
}

/// The 4K `tiny` simulator, for the runs below.
fn tiny() -> Sim {
    Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny profile"))
}

/// A short run of `--contexts contexts` on `url` into `dir`.
fn short_run(url: &str, contexts: &str, dir: &Path) -> std::process::Output {
    run_bin(&[
        "run",
        "--url",
        url,
        "--contexts",
        contexts,
        "--concurrency",
        "1",
        "--duration",
        "1s",
        "--max-output",
        "16",
        "--output",
        dir.to_str().unwrap_or_default(),
        "--format",
        "none",
    ])
}

/// `--contexts 1K` on a 4K server: no 8K prefill is planned (the default sanity point does not
/// fit, and nobody asked for it), and none is listed as dropped.
#[test]
fn a_default_prefill_that_does_not_fit_is_neither_planned_nor_dropped() {
    let _serial = timing_lock();
    let sim = tiny();
    let dir = out_dir("first-use-no-8k");
    let o = short_run(&sim.url, "1K", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let plan = &run_json(&dir)["plan"];
    assert_eq!(plan["settings"]["prefill_contexts"], serde_json::json!([]));
    assert_eq!(plan["dropped_contexts"], serde_json::json!([]), "{plan:#}");
    let planned: Vec<u64> = plan["contexts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["tokens"].as_u64())
        .collect();
    assert_eq!(planned, [1024]);
    // No word is the 8K context (a rate such as `157.8K` tok/s is not one).
    let out = text(&o);
    let eight = out
        .split(|c: char| c.is_whitespace() || "|,:;()".contains(c))
        .any(|w| w == "8K" || w == "8192");
    assert!(!eight, "{out}");
}

/// A context asked for that does not fit is said where the run prints, with the flag that would
/// make it fit, not only in the reports.
#[test]
fn a_dropped_context_is_said_where_the_run_prints() {
    let _serial = timing_lock();
    let sim = tiny();
    let dir = out_dir("first-use-dropped");
    let o = short_run(&sim.url, "1K,64K", &dir);
    assert!(o.status.success(), "{}", text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(
            "context 64K not run: 64K tokens does not fit the server's context length of 4K; pass smaller --contexts"
        ),
        "{}",
        text(&o)
    );
}

/// A context whose decode requests cannot fit (C + max output reaches the context length) says
/// so where the run prints and in the report; with `--skip-prefill` nothing is measured, and
/// the run exits 5 naming why rather than pointing at notes that are not there.
#[test]
fn decode_cells_that_cannot_fit_are_said_and_a_run_left_with_none_exits_5() {
    let sim = tiny();
    let dir = out_dir("first-use-no-decode");
    let ran = crate::e2e::Bench::run(&sim.url)
        .small("1K", "1", "1s", "8000")
        .args(["--skip-prefill", "--format", "md"])
        .out_at(&dir)
        .exits(5);
    let want = "context 1K: no decode cells: 1K tokens and a max output of 8000 do not fit the server's context length of 4K, so it would be prefill only, and --skip-prefill skips that: nothing is measured at it; pass a smaller --max-output";
    assert!(ran.stdout().contains(want), "{}", ran.text());
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("Context 1K: no decode cells:"), "{md}");
}

/// `run … | head -1`: the reader goes after one line. The run still measures every cell, writes
/// its reports and exits 0, with no panic ("failed printing to stdout", exit code 101).
#[test]
fn a_closed_stdout_ends_printing_quietly() {
    let _serial = timing_lock();
    let sim = tiny();
    let dir = out_dir("first-use-head");
    let mut child = Command::new(bin())
        .args([
            "run",
            "--url",
            &sim.url,
            "--contexts",
            "1K",
            "--concurrency",
            "1,2",
            "--duration",
            "1s",
            "--max-output",
            "16",
            "--output",
            dir.to_str().unwrap_or_default(),
        ])
        .env_remove("OPENAI_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the run");
    let mut first = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .expect("a first line");
    // The pipe's reader is gone, as `head -1` leaves it.
    let mut err = String::new();
    let mut stderr = child.stderr.take().expect("stderr");
    let status = child.wait().expect("wait");
    let _ = stderr.read_to_string(&mut err);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("Broken pipe"),
        "{err}"
    );
    let rows = cells(&dir);
    let measured: Vec<(String, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap_or("").to_string(),
                r["concurrency"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        measured,
        [
            ("valid".to_string(), 1),
            ("valid".into(), 1),
            ("valid".into(), 2)
        ],
        "{rows:#?}"
    );
    for f in ["report.md", "report.html", "cells.csv", "results.json"] {
        assert!(dir.join(f).is_file(), "{f} written");
    }
    assert_eq!(run_json(&dir)["state"], "completed");
}
