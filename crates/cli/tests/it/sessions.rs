//! Sessions end to end (issue 31): the real binary's `--sessions` against the simulator's
//! chat template and block prefix cache, judged by what the simulator itself served
//! (`llmib_sim::served_requests`: each request's prompt and cached tokens).

use crate::common::*;
use crate::e2e::{Bench, Ran};
use serde_json::Value;
use std::collections::BTreeMap;

/// A vLLM-flavoured tiny simulator (chat prompts counted by `/tokenize`), its KV and cache
/// `cache` tokens, with chunk stamps on for its oracle.
pub(crate) fn sim(cache: u64, kv: u64) -> Sim {
    let mut cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    cfg.context_length = 8192;
    cfg.kv_capacity_tokens = kv;
    cfg.prefix_cache_tokens = cache;
    cfg.stamp_chunks = true;
    Sim::start(cfg)
}

/// Runs 8 sessions × 6 turns from a 1K history with a shared system prompt; the session row.
fn run_sessions(sim: &Sim, name: &str) -> (Value, Ran) {
    let ran = chat_sessions(&sim.url, "1K")
        .set("--sessions", "8")
        .set("--turns", "6")
        .set("--duration", "60s")
        .arg("--save-requests")
        .out(name)
        .ok();
    (ran.only("session"), ran)
}

/// `run --api chat` of sessions at `context` with the suite's turn lengths (64 tokens in, 16
/// out, a 256-token system prompt, `--max-output 16`); a test adds the sessions and turns.
pub(crate) fn chat_sessions(url: &str, context: &str) -> Bench {
    Bench::run(url)
        .set("--api", "chat")
        .set("--contexts", context)
        .set("--turn-input-len", "64")
        .set("--turn-output-len", "16")
        .set("--system-prompt-len", "256")
        .set("--max-output", "16")
}

/// The simulator's own cached tokens by prompt length, over every request it served.
fn served_cached(sim: &Sim) -> BTreeMap<u64, Vec<u64>> {
    let h = sim.handle();
    let mut by: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for r in llmib_sim::served_requests(&h.take_arrival_stamps(), &h.take_chunk_stamps()) {
        by.entry(r.prompt_tokens).or_default().push(r.cached_tokens);
    }
    by
}

/// Asserts that every record's reported cached tokens are what the simulator served for a
/// prompt of its length (`what` names the case); returns how many records were checked (a
/// record without both counts is passed over).
pub(crate) fn assert_served_as_reported(sim: &Sim, recs: &[Value], what: &str) -> usize {
    let served = served_cached(sim);
    let mut seen = 0;
    for r in recs {
        let (Some(p), Some(c)) = (
            r["prompt_tokens_reported"].as_u64(),
            r["cached_tokens_reported"].as_u64(),
        ) else {
            continue;
        };
        let theirs = served.get(&p).cloned().unwrap_or_default();
        assert!(
            theirs.contains(&c),
            "{what}: prompt {p}: reported {c}, served {theirs:?}"
        );
        seen += 1;
    }
    seen
}

fn per_turn(row: &Value) -> Vec<Value> {
    row["per_turn"].as_array().cloned().unwrap_or_default()
}

