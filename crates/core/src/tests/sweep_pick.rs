//! Known answers of a sweep's frontier and SLO picks.

use super::*;
use crate::cell::{CapacityFigures, CellStatus};

fn decode(n: u32, user: f64, total: f64) -> CellResult {
    let mut r = CellResult::empty(Phase::Decode, 8192, "8K", n, CellStatus::Valid);
    r.per_request_tok_per_s = Some(user);
    r.total_tok_per_s = Some(total);
    r
}

fn capacity(rate: Option<f64>) -> CellResult {
    let mut r = CellResult::empty(Phase::Capacity, 8192, "8K", 0, CellStatus::Valid);
    r.capacity_request_rate = Some(rate);
    r.capacity = Some(Box::new(CapacityFigures {
        slo: "ttft_p99=2s".into(),
        precision: 0.05,
        outcome: if rate.is_some() { "found" } else { "none" }.into(),
        failed_at: None,
        points: Vec::new(),
        synchronous_rate: None,
        saturation_rate: None,
        concurrency_goodput_rps: None,
        time_scale: None,
        over: None,
    }));
    r
}

/// Asserts the (combination, cell) of every point on the frontier, in the points' order.
fn assert_on_frontier(combos: &[ComboRows], want: &[(&str, &str)]) {
    let points = frontier_points(combos);
    let on: Vec<(&str, &str)> = points
        .iter()
        .filter(|p| p.on_frontier)
        .map(|p| (p.combination.as_str(), p.cell.as_str()))
        .collect();
    assert_eq!(on, want);
}

fn combo(name: &str, gpus: Option<u32>, rows: Vec<CellResult>) -> ComboRows {
    ComboRows {
        name: name.into(),
        gpus,
        rows,
    }
}

#[test]
fn the_frontier_keeps_the_points_no_other_beats_on_both_axes() {
    // a: (100 tok/s/user, 100 total) (50, 300); b: (80, 200) dominated by nothing? a's (100,100)
    // vs b's (80,200): neither dominates. b's (40, 250) is dominated by a's (50, 300).
    let combos = [
        combo(
            "a",
            Some(1),
            vec![decode(1, 100.0, 100.0), decode(8, 50.0, 300.0)],
        ),
        combo(
            "b",
            Some(1),
            vec![decode(2, 80.0, 200.0), decode(8, 40.0, 250.0)],
        ),
    ];
    assert_on_frontier(
        &combos,
        &[
            ("a", "decode 8K × 1"),
            ("a", "decode 8K × 8"),
            ("b", "decode 8K × 2"),
        ],
    );
}

#[test]
fn throughput_is_per_gpu_and_cells_without_figures_are_no_points() {
    let mut failed = decode(16, 10.0, 999.0);
    failed.status = CellStatus::Failed;
    let combos = [combo(
        "tp2",
        Some(2),
        vec![decode(4, 50.0, 400.0), failed, capacity(Some(3.0))],
    )];
    let p = frontier_points(&combos);
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].tok_per_s_per_gpu, 200.0);
}

/// A single-slot server at N = 4 runs one request at a time: its requests' decode rate is the
/// N = 1 rate, but each of the 4 users gets a quarter of what was sent. Counted at the
/// per-request rate, the queued point would sit on the frontier beside N = 1 with four times
/// the users (the sweep page showed such a point); at output ÷ N it is dominated.
#[test]
fn a_queued_closed_loop_cell_counts_each_user_a_share_of_the_output() {
    let mut queued = decode(4, 664.0, 680.0);
    queued.status = CellStatus::RequestsQueued;
    assert_eq!(frontier_tok_per_s_per_user(&queued), Some(170.0));
    assert_eq!(
        frontier_tok_per_s_per_user(&decode(4, 512.0, 2025.0)),
        Some(512.0),
        "a Valid cell keeps its per-request rate"
    );
    let mut rate = CellResult::empty(Phase::Rate, 8192, "8K", 0, CellStatus::RequestsQueued);
    rate.per_request_tok_per_s = Some(90.0);
    rate.total_tok_per_s = Some(500.0);
    assert_eq!(
        frontier_tok_per_s_per_user(&rate),
        Some(90.0),
        "open load has no N to share among"
    );
    let combos = [
        combo("slots-1", Some(1), vec![decode(1, 665.0, 665.0), queued]),
        combo("slots-4", Some(1), vec![decode(4, 512.0, 2025.0)]),
    ];
    assert_on_frontier(
        &combos,
        &[("slots-1", "decode 8K × 1"), ("slots-4", "decode 8K × 4")],
    );
}

