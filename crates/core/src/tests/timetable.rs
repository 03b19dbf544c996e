//! Known answers for the shards' timetable: each kind of slot's parts, the slots in order, a
//! matrix cell's work from the plan, and the two runs of issue 34 (docs/distributed.md, "Where
//! a sharded run's time goes").

use super::*;
use crate::cell::{CellKey, Phase};

const S: u64 = 1_000_000_000;
const MS: u64 = 1_000_000;

fn settings(prep_s: f64, prefill_tok_per_s: f64) -> TimetableSettings {
    TimetableSettings {
        start_at: "2026-12-04T22:00:00Z".into(),
        start_unix_ns: 1_000 * S,
        prep_s,
        prefill_tok_per_s,
        cached_prompt_block_tokens: None,
    }
}

fn table(prep_s: f64, prefill_tok_per_s: f64) -> Timetable {
    Timetable::new(&settings(prep_s, prefill_tok_per_s))
}

fn key(phase: Phase, context_tokens: u64, concurrency: u32) -> CellKey {
    CellKey {
        phase,
        context_tokens,
        concurrency,
        rate_mrps: 0,
    }
}

fn decode(warm_tokens: u64, stream_tokens: u64) -> SlotKind {
    SlotKind::Decode {
        warm_tokens,
        stream_tokens,
        readiness_limit_s: 20.0,
        window_s: 30.0,
    }
}

#[test]
fn a_rate_slot_has_no_ramp_and_the_single_machine_drain_limit() {
    // One 3 s cell at 10/s at 1K: 30 prompts built at the tokenizer's rate (0.12 s) and the
    // fixed part are less than the grace, which the preparation is at least.
    let p = slot_parts(
        SlotKind::Rate {
            build_tokens: 30 * 1024,
            span_s: 2.9,
            drain_s: 120.0,
        },
        10_000.0,
    );
    assert_eq!(
        p,
        SlotParts {
            prep_ns: SLOT_GRACE_NS,
            ramp_ns: 0,
            body_ns: 2_900 * MS,
            drain_ns: 120 * S,
        }
    );
    // 1,200 prompts of 32K (40/s for 30 s): 39.3M tokens through the tokenizer.
    let big = slot_parts(
        SlotKind::Rate {
            build_tokens: 1_200 * 32_768,
            span_s: 30.0,
            drain_s: 60.0,
        },
        10_000.0,
    );
    assert_eq!(big.prep_ns, 500 * MS + 157_286_400 * 1_000);
}

#[test]
fn a_decode_slot_prepares_its_new_streams_and_ramps_at_most_the_readiness_limit() {
    // N = 64 at 4K after N = 16: 48 new prompts built (0.786 s) and warmed at 100K tok/s
    // (1.966 s); the ramp is the prefill of all 64 (2.621 s) and the floor.
    let p = slot_parts(decode(48 * 4096, 64 * 4096), 100_000.0);
    assert_eq!(p.prep_ns, 500 * MS + 786_432_000 + 1_966_080_000);
    assert_eq!(p.ramp_ns, RAMP_FLOOR_NS + 2_621_440_000);
    assert_eq!((p.body_ns, p.drain_ns), (30 * S, 0));
    // N = 1 after the prefill cell: nothing worth the grace to prepare, a ramp of the floor.
    let small = slot_parts(decode(1024, 1024), 100_000.0);
    assert_eq!(small.prep_ns, SLOT_GRACE_NS);
    assert_eq!(small.ramp_ns, RAMP_FLOOR_NS + 10_240_000);
    // N = 256 at 32K at the default rate: the prefill of 8M tokens would take 839 s; the
    // single machine's readiness limit caps the ramp.
    let big = slot_parts(decode(0, 256 * 32_768), DEFAULT_SHARD_PREFILL_TOK_PER_S);
    assert_eq!(big.ramp_ns, 20 * S);
}

#[test]
fn a_prefill_slot_builds_then_measures_its_cold_prefills() {
    let p = slot_parts(
        SlotKind::Prefill {
            build_tokens: 3 * 8192,
            cold_tokens: 3 * 8192,
        },
        8_192.0,
    );
    assert_eq!(
        p,
        SlotParts {
            prep_ns: SLOT_GRACE_NS,
            ramp_ns: 0,
            body_ns: PREFILL_FLOOR_NS + 3 * S,
            drain_ns: 0,
        }
    );
}