#[test]
fn eight_sessions_six_turns_report_what_the_simulator_cached() {
    let sim = sim(200_000, 200_000);
    let (row, ran) = run_sessions(&sim, "sessions-8x6");
    // vLLM-like serial prefill may hold a turn in the queue for a pass: queued is measured too.
    let status = row["status"].as_str().unwrap_or_default();
    assert!(matches!(status, "valid" | "requests_queued"), "{row}");
    assert_eq!(row["concurrency"], 8);
    assert_eq!(row["turns_completed"], 48, "{row}");
    // The session cell is recorded over time too: the server's counters through it.
    let tele = ran.file("telemetry.jsonl");
    assert!(
        tele.lines()
            .any(|l| l.contains("\"session\"") && l.contains("\"srv\"")),
        "{tele}"
    );
    let turns = per_turn(&row);
    assert_eq!(
        turns.len(),
        7,
        "turn 0 (the warm-up) and six measured turns: {row}"
    );
    for t in &turns[1..] {
        assert_eq!(t["requests"], 8);
        let (cached, predicted) = (num(t, "cached_tokens"), num(t, "predicted_cached_tokens"));
        // The simulator caches by blocks of 16: the prediction at its block size is exact.
        assert_eq!(cached, predicted, "turn {}: {t}", t["turn"]);
        assert!(cached > 0.8 * num(t, "prompt_tokens"), "{t}");
    }
    // Every turn's prompt was exact: the server counted what the tool built.
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row}");
    // The cached tokens each request reported are the simulator's own, request by request.
    let recs: Vec<Value> = ran.requests().into_values().flatten().collect();
    let seen = assert_served_as_reported(&sim, &recs, "eight sessions");
    assert!(seen >= 56, "8 warm-ups and 48 turns checked, got {seen}");
    let hit = num(&row, "cache_hit_rate");
    let predicted = num(&row, "predicted_cache_hit_rate");
    assert!((hit - predicted).abs() < 1e-9, "{hit} vs {predicted}");
    // No cache note: the server served what a perfect cache would.
    assert!(row["session"]["cache_note"].is_null(), "{row}");
}

#[test]
fn a_cache_smaller_than_the_sessions_says_it_evicted() {
    // 8 sessions of about 1.5K tokens each want 12K cached; 3K of cache must evict.
    let sim = sim(3_072, 200_000);
    let (row, _) = run_sessions(&sim, "sessions-evict");
    let hit = num(&row, "cache_hit_rate");
    let predicted = num(&row, "predicted_cache_hit_rate");
    assert!(
        hit + 0.1 < predicted,
        "hit {hit} vs predicted {predicted}: {row}"
    );
    let why = row["status_reason"].as_str().unwrap_or_default();
    assert!(why.contains("evicted"), "{why}");
}

#[test]
fn a_server_without_prefix_caching_is_told() {
    let sim = sim(0, 200_000);
    let (row, _) = run_sessions(&sim, "sessions-off");
    assert_eq!(num(&row, "cached_tokens"), 0.0, "{row}");
    let why = row["status_reason"].as_str().unwrap_or_default();
    assert!(why.contains("prefix caching looks off"), "{why}");
}

#[test]
fn the_session_search_finds_how_many_agents_the_simulator_holds() {
    // Four requests run at once, each turn takes 16 steps of 4 ms: up to four sessions never
    // wait for a slot (TTFT a few ms), a fifth always waits for a turn to end (tens of ms).
    let mut cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    cfg.context_length = 8192;
    cfg.kv_capacity_tokens = 200_000;
    cfg.prefix_cache_tokens = 200_000;
    cfg.max_running_requests = Some(4);
    cfg.decode_step_ms = vec![(1, 4.0), (512, 4.0)];
    let sim = Sim::start(cfg);
    let rows = chat_sessions(&sim.url, "1K")
        .set("--sessions", "1")
        .set("--turns", "3")
        .set("--duration", "60s")
        .set("--slo", "ttft_p99=30ms")
        .arg("--find-capacity")
        .out("sessions-capacity")
        .ok()
        .rows();
    let cap = rows
        .iter()
        .find(|r| r["phase"] == "capacity")
        .unwrap_or_else(|| panic!("no capacity row: {rows:?}"));
    assert_eq!(cap["capacity_sessions"], 4, "{cap}");
    assert_eq!(cap["capacity"]["over"], "sessions");
    let measured: Vec<u64> = rows
        .iter()
        .filter(|r| r["phase"] == "session")
        .filter_map(|r| r["concurrency"].as_u64())
        .collect();
    assert_eq!(measured, vec![1, 2, 4, 8, 6, 5], "{rows:?}");
}

