use super::*;
use crate::cell::CellKey;

fn cell(phase: Phase, ctx: u64, n: u32, over: bool) -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase,
            context_tokens: ctx,
            concurrency: n,
            rate_mrps: 0,
        },
        label: ctx.to_string(),
        over_capacity: over,
    }
}

#[test]
fn the_rate_covers_the_trailing_span() {
    let mut m = RateMeter::new(2.0);
    assert_eq!(m.rate(), None);
    m.push(0.0, 0);
    assert_eq!(m.rate(), None, "one sample is no rate");
    m.push(0.05, 10);
    assert_eq!(m.rate(), None, "under 100 ms");
    // 100 tok/s for 2 s, then 300 tok/s: after 2 s more the meter shows only the new rate.
    for i in 1..=20u32 {
        m.push(f64::from(i) * 0.1, u64::from(i) * 10);
    }
    assert!((m.rate().unwrap_or(0.0) - 100.0).abs() < 1e-9);
    for i in 1..=20u32 {
        m.push(2.0 + f64::from(i) * 0.1, 200 + u64::from(i) * 30);
    }
    assert!((m.rate().unwrap_or(0.0) - 300.0).abs() < 1e-9, "{m:?}");
    // A new window: the counter restarts.
    m.push(4.1, 5);
    assert_eq!(m.rate(), None);
}

#[test]
fn eta_known_answers() {
    let inp = EtaInputs {
        window_s: 30.0,
        prefill_tok_per_s: Some(10_000.0),
        decode_overhead_s: Some(2.0),
    };
    let plan = [
        cell(Phase::Prefill, 10_000, 1, false), // 1 s
        cell(Phase::Decode, 10_000, 1, false),  // warmed by the prefill: 30 + 2
        cell(Phase::Decode, 10_000, 4, false),  // 3 cold × 1 s + 30 + 2
        cell(Phase::Decode, 10_000, 64, true),  // over capacity: 0
    ];
    let eta = eta_s(&plan, &HashMap::new(), &inp);
    assert!((eta - (1.0 + 32.0 + 35.0)).abs() < 1e-9, "{eta}");
    // Resumed with 4 prompts already warm at this context: no cold prefill left.
    let warm = HashMap::from([(10_000, 4)]);
    let eta = eta_s(&plan[2..], &warm, &inp);
    assert!((eta - 32.0).abs() < 1e-9, "{eta}");
    // Before any measurement, the defaults.
    let none = EtaInputs {
        window_s: 30.0,
        prefill_tok_per_s: None,
        decode_overhead_s: Some(f64::NAN),
    };
    let eta = eta_s(&plan[..1], &HashMap::new(), &none);
    assert!((eta - 10_000.0 / DEFAULT_PREFILL_TOK_PER_S).abs() < 1e-9);
    let eta = eta_s(&plan[1..2], &HashMap::from([(10_000, 1)]), &none);
    assert!((eta - 30.0 - DEFAULT_CELL_OVERHEAD_S).abs() < 1e-9);
    assert_eq!(eta_s(&[], &HashMap::new(), &inp), 0.0);
}

#[test]
fn short_durations() {
    assert_eq!(short_duration(12.4), "12s");
    assert_eq!(short_duration(245.0), "4m05s");
    assert_eq!(short_duration(3720.0), "1h02m");
    assert_eq!(short_duration(f64::NAN), "–");
    assert_eq!(short_duration(-1.0), "–");
}

#[test]
fn a_queued_row_says_how_many_the_server_ran() {
    use crate::cell::{CellResult, CellStatus, QueueObservation};
    let mut r = CellResult::empty(Phase::Decode, 1024, "1K", 16, CellStatus::RequestsQueued);
    assert_eq!(r.server_ran(), None, "no gauge read");
    r.queue = Some(QueueObservation {
        mean_waiting: Some(3.6),
        ..Default::default()
    });
    assert_eq!(r.server_ran(), Some(12));
    r.status = CellStatus::Valid;
    assert_eq!(r.server_ran(), None, "only queued rows");
}

#[test]
fn bursts_follow_the_sustained_matrix_or_replace_it() {
    use crate::plan::with_bursts;
    let cells = vec![
        cell(Phase::Prefill, 8, 1, false),
        cell(Phase::Decode, 8, 1, false),
        cell(Phase::Decode, 8, 4, true),
        cell(Phase::Prefill, 16, 1, false),
        cell(Phase::Decode, 16, 1, false),
    ];
    let phases = |v: &[PlannedCell]| v.iter().map(|c| c.key.phase).collect::<Vec<_>>();
    let after = with_bursts(cells.clone(), false);
    use Phase::{Burst as B, Decode as D, Prefill as P};
    assert_eq!(phases(&after), vec![P, D, D, P, D, B, B, B]);
    assert!(after[6].over_capacity, "the prediction carries over");
    let instead = with_bursts(cells, true);
    assert_eq!(phases(&instead), vec![P, B, B, P, B]);
}