#[test]
fn slots_follow_each_other_and_only_the_first_waits_for_the_agreed_preparation() {
    let mut t = table(10.0, 100_000.0);
    let p = t.slot(SlotKind::Prefill {
        build_tokens: 1024,
        cold_tokens: 1024,
    });
    assert_eq!(
        p,
        Slot {
            start_unix_ns: 1_000 * S,
            origin_unix_ns: 1_010 * S,
            open_unix_ns: 1_010 * S,
            close_unix_ns: 1_011 * S + 10_240_000,
            end_unix_ns: 1_011 * S + 10_240_000,
        }
    );
    let d = t.slot(decode(1024, 1024));
    assert_eq!(d.start_unix_ns, p.end_unix_ns);
    assert_eq!(d.origin_unix_ns, d.start_unix_ns + SLOT_GRACE_NS);
    assert_eq!(
        d.open_unix_ns,
        d.origin_unix_ns + RAMP_FLOOR_NS + 10_240_000
    );
    assert_eq!(d.close_unix_ns, d.open_unix_ns + 30 * S);
    assert_eq!(d.end_unix_ns, d.close_unix_ns);
    let r = t.slot(SlotKind::Rate {
        build_tokens: 0,
        span_s: 12.5,
        drain_s: 5.0,
    });
    assert_eq!(r.start_unix_ns, d.end_unix_ns);
    assert_eq!(r.origin_unix_ns, r.start_unix_ns + SLOT_GRACE_NS);
    assert_eq!(r.open_unix_ns, r.origin_unix_ns);
    assert_eq!(r.close_unix_ns, r.origin_unix_ns + 12_500 * MS);
    assert_eq!(r.end_unix_ns, r.close_unix_ns + 5 * S);
    assert_eq!(t.prefill_tok_per_s(), 100_000.0);
}

#[test]
fn a_first_cell_that_needs_more_than_the_agreed_preparation_gets_it() {
    let mut t = table(1.0, 10_000.0);
    let s = t.slot(decode(64 * 8192, 64 * 8192));
    // 524,288 tokens built (2.097 s) and warmed (52.4288 s), and the fixed part.
    assert_eq!(
        s.origin_unix_ns - s.start_unix_ns,
        500 * MS + 2_097_152_000 + 52_428_800_000
    );
}

#[test]
fn two_shards_asking_in_the_same_order_get_the_same_slots() {
    let kinds = [
        SlotKind::Prefill {
            build_tokens: 512,
            cold_tokens: 512,
        },
        decode(4 * 512, 4 * 512),
        SlotKind::Rate {
            build_tokens: 40 * 512,
            span_s: 2.0,
            drain_s: 1.0,
        },
    ];
    let (mut a, mut b) = (table(7.0, 20_000.0), table(7.0, 20_000.0));
    for k in kinds {
        assert_eq!(a.slot(k), b.slot(k));
    }
}

#[test]
fn a_decode_cell_warms_only_the_streams_no_earlier_measured_cell_ran() {
    let cells = [
        key(Phase::Prefill, 4096, 1),
        key(Phase::Decode, 4096, 1),
        key(Phase::Decode, 4096, 16),
        // Predicted over capacity: no slot, nothing warmed.
        key(Phase::Decode, 4096, 64),
        key(Phase::Decode, 4096, 256),
        key(Phase::Prefill, 8192, 1),
        key(Phase::Decode, 8192, 4),
    ];
    let measured = |i: usize| i != 3;
    let s = MatrixSlotSettings {
        prefill_repeats: 3,
        readiness_limit_s: 20.0,
        window_s: 30.0,
        cached_prompt_block_tokens: None,
    };
    let kind = |i| matrix_slot_kind(&cells, i, &measured, s);
    assert_eq!(
        kind(0),
        SlotKind::Prefill {
            build_tokens: 3 * 4096,
            cold_tokens: 3 * 4096,
        }
    );
    assert_eq!(kind(1), decode(4096, 4096));
    assert_eq!(kind(2), decode(15 * 4096, 16 * 4096));
    assert_eq!(kind(4), decode(240 * 4096, 256 * 4096));
    // Another context starts from no stream.
    assert_eq!(kind(6), decode(4 * 8192, 4 * 8192));
    // A server that keeps the warmed prompts in 16-token blocks: each stream's ramp prefills
    // one block at most; the warm-up is the same; a prompt shorter than a block is whole.
    let cached = MatrixSlotSettings {
        cached_prompt_block_tokens: Some(16),
        ..s
    };
    let kind = |i| matrix_slot_kind(&cells, i, &measured, cached);
    assert_eq!(kind(2), decode(15 * 4096, 16 * 16));
    assert_eq!(kind(6), decode(4 * 8192, 4 * 16));
    let short = [key(Phase::Decode, 10, 8)];
    assert_eq!(
        matrix_slot_kind(&short, 0, &|_| true, cached),
        decode(80, 80)
    );
    // A block of 0 (a misread config) counts as token-granular, never as a free ramp.
    let zero = MatrixSlotSettings {
        cached_prompt_block_tokens: Some(0),
        ..s
    };
    assert_eq!(
        matrix_slot_kind(&cells, 2, &measured, zero),
        decode(15 * 4096, 16)
    );
    assert_eq!(
        kind(99),
        SlotKind::Prefill {
            build_tokens: 0,
            cold_tokens: 0,
        }
    );
}

