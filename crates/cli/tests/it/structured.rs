//! Structured output and tool calls end to end (`run --response-format`, `--tools`,
//! `--tool-choice`; docs/structured-output.md) against the simulator, whose decode steps are
//! `grammar_step_factor` times as long under a grammar and whose every k-th structured answer
//! breaks its schema:
//! - the decode TBT with a schema is the factor times the TBT without, within 2 %;
//! - with every 2nd answer broken, the row's invalid count is exactly the records' invalid
//!   verdicts, and those alternate with the valid ones in the order the answers were sent;
//! - `--tool-choice required` on chat: every answer is a tool call, checked valid;
//! - bad flags stop the run in one line before anything is sent;
//! - docs/structured-output.md's commands, as written.

use crate::common::*;
use crate::e2e::Bench;
use crate::first_use::doc_commands;
use llmib_sim::SimConfig;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The repository's docs/examples file `name`.
fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples")
        .join(name)
}

/// A simulator whose decode step is 10 ms at any batch (no KV cost), so a row's TBT is the
/// step, and `factor` times it under a grammar.
fn sim(factor: f64, break_every: u32) -> Sim {
    Sim::start(sim_config(factor, break_every))
}

fn sim_config(factor: f64, break_every: u32) -> SimConfig {
    let mut c = llmib_sim::builtin_profile("tiny").expect("profile");
    c.decode_step_ms = vec![(1, 10.0), (64, 10.0)];
    c.per_kv_token_us = 0.0;
    c.stamp_chunks = false;
    SimConfig {
        grammar_step_factor: factor,
        grammar_break_every: break_every,
        grammar_answer_tokens: 24,
        ..c
    }
}

/// `run` at context 512, one stream, max output 64, with `extra` (on chat unless `extra` names
/// another API).
fn run_chat(url: &str, dir: &Path, extra: &[&str]) -> std::process::Output {
    let b = Bench::run(url)
        .unset("--format")
        .small("512", "1", "2s", "64")
        .arg("--skip-prefill")
        .out_at(dir);
    let b = if extra.contains(&"--api") {
        b
    } else {
        b.set("--api", "chat")
    };
    b.args(extra).go().output
}

fn schema_flag() -> String {
    format!("json_schema:{}", example("city.schema.json").display())
}

