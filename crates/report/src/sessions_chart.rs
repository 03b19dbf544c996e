//! The page's Sessions section: the session matrix as the page draws it (shaded like the decode
//! matrix, its status styling, a note beside a cell), two small charts against history depth
//! (TTFT p50, and the measured hit rate, one line per S) and the per-turn table. Laid out here;
//! `templates/sessions.html` only draws it, and escapes every text like the rest of the page.

use crate::chart_frame::{Frame, H, W};
use crate::load_chart::{LineChart, Point, Series};
use crate::model::Report;
use crate::number;
use crate::sessions::{self, CellLine};
use crate::table::{Table, status_key};
use llmib_core::CellResult;
use serde::Serialize;

/// One cell of the session matrix.
#[derive(Debug, Serialize)]
struct SessionCell {
    status: String,
    /// S.
    s: u32,
    lines: Vec<CellLine>,
    /// Shade 0–1 by total tok/s relative to the best session cell; None without figures.
    alpha: Option<String>,
    /// Dark enough that text must turn white.
    hot: bool,
    tooltip: String,
    /// The status reason or the cache note, shown beside the figures.
    note: Option<String>,
}

/// One history depth of the matrix.
#[derive(Debug, Serialize)]
struct SessionRow {
    label: String,
    cells: Vec<Option<SessionCell>>,
}

/// The matrix: columns are S, rows history depths.
#[derive(Debug, Serialize)]
struct SessionMatrix {
    sessions: Vec<u32>,
    rows: Vec<SessionRow>,
}

/// What the page's Sessions section draws.
#[derive(Debug, Serialize)]
pub(crate) struct SessionsView {
    caption: &'static str,
    matrix: SessionMatrix,
    charts: Vec<LineChart>,
    /// The non-Valid statuses of session cells, explained.
    legend: Vec<crate::legend::LegendEntry>,
    turns: Option<Table>,
    /// Per row of `turns`: whether it is a cell's warm-up turn 0.
    warmup: Vec<bool>,
}

/// A cell's tooltip: its name, status, every line, the reason and the first error.
fn tooltip(c: &CellResult, lines: &[CellLine]) -> String {
    let mut s = format!(
        "{} × {} sessions: {}",
        Report::context_label(c),
        c.concurrency,
        c.status.label()
    );
    if c.status.has_figures() {
        for l in lines {
            s.push_str(&format!("\n{}", l.text));
        }
    }
    if let Some(r) = &c.status_reason {
        s.push_str(&format!("\n{r}"));
    }
    if let Some(e) = &c.first_error {
        s.push_str(&format!("\nFirst error: {e}"));
    }
    s
}

fn matrix(report: &Report) -> SessionMatrix {
    let m = report.session_matrix();
    let max = report
        .sessions()
        .filter(|c| c.status.has_figures())
        .filter_map(|c| c.total_tok_per_s)
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(0.0_f64, f64::max);
    let cell = |c: &CellResult| {
        let t = c
            .total_tok_per_s
            .filter(|v| c.status.has_figures() && v.is_finite() && max > 0.0)
            .map(|v| (v / max).clamp(0.0, 1.0));
        let lines = sessions::cell_lines(c);
        SessionCell {
            status: status_key(c),
            s: c.concurrency,
            tooltip: tooltip(c, &lines),
            lines,
            alpha: t.map(|t| format!("{t:.3}")),
            // The decode matrix's threshold: past it the blue needs white text.
            hot: t.is_some_and(|t| 0.1 + t * 0.8 > 0.55),
            note: sessions::cell_note(c),
        }
    };
    let rows = m
        .contexts
        .iter()
        .zip(&m.cells)
        .map(|((_, label), row)| SessionRow {
            label: label.clone(),
            cells: row.iter().map(|c| c.map(cell)).collect(),
        })
        .collect();
    SessionMatrix {
        sessions: m.concurrency,
        rows,
    }
}

