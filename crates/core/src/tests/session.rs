//! Known-answer tests of the session decisions: a conversation's predicted cached tokens, the
//! TTFT split, the KV need, the cache notes, and a session cell's row and status.

use super::*;
use crate::capacity_search::{Capacity, RatePoint, SearchStep};
use crate::cell::{CellKey, CellResult, CellStatus, Phase};
use crate::counting::CountReport;
use crate::meta::TokenCountSource;
use crate::plan::PlannedCell;
use crate::record::{Chunk, Outcome, RequestRecord};
use crate::slo::Slo;

#[test]
fn a_conversations_predicted_cache_is_the_previous_prompt_and_answer_in_blocks() {
    // History 8,000 tokens, warm-up answer 256: turn 1 = 8,000 + 256 + 1,030 (template and
    // message) = 9,286 tokens, of which 8,256 are shared; at vLLM's 16-token blocks 8,256
    // is whole (516 blocks), at 128-token blocks 64 full blocks = 8,192.
    let shared = turn_shared_prefix(8_000, 256);
    assert_eq!(shared, 8_256);
    assert_eq!(predicted_cached_prefix(shared, 9_286, 16), 8_256);
    assert_eq!(predicted_cached_prefix(shared, 9_286, 128), 8_192);
    // Token granularity (llama.cpp): the whole shared prefix.
    assert_eq!(predicted_cached_prefix(8_257, 9_286, 1), 8_257);
    assert_eq!(predicted_cached_prefix(8_257, 9_286, 0), 8_257);
    // A prompt sent again whole: at most prompt − 1, in whole blocks.
    assert_eq!(predicted_cached_prefix(4_096, 4_096, 1), 4_095);
    assert_eq!(predicted_cached_prefix(4_096, 4_096, 16), 4_080);
    // Nothing shared, nothing served.
    assert_eq!(predicted_cached_prefix(0, 100, 16), 0);
}

#[test]
fn ttft_splits_into_prefill_of_uncached_tokens_and_waiting() {
    // 1,030 uncached tokens at 10,300 tok/s take 100 ms; a 250 ms TTFT waited 150 ms.
    let s = ttft_split(250.0, 1_030, Some(10_300.0)).expect("a value");
    assert!((s.prefill_ms - 100.0).abs() < 1e-9);
    assert!((s.wait_ms - 150.0).abs() < 1e-9);
    // A TTFT shorter than the prediction: all of it prefill, no negative wait.
    let s = ttft_split(60.0, 1_030, Some(10_300.0)).expect("a value");
    assert_eq!((s.prefill_ms, s.wait_ms), (60.0, 0.0));
    assert!(ttft_split(60.0, 10, None).is_none());
    assert!(ttft_split(60.0, 10, Some(0.0)).is_none());
}

#[test]
fn kv_need_counts_every_sessions_history_and_first_turn() {
    // 8 sessions × (32K + 1K + 2 × 256).
    assert_eq!(
        session_kv_needed(8, 32_768, 1_024, 256),
        8 * (32_768 + 1_024 + 512)
    );
    assert_eq!(session_kv_needed(0, 32_768, 1_024, 256), 0);
}

#[test]
fn cache_notes_say_off_evicted_or_nothing() {
    // Served as predicted: nothing to say.
    assert_eq!(
        cache_note(10_000, Some(8_900), 9_000, 50_000, Some(100_000), false),
        None
    );
    // Nothing served where 90 % should have been: caching is off.
    let off = cache_note(10_000, Some(0), 9_000, 50_000, Some(100_000), false).expect("a value");
    assert!(off.starts_with("prefix caching looks off"), "{off}");
    // Far below the prediction with a working set above KV: evicted, with the figures.
    let ev =
        cache_note(10_000, Some(3_000), 9_000, 200_000, Some(100_000), false).expect("a value");
    assert!(ev.contains("evicted sessions' prefixes"), "{ev}");
    assert!(ev.contains("200000") && ev.contains("100000"), "{ev}");
    // Below, KV unknown but falling turn by turn.
    let fall = cache_note(10_000, Some(3_000), 9_000, 200_000, None, true).expect("a value");
    assert!(fall.contains("falling turn by turn"), "{fall}");
    // Not reported at all.
    let none = cache_note(10_000, None, 9_000, 1, None, false).expect("a value");
    assert!(none.contains("does not report cached tokens"), "{none}");
    // A low prediction and nothing served is not "off".
    assert_eq!(cache_note(10_000, Some(0), 500, 1, None, false), None);
}

