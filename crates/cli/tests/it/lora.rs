//! LoRA adapters end to end (`run --lora`, docs/lora.md) against the simulator serving three
//! adapters, judged by what the simulator served (`llmib_sim::served_requests`, each request
//! with the adapter that served it):
//! - open load, SGLang's dialect (`base:adapter`): the rate cell's requests go round-robin
//!   over the adapters in arrival order, and the row's figures per adapter count exactly what
//!   the server served each adapter; the report's table shows them;
//! - decode and burst, vLLM's dialect (the adapter's name), `--lora-assign random`: each
//!   stream's adapter is the seeded draw recorded in run.json, so each adapter's share of the
//!   requests (served, and counted by the rows) is its streams' share;
//! - an adapter the server does not list stops the run in one line before anything is sent;
//! - docs/lora.md's commands, run as written.

use crate::common::*;
use crate::e2e::Bench;
use crate::first_use::{doc_commands, run_doc_pair};
use llmib_core::{LoraAssign, LoraSettings};
use llmib_sim::{ServedRequest, SimConfig};
use serde_json::Value;
use std::collections::BTreeMap;

const ADAPTERS: [&str; 3] = ["sql", "chat", "code"];

fn sim(profile: &str) -> Sim {
    let cfg = SimConfig {
        lora_adapters: ADAPTERS.map(String::from).to_vec(),
        stamp_chunks: true,
        ..llmib_sim::builtin_profile(profile).expect("profile")
    };
    Sim::start(cfg)
}

fn served(s: &Sim) -> Vec<ServedRequest> {
    let h = s.handle();
    llmib_sim::served_requests(&h.take_arrival_stamps(), &h.take_chunk_stamps())
}

/// `run` at context 512, max output 16 (no `--model`: the probe must pick the base model
/// among the adapters), with `extra`.
fn run_lora(url: &str, dir: &std::path::Path, extra: &[&str]) -> std::process::Output {
    // The default report formats: the tests read report.md and report.html.
    Bench::run(url)
        .unset("--format")
        .set("--contexts", "512")
        .set("--max-output", "16")
        .set("--duration", "1s")
        .arg("--skip-prefill")
        .out_at(dir)
        .args(extra)
        .go()
        .output
}

