//! Session cells on shards (issue 42), end to end against the simulator: one session cell (a
//! closed loop, an open loop, a session trace's replay) run by one process and by two shards
//! at the same `--start-at`, each against its own simulator
//! (so neither cache sees the other's prompts), then `merge`d. The merged row is rebuilt from
//! both shards' turns: the same turns, prompt tokens and cached tokens as the one process,
//! exactly, and as its simulator served them; its timing figures within a stated tolerance.
//!
//! Why the one process is `--shard 0/1`: a run's prompt texts are seeded from `--start-at` on
//! shards and afresh otherwise, and the simulator's tokenizer counts a word by its length, so
//! only a process given the same `--start-at` builds the same messages (hence the same prompt
//! lengths). Shard 0 of 1 is one process running every session of the cell, judged in that
//! process (its own row, not a merge) by the same function an unsharded run uses.

use crate::common::*;
use crate::e2e::Bench;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Child;

/// A vLLM-flavoured tiny simulator that caches every session's turns, with its oracle on.
fn sim() -> Sim {
    crate::sessions::sim(200_000, 200_000)
}

/// What every process runs besides its cell's flags: chat prompts, no prefill cell.
const PLAN: &[&str] = &[
    "--api",
    "chat",
    "--contexts",
    "512",
    "--max-output",
    "16",
    "--seed",
    "7",
    "--skip-prefill",
    "--shard-prep-seconds",
    "2",
    "--format",
    "none",
    "--display",
    "plain",
    "--no-hw-monitor",
];

/// A generated cell's session flags: 512-token histories, 3 turns of a 32-token message asking
/// 16 tokens, a shared 128-token system prompt.
const TURNS: &[&str] = &[
    "--turns",
    "3",
    "--turn-input-len",
    "32",
    "--turn-output-len",
    "16",
    "--system-prompt-len",
    "128",
];

fn start(url: &str, dir: &Path, shard: &str, start_at: &str, cell: &[&str]) -> Child {
    Bench::cmd(&["run", "--url", url])
        .out_at(dir)
        .set("--shard", shard)
        .set("--start-at", start_at)
        .args(PLAN)
        .args(cell)
        .spawn()
}

/// The session cell `cell` run by one process (on `one`'s simulator) and by two shards (on
/// `two`'s), all at one `--start-at`; the one process's dir, the shards' and the merged run's.
fn run_both(one: &Sim, two: &Sim, name: &str, cell: &[&str]) -> (PathBuf, Vec<PathBuf>, PathBuf) {
    // Far enough ahead that three debug processes on two cores have probed their servers.
    let t = std::time::SystemTime::now() + std::time::Duration::from_secs(8);
    let start_at = llmib_core::rfc3339(t);
    let single = out_dir(&format!("{name}-one"));
    let dirs: Vec<PathBuf> = (0..2)
        .map(|i| out_dir(&format!("{name}-shard-{i}")))
        .collect();
    let mut children = vec![start(&one.url, &single, "0/1", &start_at, cell)];
    for (i, d) in dirs.iter().enumerate() {
        children.push(start(&two.url, d, &format!("{i}/2"), &start_at, cell));
    }
    for c in children {
        let o = c.wait_with_output().expect("a process ends");
        assert!(o.status.success(), "{}", text(&o));
    }
    let merged = Bench::merge(&dirs, &format!("{name}-merged")).ok().dir;
    (single, dirs, merged)
}

fn session_row(dir: &Path) -> Value {
    cells(dir)
        .into_iter()
        .find(|r| r["phase"] == "session")
        .unwrap_or_else(|| panic!("no session row in {}", dir.display()))
}

/// The session records of `dir`'s requests.jsonl.
fn session_records(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).expect("requests.jsonl");
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["cell"]["phase"] == "session")
        .collect()
}