#[test]
fn llamacpp_reports_each_turns_cache_and_a_warm_turn_beats_a_cold_one() {
    let Some(paths) = crate::llamacpp::llama() else {
        return;
    };
    let _serial = exclusive();
    let server = crate::llamacpp::LlamaServer::start(paths, "sessions", 1, 4096, None);
    let row = &chat_sessions(&server.url, "3K")
        .set("--sessions", "1")
        .set("--turns", "3")
        .set("--system-prompt-len", "128")
        .set("--duration", "60s")
        .out("llamacpp-sessions")
        .ok()
        .only("session");
    assert_eq!(row["status"], "valid", "{row}");
    assert_eq!(
        row["prompt_check"]["mismatched"], 0,
        "every turn exact: {row}"
    );
    let turns = per_turn(row);
    assert_eq!(turns.len(), 4, "{row}");
    for t in &turns[1..] {
        // llama.cpp's slot keeps the prompt and the answer (`timings.cache_n`), token by token.
        // It served the whole previous prompt and the part of the answer whose text
        // re-tokenizes to the ids generated: the tiny random model's answers are random ids,
        // whose text does not round-trip (a real model's mostly does), so the cache may serve
        // up to the answer's 16 tokens less than predicted, never more.
        let (cached, predicted) = (num(t, "cached_tokens"), num(t, "predicted_cached_tokens"));
        assert!(cached <= predicted && cached >= predicted - 16.0, "{t}");
    }
    // The warm turn (a longer prompt, mostly cached) is far faster than the cold history.
    let cold = num(&turns[0], "ttft_ms_p50");
    let warm = num(&turns[3], "ttft_ms_p50");
    assert!(num(&turns[3], "prompt_tokens") > num(&turns[0], "prompt_tokens"));
    assert!(warm < 0.5 * cold, "warm {warm} ms vs cold {cold} ms");
}

#[test]
fn an_open_loop_starts_sessions_at_a_rate_and_each_runs_its_turns() {
    let sim = sim(200_000, 200_000);
    let row = &chat_sessions(&sim.url, "1K")
        .set("--session-rate", "20")
        .set("--turns", "3")
        .set("--duration", "1s")
        .out("sessions-open-loop")
        .ok()
        .only("session");
    assert_eq!(row["session_rate"], 20.0, "{row}");
    assert_eq!(row["concurrency"], 0);
    let sessions = row["session"]["sessions"].as_u64().unwrap_or(0);
    // A Poisson schedule of 20/s over 1 s: some sessions, each with its warm-up and 3 turns.
    assert!((5..=45).contains(&sessions), "{row}");
    assert_eq!(row["turns_completed"].as_u64(), Some(3 * sessions), "{row}");
    let turns = per_turn(row);
    assert_eq!(turns.len(), 4);
    assert_eq!(turns[0]["requests"].as_u64(), Some(sessions));
    for t in &turns[1..] {
        assert_eq!(
            num(t, "cached_tokens"),
            num(t, "predicted_cached_tokens"),
            "{t}"
        );
    }
}

#[test]
fn a_session_trace_replays_its_sessions_turn_by_turn() {
    let sim = sim(200_000, 200_000);
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/sessions.jsonl"
    );
    let row = &chat_sessions(&sim.url, "1K")
        .set("--workload", format!("sessions:{trace}"))
        .set("--time-scale", "4")
        .unset("--turn-input-len")
        .unset("--turn-output-len")
        .out("sessions-replay")
        .ok()
        .only("session");
    assert_eq!(row["context_label"], "sessions.jsonl", "{row}");
    assert_eq!(row["session"]["sessions"], 5, "{row}");
    assert_eq!(row["turns_completed"], 16, "{row}");
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row}");
    let turns = per_turn(row);
    // Turn 1 is each session's opening, sent cold: only its group's system prompt can be served
    // (a2 after a1, b2 after b1), which the prediction leaves out.
    assert_eq!(turns[0]["requests"], 5, "{row}");
    assert_eq!(num(&turns[0], "predicted_cached_tokens"), 0.0);
    assert!(
        num(&turns[0], "cached_tokens") > 0.0,
        "two sessions share a group's prompt: {row}"
    );
    for t in &turns[1..] {
        assert_eq!(
            num(t, "cached_tokens"),
            num(t, "predicted_cached_tokens"),
            "{t}"
        );
    }
    let replay = row["session"]["replay"].as_str().unwrap_or_default();
    assert!(
        replay.starts_with("sessions:") && replay.ends_with("at time scale 4"),
        "{replay}"
    );
}

