//! The Load section's throughput–latency charts: per context, request rate on x and one small
//! line chart per figure (TTFT p50 and p99, TPOT p50, goodput and achieved rate, SLO
//! attainment). Laid out here in SVG user units; the template only draws what it is given, and
//! every text in it is escaped like the rest of the page.
//!
//! A point sits at its cell's requested rate. Where the client achieved a rate more than 2 %
//! off it, the chart marks the achieved rate on the x axis (an arrow from the requested rate)
//! and the point's tooltip says so.

use crate::chart_frame::{Frame, H, W};
use crate::load::{self, LoadContext};
use crate::model::Report;
use crate::number;
use crate::number::req_rate;
use crate::table::Table;
use llmib_core::{CellResult, RateFigures, Summary};
use serde::Serialize;

/// A point of a series.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Point {
    pub x: f64,
    pub y: f64,
    /// Tooltip.
    pub title: String,
    /// The client did not achieve the requested rate here.
    pub off_pace: bool,
}

/// One line of a chart.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Series {
    pub name: String,
    /// CSS class (`s1` … `s3`), for its colour.
    pub class: &'static str,
    /// The polyline, `x,y x,y …`.
    pub line: String,
    pub points: Vec<Point>,
}

/// The achieved rate marked on the x axis where it differs from the requested rate.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Mark {
    pub from: f64,
    pub to: f64,
    pub title: String,
}

/// One small chart.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LineChart {
    pub id: String,
    pub title: String,
    pub width: f64,
    pub height: f64,
    pub frame: Frame,
    pub series: Vec<Series>,
    pub marks: Vec<Mark>,
}

/// A figure of a rate row for one series: its value, if any.
type Pick = fn(&CellResult) -> Option<f64>;

fn summary(
    c: &CellResult,
    s: fn(&RateFigures) -> Option<&Summary>,
    at: fn(&Summary) -> f64,
) -> Option<f64> {
    c.rate.as_deref().and_then(s).map(at)
}

