//! `compare` on the golden run against a changed copy of itself: ratios to the first run, and
//! measurements that cannot be compared are marked, never hidden.

use crate::compare::Verdict;
use crate::{Comparison, Report};
use llmib_core::{CellStatus, Phase};
use std::path::Path;

fn golden() -> Report {
    Report::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run"))
        .expect("golden run")
}

/// B: decode 10 % faster, 8K × 64 measured (Not run in A), 1019K decode row missing.
fn faster() -> Report {
    let mut b = golden();
    for c in &mut b.cells {
        if let Some(v) = c.total_tok_per_s.as_mut() {
            *v *= 1.1;
        }
        if c.phase == Phase::Decode && c.context_label == "8K" && c.concurrency == 64 {
            c.status = CellStatus::Valid;
            c.total_tok_per_s = Some(1800.0);
        }
    }
    b.cells
        .retain(|c| !(c.phase == Phase::Decode && c.context_label == "1019K"));
    b.info.model.served_model = "<script>alert(1)</script>".to_string();
    b
}

#[test]
fn ratios_and_not_comparable_cells() {
    let cmp =
        Comparison::new(vec![("a".into(), golden()), ("b".into(), faster())]).expect("two runs");
    // Every measurement of either run has a row: nothing is hidden.
    assert_eq!(cmp.rows.len(), 73);
    let row = |label: &str, n: u32| {
        cmp.rows
            .iter()
            .find(|r| r.phase == Phase::Decode && r.context_label == label && r.concurrency == n)
            .expect("row")
    };
    match &row("8K", 1).entries[1].1 {
        Verdict::Comparable { ratio: Some(r) } => assert!((r - 1.1).abs() < 1e-9),
        v => panic!("{v:?}"),
    }
    assert!(matches!(
        row("8K", 64).entries[1].1,
        Verdict::NotComparable { .. }
    ));
    assert!(matches!(
        row("1019K", 1).entries[1].1,
        Verdict::NotComparable { .. }
    ));
    assert_eq!(row("64K", 128).entries[1].1, Verdict::SameStatus);

    let text = cmp.to_text();
    assert!(text.contains("209.8 ×1.10"), "{text}");
    assert!(
        text.contains("1,800.0 (not comparable: Not run in A, Valid here)"),
        "{text}"
    );
    assert!(
        text.contains("— (not comparable: not measured in this run)"),
        "{text}"
    );
    assert!(text.contains("9 measurement(s) not comparable"), "{text}");

    let html = cmp.to_html().expect("html");
    assert!(html.contains("&lt;script&gt;alert(1)&lt;"));
    assert!(!html.contains("<script>alert(1)"));
    assert!(html.contains("not comparable"));
}

#[test]
fn one_run_is_not_a_comparison() {
    assert!(Comparison::new(vec![("a".into(), golden())]).is_err());
}

/// A model id with terminal escape sequences: `compare`'s text shows `?` for them (it printed
/// them raw, recolouring the terminal).
#[test]
fn escape_sequences_in_a_model_id_never_reach_the_terminal() {
    let mut b = golden();
    b.info.model.served_model = "evil\u{1b}[2J\u{1b}]0;title\u{7}".to_string();
    let cmp = Comparison::new(vec![("a".into(), golden()), ("b".into(), b)]).expect("two runs");
    let text = cmp.to_text();
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(text.contains("evil?[2J"), "{text}");
}