#[test]
fn think_time_reads_fixed_and_exponential() {
    assert_eq!(
        "0".parse::<ThinkTime>().expect("a value"),
        ThinkTime::Fixed(0.0)
    );
    assert_eq!(
        "2s".parse::<ThinkTime>().expect("a value"),
        ThinkTime::Fixed(2.0)
    );
    assert_eq!(
        "exp:500ms".parse::<ThinkTime>().expect("a value"),
        ThinkTime::Exponential(0.5)
    );
    assert!("exp:0".parse::<ThinkTime>().is_err());
    assert!("soon".parse::<ThinkTime>().is_err());
    assert_eq!(ThinkTime::Exponential(0.5).to_string(), "exp:500ms");
    // The inverse CDF: the median of an exponential of mean m is m ln 2.
    let m = ThinkTime::Exponential(2.0).draw(0.5);
    assert!((m - 2.0 * std::f64::consts::LN_2).abs() < 1e-12);
    assert_eq!(ThinkTime::Fixed(1.5).draw(0.9), 1.5);
    assert!(ThinkTime::Exponential(1.0).draw(1.0).is_finite());
}

fn cell(s: u32) -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase: Phase::Session,
            context_tokens: 8_192,
            concurrency: s,
            rate_mrps: 0,
        },
        label: "8K".into(),
        over_capacity: false,
    }
}

/// A finished turn: sent at `at` ms, first token 50 ms later, `tokens` tokens 10 ms apart.
fn turn(
    session: u32,
    k: u32,
    prompt: u64,
    predicted: u64,
    cached: Option<u64>,
    at: u64,
) -> TurnRecord {
    let ms = 1_000_000u64;
    let tokens = 4u64;
    let chunks: Vec<Chunk> = (0..tokens)
        .map(|i| Chunk {
            t_ns: (at + 50 + 10 * i) * ms,
            tokens: 1,
        })
        .collect();
    TurnRecord {
        session,
        turn: k,
        prompt_tokens: prompt,
        predicted_cached_tokens: predicted,
        record: RequestRecord {
            stream: session,
            sent_ns: at * ms,
            headers_ns: None,
            end_ns: (at + 50 + 10 * (tokens - 1)) * ms,
            chunks,
            outcome: Outcome::Finished {
                reason: "length".into(),
            },
            prompt_tokens_reported: Some(prompt),
            completion_tokens_reported: Some(tokens),
            cached_tokens_reported: cached,
            repetition: None,
            structured: None,
            text: None,
        },
    }
}

/// The observation of two sessions' turns the row tests judge (also `session_percentiles`).
pub(in crate::session) fn observe(turns: &[TurnRecord]) -> SessionObservation<'_> {
    SessionObservation {
        turns,
        sessions: 2,
        max_waiting: Some(0.0),
        prefill_tok_per_s: Some(10_000.0),
        cache_block_tokens: 16,
        kv_capacity: Some(1_000_000),
        cache_flushed: Some(true),
        server_cached_tokens: None,
        slo: None,
        count: CountReport::new(),
        nominal_source: TokenCountSource::ServerUsagePerChunk,
        prompt_tolerance: 0,
        fault: None,
    }
}

/// Two sessions: a warm-up of 8,192 then two measured turns each.
fn two_sessions(cached: impl Fn(u64) -> Option<u64>) -> Vec<TurnRecord> {
    let mut v = Vec::new();
    for s in 0..2 {
        v.push(turn(s, 0, 8_192, 0, Some(0), 0));
        v.push(turn(s, 1, 9_300, 8_192, cached(8_192), 200));
        v.push(turn(s, 2, 10_400, 9_296, cached(9_296), 400));
    }
    v
}

