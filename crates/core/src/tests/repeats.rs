//! Known answers of the repeated runs' spread (`core::repeats`).

use super::*;
use crate::cell::{CellStatus, Phase};
use crate::stats::Summary;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[test]
fn the_spread_is_the_mean_the_sample_deviation_and_their_ratio() {
    let s = spread(&[1.0, 2.0, 3.0, 4.0]).expect("spread");
    assert_eq!((s.n, s.mean, s.min, s.max), (4, 2.5, 1.0, 4.0));
    // Σ(x − 2.5)² = 5, over n − 1 = 3.
    let std = (5.0f64 / 3.0).sqrt();
    assert!(close(s.std.expect("std"), std), "{s:?}");
    assert!(close(s.cv.expect("cv"), std / 2.5), "{s:?}");
    let one = spread(&[7.0]).expect("spread");
    assert_eq!((one.n, one.mean, one.std, one.cv), (1, 7.0, None, None));
    let zero = spread(&[0.0, 0.0]).expect("spread");
    assert_eq!(
        (zero.std, zero.cv),
        (Some(0.0), None),
        "no ratio to a mean of 0"
    );
    assert_eq!(spread(&[]), None);
    assert_eq!(spread(&[1.0, f64::NAN]), None);
}

/// A decode row at (8K, 4) with `tok_s` total tok/s and a TTFT whose median is `ttft`.
fn decode(status: CellStatus, tok_s: f64, ttft: f64) -> CellResult {
    let mut r = CellResult::empty(Phase::Decode, 8192, "8K", 4, status);
    if status.has_figures() {
        r.total_tok_per_s = Some(tok_s);
        r.ttft_ms = Summary::of(&[ttft]);
    }
    r
}

#[test]
fn each_cell_spreads_over_the_runs_that_measured_it() {
    let prefill = |v: f64| {
        let mut r = CellResult::empty(Phase::Prefill, 8192, "8K", 1, CellStatus::Valid);
        r.prompt_tok_per_s = Some(v);
        r
    };
    let runs = vec![
        vec![prefill(1000.0), decode(CellStatus::Valid, 100.0, 20.0)],
        vec![prefill(1100.0), decode(CellStatus::Failed, 0.0, 0.0)],
        vec![
            prefill(900.0),
            decode(CellStatus::RequestsQueued, 140.0, 30.0),
        ],
    ];
    let cells = repeated_cells(&runs);
    assert_eq!(cells.len(), 2, "{cells:#?}");
    // Key order: prefill before decode.
    let (p, d) = (&cells[0], &cells[1]);
    assert_eq!((p.key.phase, p.runs, p.measured), (Phase::Prefill, 3, 3));
    let tok = &p.figures["prompt_tok_per_s"];
    assert_eq!(
        (tok.n, tok.mean, tok.min, tok.max),
        (3, 1000.0, 900.0, 1100.0)
    );
    assert!(close(tok.std.expect("std"), 100.0), "{tok:?}");
    assert_eq!(p.figures.len(), 1, "a prefill row has no decode figures");
    // The failed run has a row but no figures: two of three measured.
    assert_eq!((d.key.phase, d.runs, d.measured), (Phase::Decode, 3, 2));
    let t = &d.figures["total_tok_per_s"];
    assert_eq!((t.n, t.mean), (2, 120.0));
    assert!(close(t.std.expect("std"), 800f64.sqrt()), "{t:?}");
    assert_eq!(d.figures["ttft_ms_p50"].mean, 25.0);
    assert_eq!(d.context_label, "8K");
}

#[test]
fn a_cell_no_run_measured_is_kept_without_figures() {
    let runs = vec![
        vec![decode(CellStatus::OverCapacity, 0.0, 0.0)],
        vec![decode(CellStatus::OverCapacity, 0.0, 0.0)],
    ];
    let cells = repeated_cells(&runs);
    assert_eq!(cells.len(), 1);
    assert_eq!((cells[0].runs, cells[0].measured), (2, 0));
    assert!(cells[0].figures.is_empty());
    assert!(repeated_cells(&[]).is_empty());
}
