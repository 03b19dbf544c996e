//! `--workload prompts:FILE` (issue 45, "The user's prompts as a workload"), end to end against
//! the simulator: the file's prompts and chats are sent as written on a rate cell (read from
//! the request bodies as they left the tool, through the relay of `prompt_text`), each one's
//! prompt length is the simulator's own count (its per-request record, and a count of the
//! body's text by the simulator's documented tokenizer, written again here), the row
//! summarises those counts, run.json records the file by name, prompts, size and sha256 and
//! never its text; and a bad line, or a chat on the completions API, is refused in one line
//! naming the file and the line, with exit 1, before any request reaches the server.

use crate::common::*;
use crate::e2e::Bench;
use crate::prompt_text::Relay;
use llmib_sim::ServedRequest;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// The file: texts and chats (a system message, content parts), some with their own
/// `max_tokens`, a blank line and a key the tool ignores.
const PROMPTS: &str = r#"{"prompt": "Write a haiku about the sea.", "max_tokens": 8, "id": "a1"}
{"messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name three rivers in Europe."}]}

{"prompt": "Explain, in one sentence, why the sky is blue."}
{"messages": [{"role": "user", "content": [{"type": "text", "text": "Summarise: the cat sat on the mat."}]}], "max_tokens": 12}
{"prompt": "Translate good morning into French, please.", "max_tokens": 4}
"#;

/// The simulator's tokenizer (docs/simulator.md; `llmib_sim`'s `tokenizer.rs`), written again
/// so the count of a body's text is the test's own: a word (ASCII letters and digits, with the
/// one space before it) of L bytes is ⌈L / 4⌉ tokens, any other byte one.
pub(crate) fn sim_tokens(text: &str) -> u64 {
    let b = text.as_bytes();
    let (mut i, mut n) = (0, 0);
    while i < b.len() {
        let word = b[i].is_ascii_alphanumeric()
            || (b[i] == b' ' && b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric));
        if word {
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_alphanumeric() {
                j += 1;
            }
            n += (j - i).div_ceil(4) as u64;
            i = j;
        } else {
            n += 1;
            i += 1;
        }
    }
    n
}

/// The simulator's count of a chat prompt: BOS, each message as `<|role|>\n` and its text,
/// then the generation prompt `<|assistant|>\n`.
pub(crate) fn sim_chat_tokens(messages: &Value) -> u64 {
    let mut text = String::new();
    for m in messages.as_array().expect("messages") {
        let content = match &m["content"] {
            Value::String(s) => s.clone(),
            parts => parts
                .as_array()
                .expect("parts")
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect(),
        };
        text.push_str(&format!(
            "<|{}|>\n{content}",
            m["role"].as_str().expect("role")
        ));
    }
    1 + sim_tokens(&format!("{text}<|assistant|>\n"))
}

/// Each line of the file as a chat request's `messages` and its `max_tokens` (16, the run's
/// `--max-output`, where the line has none).
fn lines_as_sent() -> Vec<(Value, u64)> {
    PROMPTS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("line");
            let messages = match v.get("prompt") {
                Some(p) => json!([{"role": "user", "content": p}]),
                None => v["messages"].clone(),
            };
            (messages, v["max_tokens"].as_u64().unwrap_or(16))
        })
        .collect()
}

pub(crate) fn served(sim: &Sim) -> Vec<ServedRequest> {
    let h = sim.handle();
    llmib_sim::served_requests(&h.take_arrival_stamps(), &h.take_chunk_stamps())
}

pub(crate) fn stamped_tiny() -> Sim {
    let mut cfg = llmib_sim::builtin_profile("tiny").expect("tiny");
    cfg.stamp_chunks = true;
    Sim::start(cfg)
}

/// `run` with the open-load flags and `extra`, through `url`, into `dir`.
pub(crate) fn run_prompts(
    url: &str,
    dir: &std::path::Path,
    workload: &str,
    extra: &[&str],
) -> Bench {
    Bench::run(url)
        .small("512", "1", "1s", "16")
        .args(["--skip-decode", "--skip-prefill", "--request-rate", "20"])
        .set("--seed", "3")
        .set("--workload", workload)
        .out_at(dir)
        .args(extra)
}

