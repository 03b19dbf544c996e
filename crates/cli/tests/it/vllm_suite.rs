//! Real vLLM on CPU, one server for every check (issue 47: the real-engine suites start each
//! server once; a start costs 40–60 s on two cores). `scripts/vllm/start.sh` serves the tiny
//! model with an API key and `--max-num-seqs 4`, and the checks run on it in turn:
//!
//! 1. the session cell (`vllm::sessions_cache_within_a_block`), first, so its prefix-cache
//!    counter is judged on a cache no earlier run of this suite filled;
//! 2. the agents' routes, Messages and Responses (`vllm_agents::agents_routes`);
//! 3. real text in the matrix (`--prompt-text`, issue 45): every prompt exact by vLLM's own
//!    count, and every body's words the file's;
//! 4. the user's prompts (`--workload prompts:FILE`, issue 45): each sent as written, each
//!    request's prompt tokens the count vLLM's `/tokenize` gives for its line;
//! 5. LoRA (`--lora sql,chat`, issue 45): two rank-8 adapters generated for the tiny model
//!    (`scripts/vllm/make_lora.py`; the server starts with `--enable-lora`): `/v1/models` lists
//!    them with the base as parent, and the decode row splits its requests and tokens between
//!    them, the shares adding up to the total, every prompt exact;
//! 6. `scripts/vllm/e2e.sh`, the adapter's live check as docs/real-engines.md shows it, on this
//!    server (`VLLM_URL`, `VLLM_KEY`) rather than a second one.
//!
//! Without vLLM installed the test prints why and passes, unless `CI` is set.

use crate::common::*;
use crate::e2e::Bench;
use crate::llamacpp::http;
use crate::prompt_text::{Relay, runs_in, split_prompt};
use crate::vllm::Vllm;
use crate::vllm_agents::KEY;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::net::SocketAddr;

#[test]
fn real_vllm_one_server_for_every_check() {
    let _serial = exclusive();
    let Some((py, model)) = crate::sweep::vllm_paths() else {
        return;
    };
    let adapters = out_dir("vllm-lora-adapters");
    let made = std::process::Command::new(&py)
        .arg(repo_root().join("scripts/vllm/make_lora.py"))
        .args([
            model.as_str(),
            &adapters.display().to_string(),
            "sql",
            "chat",
        ])
        .output()
        .expect("run make_lora.py");
    assert!(made.status.success(), "{}", text(&made));
    let modules = ["sql", "chat"].map(|n| format!("{n}={}", adapters.join(n).display()));
    let Some(server) = Vllm::start_with(&[
        "--api-key",
        KEY,
        "--",
        "--enable-lora",
        "--max-lora-rank",
        "8",
        "--lora-modules",
        &modules[0],
        &modules[1],
    ]) else {
        return;
    };
    crate::vllm::sessions_cache_within_a_block(&server.url, KEY);
    crate::vllm_agents::agents_routes(&server.url);
    real_text_prompts_are_exact(&server.url);
    prompts_file_counted_by_the_server(&server.url);
    lora_adapters_split_the_row(&server.url);
    adapter_check_script(&server.url);
}

/// `--prompt-text LICENSE-MIT` on contexts 256 and 1K through a relay that keeps the bodies:
/// every measured row's prompts exactly C by vLLM's usage, and every completions prompt after
/// its tag is the licence's words, 40 consecutive at least.
fn real_text_prompts_are_exact(url: &str) {
    let licence_path = repo_root().join("LICENSE-MIT");
    let licence = std::fs::read_to_string(&licence_path).expect("LICENSE-MIT");
    let relay = Relay::start(url);
    let ran = Bench::run(&relay.url)
        .set("--api-key", KEY)
        .small("256,1K", "1,2", "2s", "16")
        .set("--prompt-text", licence_path.display().to_string())
        .out("vllm-prompt-text")
        .ok();
    let rows = ran.rows();
    let measured: Vec<&Value> = rows
        .iter()
        .filter(|r| matches!(r["status"].as_str(), Some("valid" | "requests_queued")))
        .collect();
    assert_eq!(measured.len(), 6, "2 prefill and 4 decode rows: {rows:#?}");
    for r in &measured {
        let check = &r["prompt_check"];
        assert_eq!(check["mismatched"], 0, "{r:#}");
        assert!(check["checked"].as_u64().unwrap_or(0) >= 1, "{r:#}");
    }
    assert!(ran.file("run.json").contains("LICENSE-MIT"), "the source");
    let words: Vec<&str> = licence.split_whitespace().collect();
    let mut seen = 0;
    for (line, body) in relay.json_requests() {
        if !line.starts_with("POST /v1/completions") {
            continue;
        }
        let Some(prompt) = body["prompt"].as_str() else {
            continue;
        };
        let (Some(_), text) = split_prompt(prompt) else {
            continue;
        };
        let said: Vec<&str> = text.split_whitespace().collect();
        // The last word may be cut inside.
        let whole = &said[..said.len().saturating_sub(1)];
        assert!(
            whole.len() >= 40,
            "a prompt of the file's words: {prompt:?}"
        );
        assert!(
            runs_in(&words, &whole[..40]),
            "not the file's text: {prompt:?}"
        );
        seen += 1;
    }
    assert!(seen >= 6, "{seen} measured prompts seen");
}

/// vLLM's own count of `text` as a completions prompt (`/tokenize`, special tokens added as
/// the completions route adds them).
fn vllm_count(addr: SocketAddr, text: &str) -> u64 {
    let body = json!({"model": "tiny-llama", "prompt": text}).to_string();
    let (status, answer) = http(addr, "POST", "/tokenize", &body, Some(KEY)).expect("/tokenize");
    assert_eq!(status, 200, "{answer}");
    let v: Value = serde_json::from_str(&answer).expect("JSON");
    v["count"].as_u64().expect("count")
}