#[test]
fn the_best_combination_holds_the_slo_at_the_highest_rate_per_gpu() {
    let combos = [
        combo("one-gpu", Some(1), vec![capacity(Some(10.0))]),
        combo("two-gpus", Some(2), vec![capacity(Some(16.0))]),
        combo("broken", Some(1), vec![capacity(None)]),
    ];
    let picks = slo_picks(&combos);
    assert_eq!(picks.len(), 1);
    let p = &picks[0];
    assert_eq!(
        (p.context.as_str(), p.slo.as_str(), p.unit.as_str()),
        ("8K", "ttft_p99=2s", "requests/s")
    );
    // 10/s on one GPU beats 16/s on two (8/s per GPU) by 25 %.
    assert_eq!(p.best.as_deref(), Some("one-gpu"));
    assert!((p.margin.expect("margin") - 0.25).abs() < 1e-12);
    assert_eq!(p.never, ["broken"]);
    let order: Vec<&str> = p.entries.iter().map(|e| e.combination.as_str()).collect();
    assert_eq!(order, ["one-gpu", "two-gpus", "broken"]);
}

#[test]
fn without_every_gpu_count_capacities_compare_per_server() {
    let combos = [
        combo("one-gpu", Some(1), vec![capacity(Some(10.0))]),
        combo("unknown", None, vec![capacity(Some(16.0))]),
    ];
    let p = &slo_picks(&combos)[0];
    assert_eq!(p.best.as_deref(), Some("unknown"));
    assert!((p.margin.expect("margin") - 0.6).abs() < 1e-12);
    assert!(p.never.is_empty());
}

#[test]
fn the_frontier_indexes_ascend_by_x_and_keep_equal_points() {
    let pts = [(1.0, 5.0), (2.0, 4.0), (2.0, 4.0), (1.5, 3.0), (3.0, 1.0)];
    assert_eq!(pareto_frontier(&pts), vec![0, 1, 2, 4]);
    assert!(pareto_frontier(&[]).is_empty());
}

fn judged(n: u32, total: f64, holds: bool) -> CellResult {
    let mut r = decode(n, 50.0, total);
    r.slo = Some(crate::cell::SloRow {
        slo: "ttft_p99=2s".into(),
        judged: 10,
        met: if holds { 10 } else { 3 },
        attainment: Some(if holds { 1.0 } else { 0.3 }),
        holds,
        limits: Vec::new(),
    });
    r
}

/// Without a capacity search: the highest output tok/s per GPU among cells that hold the SLO.
#[test]
fn without_a_capacity_search_the_best_is_the_fastest_cell_that_holds_the_slo() {
    let combos = [
        // a: its fastest cell (900) breaks the SLO; 400 holds.
        combo(
            "a",
            Some(1),
            vec![judged(4, 400.0, true), judged(16, 900.0, false)],
        ),
        // b: 600 on 2 GPUs = 300 per GPU.
        combo("b", Some(2), vec![judged(8, 600.0, true)]),
        combo("c", Some(1), vec![judged(8, 700.0, false)]),
    ];
    let picks = slo_picks(&combos);
    assert_eq!(picks.len(), 1);
    let p = &picks[0];
    assert_eq!(
        (p.context.as_str(), p.unit.as_str()),
        ("every", "output tok/s")
    );
    assert_eq!(p.best.as_deref(), Some("a"));
    assert!((p.margin.expect("margin") - (400.0 / 300.0 - 1.0)).abs() < 1e-12);
    assert_eq!(p.never, ["c"]);
    assert_eq!(p.entries[0].outcome, "8K × 4");
}