#[test]
fn a_session_rows_columns_come_from_its_measured_turns() {
    let turns = two_sessions(Some);
    let row = session_result(&cell(2), observe(&turns));
    assert_eq!(row.status, CellStatus::Valid, "{:?}", row.status_reason);
    let c = &row.session;
    assert_eq!(c.turns_completed, Some(Some(4)));
    assert_eq!(c.prompt_tokens, Some(Some(2 * (9_300 + 10_400))));
    assert_eq!(c.cached_tokens, Some(Some(2 * (8_192 + 9_296))));
    assert_eq!(c.predicted_cached_tokens, c.cached_tokens);
    let hit = c.cache_hit_rate.flatten().expect("a value");
    assert!((hit - 17_488.0 / 19_700.0).abs() < 1e-12);
    assert_eq!(c.session_rate, Some(None));
    let per = c.per_turn.clone().flatten().expect("a value");
    assert_eq!(per.len(), 3);
    assert!(!per[0].measured && per[1].measured);
    assert_eq!(per[1].requests, 2);
    assert_eq!(per[2].cached_tokens, Some(2 * 9_296));
    assert_eq!(per[1].ttft_ms_p50, Some(50.0));
    // Turn 1: 9,300 − 8,192 = 1,108 uncached tokens at 10,000 tok/s = 110.8 ms > 50 ms TTFT.
    assert_eq!(per[1].ttft_prefill_ms_p50, Some(50.0));
    // The warm-up prefilled 8,192 cold tokens (819 ms) in its 50 ms: no wait either.
    assert_eq!(per[0].ttft_wait_ms_p50, Some(0.0));
    assert_eq!(row.completed_requests, Some(4));
    assert_eq!(row.output_tokens, Some(16));
    assert_eq!(row.ttft_ms_p50, Some(50.0));
    // Four tokens 10 ms apart: TPOT 10 ms, 100 tok/s per request.
    assert_eq!(c.tpot_ms.clone().flatten().map(|s| s.p50), Some(10.0));
    assert_eq!(row.per_request_tok_per_s, Some(100.0));
    assert_eq!(
        c.session.as_ref().expect("a value").working_set_tokens,
        2 * (10_400 + 4)
    );
}

#[test]
fn a_server_that_caches_nothing_says_caching_looks_off() {
    let turns = two_sessions(|_| Some(0));
    let row = session_result(&cell(2), observe(&turns));
    assert_eq!(row.session.cache_hit_rate, Some(Some(0.0)));
    let why = row.status_reason.unwrap_or_default();
    assert!(why.contains("prefix caching looks off"), "{why}");
}

#[test]
fn an_evicting_server_says_so_with_its_working_set() {
    let turns = two_sessions(|p| Some(p / 4));
    let mut o = observe(&turns);
    o.kv_capacity = Some(10_000);
    let row = session_result(&cell(2), o);
    let why = row.status_reason.unwrap_or_default();
    assert!(why.contains("evicted sessions' prefixes"), "{why}");
    assert_eq!(row.status, CellStatus::Valid);
}

#[test]
fn session_status_follows_the_decode_rules() {
    let turns = two_sessions(Some);
    let mut o = observe(&turns);
    o.max_waiting = Some(3.0);
    let row = session_result(&cell(2), o);
    assert_eq!(row.status, CellStatus::RequestsQueued);
    // A turn whose prompt the server counted differently fails the cell.
    let mut bad = two_sessions(Some);
    bad[1].record.prompt_tokens_reported = Some(9_301);
    let row = session_result(&cell(2), observe(&bad));
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.errors.get("prompt_mismatch"), Some(&1));
    // No measured turn finished.
    let mut none = two_sessions(Some);
    for t in none.iter_mut().filter(|t| t.turn > 0) {
        t.record.outcome = Outcome::Error {
            kind: "http_500".into(),
            message: "boom".into(),
        };
    }
    let row = session_result(&cell(2), observe(&none));
    assert_eq!(row.status, CellStatus::Failed);
    assert_eq!(row.first_error.as_deref(), Some("boom"));
}