/// A chart: its key (in the element id), title, unit and series.
type Spec = (
    &'static str,
    &'static str,
    &'static str,
    Vec<(&'static str, Pick)>,
);

/// The charts of a context, in the order the page shows them.
fn specs() -> Vec<Spec> {
    vec![
        (
            "ttft",
            "TTFT",
            "ms",
            vec![
                ("TTFT p50", |c| {
                    summary(c, |f| f.ttft_ms.as_ref(), |s| s.p50)
                }),
                ("TTFT p99", |c| {
                    summary(c, |f| f.ttft_ms.as_ref(), |s| s.p99)
                }),
            ],
        ),
        (
            "tpot",
            "TPOT p50",
            "ms",
            vec![("TPOT p50", |c| {
                summary(c, |f| f.tpot_ms.as_ref(), |s| s.p50)
            })],
        ),
        (
            "goodput",
            "Goodput and achieved rate",
            "req/s",
            vec![
                ("Goodput", |c| c.goodput_rps.flatten()),
                ("Achieved rate", |c| c.achieved_request_rate.flatten()),
            ],
        ),
        (
            "attainment",
            "SLO attainment",
            "%",
            vec![("Attainment", |c| {
                c.slo_attainment.flatten().map(|a| a * 100.0)
            })],
        ),
    ]
}

const CLASSES: [&str; 3] = ["s1", "s2", "s3"];

/// The charts of one context (a chart whose series have no point is left out).
pub(crate) fn context_charts(l: &LoadContext<'_>, index: usize) -> Vec<LineChart> {
    let rows: Vec<&CellResult> = l
        .rates
        .iter()
        .copied()
        .filter(|c| c.request_rate.is_some())
        .collect();
    specs()
        .into_iter()
        .filter_map(|(key, title, unit, picks)| {
            chart(&rows, &format!("load-{index}-{key}"), title, unit, &picks)
        })
        .collect()
}

/// One chart of `rows` with a series per pick; `None` when no row has any of the figures.
fn chart(
    rows: &[&CellResult],
    id: &str,
    title: &str,
    unit: &str,
    picks: &[(&'static str, Pick)],
) -> Option<LineChart> {
    let values: Vec<Vec<(f64, f64, &CellResult)>> = picks
        .iter()
        .map(|(_, pick)| {
            rows.iter()
                .filter_map(|c| Some((c.request_rate?, pick(c)?, *c)))
                .filter(|(x, y, _)| x.is_finite() && y.is_finite())
                .collect()
        })
        .collect();
    if values.iter().all(Vec::is_empty) {
        return None;
    }
    let achieved = rows
        .iter()
        .filter_map(|c| c.achieved_request_rate.flatten());
    let x_max = rows
        .iter()
        .filter_map(|c| c.request_rate)
        .chain(achieved)
        .fold(0.0_f64, f64::max);
    let y_max = if unit == "%" {
        100.0
    } else {
        values.iter().flatten().map(|v| v.1).fold(0.0_f64, f64::max)
    };
    let frame = Frame::new(x_max, y_max, "request rate (req/s)", unit);
    let (sx, sy) = (|v| frame.sx(v), |v| frame.sy(v));
    let series = picks
        .iter()
        .zip(&values)
        .zip(CLASSES)
        .map(|(((name, _), vals), class)| {
            let points: Vec<Point> = vals
                .iter()
                .map(|(x, y, c)| Point {
                    x: sx(*x),
                    y: sy(*y),
                    title: point_title(c, name, *y, unit),
                    off_pace: load::off_pace(c),
                })
                .collect();
            Series {
                name: name.to_string(),
                class,
                line: polyline(&points),
                points,
            }
        })
        .collect();
    let marks = achieved_marks(rows, &frame);
    Some(LineChart {
        id: id.to_string(),
        title: title.to_string(),
        width: W,
        height: H,
        frame,
        series,
        marks,
    })
}

/// A polyline through `points`: `x,y x,y …`.
pub(crate) fn polyline(points: &[Point]) -> String {
    points
        .iter()
        .map(|p| format!("{},{}", p.x, p.y))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The achieved rate of every off-pace row, marked on the x axis from its requested rate.
fn achieved_marks(rows: &[&CellResult], frame: &Frame) -> Vec<Mark> {
    rows.iter()
        .filter(|c| load::off_pace(c))
        .filter_map(|c| {
            let (r, a) = (c.request_rate?, c.achieved_request_rate.flatten()?);
            Some(Mark {
                from: frame.sx(r),
                to: frame.sx(a),
                title: format!("achieved {} of the {} asked", req_rate(a), req_rate(r)),
            })
        })
        .collect()
}

/// A point's tooltip: `8K at 10/s: TTFT p99 812 ms (achieved 9.2/s)`.
fn point_title(c: &CellResult, name: &str, y: f64, unit: &str) -> String {
    let value = match unit {
        "%" => format!("{}%", number::decimal1(y)),
        "req/s" => req_rate(y),
        _ => number::ttft_ms(y),
    };
    let mut s = format!(
        "{} at {}: {name} {value}",
        Report::context_label(c),
        crate::model::requested(c)
    );
    if load::off_pace(c) {
        s.push_str(&format!(" (achieved {})", load::achieved(c)));
    }
    s
}

/// One context of the Load section on the page.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ContextView {
    pub label: String,
    pub charts: Vec<LineChart>,
    pub pareto: Option<crate::pareto::ParetoChart>,
}

/// What the page's Load section draws; `None` when the run has no open-loop rows.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct LoadView {
    pub caption: &'static str,
    pub contexts: Vec<ContextView>,
    pub capacity: Option<Table>,
    pub rates: Option<Table>,
    pub warnings: Vec<String>,
    /// Rate cells whose requests varied (`crate::workload_view`).
    pub workloads: Option<Table>,
    pub histograms: Vec<crate::workload_view::Histogram>,
}

/// The Load section of `report`, or `None` without rate cells and capacity rows.
pub(crate) fn view(report: &Report) -> Option<LoadView> {
    if !report.has_load() {
        return None;
    }
    let contexts = report
        .load_contexts()
        .iter()
        .enumerate()
        .map(|(i, l)| ContextView {
            label: l.label.clone(),
            charts: context_charts(l, i),
            pareto: crate::pareto::chart(report, l.tokens, &l.label, i),
        })
        .collect();
    Some(LoadView {
        caption: load::LOAD_CAPTION,
        contexts,
        capacity: Table::capacity(report),
        rates: Table::rates(report),
        warnings: load::pacing_warnings(report),
        workloads: Table::workloads(report),
        histograms: crate::workload_view::histograms(report),
    })
}