/// The timetable of a plan: a prefill slot at each context, then its decode cells in
/// ascending N, as the matrix asks for them, on a server that caches prompts in blocks of
/// `block` tokens (or not).
fn run_length(t: &mut Timetable, contexts: &[u64], ns: &[u32], block: Option<u64>) -> u64 {
    let mut keys = Vec::new();
    for &c in contexts {
        keys.push(key(Phase::Prefill, c, 1));
        keys.extend(ns.iter().map(|&n| key(Phase::Decode, c, n)));
    }
    let s = MatrixSlotSettings {
        prefill_repeats: 1,
        readiness_limit_s: 20.0,
        window_s: 30.0,
        cached_prompt_block_tokens: block,
    };
    let mut end = 0;
    for i in 0..keys.len() {
        end = t.slot(matrix_slot_kind(&keys, i, &|_| true, s)).end_unix_ns;
    }
    end - 1_000 * S
}

#[test]
fn issue_34_one_rate_cell_starts_ten_seconds_after_the_start_instant() {
    // Two shards, one 3 s cell at 10/s, the default settings: the schedule starts at the
    // agreed first preparation (it was 60 s), so its last request is due 13 s after the
    // start; each shard then ends when its own requests have (the last slot's drain limit
    // waits for nothing else).
    let mut t = table(DEFAULT_PREP_S, DEFAULT_SHARD_PREFILL_TOK_PER_S);
    let s = t.slot(SlotKind::Rate {
        build_tokens: 30 * 1024,
        span_s: 2.95,
        drain_s: 120.0,
    });
    assert_eq!(s.origin_unix_ns - s.start_unix_ns, 10 * S);
    assert_eq!(s.close_unix_ns - s.start_unix_ns, 12_950 * MS);
    // With the 1K prefill cell before it: 10 s, the prefill's 1.1 s, the grace.
    let mut t = table(DEFAULT_PREP_S, DEFAULT_SHARD_PREFILL_TOK_PER_S);
    t.slot(SlotKind::Prefill {
        build_tokens: 1024,
        cold_tokens: 1024,
    });
    let s = t.slot(SlotKind::Rate {
        build_tokens: 30 * 1024,
        span_s: 2.95,
        drain_s: 120.0,
    });
    assert_eq!(s.origin_unix_ns - 1_000 * S, 13_102_400_000);
}

#[test]
fn issue_34_the_realistic_matrix_is_all_window_but_a_sixth() {
    // 3 contexts × 4 concurrencies, 30 s windows, the server's prefill rate given: 360 s of
    // windows in 420.4 s of timetable (it was 1,536 s: 60 s of preparation, the whole 20 s
    // readiness limit and 3 s of grace in every slot).
    let mut t = table(DEFAULT_PREP_S, 100_000.0);
    let total = run_length(&mut t, &[1024, 2048, 4096], &[1, 4, 16, 64], None);
    assert_eq!(total, 420_416_992_000);
}

#[test]
fn issue_34_cached_prompts_ramp_in_a_second_at_the_default_rate() {
    // The same matrix at the default rate: each ramp is the prefill of its N whole prompts
    // (503.4 s in all; the 4K × 64 ramp alone 27.2 s, cut to the 20 s readiness limit), or,
    // on a server that keeps the warmed prompts in 16-token blocks (vLLM's default), the
    // floor and N blocks (450.1 s: the 4K × 64 ramp 1.1 s).
    let mut t = table(DEFAULT_PREP_S, DEFAULT_SHARD_PREFILL_TOK_PER_S);
    let whole = run_length(&mut t, &[1024, 2048, 4096], &[1, 4, 16, 64], None);
    assert_eq!(whole, 503_380_768_000);
    let mut t = table(DEFAULT_PREP_S, DEFAULT_SHARD_PREFILL_TOK_PER_S);
    let cached = run_length(&mut t, &[1024, 2048, 4096], &[1, 4, 16, 64], Some(16));
    assert_eq!(cached, 450_075_168_000);
}

