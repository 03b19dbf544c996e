//! Workloads in the Load section (issue 20): per rate cell whose requests varied
//! (`--input-len`, `--output-len`, `--workload`), the lengths asked for and sent, the KS
//! statistic of each side, a trace's time scale and predicted cache share, how long the cell
//! ran and why it stopped; a table every exporter prints, and for the page a histogram of each
//! side (the sent lengths as bars, the requested distribution's expected counts as a line).

use crate::chart_frame::{Frame, H, W, r1};
use crate::model::{Report, requested};
use crate::number::{self, NULL};
use crate::table::Table;
use llmib_core::{CellResult, LengthFigures, StopReason, WorkloadFigures};
use serde::Serialize;

/// The workload table's columns.
const COLS: [(&str, bool); 13] = [
    ("Context", false),
    ("Rate", true),
    ("Workload", false),
    ("Time scale", true),
    ("Input asked", false),
    ("Input sent (min / p50 / max, mean)", false),
    ("Input KS (1 % critical)", false),
    ("Output asked", false),
    ("Output sent (min / p50 / max, mean)", false),
    ("Output KS (1 % critical)", false),
    ("Predicted cached tokens", true),
    ("Ran", true),
    ("Stopped by", false),
];

/// `1,024 / 2,048 / 4,096, 2,101.5`.
fn sent(f: &LengthFigures) -> String {
    format!(
        "{} / {} / {}, {}",
        number::count(f.min),
        number::count(f.p50),
        number::count(f.max),
        number::grouped(f.mean, 1)
    )
}

/// `0.021 (0.036)`.
fn ks(f: &LengthFigures) -> String {
    match (f.ks, f.ks_critical_1pct) {
        (Some(d), Some(c)) => format!("{d:.3} ({c:.3})"),
        _ => NULL.to_string(),
    }
}

/// Why a row's schedule stopped, in words.
pub(crate) fn stop_text(r: Option<StopReason>) -> String {
    match r {
        None => "its window".to_string(),
        Some(StopReason::Stable) => "stable figures".to_string(),
        Some(StopReason::Duration) => "--duration".to_string(),
        Some(StopReason::TraceEnd) => "the trace's end".to_string(),
        Some(StopReason::DrainCut) => "the drain limit".to_string(),
        Some(StopReason::Interrupted) => "an interrupt".to_string(),
    }
}

fn workload(c: &CellResult) -> Option<&WorkloadFigures> {
    c.rate.as_ref()?.workload.as_ref()
}

/// The texts of one row, in [`COLS`] order.
fn texts(c: &CellResult, w: &WorkloadFigures) -> Vec<String> {
    let predicted = w.predicted_cached_tokens.map(|p| {
        let share = w.input.mean * w.input.count as f64;
        if share > 0.0 {
            format!(
                "{} ({})",
                number::count(p),
                crate::load::percent(p as f64 / share)
            )
        } else {
            number::count(p)
        }
    });
    vec![
        Report::context_label(c),
        requested(c),
        w.source.clone(),
        number::or_null(w.time_scale, |k| format!("{k}×")),
        w.input.requested.clone(),
        sent(&w.input),
        ks(&w.input),
        w.output.requested.clone(),
        sent(&w.output),
        ks(&w.output),
        predicted.unwrap_or_else(|| NULL.to_string()),
        number::or_null(c.measured_s, |s| format!("{} s", number::grouped(s, 1))),
        stop_text(c.rate.as_ref().and_then(|f| f.stop_reason)),
    ]
}

impl Table {
    /// The rate cells whose requests varied; `None` when the run has none.
    pub fn workloads(report: &Report) -> Option<Table> {
        let rows: Vec<(&CellResult, Vec<String>)> = report
            .load_contexts()
            .into_iter()
            .flat_map(|l| l.rates)
            .filter_map(|c| Some((c, texts(c, workload(c)?))))
            .collect();
        if rows.is_empty() {
            return None;
        }
        Table::of_texts(&COLS, rows)
    }
}

/// One bar of a histogram.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Bar {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub title: String,
}

/// A histogram of one side of one row.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Histogram {
    pub id: String,
    pub title: String,
    pub width: f64,
    pub height: f64,
    pub frame: Frame,
    pub bars: Vec<Bar>,
    /// The expected counts, as a polyline through each bin's middle.
    pub expected: String,
}

fn histogram(id: String, title: String, f: &LengthFigures) -> Option<Histogram> {
    let top_x = f.histogram.last()?.hi as f64 + 1.0;
    let top_y = f
        .histogram
        .iter()
        .map(|b| (b.sent as f64).max(b.expected))
        .fold(1.0, f64::max);
    let frame = Frame::new(top_x, top_y, "tokens", "requests");
    let bars = f
        .histogram
        .iter()
        .map(|b| {
            let (x0, x1) = (frame.sx(b.lo as f64), frame.sx(b.hi as f64 + 1.0));
            let y = frame.sy(b.sent as f64);
            Bar {
                x: x0,
                y,
                w: r1((x1 - x0).max(1.0)),
                h: r1(frame.y0 - y),
                title: format!(
                    "{}–{} tokens: {} sent, {} expected",
                    number::count(b.lo),
                    number::count(b.hi),
                    number::count(b.sent),
                    number::grouped(b.expected, 1)
                ),
            }
        })
        .collect();
    let expected = f
        .histogram
        .iter()
        .map(|b| {
            let mid = (b.lo as f64 + b.hi as f64 + 1.0) / 2.0;
            format!("{},{}", frame.sx(mid), frame.sy(b.expected))
        })
        .collect::<Vec<_>>()
        .join(" ");
    Some(Histogram {
        id,
        title,
        width: W,
        height: H,
        frame,
        bars,
        expected,
    })
}

/// The page's histograms: input and output of every rate cell whose requests varied.
pub(crate) fn histograms(report: &Report) -> Vec<Histogram> {
    let mut out = Vec::new();
    let rows = report.load_contexts();
    for (i, c) in rows.iter().flat_map(|l| l.rates.iter()).enumerate() {
        let Some(w) = workload(c) else { continue };
        let at = format!("{} at {}", Report::context_label(c), requested(c));
        for (side, f) in [("input", &w.input), ("output", &w.output)] {
            let title = format!(
                "{at}: {side} lengths, {} asked ({} requests; KS {})",
                f.requested,
                number::count(f.count),
                ks(f)
            );
            out.extend(histogram(format!("workload-{i}-{side}"), title, f));
        }
    }
    out
}