/// Every request the simulator served, as (prompt tokens, cached tokens), counted.
fn served(sim: &Sim) -> BTreeMap<(u64, u64), u64> {
    let h = sim.handle();
    let mut by = BTreeMap::new();
    for r in llmib_sim::served_requests(&h.take_arrival_stamps(), &h.take_chunk_stamps()) {
        *by.entry((r.prompt_tokens, r.cached_tokens)).or_insert(0) += 1;
    }
    by
}

/// Checks the merged row against the one process's (module docs) and its turns against what
/// the shards' simulator served; `sessions` is the cell's.
fn same_cell(single: &Path, dirs: &[PathBuf], merged: &Path, two: &Sim, sessions: u64) {
    let (one, m) = (session_row(single), session_row(merged));
    assert_eq!(m["status"], "valid", "{m:#}");
    assert_eq!(one["status"], "valid", "{one:#}");
    assert_eq!(m["merged"]["complete"], true, "{m:#}");
    let parts = m["merged"]["shards"].as_array().expect("parts");
    let ran: Vec<u64> = parts
        .iter()
        .filter_map(|p| p["requests"].as_u64())
        .collect();
    assert_eq!(ran.iter().sum::<u64>(), sessions, "{m:#}");
    assert_eq!(m["session"]["sessions"].as_u64(), Some(sessions), "{m:#}");
    // Exactly the one process's turns and tokens, cell and turn by turn.
    for k in [
        "turns_completed",
        "prompt_tokens",
        "cached_tokens",
        "predicted_cached_tokens",
    ] {
        assert_eq!(m[k], one[k], "{k}: merged {m:#} one {one:#}");
    }
    assert_eq!(m["turns_completed"].as_u64(), Some(3 * sessions), "{m:#}");
    let (pm, p1) = (&m["per_turn"], &one["per_turn"]);
    for t in 0..4 {
        for k in ["requests", "prompt_tokens", "predicted_cached_tokens"] {
            assert_eq!(pm[t][k], p1[t][k], "turn {t} {k}");
        }
        // Turn 0's cache depends on which warm-up the server took first (a shared system
        // prompt); every measured turn's is its own session's.
        if t > 0 {
            assert_eq!(pm[t]["cached_tokens"], p1[t]["cached_tokens"], "turn {t}");
        }
    }
    // Each shard ran its sessions j ≡ I (mod 2), and the merged run holds every session's.
    for (i, d) in dirs.iter().enumerate() {
        let mine = session_records(d);
        assert!(!mine.is_empty(), "shard {i} ran none");
        assert!(
            mine.iter()
                .all(|r| r["stream"].as_u64().is_some_and(|s| s % 2 == i as u64)),
            "shard {i}"
        );
    }
    let records = session_records(merged);
    assert_eq!(records.len() as u64, 4 * sessions, "warm-ups and turns");
    // Every turn's prompt and cached tokens are what the shards' simulator served.
    let mut left = served(two);
    for r in &records {
        let key = (
            r["prompt_tokens_reported"].as_u64().expect("prompt"),
            r["cached_tokens_reported"].as_u64().expect("cached"),
        );
        let n = left.get_mut(&key).filter(|n| **n > 0);
        *n.unwrap_or_else(|| panic!("{key:?} not served: {r:#}")) -= 1;
    }
    timing_close(&one, &m);
}

/// The timing figures of two runs of one cell on two idle simulators of one profile: TPOT is
/// the simulator's decode step (about 2 ms) and the batch it shares, within 25 %; TTFT (a few
/// ms of prefill and scheduling) within 10 ms, the jitter of three debug client processes on
/// two shared cores.
fn timing_close(one: &Value, m: &Value) {
    let p50 = |r: &Value, k: &str| r[k]["p50"].as_f64().unwrap_or(f64::NAN);
    assert_close("TPOT p50", p50(m, "tpot_ms"), p50(one, "tpot_ms"), 25.0);
    let (a, b) = (p50(m, "ttft_ms"), p50(one, "ttft_ms"));
    assert!((a - b).abs() < 10.0, "TTFT p50: merged {a} ms, one {b} ms");
}