#[test]
fn sharegpt_conversations_replay_as_sessions_arriving_at_a_rate() {
    let sim = sim(200_000, 200_000);
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/sharegpt.json"
    );
    let row = &chat_sessions(&sim.url, "1K")
        .set("--workload", format!("sharegpt:{file}"))
        .set("--session-rate", "40")
        .set("--duration", "1s")
        .set("--system-prompt-len", "64")
        .unset("--turn-input-len")
        .unset("--turn-output-len")
        .out("sessions-sharegpt")
        .ok()
        .only("session");
    assert_eq!(row["session_rate"], 40.0, "{row}");
    let sessions = row["session"]["sessions"].as_u64().unwrap_or(0);
    // Poisson at 40/s over 1 s, at most the file's 21 answered conversations.
    assert!((10..=21).contains(&sessions), "{row}");
    assert!(
        matches!(row["status"].as_str(), Some("valid" | "requests_queued")),
        "{row}"
    );
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row}");
    assert!(
        row["turns_completed"].as_u64().unwrap_or(0) >= sessions,
        "{row}"
    );
}

/// A replay's file is read before the matrix: a ShareGPT file of the wrong shape, or a session
/// trace that is not there, stops the run in one line with nothing measured.
#[test]
fn a_replay_file_that_cannot_be_read_is_refused_before_the_matrix() {
    let sim = sim(200_000, 200_000);
    let dir = out_dir("sessions-bad-replay");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"[{"conversations": 3}]"#).expect("the bad file");
    let missing = dir.join("missing.jsonl");
    for (workload, rate, want) in [
        (
            format!("sharegpt:{}", bad.display()),
            true,
            "bad.json:1: not ShareGPT JSON",
        ),
        (
            format!("sessions:{}", missing.display()),
            false,
            "missing.jsonl: cannot read the session replay",
        ),
    ] {
        let mut b = chat_sessions(&sim.url, "1K")
            .set("--workload", workload)
            .unset("--turn-input-len")
            .unset("--turn-output-len")
            .out("sessions-bad-replay-out");
        if rate {
            b = b.set("--session-rate", "4");
        }
        let ran = b.go();
        let why = ran.refusal();
        assert!(why.contains(want), "{why}");
        assert!(!ran.dir.join("cells.jsonl").exists(), "{why}");
    }
}

#[test]
fn resume_measures_the_session_cells_a_stopped_run_left() {
    let sim = sim(200_000, 200_000);
    let dir = out_dir("sessions-resume");
    let base = chat_sessions(&sim.url, "1K")
        .set("--sessions", "1,2")
        .set("--turns", "2")
        .set("--system-prompt-len", "128");
    let resume = || base.clone().set("--max-time", "10m").resume_at(&dir);
    let o = base.clone().set("--max-time", "1ms").out_at(&dir).exits(5);
    // A run that measured nothing says so and exits 5, its rows kept for --resume.
    assert!(
        o.text().contains("the run measured nothing"),
        "{}",
        o.text()
    );
    let first = cells(&dir);
    let not_run = |rows: &[Value]| {
        rows.iter()
            .filter(|r| r["phase"] == "session" && r["status"] == "not_run")
            .count()
    };
    assert_eq!(not_run(&first), 2, "{}\n{first:?}", o.text());
    let rows = resume().ok().rows();
    let measured: Vec<u64> = rows[first.len()..]
        .iter()
        .filter(|r| r["phase"] == "session" && r["status"] != "not_run")
        .filter_map(|r| r["turns_completed"].as_u64())
        .collect();
    assert_eq!(measured, vec![2, 4], "{rows:?}");
    // Resumed again, nothing is left to measure.
    assert_eq!(
        resume().ok().rows().len(),
        rows.len(),
        "no session cell measured twice"
    );
}

