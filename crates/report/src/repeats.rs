//! The summary of a `run --num-runs K` directory as a Markdown table (`repeats.md`): a line
//! per (cell, figure) with the spread `llmib_core::repeated_cells` computed. Here with the
//! other tables, since all formatting lives in this crate.

use crate::number::significant;
use llmib_core::{Phase, RepeatedCell, Spread};

/// The summary of `ran` of `k` planned runs: a line per (cell, figure), and a line saying
/// "0 of K" for a cell no run measured.
pub fn repeats_markdown(cells: &[RepeatedCell], ran: usize, k: u32) -> String {
    let mut out = format!(
        "## Repeated runs\n\n{ran} of {k} runs; per cell, each figure over the runs that measured it (std: sample standard deviation; CV: std / mean).\n\n| Cell | Measured | Figure | Mean | Std | CV | Min | Max |\n|---|---:|---|---:|---:|---:|---:|---:|\n"
    );
    for c in cells {
        let cell = cell_name(c);
        if c.figures.is_empty() {
            out.push_str(&format!("| {cell} | 0 of {} | — | | | | | |\n", c.runs));
        }
        for (name, s) in &c.figures {
            out.push_str(&format!(
                "| {cell} | {} of {} | {name} | {} | {} | {} | {} | {} |\n",
                s.n,
                c.runs,
                significant(s.mean),
                s.std.map_or("—".into(), significant),
                cv(s),
                significant(s.min),
                significant(s.max)
            ));
        }
    }
    out
}

/// `Sustained decode 8K × 4`, `Prefill 8K`, `Open-loop rate 8K @ 2/s`.
fn cell_name(c: &RepeatedCell) -> String {
    let (phase, label) = (c.key.phase.label(), &c.context_label);
    match (c.key.phase, c.key.request_rate()) {
        (_, Some(r)) => format!("{phase} {label} @ {}/s", significant(r)),
        (Phase::Prefill, _) => format!("{phase} {label}"),
        _ => format!("{phase} {label} × {}", c.key.concurrency),
    }
}

/// The CV as a percentage.
fn cv(s: &Spread) -> String {
    s.cv.map_or("—".into(), |c| format!("{:.1} %", c * 100.0))
}