#[test]
fn session_rows_round_trip_and_other_rows_carry_no_session_columns() {
    let turns = two_sessions(Some);
    let row = session_result(&cell(2), observe(&turns));
    let text = serde_json::to_string(&row).expect("a value");
    let v: serde_json::Value = serde_json::from_str(&text).expect("a value");
    assert_eq!(v["phase"], "session");
    assert!(v["per_turn"].is_array() && v["cache_hit_rate"].is_number());
    let back: CellResult = serde_json::from_str(&text).expect("a value");
    assert_eq!(back, row);
    // A bare session row writes its columns as null.
    let bare = crate::verdict::bare_result(&cell(2), CellStatus::NotRun, None);
    let v = serde_json::to_value(&bare).expect("a value");
    assert!(
        v.get("cached_tokens")
            .is_some_and(serde_json::Value::is_null)
    );
    let back: CellResult = serde_json::from_value(v).expect("a value");
    assert_eq!(back, bare);
    // A decode row has none of them.
    let mut c = cell(2);
    c.key.phase = Phase::Decode;
    let d = crate::verdict::bare_result(&c, CellStatus::NotRun, None);
    let v = serde_json::to_value(&d).expect("a value");
    assert!(v.get("cached_tokens").is_none() && v.get("per_turn").is_none());
    assert_eq!(serde_json::from_value::<CellResult>(v).expect("a value"), d);
}

/// Runs the session search against a server whose cells hold iff `holds(S)`.
fn search_sessions(holds: impl Fn(u32) -> bool, start: u32, ceiling: u32) -> (Capacity, Vec<u32>) {
    let mut points = Vec::new();
    for _ in 0..64 {
        match next_session_step(&points, start, ceiling, 0.05) {
            SearchStep::Measure(s) => {
                assert_eq!(s.fract(), 0.0, "a whole number of sessions: {s}");
                points.push(RatePoint {
                    rate: s,
                    holds: holds(s as u32),
                });
            }
            SearchStep::Done(c) => return (c, points.iter().map(|p| p.rate as u32).collect()),
        }
    }
    panic!("the search did not end: {points:?}");
}

#[test]
fn the_session_search_finds_the_largest_count_that_holds() {
    // A server that holds 4 agents: 1, 2, 4, 8 (fails), 6 (fails), 5 (fails) → 4.
    let (c, measured) = search_sessions(|s| s <= 4, 1, 4096);
    assert_eq!(
        c,
        Capacity::Found {
            rate: 4.0,
            failed_at: 5.0
        }
    );
    assert_eq!(measured, vec![1, 2, 4, 8, 6, 5]);
    // 37 agents from a start of 8: to the neighbour of the first failure.
    let (c, _) = search_sessions(|s| s <= 37, 8, 4096);
    assert_eq!(
        c,
        Capacity::Found {
            rate: 37.0,
            failed_at: 38.0
        }
    );
    // Everything holds up to the ceiling; nothing holds even one session.
    assert_eq!(
        search_sessions(|_| true, 1, 16).0,
        Capacity::AtLeast { rate: 16.0 }
    );
    assert_eq!(search_sessions(|_| false, 8, 4096).0, Capacity::None);
    // Never an answer above a count that failed, even on a noisy server.
    let (c, _) = search_sessions(|s| s <= 3 || s == 6, 1, 4096);
    let Capacity::Found { rate, failed_at } = c else {
        panic!("{c:?}")
    };
    assert!(rate < failed_at && rate <= 3.0, "{c:?}");
}

