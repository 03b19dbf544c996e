//! Known answers for the shards' timetable.

use super::*;

const S: u64 = 1_000_000_000;

fn table(prep_s: f64) -> Timetable {
    Timetable::new(&TimetableSettings {
        start_at: "2026-12-04T22:00:00Z".into(),
        start_unix_ns: 1_000 * S,
        prep_s,
    })
}

#[test]
fn slots_follow_each_other_with_their_phases() {
    let mut t = table(30.0);
    let p = t.slot(SlotKind::Prefill);
    assert_eq!(
        p,
        Slot {
            start_unix_ns: 1_000 * S,
            origin_unix_ns: 1_030 * S,
            open_unix_ns: 1_030 * S,
            close_unix_ns: 1_030 * S,
            end_unix_ns: 1_030 * S,
        }
    );
    let d = t.slot(SlotKind::Decode {
        ramp_s: 20.0,
        window_s: 10.0,
    });
    assert_eq!(d.start_unix_ns, 1_030 * S);
    assert_eq!(d.origin_unix_ns, 1_060 * S);
    assert_eq!(d.open_unix_ns, 1_080 * S);
    assert_eq!(d.close_unix_ns, 1_090 * S);
    assert_eq!(d.end_unix_ns, 1_090 * S + SLOT_GRACE_NS);
    let r = t.slot(SlotKind::Rate {
        span_s: 12.5,
        drain_s: 5.0,
    });
    assert_eq!(r.start_unix_ns, d.end_unix_ns);
    assert_eq!(r.origin_unix_ns, d.end_unix_ns + 30 * S);
    assert_eq!(r.open_unix_ns, r.origin_unix_ns);
    assert_eq!(r.close_unix_ns, r.origin_unix_ns + 12_500_000_000);
    assert_eq!(r.end_unix_ns, r.close_unix_ns + 5 * S + SLOT_GRACE_NS);
}

#[test]
fn two_shards_asking_in_the_same_order_get_the_same_slots() {
    let kinds = [
        SlotKind::Prefill,
        SlotKind::Decode {
            ramp_s: 5.0,
            window_s: 3.0,
        },
        SlotKind::Rate {
            span_s: 2.0,
            drain_s: 1.0,
        },
    ];
    let (mut a, mut b) = (table(7.0), table(7.0));
    for k in kinds {
        assert_eq!(a.slot(k), b.slot(k));
    }
}

#[test]
fn bad_lengths_never_panic() {
    let mut t = table(f64::NAN);
    let s = t.slot(SlotKind::Decode {
        ramp_s: -1.0,
        window_s: f64::INFINITY,
    });
    assert_eq!(s.origin_unix_ns, 1_000 * S);
    assert_eq!(s.open_unix_ns, 1_000 * S);
    let mut far = Timetable::new(&TimetableSettings {
        start_at: String::new(),
        start_unix_ns: u64::MAX - 5,
        prep_s: 1e30,
    });
    let s = far.slot(SlotKind::Rate {
        span_s: 1e30,
        drain_s: 1e30,
    });
    assert_eq!(s.end_unix_ns, u64::MAX);
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
        late.contains("21.0 s") && late.contains("--shard-prep-seconds"),
        "{late}"
    );
    // Rate: the schedule starts on time, within the tolerance.
    assert_eq!(
        slot_lateness(110 * S + RATE_START_TOLERANCE_NS, &slot, false),
        None
    );
    assert!(slot_lateness(110 * S + RATE_START_TOLERANCE_NS + 1, &slot, false).is_some());
    assert_eq!(slot_lateness(0, &slot, false), None);
}

#[test]
fn a_start_whose_first_preparation_is_over_is_missed() {
    let t = TimetableSettings {
        start_at: "2026-12-04T22:00:00Z".into(),
        start_unix_ns: 1_000 * S,
        prep_s: 60.0,
    };
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
