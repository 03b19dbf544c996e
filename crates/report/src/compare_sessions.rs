//! `compare` for session cells: paired by history depth C and concurrent sessions S (their
//! `CellKey`), each entry shows its total tok/s and TTFT p50 with the ratio of each to the
//! baseline's, where both runs measured the cell. Throughput above ×1 is faster; TTFT above ×1
//! is slower, so both ratios are printed and named rather than folded into one verdict.

use crate::number;
use llmib_core::{CellResult, CellStatus, Phase};

/// ` ×1.06`: `this / base`, empty when either is missing or the base is not positive.
fn ratio(this: Option<f64>, base: Option<f64>) -> String {
    match (this, base) {
        (Some(t), Some(b)) if b > 0.0 && b.is_finite() && t.is_finite() => {
            format!(" {}", number::ratio(t / b))
        }
        _ => String::new(),
    }
}

/// The text of a session row in a comparison (`1,234.5 tok/s ×1.06 · TTFT p50 120 ms ×0.95`),
/// or `None` for the other phases. `base` is the baseline's row (None: this is the baseline,
/// or the baseline lacks it). A row whose status has no figures shows its status.
pub(crate) fn entry_value(c: &CellResult, base: Option<&CellResult>) -> Option<String> {
    if c.phase != Phase::Session {
        return None;
    }
    if !c.status.has_figures() {
        return Some(c.status.label().to_string());
    }
    // The baseline's figures count only where it has some: a ratio to a failed cell's
    // leftovers would mislead.
    let base = base
        .filter(|b| !std::ptr::eq(*b, c) && b.phase == Phase::Session && b.status.has_figures());
    let tok = c.total_tok_per_s;
    let ttft = c.ttft_ms_p50;
    let text = format!(
        "{} tok/s{} · TTFT p50 {}{}",
        number::or_null(tok, number::rate),
        ratio(tok, base.and_then(|b| b.total_tok_per_s)),
        number::or_null(ttft, number::ttft_ms),
        ratio(ttft, base.and_then(|b| b.ttft_ms_p50)),
    );
    Some(if c.status == CellStatus::Valid {
        text
    } else {
        format!("{text} ({})", c.status.label())
    })
}
