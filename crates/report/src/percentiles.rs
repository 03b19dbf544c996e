//! The Latency percentiles section (`--percentiles`; docs/method-notes.md, "Percentiles of
//! the user's choice"): per row, each latency summary with the run's extra percentiles beside
//! the fixed p50, p90 and p99, so a p99.9 reads next to the figures it extends. Absent when no
//! row has any (a run without the flag renders as before).

use crate::model::Report;
use crate::number;
use crate::table::Table;
use llmib_core::{CellResult, Summary, percentile_word};

/// The section's caption, shared by the page and the Markdown.
pub(crate) const PERCENTILES_CAPTION: &str = "Each row's latency summaries at the percentiles \
    the run asked for (`--percentiles`) beside the fixed p50, p90 and p99, in ms, all by the \
    same rule (linear interpolation between closest ranks, numpy's default). On few samples a \
    high percentile lies between the largest ones: read it with its sample count.";

/// The latency summaries of a row that carry extra percentiles, with their names: a decode
/// row's TTFT and TBT, a rate row's TTFT, TPOT, ITL and E2E, a session row's TTFT and TPOT.
fn latencies(c: &CellResult) -> Vec<(&'static str, &Summary)> {
    let rate = c.rate.as_deref();
    let session_tpot = c.session.tpot_ms.as_ref().and_then(Option::as_ref);
    [
        ("TTFT", c.ttft_ms.as_ref()),
        ("TBT", c.tbt_ms.as_ref()),
        (
            "TPOT",
            rate.and_then(|r| r.tpot_ms.as_ref()).or(session_tpot),
        ),
        ("ITL", rate.and_then(|r| r.itl_ms.as_ref())),
        ("E2E", rate.and_then(|r| r.e2e_ms.as_ref())),
    ]
    .into_iter()
    .filter_map(|(name, s)| s.filter(|s| !s.percentiles.is_empty()).map(|s| (name, s)))
    .collect()
}

impl Table {
    /// One line per row and latency summary with extra percentiles, in the run's order;
    /// `None` when no row has any.
    pub fn percentiles(report: &Report) -> Option<Table> {
        let mut extra: Vec<f64> = Vec::new();
        for c in &report.cells {
            for (_, s) in latencies(c) {
                extra.extend(s.percentiles.iter().map(|p| p.p));
            }
        }
        extra.sort_by(f64::total_cmp);
        extra.dedup();
        let mut ps = vec![50.0, 90.0, 99.0];
        ps.extend(extra);
        ps.sort_by(f64::total_cmp);
        let mut cols: Vec<(String, bool)> = vec![("Cell".into(), false), ("Figure".into(), false)];
        cols.push(("Samples".into(), true));
        cols.extend(
            ps.iter()
                .map(|p| (format!("p{}", percentile_word(*p)), true)),
        );
        cols.push(("Max".into(), true));
        let cols: Vec<(&str, bool)> = cols.iter().map(|(t, n)| (t.as_str(), *n)).collect();
        let mut rows = Vec::new();
        for c in &report.cells {
            for (name, s) in latencies(c) {
                let mut texts = vec![
                    format!("{} {}", c.phase.label(), Report::cell_label(c)),
                    name.to_string(),
                    number::count(s.n),
                ];
                texts.extend(ps.iter().map(|p| number::or_null(s.at(*p), number::tbt_ms)));
                texts.push(number::tbt_ms(s.max));
                rows.push((c, texts));
            }
        }
        Table::of_texts(&cols, rows)
    }
}