/// The cell's chat bodies as they left the tool through `relay` (the run's hidden warm-ups,
/// before every section, are the tool's own filler and are left out).
pub(crate) fn cell_bodies(relay: &Relay) -> Vec<Value> {
    relay
        .json_requests()
        .into_iter()
        .filter(|(line, _)| line.starts_with("POST /v1/chat/completions"))
        .map(|(_, v)| v)
        .filter(|v| {
            !v["messages"][0]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("[warmup-"))
        })
        .collect()
}

/// The prompt tokens the simulator counted for its last `n` requests (a cell's, after the
/// warm-ups), ascending.
pub(crate) fn last_counted(sim: &Sim, n: usize) -> Vec<u64> {
    let all = served(sim);
    assert!(all.len() >= n, "{} served, {n} sent", all.len());
    let mut counted: Vec<u64> = all[all.len() - n..]
        .iter()
        .map(|r| r.prompt_tokens)
        .collect();
    counted.sort_unstable();
    counted
}

/// A row's `rate.workload.input` summarises exactly `counted` (ascending): count, min, max and
/// mean.
pub(crate) fn assert_summarises(input: &Value, counted: &[u64]) {
    let n = counted.len();
    let mean = counted.iter().sum::<u64>() as f64 / n as f64;
    assert_eq!(
        (&input["count"], &input["min"], &input["max"]),
        (&json!(n), &json!(counted[0]), &json!(counted[n - 1])),
        "{input:#}"
    );
    assert!((num(input, "mean") - mean).abs() < 1e-9, "{input:#}");
}

