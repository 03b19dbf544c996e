//! Known answers for session cells on shards: which sessions each shard runs (closed loop and
//! an open loop's arrivals), the limits and slot of a session cell, and the join of a shard's
//! turns with its records.

use super::*;
use crate::record::Outcome;
use crate::timetable::slot_parts;

fn spec(index: u32, count: u32) -> Option<ShardSpec> {
    ShardSpec::new(index, count)
}

#[test]
fn session_j_runs_on_shard_j_mod_n_at_its_global_start() {
    // An open loop's five arrivals (ns from the origin), split over two shards.
    let starts = [0, 5, 9, 12, 30];
    assert_eq!(
        my_sessions(spec(0, 2), &starts),
        vec![(0, 0), (2, 9), (4, 30)]
    );
    assert_eq!(my_sessions(spec(1, 2), &starts), vec![(1, 5), (3, 12)]);
    assert_eq!(my_sessions(spec(0, 3), &starts), vec![(0, 0), (3, 12)]);
    assert_eq!(my_sessions(spec(2, 3), &starts), vec![(2, 9)]);
    // One process runs them all.
    assert_eq!(
        my_sessions(None, &starts),
        vec![(0, 0), (1, 5), (2, 9), (3, 12), (4, 30)]
    );
    // A closed loop of S = 3 (every session at the origin) on four shards: shard 3 has none.
    let closed = [0; 3];
    assert_eq!(my_sessions(spec(3, 4), &closed), vec![]);
    assert_eq!(my_sessions(spec(1, 4), &closed), vec![(1, 0)]);
}

#[test]
fn the_shards_run_every_session_once() {
    let starts: Vec<u64> = (0..37).map(|i| i * 1_000).collect();
    for n in 1..=5 {
        let mut all: Vec<(u32, u64)> = (0..n)
            .flat_map(|i| my_sessions(spec(i, n), &starts))
            .collect();
        all.sort_unstable();
        assert_eq!(all, my_sessions(None, &starts), "{n} shards");
    }
}

#[test]
fn a_session_cell_waits_as_long_as_one_machine() {
    // A closed loop: no turn starts after the window; one in flight runs max(30 s, window).
    assert_eq!(session_limits(SessionLoop::Closed, 2.0, 0.0), (2.0, 30.0));
    assert_eq!(session_limits(SessionLoop::Closed, 60.0, 0.0), (60.0, 60.0));
    // An open loop: arrivals over the window, then max(2 min, window).
    assert_eq!(session_limits(SessionLoop::Open, 2.0, 0.0), (2.0, 120.0));
    assert_eq!(
        session_limits(SessionLoop::Open, 300.0, 9.0),
        (300.0, 300.0)
    );
    // A replay: to its last start, then four times max(2 min, window).
    assert_eq!(session_limits(SessionLoop::Replay, 2.0, 3.5), (3.5, 480.0));
    // A hostile number never panics nor goes negative.
    assert_eq!(
        session_limits(SessionLoop::Replay, f64::NAN, -1.0),
        (0.0, 480.0)
    );
}

#[test]
fn a_closed_loop_slot_ramps_by_warming_every_history() {
    // 4 sessions × a 512-token history, a 2 s window.
    let kind = session_slot_kind(SessionLoop::Closed, 4 * 512, 2.0, 0.0);
    assert_eq!(
        kind,
        SlotKind::Session {
            build_tokens: 2048,
            warm_tokens: 2048,
            span_s: 2.0,
            drain_s: 30.0,
        }
    );
    let p = slot_parts(kind, 10_000.0);
    // Building 2,048 tokens takes 8 ms at 250K tok/s: the 2 s grace is the preparation.
    assert_eq!(p.prep_ns, 2_000_000_000);
    // The ramp: the 1 s floor and the 2,048 history tokens at 10,000 tok/s.
    assert_eq!(p.ramp_ns, 1_204_800_000);
    assert_eq!((p.body_ns, p.drain_ns), (2_000_000_000, 30_000_000_000));
}

#[test]
fn an_open_loop_slot_has_no_ramp() {
    // 10 arrivals × 512 tokens over a 4 s window: each session warms its own history.
    let kind = session_slot_kind(SessionLoop::Open, 5_120, 4.0, 0.0);
    let p = slot_parts(kind, 10_000.0);
    assert_eq!(p.ramp_ns, 0);
    assert_eq!((p.body_ns, p.drain_ns), (4_000_000_000, 120_000_000_000));
    let replay = session_slot_kind(SessionLoop::Replay, 900, 2.0, 1.5);
    let p = slot_parts(replay, 10_000.0);
    assert_eq!((p.ramp_ns, p.body_ns), (0, 1_500_000_000));
}

fn rec(session: u32, sent_ns: u64) -> RequestRecord {
    RequestRecord {
        stream: session,
        sent_ns,
        headers_ns: None,
        chunks: Vec::new(),
        end_ns: sent_ns + 10,
        outcome: Outcome::Finished {
            reason: "length".into(),
        },
        prompt_tokens_reported: None,
        completion_tokens_reported: None,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

fn meta(session: u32, turn: u32, sent_ns: u64) -> TurnMeta {
    TurnMeta {
        session,
        turn,
        prompt_tokens: 100 + u64::from(turn),
        predicted_cached_tokens: u64::from(turn) * 10,
        sent_ns,
    }
}

#[test]
fn a_shards_turns_join_their_records_by_session_and_send() {
    // Sessions 1 and 3; the records in another order than the turns, two sent at one instant.
    let metas = [meta(1, 0, 5), meta(3, 0, 5), meta(1, 1, 40), meta(3, 1, 44)];
    let records = [rec(3, 44), rec(1, 5), rec(1, 40), rec(3, 5)];
    let turns = join_turns(&metas, &records).expect("one set");
    let got: Vec<(u32, u32, u64, u64, u64)> = turns
        .iter()
        .map(|t| {
            let (s, k, p, c) = (
                t.session,
                t.turn,
                t.prompt_tokens,
                t.predicted_cached_tokens,
            );
            (s, k, p, c, t.record.sent_ns)
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (1, 0, 100, 0, 5),
            (3, 0, 100, 0, 5),
            (1, 1, 101, 10, 40),
            (3, 1, 101, 10, 44)
        ]
    );
    assert!(turns.iter().all(|t| t.record.stream == t.session));
}

#[test]
fn a_turn_without_its_record_or_a_record_without_its_turn_is_refused() {
    let metas = [meta(1, 0, 5), meta(1, 1, 40)];
    assert_eq!(
        join_turns(&metas, &[rec(1, 5)]),
        Err(TurnJoinError::NoRecord {
            session: 1,
            turn: 1
        })
    );
    assert_eq!(
        join_turns(&metas, &[rec(1, 5), rec(1, 40), rec(3, 7)]),
        Err(TurnJoinError::Unlisted {
            session: 3,
            sent_ns: 7
        })
    );
    // One record cannot be two turns.
    let twice = [meta(1, 0, 5), meta(1, 1, 5)];
    assert!(join_turns(&twice, &[rec(1, 5)]).is_err());
}
