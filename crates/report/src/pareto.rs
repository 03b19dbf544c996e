//! The Pareto chart of the Load section: per context, total output tok/s (y) against per-user
//! tok/s (x) for every measured cell, closed-loop decode cells and open-loop rate cells alike,
//! with the frontier drawn through the cells no other cell beats on both axes.
//!
//! Each point's per-user figure is its requests' measured decode speed: the row's
//! `per_request_tok_per_s` (a decode cell's median per-request rate; a rate cell's per-user
//! tok/s p50, 1 / TPOT), except a decode cell marked Requests queued, whose N users each get
//! its output ÷ N (`llmib_core::frontier_tok_per_s_per_user`, the sweep's rule too). Cells
//! without both figures are left out, never drawn at 0.

use crate::chart_frame::{Frame, H, W};
use crate::model::Report;
use crate::number;
use llmib_core::{CellResult, Phase, frontier_tok_per_s_per_user};
use serde::Serialize;

/// One measured cell on the chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct ParetoPoint {
    /// Per-user tok/s.
    pub per_user: f64,
    /// Total output tok/s.
    pub total: f64,
    /// `decode` or `rate`.
    pub kind: &'static str,
    /// `8K × 16` or `8K at 2.5/s`.
    pub label: String,
    /// No other point is at least as good on both axes and better on one.
    pub on_frontier: bool,
}

pub(crate) use llmib_core::pareto_frontier as frontier;

/// The cell's name on the chart.
fn label(c: &CellResult) -> String {
    Report::cell_label(c)
}

/// The points of one context: its decode and rate cells with both figures.
pub(crate) fn points(report: &Report, context_tokens: u64) -> Vec<ParetoPoint> {
    let mut pts: Vec<ParetoPoint> = report
        .cells
        .iter()
        .filter(|c| c.context_tokens == context_tokens && c.status.has_figures())
        .filter(|c| matches!(c.phase, Phase::Decode | Phase::Rate))
        .filter_map(|c| {
            let (x, y) = (frontier_tok_per_s_per_user(c)?, c.total_tok_per_s?);
            (x.is_finite() && y.is_finite() && x > 0.0 && y > 0.0).then(|| ParetoPoint {
                per_user: x,
                total: y,
                kind: if c.phase == Phase::Rate {
                    "rate"
                } else {
                    "decode"
                },
                label: label(c),
                on_frontier: false,
            })
        })
        .collect();
    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.per_user, p.total)).collect();
    for i in frontier(&xy) {
        pts[i].on_frontier = true;
    }
    pts
}

/// A point as drawn.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Dot {
    pub x: f64,
    pub y: f64,
    pub kind: &'static str,
    pub on_frontier: bool,
    pub title: String,
}

/// One context's Pareto chart.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ParetoChart {
    pub id: String,
    pub label: String,
    pub width: f64,
    pub height: f64,
    pub frame: Frame,
    pub dots: Vec<Dot>,
    /// The frontier's polyline, `x,y x,y …`, by per-user tok/s.
    pub frontier: String,
    /// The frontier's cells in words, for the caption.
    pub frontier_labels: Vec<String>,
}

/// The chart of one context; `None` when it has no point.
pub(crate) fn chart(report: &Report, tokens: u64, label: &str, i: usize) -> Option<ParetoChart> {
    let pts = points(report, tokens);
    if pts.is_empty() {
        return None;
    }
    let x_max = pts.iter().map(|p| p.per_user).fold(0.0, f64::max);
    let y_max = pts.iter().map(|p| p.total).fold(0.0, f64::max);
    let frame = Frame::new(x_max, y_max, "per-user tok/s", "total output tok/s");
    let dots: Vec<Dot> = pts
        .iter()
        .map(|p| Dot {
            x: frame.sx(p.per_user),
            y: frame.sy(p.total),
            kind: p.kind,
            on_frontier: p.on_frontier,
            title: format!(
                "{}: {} tok/s per user, {} tok/s total{}",
                p.label,
                number::rate(p.per_user),
                number::rate(p.total),
                if p.on_frontier { " (frontier)" } else { "" }
            ),
        })
        .collect();
    let mut front: Vec<&ParetoPoint> = pts.iter().filter(|p| p.on_frontier).collect();
    front.sort_by(|a, b| a.per_user.total_cmp(&b.per_user));
    Some(ParetoChart {
        id: format!("pareto-{i}"),
        label: label.to_string(),
        width: W,
        height: H,
        frontier: front
            .iter()
            .map(|p| format!("{},{}", frame.sx(p.per_user), frame.sy(p.total)))
            .collect::<Vec<_>>()
            .join(" "),
        frontier_labels: front.iter().map(|p| p.label.clone()).collect(),
        frame,
        dots,
    })
}

/// The frontier of every context with a Load section, as rows of text: context, cell,
/// per-user tok/s, total tok/s (for the Markdown).
pub(crate) fn frontier_rows(report: &Report) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for l in report.load_contexts() {
        let mut front: Vec<ParetoPoint> = points(report, l.tokens)
            .into_iter()
            .filter(|p| p.on_frontier)
            .collect();
        front.sort_by(|a, b| a.per_user.total_cmp(&b.per_user));
        for p in front {
            rows.push(vec![
                l.label.clone(),
                p.label,
                number::rate(p.per_user),
                number::rate(p.total),
            ]);
        }
    }
    rows
}
