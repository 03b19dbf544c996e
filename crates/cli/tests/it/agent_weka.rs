//! Weka agentic coding traces end to end (issue 42): docs/sessions.md's `weka:FILE` command,
//! as written, replays `testdata/workloads/weka-sample.jsonl` (two conversations, tool calls,
//! a subagent, a streaming pair) against the simulator: every turn's prompt is exact, every
//! request's cached tokens are the simulator's own, every later turn's the prediction (an
//! opening's is 0, and the simulator serves one block more where two openings render the same
//! tool header), and the row names the source format. A trace that cannot be imported (or read) is
//! refused in one line before anything is measured.

use crate::common::*;
use crate::e2e::Bench;
use crate::first_use::doc_commands_after;
use serde_json::Value;

/// docs/sessions.md's `weka:` command: the words after the binary's name, its lines joined.
fn docs_command() -> Vec<String> {
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/sessions.md"
    ));
    let mut found: Vec<Vec<String>> = doc_commands_after(doc, "llm-inference-bench ")
        .into_iter()
        .filter(|words| words.iter().any(|w| w.contains("weka:")))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one weka: command in docs/sessions.md: {found:?}"
    );
    found.remove(0)
}

#[test]
fn the_docs_weka_command_replays_the_sample_exactly() {
    let sim = crate::sessions::sim(200_000, 200_000);
    let words: Vec<String> = docs_command()
        .into_iter()
        .map(|w| w.replace("http://127.0.0.1:8000", &sim.url))
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let ran = Bench::cmd(&words)
        .cwd(&repo_root())
        .set("--format", "none")
        .out("agent-weka-docs-out")
        .ok();
    let row = ran.only("session");
    assert_eq!(row["session"]["sessions"], 3, "{row}");
    assert_eq!(row["turns_completed"], 7, "{row}");
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row}");
    let replay = row["session"]["replay"].as_str().unwrap_or_default();
    assert!(
        replay.starts_with("weka:testdata/workloads/weka-sample.jsonl"),
        "{row}"
    );
    let turns = row["per_turn"].as_array().cloned().unwrap_or_default();
    assert_eq!(turns.len(), 3, "{row}");
    for t in &turns[1..] {
        let (cached, predicted) = (num(t, "cached_tokens"), num(t, "predicted_cached_tokens"));
        assert_eq!(cached, predicted, "turn {}: {t}", t["turn"]);
    }
    // The openings are predicted 0. conv-b's and the subagent's both send tools, so the
    // simulator serves the second the first 16-token block of the rendered tool header (one
    // block: the definitions themselves differ); conv-a's, without tools, shares nothing.
    assert_eq!(num(&turns[0], "predicted_cached_tokens"), 0.0, "{row}");
    assert_eq!(num(&turns[0], "cached_tokens"), 16.0, "{row}");
    // Later turns continue their conversation: the cache serves them.
    assert!(num(&turns[1], "cached_tokens") > 1000.0, "{row}");
    let recs: Vec<Value> = ran.requests().into_values().flatten().collect();
    assert_eq!(recs.len(), 7, "{recs:?}");
    let seen = crate::sessions::assert_served_as_reported(&sim, &recs, "weka");
    assert_eq!(seen, 7, "every request has both counts: {recs:?}");
}

#[test]
fn a_bad_weka_trace_is_refused_in_one_line_before_anything_is_measured() {
    let sim = crate::sessions::sim(200_000, 200_000);
    let dir = out_dir("agent-weka-bad");
    let file = dir.join("bad.json");
    let text = r#"{"id": "x", "requests": [{"t": 0, "type": "s", "in": 0, "out": 9}]}"#;
    std::fs::write(&file, text).expect("the bad trace");
    for (path, want) in [
        (
            file.display().to_string(),
            "bad.json:1: conversation x: requests[0]: in 0: a call sends a prompt",
        ),
        (
            dir.join("missing.json").display().to_string(),
            "missing.json: cannot read the session replay",
        ),
    ] {
        let ran = Bench::run(&sim.url)
            .set("--api", "chat")
            .set("--contexts", "1K")
            .set("--workload", format!("weka:{path}"))
            .out("agent-weka-bad-out")
            .go();
        let why = ran.refusal();
        assert!(why.contains(want), "{why}");
        assert!(!ran.dir.join("cells.jsonl").exists(), "{why}");
    }
}