/// How many requests each adapter took, by name, from a row's `lora` member.
fn per_adapter(row: &Value) -> BTreeMap<String, u64> {
    let l = &row["lora"];
    let adapters = l["adapters"]
        .as_array()
        .unwrap_or_else(|| panic!("no lora in {row:#}"));
    let names: Vec<&str> = adapters
        .iter()
        .filter_map(|a| a["adapter"].as_str())
        .collect();
    assert_eq!(names, ADAPTERS, "every adapter listed, in order: {l:#}");
    // The shares add up to the total.
    for field in ["requests", "output_tokens"] {
        let sum: u64 = adapters.iter().filter_map(|a| a[field].as_u64()).sum();
        assert_eq!(Some(sum), l["total"][field].as_u64(), "{field}: {l:#}");
    }
    let tok_s: f64 = adapters
        .iter()
        .filter_map(|a| a["output_tok_per_s"].as_f64())
        .sum();
    let total = l["total"]["output_tok_per_s"]
        .as_f64()
        .expect("total tok/s");
    assert!((tok_s - total).abs() <= 1e-6 * total.max(1.0), "{l:#}");
    adapters
        .iter()
        .map(|a| {
            (
                a["adapter"].as_str().unwrap_or("").to_string(),
                a["requests"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// Open load against SGLang's dialect: request k of the context takes adapter k mod 3, so the
/// served adapters, in arrival order, cycle sql, chat, code; the row counts what was served.
#[test]
fn open_load_spreads_requests_round_robin_and_counts_them_per_adapter() {
    let _serial = timing_lock();
    let s = sim("tiny");
    let dir = out_dir("lora-open-load");
    let o = run_lora(
        &s.url,
        &dir,
        &[
            "--skip-decode",
            "--request-rate",
            "12",
            // Sends 83 ms apart: the order the server sees them in is the schedule's (two
            // Poisson arrivals a fraction of a millisecond apart could reach it swapped).
            "--arrival",
            "constant",
            "--lora",
            "sql,chat,code",
            "--format",
            "md,html,json",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let got = served(&s);
    let adapters: Vec<&str> = got.iter().filter_map(|r| r.adapter.as_deref()).collect();
    assert!(adapters.len() >= 9, "{got:?}");
    let cycle: Vec<&str> = (0..adapters.len()).map(|k| ADAPTERS[k % 3]).collect();
    assert_eq!(adapters, cycle, "arrival order");
    let rows = cells(&dir);
    let rate: Vec<&Value> = rows.iter().filter(|r| r["phase"] == "rate").collect();
    assert_eq!(rate.len(), 1, "{rows:#?}");
    assert_eq!(rate[0]["status"], "valid", "{:#}", rate[0]);
    assert_eq!(rate[0]["lora"]["assign"], "round-robin");
    let mut by_server: BTreeMap<String, u64> = BTreeMap::new();
    for a in &adapters {
        *by_server.entry(a.to_string()).or_default() += 1;
    }
    assert_eq!(
        per_adapter(rate[0]),
        by_server,
        "the row counts what was served"
    );
    let lora = &run_json(&dir)["plan"]["settings"]["lora"];
    assert_eq!(lora["adapters"], serde_json::json!(ADAPTERS), "{lora:#}");
    assert_eq!(lora["assign"], "round-robin");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## LoRA adapters"), "{md}");
    for a in ADAPTERS.iter().chain(&["total"]) {
        assert!(
            md.lines().any(|l| l.contains(&format!("| {a} |"))),
            "{a}: {md}"
        );
    }
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(html.contains("LoRA adapters"), "the page has the table");
    let results: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("results.json")).expect("results.json"),
    )
    .expect("JSON");
    llmib_report::check_results_schema(&results).expect("the results schema holds");
}

/// Each adapter's share of `counts` is its streams' share: identical streams in a closed loop
/// send about as many requests each (within 2 per stream).
fn shares_follow_streams(what: &str, counts: &BTreeMap<String, u64>, streams: &[&str]) {
    let total: u64 = counts.values().sum();
    let per_stream = total as f64 / streams.len() as f64;
    for a in ADAPTERS {
        let on = streams.iter().filter(|s| **s == a).count() as f64;
        let got = counts.get(a).copied().unwrap_or(0) as f64;
        assert!(
            (got - on * per_stream).abs() <= 2.0 * on.max(1.0),
            "{what}: {a} took {got} of {total} with {on} of the streams {streams:?}: {counts:?}"
        );
    }
}

/// Decode and burst against vLLM's dialect, seeded random per stream: stream i's requests all
/// went to the adapter run.json's seed draws for i, so each adapter's share of what was served
/// and of what the rows count is its streams' share.
#[test]
fn closed_loop_streams_keep_their_seeded_adapter() {
    let _serial = timing_lock();
    let s = sim("tiny-vllm");
    let dir = out_dir("lora-decode");
    let flags = "--concurrency 4 --run-burst --lora sql,chat,code --lora-assign random";
    let mut extra: Vec<&str> = flags.split(' ').collect();
    extra.extend(["--format", "none"]);
    let o = run_lora(&s.url, &dir, &extra);
    assert!(o.status.success(), "{}", text(&o));
    let got = served(&s);
    let saved = &run_json(&dir)["plan"]["settings"]["lora"];
    assert_eq!(saved["assign"], "random", "{saved:#}");
    let seed = saved["seed"].as_u64().expect("a seed");
    let adapters = ADAPTERS.map(String::from).to_vec();
    let settings = LoraSettings::new(adapters, LoraAssign::Random, seed).expect("settings");
    let streams: Vec<&str> = (0..4).map(|i| settings.adapter(i)).collect();
    let rows = cells(&dir);
    let decode = cell(&rows, "decode", 512, 4);
    assert_eq!(decode["status"], "valid", "{decode:#}");
    shares_follow_streams("decode row", &per_adapter(decode), &streams);
    let burst = cell(&rows, "burst", 512, 4);
    assert_eq!(burst["status"], "valid", "{burst:#}");
    let in_burst = per_adapter(burst);
    assert_eq!(
        in_burst.values().sum::<u64>(),
        20,
        "5 per stream: {burst:#}"
    );
    shares_follow_streams("burst row", &in_burst, &streams);
    let mut by_server: BTreeMap<String, u64> = BTreeMap::new();
    for a in got.iter().filter_map(|r| r.adapter.as_deref()) {
        *by_server.entry(a.to_string()).or_default() += 1;
    }
    shares_follow_streams("served", &by_server, &streams);
    assert!(
        got.iter().any(|r| r.adapter.is_none()),
        "the hidden warm-up is the base model's"
    );
}

/// An adapter the server does not list: one line naming it and the listed ids, exit 1, and
/// nothing sent or measured.
#[test]
fn an_unknown_adapter_stops_the_run_before_anything_is_measured() {
    let s = sim("tiny-vllm");
    let dir = out_dir("lora-unknown");
    let o = run_lora(
        &s.url,
        &dir,
        &[
            "--concurrency",
            "2",
            "--lora",
            "sql,nope",
            "--format",
            "none",
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    let line = err
        .lines()
        .find(|l| l.contains("nope"))
        .unwrap_or_else(|| panic!("{}", text(&o)));
    assert_eq!(
        line,
        "error: LoRA adapter `nope` is not served: the server's /v1/models lists sim/tiny, sql, chat, code"
    );
    assert!(cells(&dir).is_empty(), "no cell measured");
    assert!(
        served(&s).is_empty(),
        "no generation request reached the server"
    );
}

/// docs/lora.md's two commands, as written (the server on a free port, the results in a test
/// directory): one decode cell whose two streams took one adapter each.
#[test]
fn the_lora_docs_commands_run() {
    let _serial = timing_lock();
    let doc = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/lora.md"));
    let cmds = doc_commands(doc);
    assert_eq!(cmds.len(), 2, "{cmds:?}");
    let dir = out_dir("lora-docs");
    let o = run_doc_pair(&cmds[0], &cmds[1], &dir);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let row = cell(&rows, "decode", 512, 2);
    let l = &row["lora"]["adapters"];
    assert_eq!(l[0]["adapter"], "sql", "{row:#}");
    assert_eq!(l[1]["adapter"], "chat", "{row:#}");
    assert!(
        l[0]["requests"].as_u64() >= Some(1) && l[1]["requests"].as_u64() >= Some(1),
        "{row:#}"
    );
}
