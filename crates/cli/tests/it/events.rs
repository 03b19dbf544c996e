//! `--events FILE` end to end: the real binary against the simulator, with an API key that the
//! server's error bodies quote. The file holds one line per event (the same events as
//! `--display json` prints), a start and an end for every cell of `cells.jsonl`, times that
//! never go back, and not the key.

use crate::common::*;
use crate::e2e::Bench;
use crate::run::exact_sim;
use serde_json::Value;
use std::collections::BTreeMap;

const KEY: &str = "sk-events-secret-5";

/// The lines of a JSON-lines text, each parsed.
fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// How many events of each kind.
fn kinds(events: &[Value]) -> BTreeMap<String, usize> {
    let mut by = BTreeMap::new();
    for e in events {
        *by.entry(e["event"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }
    by
}

/// A cell's key as the events and the rows both spell it.
fn key(v: &Value) -> (String, u64, u64) {
    (
        v["phase"].as_str().unwrap_or_default().to_string(),
        v["context_tokens"].as_u64().unwrap_or_default(),
        v["concurrency"].as_u64().unwrap_or_default(),
    )
}

#[test]
fn every_event_is_a_timed_line_without_the_key() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.api_key = Some(KEY.into());
    // Some requests fail with a body that quotes the key: request errors carry server text.
    cfg.faults.http_error_rate = 0.2;
    cfg.faults.echo_api_key = true;
    let sim = Sim::start(cfg);
    let dir = out_dir("events-file");
    let events_path = dir.join("events.jsonl");
    let (d, e) = (
        dir.join("run").display().to_string(),
        events_path.display().to_string(),
    );
    let o = Bench::run(&sim.url)
        .set("--api-key", KEY)
        .small("512,1K", "1,2", "1s", "16")
        .set("--display", "json")
        .set("--events", &e)
        .set("--output", &d)
        .go()
        .output;
    let all = text(&o);
    assert!(!all.contains(KEY), "the terminal holds the key: {all}");
    let file = std::fs::read_to_string(&events_path).expect("the event file");
    assert!(!file.contains(KEY), "the event file holds the key");
    let events = json_lines(&file);
    // One line per event: the file holds what `--display json` printed, kind for kind.
    let printed = json_lines(&String::from_utf8_lossy(&o.stdout));
    assert_eq!(kinds(&events), kinds(&printed), "{all}");
    assert!(kinds(&events).contains_key("request_error"), "{file}");

    // Every row of cells.jsonl was started (or skipped) and done, in that order.
    let rows = cells(&dir.join("run"));
    assert!(rows.len() >= 6, "{rows:#?}");
    for r in &rows {
        let k = key(r);
        let start = events.iter().position(|e| {
            matches!(e["event"].as_str(), Some("cell_started" | "skipped")) && key(e) == k
        });
        let done = events
            .iter()
            .position(|e| e["event"] == "cell_done" && key(&e["row"]) == k);
        match (start, done) {
            (Some(s), Some(d)) => assert!(s < d, "{k:?} ends before it starts"),
            _ => panic!("{k:?}: start {start:?}, done {done:?} in {file}"),
        }
    }

    // Both clocks on every line, never going back; the wall clock's two spellings agree.
    let mut last = (0u64, 0u64);
    for e in &events {
        let mono = e["mono_ns"].as_u64().expect("mono_ns");
        let unix = e["unix_ns"].as_u64().expect("unix_ns");
        let wall = e["wall"].as_str().expect("wall");
        assert_eq!(llmib_core::parse_rfc3339_ns(wall), Some(unix), "{e}");
        assert!(mono >= last.0 && unix >= last.1, "time went back at {e}");
        assert!(e["t_s"].as_f64().is_some(), "{e}");
        last = (mono, unix);
    }
}
