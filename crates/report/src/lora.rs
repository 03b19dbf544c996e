//! The LoRA adapters section (`run --lora`; docs/lora.md): per row measured with adapters,
//! one line per adapter and one for their total, each adapter's share of the row's requests,
//! output tokens and output tok/s over the row's own span, and its median TTFT.

use crate::model::Report;
use crate::number;
use crate::table::Table;
use llmib_core::{CellResult, LoraAdapterFigures, LoraFigures};

/// The section's caption, shared by the page and the Markdown.
pub(crate) const LORA_CAPTION: &str = "Each row's requests spread over the LoRA adapters \
    (--lora): per adapter, the requests it took, its output tokens and its share of the row's \
    output tok/s over the row's own span (a decode row's window, a burst or rate row's first \
    send to last end), and its median TTFT; the total line is every request of the row.";

const COLS: [(&str, bool); 7] = [
    ("Cell", false),
    ("Adapter", false),
    ("Assign", false),
    ("Requests", true),
    ("Output tokens", true),
    ("Output tok/s", true),
    ("TTFT p50", true),
];

/// One line's texts, in [`COLS`] order.
fn texts(c: &CellResult, l: &LoraFigures, a: &LoraAdapterFigures) -> Vec<String> {
    vec![
        format!("{} {}", c.phase.label(), Report::cell_label(c)),
        a.adapter.clone(),
        l.assign.as_str().to_string(),
        number::count(a.requests),
        number::count(a.output_tokens),
        number::or_null(a.output_tok_per_s, number::rate),
        number::or_null(a.ttft_ms_p50, number::ttft_ms),
    ]
}

impl Table {
    /// Every row with figures per adapter, in the run's order, its adapters then its total;
    /// `None` when none has any.
    pub fn lora(report: &Report) -> Option<Table> {
        let rows = report
            .cells
            .iter()
            .filter_map(|c| c.lora.as_deref().map(|l| (c, l)))
            .flat_map(|(c, l)| {
                l.adapters
                    .iter()
                    .chain(std::iter::once(&l.total))
                    .map(move |a| (c, texts(c, l, a)))
            })
            .collect();
        Table::of_texts(&COLS, rows)
    }
}