/// A prompts file replayed on a rate cell through chat completions: every chat body the tool
/// sent for the cell is one of the file's lines as written (its messages, its `max_tokens` or
/// `--max-output`), as many as the row says were sent; each request's prompt length, as the
/// simulator recorded it, is the simulator's count of that body's text; the row's input side
/// summarises exactly those counts, its output side the `max_tokens` asked; run.json records the
/// file, not its text.
#[test]
fn the_users_prompts_are_sent_as_written_and_counted_by_the_server() {
    let _serial = timing_lock();
    let sim = stamped_tiny();
    let relay = Relay::start(&sim.url);
    let dir = out_dir("prompts-workload");
    let file = dir.join("p.jsonl");
    std::fs::write(&file, PROMPTS).expect("write");
    let workload = format!("prompts:{}", file.display());
    let run = dir.join("run");
    let row = &run_prompts(&relay.url, &run, &workload, &["--api", "chat"])
        .ok()
        .one("rate");
    assert_eq!(row["status"], "valid", "{row:#}");
    assert_eq!(row["context_label"], "prompts:p.jsonl", "{row:#}");
    let n = row["requests_sent"].as_u64().expect("sent") as usize;
    assert!(n >= 5, "{row:#}");

    // The bodies: each one of the file's lines, as written.
    let lines = lines_as_sent();
    let bodies = cell_bodies(&relay);
    let mut expected_counts = Vec::new();
    let mut asked = Vec::new();
    let mut used = std::collections::BTreeSet::new();
    for b in &bodies {
        let i = lines
            .iter()
            .position(|(m, _)| *m == b["messages"])
            .unwrap_or_else(|| panic!("a body not of the file: {b:#}"));
        assert_eq!(b["max_tokens"], lines[i].1, "{b:#}");
        used.insert(i);
        expected_counts.push(sim_chat_tokens(&b["messages"]));
        asked.push(lines[i].1);
    }
    assert_eq!(bodies.len(), n, "one body per request sent");
    assert!(used.len() >= 3, "a sample of the file's lines: {used:?}");

    // Each request's length is the server's count of its text.
    // The cell's requests came last, after the warm-ups.
    let counted = last_counted(&sim, n);
    expected_counts.sort_unstable();
    assert_eq!(
        counted, expected_counts,
        "the simulator counted the bodies' texts"
    );

    // The row summarises the server's counts and the max_tokens asked.
    let wf = &row["rate"]["workload"];
    assert_eq!(wf["source"], workload.as_str(), "{wf:#}");
    let input = &wf["input"];
    assert_summarises(input, &counted);
    assert_eq!(input["p50"], json!(counted[(n - 1) / 2]), "{input:#}");
    assert!(input["ks"].is_null(), "no length was asked: {input:#}");
    let output = &wf["output"];
    asked.sort_unstable();
    assert_eq!(
        (&output["min"], &output["max"]),
        (&json!(asked[0]), &json!(asked[n - 1])),
        "{output:#}"
    );
    let check = &row["prompt_check"];
    assert_eq!(
        (
            &check["reported_min"],
            &check["reported_max"],
            &check["mismatched"]
        ),
        (&json!(counted[0]), &json!(counted[n - 1]), &json!(0)),
        "{check:#}"
    );

    // run.json: the file by name, prompts, size and sha256; none of its text.
    let sha: String = Sha256::digest(PROMPTS.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let load = &run_json(&run)["plan"]["settings"]["load"];
    assert_eq!(
        load["prompts"],
        json!({"name": "p.jsonl", "lines": 5, "bytes": PROMPTS.len(), "sha256": sha})
    );
    assert_eq!(load["workload"], workload.as_str());
    let saved = std::fs::read_to_string(run.join("run.json")).expect("run.json");
    for t in [
        "haiku",
        "rivers",
        "sky is blue",
        "cat sat",
        "good morning",
        "terse",
    ] {
        assert!(!saved.contains(t), "no prompt text in run.json: {t}");
    }

    // Resumed with another file at that path, the run is refused before anything is sent.
    std::fs::write(&file, PROMPTS.replace("haiku", "limerick")).expect("write");
    // (The stamps so far were taken above: any now would be the resume's.)
    let d = run.display().to_string();
    let o = run_bin(&["run", "--url", &relay.url, "--resume", &d]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        err.trim().lines().count() == 1 && err.contains("is not the file the run recorded"),
        "{err}"
    );
    assert!(served(&sim).is_empty(), "nothing sent");
}

/// Bad files: a bad line (its number counts the blank line before it), invalid JSON, a
/// `max_tokens` of 0, and chats on the completions API, each refused with exit 1 in one line
/// that names the file and the line, before any request reaches the server.
#[test]
fn bad_prompts_are_refused_by_line_before_anything_is_sent() {
    let sim = stamped_tiny();
    let dir = out_dir("prompts-workload-bad");
    let good = r#"{"prompt": "fine"}"#;
    let cases: [(&str, String, &[&str], &str); 4] = [
        (
            "neither.jsonl",
            format!("{good}\n\n{{\"text\": \"x\"}}\n"),
            &["--api", "chat"],
            r#"neither.jsonl: line 3: has neither "prompt" nor "messages"; each line is"#,
        ),
        (
            "json.jsonl",
            format!("{good}\n{{\"prompt\": \"x\",}}\n"),
            &["--api", "chat"],
            "json.jsonl: line 2: not valid JSON",
        ),
        (
            "zero.jsonl",
            format!("{good}\n{good}\n{{\"prompt\": \"x\", \"max_tokens\": 0}}\n"),
            &["--api", "chat"],
            r#"zero.jsonl: line 3: "max_tokens" is 0, not a positive integer"#,
        ),
        (
            "chat.jsonl",
            format!("{good}\n{{\"messages\": [{{\"role\": \"user\", \"content\": \"hi\"}}]}}\n"),
            &[],
            "chat.jsonl: line 2 is a chat",
        ),
    ];
    for (name, body, extra, says) in cases {
        let file = dir.join(name);
        std::fs::write(&file, body).expect("write");
        let out = dir.join(format!("run-{name}"));
        let line = run_prompts(
            &sim.url,
            &out,
            &format!("prompts:{}", file.display()),
            extra,
        )
        .go()
        .refusal();
        assert!(line.contains(says), "{name}: `{line}` should say {says}");
        assert!(line.contains("--workload prompts:"), "{line}");
        assert!(!out.join("cells.jsonl").exists(), "{name}: nothing run");
    }
    assert!(served(&sim).is_empty(), "no request reached the server");
}