#[test]
fn a_session_capacity_row_names_the_count_and_keeps_every_point() {
    let turns = two_sessions(Some);
    let slo: Slo = "ttft_p99=1s".parse().expect("an SLO");
    let mut o = observe(&turns);
    o.slo = Some(&slo);
    let held = session_result(&cell(2), o);
    assert_eq!(held.slo.as_ref().map(|s| s.holds), Some(true));
    let mut failed = held.clone();
    failed.concurrency = 4;
    if let Some(s) = failed.slo.as_mut() {
        s.holds = false;
    }
    let mut cap = cell(0);
    cap.key.phase = Phase::Capacity;
    let answer = Capacity::Found {
        rate: 2.0,
        failed_at: 4.0,
    };
    let row = session_capacity_result(&cap, &slo, 0.05, answer, &[held, failed]);
    assert_eq!(row.session.capacity_sessions, Some(Some(2)));
    let f = row.capacity.expect("capacity figures");
    assert_eq!(f.over.as_deref(), Some("sessions"));
    let pts: Vec<(f64, bool)> = f.points.iter().map(|p| (p.rate, p.holds)).collect();
    assert_eq!(pts, vec![(2.0, true), (4.0, false)]);
    let none = session_capacity_result(&cap, &slo, 0.05, Capacity::None, &[]);
    assert_eq!(none.session.capacity_sessions, Some(None));
    assert_eq!(
        none.status_reason.as_deref(),
        Some("no number of sessions meets the SLO")
    );
}

#[test]
fn a_session_trace_reads_sessions_turn_by_turn_with_their_groups_and_delays() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/sessions.jsonl"
    ))
    .expect("the sample trace");
    let r = parse_session_trace("sessions.jsonl", &text).expect("a trace");
    let ids: Vec<&str> = r.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["a1", "b1", "a2", "c1", "b2"], "by start");
    assert_eq!(r.turns(), 16);
    assert_eq!(r.sessions[0].group.as_deref(), Some("coder"));
    assert_eq!(r.sessions[3].group, None);
    assert_eq!(r.sessions[0].turns[0].input, TurnInput::Tokens(1200));
    assert_eq!(r.sessions[0].turns[1].output_tokens, 24);
    assert_eq!(r.starts_s(2.0), vec![0.0, 0.025, 0.05, 0.1, 0.15]);
    // A think time is the later turn's delay.
    assert_eq!(r.sessions[0].turns[2].delay_s, 0.02);
}

#[test]
fn a_bad_session_trace_names_the_line() {
    let skip = "{\"session\":\"s\",\"turn\":1,\"input_tokens\":10,\"output_tokens\":2}\n{\"session\":\"s\",\"turn\":3,\"input_tokens\":10,\"output_tokens\":2}\n";
    let e = parse_session_trace("t.jsonl", skip)
        .expect_err("a gap")
        .to_string();
    assert!(
        e.starts_with("t.jsonl:2: session s: turn 3 follows turn 1"),
        "{e}"
    );
    let late = "{\"session\":\"s\",\"turn\":2,\"input_tokens\":10,\"output_tokens\":2}\n";
    let e = parse_session_trace("t.jsonl", late)
        .expect_err("no turn 1")
        .to_string();
    assert!(e.contains("t.jsonl:1: session s starts at turn 2"), "{e}");
    let zero = "{\"session\":1,\"turn\":1,\"input_tokens\":0,\"output_tokens\":2}\n";
    assert!(parse_session_trace("t.jsonl", zero).is_err());
    let junk = "\n{\"session\":1}\n";
    let e = parse_session_trace("t.jsonl", junk)
        .expect_err("junk")
        .to_string();
    assert!(e.starts_with("t.jsonl:2: not a session trace row"), "{e}");
    assert!(parse_session_trace("t.jsonl", "\n").is_err(), "empty");
}