#[test]
fn a_session_trace_replayed_by_two_shards_merges_to_the_one_process_cell() {
    let _serial = timing_lock();
    let (one, two) = (sim(), sim());
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/sessions.jsonl"
    );
    let workload = format!("sessions:{trace}");
    let cell = [
        "--workload",
        &workload,
        "--time-scale",
        "4",
        "--system-prompt-len",
        "256",
    ];
    let (single, dirs, merged) = run_both(&one, &two, "shard-sessions-replay", &cell);
    let (a, m) = (session_row(&single), session_row(&merged));
    assert_eq!(m["status"], "valid", "{m:#}");
    assert_eq!(m["merged"]["complete"], true, "{m:#}");
    assert_eq!(m["session"]["sessions"], 5, "{m:#}");
    // The file's 16 turns, every prompt as one process built it.
    for k in [
        "turns_completed",
        "prompt_tokens",
        "predicted_cached_tokens",
    ] {
        assert_eq!(m[k], a[k], "{k}: merged {m:#} one {a:#}");
    }
    assert_eq!(m["turns_completed"], 16, "{m:#}");
    // Each later turn's cache is its own session's; an opening's (turn 1) may be its group's
    // system prompt, served or not by when the group's other opening arrived.
    let (pm, pa) = (&m["per_turn"], &a["per_turn"]);
    for t in 0..pa.as_array().map_or(0, Vec::len) {
        assert_eq!(pm[t]["requests"], pa[t]["requests"], "turn {t}");
        assert_eq!(pm[t]["prompt_tokens"], pa[t]["prompt_tokens"], "turn {t}");
        if pa[t]["turn"].as_u64() > Some(1) {
            assert_eq!(pm[t]["cached_tokens"], pa[t]["cached_tokens"], "turn {t}");
        }
    }
    for (i, d) in dirs.iter().enumerate() {
        let mine = session_records(d);
        assert!(
            !mine.is_empty()
                && mine
                    .iter()
                    .all(|r| r["stream"].as_u64().is_some_and(|s| s % 2 == i as u64)),
            "shard {i}"
        );
    }
}

#[test]
fn a_closed_loop_on_two_shards_merges_to_the_one_process_cell() {
    let _serial = timing_lock();
    let (one, two) = (sim(), sim());
    let cell = [TURNS, &["--sessions", "4", "--duration", "20s"]].concat();
    let (single, dirs, merged) = run_both(&one, &two, "shard-sessions-closed", &cell);
    same_cell(&single, &dirs, &merged, &two, 4);
    // Both shards warmed their histories before the window's open instant.
    let m = session_row(&merged);
    for p in m["merged"]["shards"].as_array().expect("parts") {
        assert_eq!(p["ready_at_open"], true, "{p:#}");
    }
}

#[test]
fn an_open_loop_on_two_shards_merges_to_the_one_process_cell() {
    let _serial = timing_lock();
    let (one, two) = (sim(), sim());
    let cell = [TURNS, &["--session-rate", "4", "--duration", "1500ms"]].concat();
    let (single, dirs, merged) = run_both(&one, &two, "shard-sessions-open", &cell);
    let sessions = session_row(&single)["session"]["sessions"]
        .as_u64()
        .expect("sessions");
    assert!(sessions >= 2, "a schedule with sessions for both shards");
    same_cell(&single, &dirs, &merged, &two, sessions);
}

/// A session capacity search cannot be split: each step is the merged verdict of the last.
#[test]
fn a_shard_refuses_a_session_capacity_search() {
    for flags in [["--sessions", "1"], ["--session-rate", "1"]] {
        let says = Bench::run("http://127.0.0.1:9")
            .set("--shard", "0/2")
            .set("--start-at", "2099-01-01T00:00:00Z")
            .set("--turns", "2")
            .arg("--find-capacity")
            .set("--slo", "ttft_p99=1s")
            .args(flags)
            .exits(1)
            .text();
        assert!(
            says.contains("--find-capacity with sessions cannot run on shards")
                && says.contains("drop --find-capacity"),
            "{flags:?}: {says}"
        );
    }
}
