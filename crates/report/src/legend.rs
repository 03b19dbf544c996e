//! The legend of a page's matrix: each status present, its label and what it means. Its own
//! file so that the decode page (`html`) and the Sessions section (`sessions_chart`) share it
//! without importing each other.

use crate::model::status_explanation;
use llmib_core::CellStatus;
use serde::Serialize;

/// A legend entry.
#[derive(Debug, Serialize)]
pub(crate) struct LegendEntry {
    status: String,
    label: &'static str,
    text: &'static str,
}

pub(crate) fn legend(statuses: &[CellStatus]) -> Vec<LegendEntry> {
    statuses
        .iter()
        .map(|s| LegendEntry {
            status: serde_json::to_value(s)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            label: s.label(),
            text: status_explanation(*s),
        })
        .collect()
}