#[test]
fn multi_turn_sharegpt_sends_every_human_turn_asking_the_recorded_replys_length() {
    let text = r#"[
      {"conversations": [{"from": "human", "value": "one two three"}, {"from": "gpt", "value": "a b"},
                         {"from": "human", "value": "four"}, {"from": "gpt", "value": "c d e f"}]},
      {"conversations": [{"from": "gpt", "value": "speaks first"}]},
      {"conversations": [{"from": "user", "value": "hi"}, {"from": "assistant", "value": "x"}]}
    ]"#;
    let words = |t: &str| t.split_whitespace().count() as u64;
    let r = parse_sharegpt_sessions("s.json", text, &words).expect("sessions");
    assert_eq!(r.sessions.len(), 2);
    assert_eq!(r.skipped, 1);
    let t = &r.sessions[0].turns;
    assert_eq!(t.len(), 2);
    assert_eq!(t[0].input, TurnInput::Text("one two three".into()));
    assert_eq!((t[0].output_tokens, t[1].output_tokens), (2, 4));
    assert_eq!(t[1].input, TurnInput::Text("four".into()));
}

/// The rate search against a server that holds sessions arriving up to `limit` per second.
fn search_rates(limit: f64, start: f64) -> (Capacity, Vec<f64>) {
    let bounds = session_rate_bounds(start, 0.05);
    let mut points: Vec<RatePoint> = Vec::new();
    for _ in 0..64 {
        match next_session_rate_step(&points, bounds) {
            SearchStep::Measure(r) => {
                assert_eq!(
                    r,
                    crate::load::round_rate(r),
                    "written as a key writes it: {r}"
                );
                points.push(RatePoint {
                    rate: r,
                    holds: r <= limit,
                });
            }
            SearchStep::Done(c) => return (c, points.iter().map(|p| p.rate).collect()),
        }
    }
    panic!("the search did not end: {points:?}");
}

#[test]
fn the_session_rate_search_brackets_and_bisects_in_written_rates() {
    // Holds up to 0.7 sessions/s from a start of 0.5: 0.5, 1 (fails), then bisect.
    let (c, measured) = search_rates(0.7, 0.5);
    let Capacity::Found { rate, failed_at } = c else {
        panic!("{c:?}")
    };
    assert!(rate <= 0.7 && failed_at > 0.7, "{c:?}");
    assert!((failed_at - rate) / rate <= 0.05, "{c:?}: {measured:?}");
    assert_eq!(measured[..2], [0.5, 1.0]);
    // Every rate up to the ceiling holds; none holds, down to the floor.
    assert_eq!(search_rates(1e9, 10.0).0, Capacity::AtLeast { rate: 640.0 });
    assert_eq!(search_rates(0.0, 1.0).0, Capacity::None);
    // Rates as narrow as keys write them end the search with the points' own answer.
    let bounds = session_rate_bounds(0.001, 0.0);
    let pts = [
        RatePoint {
            rate: 0.001,
            holds: true,
        },
        RatePoint {
            rate: 0.002,
            holds: false,
        },
    ];
    assert_eq!(
        next_session_rate_step(&pts, bounds),
        SearchStep::Done(Capacity::Found {
            rate: 0.001,
            failed_at: 0.002
        })
    );
}

#[test]
fn a_session_rate_capacity_row_is_keyed_apart_and_names_the_rate() {
    let slo: Slo = "ttft_p99=1s".parse().expect("an SLO");
    let cell = session_rate_capacity_cell(1024, "1K");
    assert_eq!(cell.key.concurrency, SESSION_RATE_CAPACITY);
    assert_ne!(cell.key, crate::load::capacity_cell(1024, "1K").key);
    let answer = Capacity::Found {
        rate: 0.5,
        failed_at: 0.75,
    };
    let row = session_rate_capacity_result(&cell, &slo, 0.05, answer, &[]);
    assert_eq!(row.key(), cell.key, "the row's key is the cell's (resume)");
    assert_eq!(row.session.capacity_session_rate, Some(Some(0.5)));
    assert_eq!(row.session.capacity_sessions, None);
    let f = row.capacity.expect("capacity figures");
    assert_eq!(f.over.as_deref(), Some("session_rate"));
    assert_eq!(f.failed_at, Some(0.75));
    let none = session_rate_capacity_result(&cell, &slo, 0.05, Capacity::None, &[]);
    assert_eq!(none.session.capacity_session_rate, Some(None));
}