/// A figure of a session row for a chart, with its tooltip.
type Pick = fn(&CellResult) -> Option<(f64, String)>;

const CLASSES: [&str; 3] = ["s1", "s2", "s3"];

/// A point before layout: history depth (K tokens), value, tooltip.
type Raw = (f64, f64, String);

/// Each S's points of `pick`, in depth order (cells without figures left out).
fn points_by_s(report: &Report, pick: Pick) -> Vec<(u32, Vec<Raw>)> {
    let m = report.session_matrix();
    m.concurrency
        .iter()
        .enumerate()
        .map(|(j, s)| {
            let pts = m
                .cells
                .iter()
                .filter_map(|row| row[j].filter(|c| c.status.has_figures()))
                .filter_map(|c| {
                    let (y, title) = pick(c)?;
                    let x = c.context_tokens as f64 / 1024.0;
                    (y.is_finite() && x.is_finite()).then_some((x, y, title))
                })
                .collect();
            (*s, pts)
        })
        .collect()
}

/// One chart with a line per S against history depth (K tokens); `None` when fewer than two
/// depths have the figure (one point is not a line: the matrix says it).
fn chart(report: &Report, id: &str, title: &str, unit: &str, pick: Pick) -> Option<LineChart> {
    let per_s = points_by_s(report, pick);
    if per_s.iter().map(|(_, v)| v.len()).max().unwrap_or(0) < 2 {
        return None;
    }
    let all = || per_s.iter().flat_map(|(_, v)| v.iter());
    let x_max = all().map(|p| p.0).fold(0.0_f64, f64::max);
    let y_max = if unit == "%" {
        100.0
    } else {
        all().map(|p| p.1).fold(0.0_f64, f64::max)
    };
    let frame = Frame::new(x_max, y_max, "history depth (K tokens)", unit);
    let series = per_s
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .enumerate()
        .map(|(i, (s, v))| {
            let points: Vec<Point> = v
                .iter()
                .map(|(x, y, title)| Point {
                    x: frame.sx(*x),
                    y: frame.sy(*y),
                    title: title.clone(),
                    off_pace: false,
                })
                .collect();
            Series {
                name: format!("S = {s}"),
                class: CLASSES[i % CLASSES.len()],
                line: crate::load_chart::polyline(&points),
                points,
            }
        })
        .collect();
    Some(LineChart {
        id: id.to_string(),
        title: title.to_string(),
        width: W,
        height: H,
        frame,
        series,
        marks: Vec::new(),
    })
}

/// The two charts: TTFT p50 and the measured hit rate (its tooltip names the predicted).
fn charts(report: &Report) -> Vec<LineChart> {
    let ttft: Pick = |c| {
        let v = c.ttft_ms_p50?;
        let t = format!("{}: TTFT p50 {}", Report::cell_label(c), number::ttft_ms(v));
        Some((v, t))
    };
    let hit: Pick = |c| {
        let v = c.session.cache_hit_rate.flatten()?;
        let t = format!(
            "{}: hit rate {} (measured / predicted)",
            Report::cell_label(c),
            sessions::hit_rates(c)
        );
        Some((v * 100.0, t))
    };
    [
        chart(report, "session-ttft", "TTFT p50", "ms", ttft),
        chart(report, "session-hit-rate", "Cache hit rate", "%", hit),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The Sessions section of `report`, or `None` without session rows.
pub(crate) fn view(report: &Report) -> Option<SessionsView> {
    if !report.has_sessions() {
        return None;
    }
    let turns = sessions::turn_rows(report);
    Some(SessionsView {
        caption: sessions::SESSIONS_CAPTION,
        matrix: matrix(report),
        charts: charts(report),
        legend: crate::legend::legend(
            &crate::model::LEGEND_ORDER
                .into_iter()
                .filter(|s| report.sessions().any(|c| c.status == *s))
                .collect::<Vec<_>>(),
        ),
        turns: Table::session_turns(report),
        warmup: turns.iter().map(|(_, t)| !t.measured).collect(),
    })
}