#[test]
fn cells_of_one_context_never_share_a_conversation() {
    // Two cells at 1K: were the second cell's sessions the first's again, a deterministic
    // server would answer them the same and its cache would serve them whole.
    let sim = sim(200_000, 200_000);
    let sessions = chat_sessions(&sim.url, "1K")
        .set("--sessions", "1,2")
        .set("--turns", "2")
        .out("sessions-two-cells")
        .ok()
        .rows_of("session");
    assert_eq!(sessions.len(), 2);
    for row in &sessions {
        let turns = per_turn(row);
        // The warm-up is served the shared system prompt at most, never a whole history.
        let warm = &turns[0];
        let per_session = num(warm, "cached_tokens") / num(warm, "requests");
        assert!(per_session < 300.0, "{warm}");
        for t in &turns[1..] {
            assert_eq!(
                num(t, "cached_tokens"),
                num(t, "predicted_cached_tokens"),
                "{t}"
            );
        }
    }
}

/// The search over session *rates* (`--session-rate R --find-capacity`) finds the simulator's
/// ceiling. Its decode step is 4 ms up to a batch of 8 and 20 ms from 9, and sessions arrive at
/// exactly 1 / R (`--arrival constant`), each three turns of 16 tokens: about R × 0.19 s run at
/// once, so the cliff is near 9 / 0.19 s ≈ 47 sessions/s. The answer is the last rate whose
/// turns decoded at 4 ms, the next one measured above it decoded at 20 ms, the capacity row is
/// keyed apart from the count search's, and every rate measured is written as a key writes it.
/// (20 ms, not 40, and a precision of 0.2: a rate above the cliff drains its backlog at that
/// step, so each failed step cost 8–15 s at 40 ms and the search about 50 s in all.)
#[test]
fn the_session_rate_search_finds_the_simulators_ceiling() {
    let _t = timing_lock();
    let mut cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    cfg.context_length = 8192;
    cfg.kv_capacity_tokens = 400_000;
    cfg.prefix_cache_tokens = 400_000;
    cfg.decode_step_ms = vec![(1, 4.0), (8, 4.0), (9, 20.0), (512, 20.0)];
    let sim = Sim::start(cfg);
    let rows = chat_sessions(&sim.url, "256")
        .set("--session-rate", "32")
        .set("--arrival", "constant")
        .set("--turns", "2")
        .set("--turn-input-len", "32")
        .set("--system-prompt-len", "64")
        .set("--duration", "2s")
        .set("--slo", "tpot_p50=10ms")
        .arg("--find-capacity")
        .set("--capacity-precision", "0.2")
        .out("sessions-rate-capacity")
        .ok()
        .rows();
    let cap = &rows
        .iter()
        .find(|r| r["phase"] == "capacity")
        .cloned()
        .unwrap_or_else(|| panic!("no capacity row: {rows:?}"));
    assert_eq!(
        cap["concurrency"], 1,
        "keyed apart from the count search: {cap}"
    );
    assert_eq!(cap["capacity"]["over"], "session_rate", "{cap}");
    assert_eq!(cap["capacity"]["outcome"], "found", "{cap}");
    let answer = num(cap, "capacity_session_rate");
    let failed_at = num(&cap["capacity"], "failed_at");
    assert!(
        (28.0..=52.0).contains(&answer),
        "near the model's 47/s: {cap}"
    );
    let tpot = |rate: f64| {
        let row = rows
            .iter()
            .find(|r| r["phase"] == "session" && r["session_rate"].as_f64() == Some(rate))
            .unwrap_or_else(|| panic!("a cell at {rate}/s: {rows:?}"));
        num(&row["tpot_ms"], "p50")
    };
    assert!(tpot(answer) < 10.0, "the answer's turns decoded at 4 ms");
    assert!(tpot(failed_at) > 15.0, "the next rate's at 20 ms");
    for r in rows.iter().filter(|r| r["phase"] == "session") {
        let rate = num(r, "session_rate");
        assert_eq!(
            rate,
            (rate * 1000.0).round() / 1000.0,
            "a written rate: {rate}"
        );
    }
}
