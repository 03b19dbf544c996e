//! `run --token-targeting ids` (issue 44, item 4): prompts sent as token ids, exactly C by
//! construction, built from the filler words' ids learned once per run instead of a tokenize,
//! a detokenize and a verifying tokenize per prompt. Judged from the request bodies as they
//! left the tool (the relay of `prompt_text`), the server's own count of every prompt
//! (`prompt_check`), and a real llama.cpp server, whose handling of an id prompt's BOS is what
//! the simulator cannot vouch for.

use crate::common::*;
use crate::e2e::Bench;
use crate::llamacpp::{LlamaServer, llama};
use crate::prompt_text::Relay;
use crate::run::exact_sim;
use serde_json::Value;

/// The completion bodies whose prompt is a list of ids, as lists.
fn id_prompts(relay: &Relay) -> Vec<Vec<u64>> {
    relay
        .json_requests()
        .into_iter()
        .filter(|(line, _)| line.contains("/completions"))
        .filter_map(|(_, b)| {
            b["prompt"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_u64).collect())
        })
        .collect()
}

/// The longest run of ids two of `prompts` start with (ids as the server caches them).
fn longest_shared_head(prompts: &[Vec<u64>]) -> usize {
    let mut sorted: Vec<&Vec<u64>> = prompts.iter().collect();
    sorted.sort();
    sorted.dedup();
    sorted
        .windows(2)
        .map(|w| w[0].iter().zip(w[1]).take_while(|(a, b)| a == b).count())
        .max()
        .unwrap_or(0)
}

/// Every row of the run measured, each request's prompt counted by the server as exactly C.
fn assert_exact_rows(rows: &[Value], context: u64) {
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["status"], "valid", "{r:#}");
        let check = &r["prompt_check"];
        assert_eq!(check["expected"], context, "{r:#}");
        assert_eq!(check["mismatched"], 0, "{r:#}");
        assert!(check["checked"].as_u64().unwrap_or(0) > 0, "{r:#}");
        assert_eq!(check["reported_min"], context, "{r:#}");
        assert_eq!(check["reported_max"], context, "{r:#}");
    }
}

#[test]
fn id_prompts_are_exact_unshared_and_cost_no_tokenize_call_each() {
    let _timed = timing_lock();
    let sim = Sim::start(exact_sim());
    let relay = Relay::start(&sim.url);
    let ran = Bench::run(&relay.url)
        .small("512", "2", "1s", "16")
        .args(["--token-targeting", "ids", "--request-rate", "200"])
        .out("id-prompts")
        .ok();
    let rows = ran.rows();
    assert_exact_rows(&rows, 512);
    let rate = ran.one("rate");
    let completed = rate["completed_requests"].as_u64().unwrap_or(0);
    assert!(completed >= 100, "{rate:#}");
    assert_eq!(ran.run_json()["plan"]["settings"]["token_targeting"], "ids");

    let prompts = id_prompts(&relay);
    // Every measured request went as ids (the hidden warm-ups stay text), each exactly C.
    assert!(
        prompts.len() as u64 >= completed,
        "{} id prompts",
        prompts.len()
    );
    assert!(prompts.iter().all(|p| p.len() == 512));
    // No two share a prefix the cache could serve: a BOS and a word or two at most.
    let shared = longest_shared_head(&prompts);
    assert!(shared <= 8, "two prompts share their first {shared} ids");
    // The words' ids were learned once: a text prompt costs two or more tokenize calls each,
    // so hundreds of prompts would have sent hundreds.
    let tokenize = relay
        .json_requests()
        .iter()
        .filter(|(line, _)| line.contains("/tokenize"))
        .count();
    assert!(
        tokenize < 140,
        "{tokenize} tokenize calls for {} prompts",
        prompts.len()
    );
}

#[test]
fn id_prompts_are_refused_where_the_server_cannot_take_them() {
    let sim = Sim::start(exact_sim());
    let base = || Bench::run(&sim.url).small("512", "1", "1s", "16");
    let chat = base()
        .args(["--token-targeting", "ids", "--api", "chat"])
        .out("id-prompts-chat")
        .go()
        .refusal();
    assert!(chat.contains("--api completions"), "{chat}");
    let dir = out_dir("id-prompts-text");
    let file = dir.join("words.txt");
    std::fs::write(&file, "some prose to cut prompts from\n").expect("write");
    let text = base()
        .args(["--token-targeting", "ids", "--prompt-text"])
        .arg(file.to_str().expect("utf-8 path"))
        .out_at(&dir.join("out"))
        .go()
        .refusal();
    assert!(text.contains("--prompt-text"), "{text}");
}

/// A real llama.cpp server takes the id prompts, BOS first, and counts each as exactly C.
#[test]
fn llamacpp_counts_id_prompts_exactly() {
    let Some(paths) = llama() else { return };
    let _serial = exclusive();
    let server = LlamaServer::start(paths, "ids", 2, 1024, None);
    let relay = Relay::start(&server.url);
    let ran = Bench::run(&relay.url)
        .small("512", "1,2", "1s", "16")
        .args(["--token-targeting", "ids", "--readiness-timeout", "3s"])
        .out("llamacpp-id-prompts")
        .ok();
    assert_exact_rows(&ran.rows(), 512);
    let prompts = id_prompts(&relay);
    assert!(prompts.len() >= 3, "{} id prompts", prompts.len());
    assert!(prompts.iter().all(|p| p.len() == 512));
    // The model's BOS leads each prompt, as llama.cpp puts it before a string prompt.
    let first: std::collections::BTreeSet<u64> = prompts.iter().map(|p| p[0]).collect();
    assert_eq!(first.len(), 1, "one BOS: {first:?}");
}