#[test]
fn bad_lengths_never_panic() {
    let mut t = table(f64::NAN, f64::NAN);
    let s = t.slot(SlotKind::Decode {
        warm_tokens: 0,
        stream_tokens: u64::MAX,
        readiness_limit_s: -1.0,
        window_s: f64::INFINITY,
    });
    assert_eq!(s.origin_unix_ns, 1_000 * S + SLOT_GRACE_NS);
    assert_eq!(s.open_unix_ns, s.origin_unix_ns);
    let mut far = Timetable::new(&TimetableSettings {
        start_at: String::new(),
        start_unix_ns: u64::MAX - 5,
        prep_s: 1e30,
        prefill_tok_per_s: 0.0,
        cached_prompt_block_tokens: Some(u64::MAX),
    });
    let s = far.slot(SlotKind::Rate {
        build_tokens: u64::MAX,
        span_s: 1e30,
        drain_s: 1e30,
    });
    assert_eq!(s.end_unix_ns, u64::MAX);
}

#[test]
fn a_record_reads_its_preparation_and_an_old_settings_file_gets_the_default_rate() {
    let mut t = table(10.0, 50_000.0);
    let kind = decode(1024, 1024);
    let slot = t.slot(kind);
    let r = SlotRecord {
        slot,
        sized_from: kind,
        prefill_tok_per_s: 50_000.0,
        ready_ns: Some(2 * S),
    };
    assert_eq!(r.prep_ns(), 10 * S);
    let json = serde_json::to_string(&r).expect("serializes");
    assert!(json.contains(r#""cell":"decode""#), "{json}");
    assert_eq!(serde_json::from_str::<SlotRecord>(&json).expect("reads"), r);
    let old = r#"{"start_at":"2026-12-04T22:00:00Z","start_unix_ns":1,"prep_s":60.0}"#;
    let s: TimetableSettings = serde_json::from_str(old).expect("reads");
    assert_eq!(s.prefill_tok_per_s, DEFAULT_SHARD_PREFILL_TOK_PER_S);
    // Nor does it cache prompts, and a plan that does not stays as it was (same plan hash).
    assert_eq!(s.cached_prompt_block_tokens, None);
    let json = serde_json::to_string(&s).expect("serializes");
    assert!(!json.contains("cached_prompt_block_tokens"), "{json}");
}

#[test]
fn chrony_tracking_reads_the_clock_error() {
    let line = "A9FEA97B,169.254.169.123,4,1796139902.123456789,-0.000250000,0.000001,0.000020,-12.3,0.001,0.012,0.002000000,0.000500000,64.2,Normal\n";
    let c = parse_chrony_tracking(line).expect("parsed");
    assert!(c.synchronized);
    assert!((c.est_error_ms - 0.25).abs() < 1e-9);
    assert!((c.max_error_ms - (0.25 + 1.0 + 0.5)).abs() < 1e-9);
    let unsynced = line.replace("Normal", "Not synchronised");
    assert!(
        !parse_chrony_tracking(&unsynced)
            .expect("parsed")
            .synchronized
    );
    assert_eq!(parse_chrony_tracking(""), None);
    assert_eq!(parse_chrony_tracking("506 Cannot talk to daemon"), None);
    assert_eq!(
        parse_chrony_tracking(&line.replace("-0.000250000", "nan")),
        None
    );
}

#[test]
fn lateness_is_judged_against_the_open_instant_or_the_schedule_start() {
    let slot = Slot {
        start_unix_ns: 100 * S,
        origin_unix_ns: 110 * S,
        open_unix_ns: 130 * S,
        close_unix_ns: 140 * S,
        end_unix_ns: 143 * S,
    };
    // Decode: streams may start late while the ramp lasts.
    assert_eq!(slot_lateness(125 * S, &slot, true), None);
    assert_eq!(slot_lateness(130 * S, &slot, true), None);
    let late = slot_lateness(131 * S, &slot, true).expect("late");
    assert!(
        late.contains("21.0 s") && late.contains("--shard-prefill-rate"),
        "{late}"
    );
    // Rate: the schedule starts on time, within the tolerance.
    assert_eq!(
        slot_lateness(110 * S + RATE_START_TOLERANCE_NS, &slot, false),
        None
    );
    assert!(slot_lateness(110 * S + RATE_START_TOLERANCE_NS + 1, &slot, false).is_some());
    assert_eq!(slot_lateness(0, &slot, false), None);
    // A prefill must be measured by the close.
    assert_eq!(prefill_overrun(140 * S, &slot), None);
    let over = prefill_overrun(141_500 * MS, &slot).expect("overran");
    assert!(over.contains("1.5 s after its slot closed"), "{over}");
}

#[test]
fn a_start_whose_first_preparation_is_over_is_missed() {
    let t = settings(60.0, 10_000.0);
    assert_eq!(t.missed(900 * S), None);
    // Started late, inside the first slot's preparation: it can still make the origin.
    assert_eq!(t.missed(1_059 * S), None);
    assert_eq!(t.missed(1_060 * S), None);
    let why = t.missed(1_061 * S).expect("missed");
    assert!(
        why.contains("passed 61 s ago") && why.contains("2026-12-04T22:00:00Z"),
        "{why}"
    );
}