#[test]
fn a_grammar_slows_decode_by_the_simulators_factor() {
    let _serial = timing_lock();
    let s = sim(1.3, 0);
    let plain_dir = out_dir("structured-factor-plain");
    let o = run_chat(&s.url, &plain_dir, &["--format", "none"]);
    assert!(o.status.success(), "{}", text(&o));
    let schema_dir = out_dir("structured-factor-schema");
    let flag = schema_flag();
    let o = run_chat(
        &s.url,
        &schema_dir,
        &["--response-format", &flag, "--format", "none"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let plain = cells(&plain_dir);
    let plain = cell(&plain, "decode", 512, 1);
    let with = cells(&schema_dir);
    let with = cell(&with, "decode", 512, 1);
    assert_eq!(with["status"], "valid", "{with:#}");
    assert!(plain.get("structured").is_none(), "{plain:#}");
    let st = &with["structured"];
    assert_eq!(st["kind"], "json_schema", "{with:#}");
    assert!(st["checked"].as_u64() >= Some(5), "{with:#}");
    assert_eq!(st["valid"], st["checked"], "{with:#}");
    assert_eq!(
        (st["invalid"].as_u64(), st["cut"].as_u64()),
        (Some(0), Some(0)),
        "{with:#}"
    );
    assert_close(
        "TBT under the grammar over TBT without",
        num(with, "tbt_ms_p50") / num(plain, "tbt_ms_p50"),
        1.3,
        2.0,
    );
    assert_close(
        "per-stream tok/s without over with",
        num(plain, "per_request_tok_per_s") / num(with, "per_request_tok_per_s"),
        1.3,
        2.0,
    );
    let saved = &run_json(&schema_dir)["plan"]["settings"];
    assert_eq!(saved["respect_eos"], true, "a grammar ends each answer");
    let f = &saved["request"]["structured"]["response_format"];
    assert_eq!(
        (f["type"].as_str(), f["name"].as_str()),
        (Some("json_schema"), Some("city_schema")),
        "{f:#}"
    );
    assert_eq!(f["sha256"].as_str().map(str::len), Some(64), "{f:#}");
}

#[test]
fn every_broken_answer_is_counted_in_the_order_it_was_sent() {
    let _serial = timing_lock();
    let s = sim(1.0, 2);
    let dir = out_dir("structured-broken");
    let flag = schema_flag();
    let o = run_chat(
        &s.url,
        &dir,
        &["--response-format", &flag, "--save-requests"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let row = cell(&rows, "decode", 512, 1);
    let st = &row["structured"];
    let records = requests(&dir);
    let mut recs: Vec<&Value> = records[&(512, 1)].iter().collect();
    recs.sort_by_key(|r| r["record"]["sent_ns"].as_u64().or(r["sent_ns"].as_u64()));
    let verdicts: Vec<&str> = recs
        .iter()
        .filter_map(|r| {
            r["record"]["structured"]["check"]
                .as_str()
                .or(r["structured"]["check"].as_str())
        })
        .collect();
    let invalid = verdicts.iter().filter(|v| **v == "invalid").count() as u64;
    assert!(verdicts.len() >= 6, "{verdicts:?} {row:#}");
    assert_eq!(st["invalid"].as_u64(), Some(invalid), "{row:#}");
    assert_eq!(
        st["checked"].as_u64(),
        Some(verdicts.len() as u64),
        "{row:#}"
    );
    assert_eq!(
        st["valid"].as_u64(),
        Some(verdicts.len() as u64 - invalid),
        "{row:#}"
    );
    // One stream: the server answers in sending order, and every 2nd answer is broken.
    for pair in verdicts.windows(2) {
        assert_ne!(
            pair[0], pair[1],
            "valid and invalid alternate: {verdicts:?}"
        );
    }
    let first = st["first_error"].as_str().unwrap_or_default();
    assert!(
        first.contains("required property `city` is missing"),
        "{row:#}"
    );
    assert_eq!(
        row["status"], "valid",
        "invalid answers leave the status: {row:#}"
    );
}

/// On both flavours, since they count a chat prompt apart: vLLM's `/tokenize` takes the tools
/// with the messages, SGLang's takes text only (the template is measured by a request). The
/// simulator renders the tools into every prompt as a chat template does, so a count without
/// them would fail the row with a prompt mismatch.
#[test]
fn required_tool_calls_are_checked_against_the_tools_parameters() {
    let _serial = timing_lock();
    for flavor in [llmib_sim::Flavor::Sglang, llmib_sim::Flavor::Vllm] {
        let s = Sim::start(SimConfig {
            flavor,
            ..sim_config(1.0, 0)
        });
        tool_calls_are_checked(&s, &format!("structured-tools-{flavor:?}"));
    }
}

fn tool_calls_are_checked(s: &Sim, name: &str) {
    let dir = out_dir(name);
    let tools = example("weather-tools.json");
    let tools = tools.to_str().unwrap_or_default();
    let o = run_chat(
        &s.url,
        &dir,
        &[
            "--tools",
            tools,
            "--tool-choice",
            "required",
            "--format",
            "md",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let row = cell(&rows, "decode", 512, 1);
    let st = &row["structured"];
    assert_eq!(st["kind"], "tools", "{row:#}");
    assert!(st["checked"].as_u64() >= Some(3), "{row:#}");
    assert_eq!(
        st["valid"], st["checked"],
        "every answer a valid call: {row:#}"
    );
    assert!(
        num(row, "total_tok_per_s") > 0.0,
        "tool-call arguments are counted tokens: {row:#}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Structured output"), "{md}");
}

#[test]
fn bad_flags_are_refused_in_one_line_before_anything_is_sent() {
    let s = sim(1.0, 0);
    let dir = out_dir("structured-refused");
    let tools = example("weather-tools.json");
    let tools = tools.to_str().unwrap_or_default();
    let bad_schema = dir.join("pattern.json");
    std::fs::write(&bad_schema, r#"{"type":"string","pattern":"^a"}"#).expect("write");
    let bad_schema = format!("json_schema:{}", bad_schema.display());
    let cases: [(&[&str], &str); 6] = [
        (
            &["--tools", tools, "--tool-choice", "get_time"],
            "error: --tool-choice `get_time` names no tool of --tools (auto, required, none, or one of: get_weather)",
        ),
        (
            &["--response-format", "json_schema:/nonexistent/s.json"],
            "error: --response-format: cannot read /nonexistent/s.json",
        ),
        (
            &["--response-format", &bad_schema],
            "`pattern` is not a keyword this tool checks",
        ),
        (
            &[
                "--tools",
                tools,
                "--extra-body",
                "{\"tool_choice\":\"auto\"}",
            ],
            "error: --extra-body may not set `tool_choice` with --response-format or --tools",
        ),
        (
            &["--tools", tools, "--api", "completions"],
            "error: --tools has no counterpart in the completions API",
        ),
        // `--api auto`: the probe picks completions for the simulator's SGLang dialect.
        (
            &["--tools", tools, "--api", "auto"],
            "error: --tools has no counterpart in the completions API",
        ),
    ];
    for (extra, want) in cases {
        let mut args = extra.to_vec();
        args.extend(["--format", "none"]);
        let d = dir.join("out");
        let o = run_chat(&s.url, &d, &args);
        assert_eq!(o.status.code(), Some(1), "{extra:?}: {}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "{extra:?}: one line: {err}");
        assert!(lines[0].contains(want), "{extra:?}: {err}");
        assert!(cells(&d).is_empty(), "{extra:?}: nothing measured");
    }
}

/// docs/structured-output.md's two commands, as written (the server on a free port, the
/// schema path from the repository's root, the results in a test directory).
#[test]
fn the_structured_docs_commands_run() {
    let _serial = timing_lock();
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/structured-output.md"
    ));
    let cmds = doc_commands(doc);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    let root = repo_root();
    let run: Vec<String> = cmds[1]
        .iter()
        .map(|a| {
            a.replace(
                "json_schema:docs/",
                &format!("json_schema:{}/docs/", root.display()),
            )
        })
        .collect();
    let dir = out_dir("structured-docs");
    let o = crate::first_use::run_doc_pair(&cmds[0], &run, &dir);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let row = cell(&rows, "decode", 512, 2);
    let st = &row["structured"];
    let checked = st["checked"].as_u64().unwrap_or(0);
    assert!(checked >= 5, "{row:#}");
    assert!(
        st["invalid"].as_u64() >= Some(1),
        "every 5th answer breaks: {row:#}"
    );
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Structured output"), "{md}");
}
