//! The Probe requests section (`--probe-rate`; docs/method-notes.md, "Probe requests"): per
//! loaded cell, what light requests sent beside its load met, apart from the cell's figures:
//! the latency a new user meets under that load.

use crate::model::Report;
use crate::number;
use crate::table::Table;
use llmib_core::{CellResult, ProbeFigures};

/// The section's caption, shared by the page and the Markdown.
pub(crate) const PROBE_CAPTION: &str = "Light requests (a fresh short prompt each) sent at a \
    fixed rate beside each cell's own load while it ran, not part of its figures: the TTFT, \
    time per output token and end-to-end latency a new user meets under that load. Probes still \
    open when the cell's probes stopped are counted as unfinished; only their TTFT, where they \
    had one, is in the figures.";

const COLS: [(&str, bool); 10] = [
    ("Cell", false),
    ("Probes/s", true),
    ("Sent", true),
    ("Completed", true),
    ("Failed", true),
    ("Unfinished", true),
    ("TTFT p50", true),
    ("TTFT p99", true),
    ("TPOT p50", true),
    ("E2E p99", true),
];

/// One row's texts, in [`COLS`] order.
fn texts(c: &CellResult, p: &ProbeFigures) -> Vec<String> {
    let ms = |v: Option<f64>| number::or_null(v, number::ttft_ms);
    let pick =
        |s: &Option<llmib_core::Summary>, f: fn(&llmib_core::Summary) -> f64| s.as_ref().map(f);
    vec![
        format!("{} {}", c.phase.label(), Report::cell_label(c)),
        number::req_rate(p.rate),
        number::count(p.sent),
        number::count(p.completed),
        number::count(p.failed),
        number::count(p.unfinished),
        ms(pick(&p.ttft_ms, |s| s.p50)),
        ms(pick(&p.ttft_ms, |s| s.p99)),
        number::or_null(pick(&p.tpot_ms, |s| s.p50), number::tbt_ms),
        ms(pick(&p.e2e_ms, |s| s.p99)),
    ]
}

impl Table {
    /// Every row with probe figures, in the run's order; `None` when none has any.
    pub fn probes(report: &Report) -> Option<Table> {
        let rows = report
            .cells
            .iter()
            .filter_map(|c| c.probe.as_deref().map(|p| (c, texts(c, p))))
            .collect();
        Table::of_texts(&COLS, rows)
    }
}