/// A prompts file of four texts, sent as written at 4 requests/s on completions (3 s of
/// constant arrivals: about 12 requests, each drawing a line): every
/// finished request's prompt tokens are vLLM's `/tokenize` count of one of the lines, and the
/// row's summary spans what vLLM counted.
fn prompts_file_counted_by_the_server(url: &str) {
    let texts = [
        "Write a haiku about the sea.",
        "Explain, in one sentence, why the sky is blue.",
        "Translate good morning into French, please.",
        "Name three rivers in Europe and the seas they reach.",
    ];
    let dir = out_dir("vllm-prompts");
    let file = dir.join("prompts.jsonl");
    let lines: Vec<String> = texts
        .iter()
        .map(|t| json!({"prompt": t, "max_tokens": 8}).to_string())
        .collect();
    std::fs::write(&file, lines.join("\n") + "\n").expect("prompts file");
    let ran = Bench::run(url)
        .set("--api-key", KEY)
        .set("--api", "completions")
        .small("512", "1", "3s", "16")
        .args(["--skip-decode", "--skip-prefill", "--save-requests"])
        .set("--request-rate", "4")
        .set("--arrival", "constant")
        .set("--workload", format!("prompts:{}", file.display()))
        .out_at(&dir.join("run"))
        .ok();
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let counts: BTreeSet<u64> = texts.iter().map(|t| vllm_count(addr, t)).collect();
    assert_eq!(
        counts.len(),
        4,
        "four lengths tell the lines apart: {counts:?}"
    );
    let reported: Vec<u64> = ran
        .requests()
        .into_values()
        .flatten()
        .filter_map(|r| r["prompt_tokens_reported"].as_u64())
        .collect();
    assert!(reported.len() >= 8, "{reported:?}");
    for p in &reported {
        assert!(
            counts.contains(p),
            "{p} tokens is no line's count {counts:?}"
        );
    }
    let row = ran.only("rate");
    let input = &row["rate"]["workload"]["input"];
    assert!(
        input["requested"]
            .as_str()
            .is_some_and(|s| s.ends_with("counted by the server")),
        "{row:#}"
    );
    let (lo, hi) = (counts.first(), counts.last());
    assert!(input["min"].as_u64() >= lo.copied(), "{input:#}");
    assert!(input["max"].as_u64() <= hi.copied(), "{input:#}");
}

/// `--lora sql,chat` on a 256 × 2 decode cell: vLLM lists both adapters with the base as their
/// parent; the row names both, each took requests and tokens, and the shares add up to the
/// row's total; every prompt exact.
fn lora_adapters_split_the_row(url: &str) {
    let addr: SocketAddr = url
        .trim_start_matches("http://")
        .parse()
        .expect("an address");
    let (status, models) = http(addr, "GET", "/v1/models", "", Some(KEY)).expect("/v1/models");
    assert_eq!(status, 200, "{models}");
    let models: Value = serde_json::from_str(&models).expect("JSON");
    for name in ["sql", "chat"] {
        let card = models["data"]
            .as_array()
            .and_then(|d| d.iter().find(|m| m["id"] == name))
            .unwrap_or_else(|| panic!("{name} not in {models:#}"));
        assert_eq!(card["parent"], "tiny-llama", "{card:#}");
    }
    let ran = Bench::run(url)
        .set("--api-key", KEY)
        .small("256", "2", "2s", "16")
        .set("--lora", "sql,chat")
        .arg("--skip-prefill")
        .out("vllm-lora")
        .ok();
    let row = ran.row("decode", 256, 2);
    assert!(
        matches!(row["status"].as_str(), Some("valid" | "requests_queued")),
        "{row:#}"
    );
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row:#}");
    let l = &row["lora"];
    let adapters = l["adapters"].as_array().expect("the row's adapters");
    let names: Vec<&str> = adapters
        .iter()
        .filter_map(|a| a["adapter"].as_str())
        .collect();
    assert_eq!(names, ["sql", "chat"], "{l:#}");
    for field in ["requests", "output_tokens"] {
        let each: Vec<u64> = adapters.iter().filter_map(|a| a[field].as_u64()).collect();
        assert!(
            each.len() == 2 && each.iter().all(|&v| v > 0),
            "{field}: {l:#}"
        );
        let sum: u64 = each.iter().sum();
        assert_eq!(Some(sum), l["total"][field].as_u64(), "{field}: {l:#}");
    }
}

/// `scripts/vllm/e2e.sh`, as docs/real-engines.md shows it, checking this server.
fn adapter_check_script(url: &str) {
    let out = out_dir("vllm-e2e");
    let o = std::process::Command::new("bash")
        .arg(repo_root().join("scripts/vllm/e2e.sh"))
        .arg(&out)
        .current_dir(repo_root())
        .env("LLMIB_BIN", bin())
        .env("VLLM_URL", url)
        .env("VLLM_KEY", KEY)
        // Its checks (prompts exact, counts per chunk, no key in a file) read as well from 2 s
        // windows as from the default 5 s: 36 s less of the test command.
        .env("VLLM_E2E_DURATION", "2s")
        .output()
        .expect("run scripts/vllm/e2e.sh");
    assert!(o.status.success(), "{}", text(&o));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("ok   engine detected as vllm"), "{said}");
    assert!(!said.contains("FAIL"), "{said}");
}
