//! The Mixed prefill section (docs/mixed-prefill.md): per cell, a prompt of P tokens sent into
//! N running decode streams: the streams' tok/s before, during and after its prefill, their
//! longest gaps, and the prompt's TTFT against its TTFT alone. Rows without figures (Over
//! capacity, Failed, Not run) keep their place with their status.

use crate::model::Report;
use crate::number;
use crate::table::Table;
use llmib_core::{CellResult, Phase};

/// The section's caption, shared by the page and the Markdown.
pub(crate) const MIXED_CAPTION: &str = "A fresh prompt of P tokens sent into N running decode \
    streams at context C, once they are ready: the streams' output tok/s before it, during its \
    prefill (from its send to its first token) and after; each stream's longest gap between \
    two chunks over that prefill, p50 and p99 across streams, beside the gap unstalled; the \
    prompt's TTFT, its TTFT alone on the idle server (median of three), and their ratio.";

const COLS: [(&str, bool); 13] = [
    ("Prompt P", false),
    ("Streams N", true),
    ("Stream context", true),
    ("Status", false),
    ("tok/s before", true),
    ("tok/s during", true),
    ("tok/s after", true),
    ("Longest gap p50", true),
    ("Longest gap p99", true),
    ("Gap unstalled p50", true),
    ("TTFT injected", true),
    ("TTFT alone", true),
    ("Slowdown", true),
];

/// One row's texts, in [`COLS`] order.
fn texts(c: &CellResult) -> Vec<String> {
    let m = c.mixed.as_deref();
    let rate = |f: fn(&llmib_core::MixedFigures) -> Option<f64>| {
        number::or_null(m.and_then(f), number::rate)
    };
    let ms = |v: Option<f64>| number::or_null(v, number::ttft_ms);
    vec![
        Report::context_label(c),
        c.concurrency.to_string(),
        number::or_null(m.map(|m| m.stream_context_tokens), number::count),
        c.status.label().to_string(),
        rate(|m| m.before_tok_per_s),
        rate(|m| m.during_tok_per_s),
        rate(|m| m.after_tok_per_s),
        ms(m.and_then(|m| m.longest_gap_ms.as_ref()).map(|s| s.p50)),
        ms(m.and_then(|m| m.longest_gap_ms.as_ref()).map(|s| s.p99)),
        ms(m.and_then(|m| m.baseline_gap_ms.as_ref()).map(|s| s.p50)),
        ms(m.map(|m| m.injected_ttft_ms)),
        ms(m.and_then(|m| m.standalone_ttft_ms.as_ref()).map(|s| s.p50)),
        number::or_null(m.and_then(|m| m.ttft_slowdown), number::ratio),
    ]
}

impl Table {
    /// The Mixed prefill cells, P then N; `None` when the run had none.
    pub fn mixed_prefill(report: &Report) -> Option<Table> {
        let mut rows: Vec<&CellResult> = report
            .cells
            .iter()
            .filter(|c| c.phase == Phase::MixedPrefill)
            .collect();
        rows.sort_by_key(|c| (c.context_tokens, c.concurrency));
        Table::of_texts(&COLS, rows.into_iter().map(|c| (c, texts(c))).collect())
    }
}
