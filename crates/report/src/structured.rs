//! The structured-output section (`run --response-format`, `--tools`;
//! docs/structured-output.md): per row whose answers were checked, how many were judged, met
//! their schema, broke it or were cut at the length limit, and the first failure.

use crate::model::Report;
use crate::number;
use crate::table::Table;
use llmib_core::{CellResult, StructuredFigures};

/// The section's caption, shared by the page and the Markdown.
pub(crate) const STRUCTURED_CAPTION: &str = "Each row's answers checked against \
    --response-format's schema or --tools' parameters: checked = valid + invalid + cut; an \
    answer cut at --max-output is not judged. Invalid answers leave the row's status as it \
    is (the speed was measured); the first failure is named.";

const COLS: [(&str, bool); 7] = [
    ("Cell", false),
    ("Kind", false),
    ("Checked", true),
    ("Valid", true),
    ("Invalid", true),
    ("Cut", true),
    ("First failure", false),
];

/// One line's texts, in [`COLS`] order (the failure is the server's text: the page escapes
/// every cell).
fn texts(c: &CellResult, s: &StructuredFigures) -> Vec<String> {
    vec![
        format!("{} {}", c.phase.label(), Report::cell_label(c)),
        s.kind.clone(),
        number::count(s.checked),
        number::count(s.valid),
        number::count(s.invalid),
        number::count(s.cut),
        s.first_error.clone().unwrap_or_else(|| "—".into()),
    ]
}

impl Table {
    /// Every row whose answers were checked, in the run's order; `None` when none was.
    pub fn structured(report: &Report) -> Option<Table> {
        let rows = report
            .cells
            .iter()
            .filter_map(|c| c.structured.as_deref().map(|s| (c, texts(c, s))))
            .collect();
        Table::of_texts(&COLS, rows)
    }
}
