//! Agents' session traces end to end (issue 42): a trace with a subagent forked after its
//! parent's tool call, tool definitions, tool-call and tool-result turns and an idle gap,
//! replayed against the simulator on chat, Messages and Responses. Every turn's prompt is
//! exact, every request's cached tokens are the simulator's own, and every turn's cached
//! tokens are the prediction (the subagent's opening included: it shares its parent's prompt).

use crate::common::*;
use crate::e2e::Bench;
use serde_json::Value;

/// `testdata/workloads/agent-replay.jsonl`: a lead agent calling a tool twice, a subagent
/// forked after the second call (its opening is that call's result) that calls a tool and
/// idles 0.3 s for its result, and a plain session. Nothing else shares the forked prefix (no
/// later turn of the lead), so the prediction is exact turn by turn.
const TRACE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/workloads/agent-replay.jsonl"
);

fn sim() -> Sim {
    crate::sessions::sim(200_000, 200_000)
}

/// Replays [`TRACE`] on `api`; the session row and the records.
fn replay(sim: &Sim, api: &str) -> (Value, Vec<Value>) {
    let ran = Bench::run(&sim.url)
        .set("--api", api)
        .set("--contexts", "1K")
        .set("--system-prompt-len", "256")
        .set("--max-output", "32")
        .set("--workload", format!("sessions:{TRACE}"))
        .arg("--save-requests")
        .out(&format!("agent-sessions-{api}-out"))
        .ok();
    let row = ran.only("session");
    let recs = ran.requests().into_values().flatten().collect();
    (row, recs)
}

#[test]
fn a_subagent_trace_caches_what_the_simulator_served_and_predicted_on_every_api() {
    for api in ["chat", "messages", "responses"] {
        let sim = sim();
        let (row, recs) = replay(&sim, api);
        assert_eq!(row["session"]["sessions"], 3, "{api}: {row}");
        assert_eq!(row["turns_completed"], 6, "{api}: {row}");
        assert_eq!(row["prompt_check"]["mismatched"], 0, "{api}: {row}");
        let turns = row["per_turn"].as_array().cloned().unwrap_or_default();
        assert_eq!(turns.len(), 2, "{api}: {row}");
        for t in &turns {
            assert_eq!(
                num(t, "cached_tokens"),
                num(t, "predicted_cached_tokens"),
                "{api} turn {}: {t}",
                t["turn"]
            );
        }
        // The subagent's opening is served from its parent's prompt: turn 1 caches.
        assert!(num(&turns[0], "cached_tokens") > 1000.0, "{api}: {row}");
        assert_eq!(recs.len(), 6, "{api}: {recs:?}");
        let seen = crate::sessions::assert_served_as_reported(&sim, &recs, api);
        assert_eq!(seen, 6, "{api}: every request has both counts: {recs:?}");
    }
}

#[test]
fn an_agent_trace_on_completions_is_refused_in_one_line() {
    let sim = sim();
    let ran = Bench::run(&sim.url)
        .set("--api", "completions")
        .set("--contexts", "1K")
        .set("--max-output", "32")
        .set("--workload", format!("sessions:{TRACE}"))
        .out("agent-sessions-completions-out")
        .go();
    // Refused before anything is measured: no results directory, nothing sent but the probe.
    let why = ran.refusal();
    assert!(
        why.contains("agent-replay.jsonl:1: an agent's trace"),
        "{why}"
    );
    assert!(why.contains("needs --api chat"), "{why}");
    assert!(!ran.dir.join("cells.jsonl").exists(), "{why}");
}
