//! The Telemetry section: one small multiple per cell that has telemetry (`telemetry.jsonl`),
//! its strips stacked on one time axis (seconds from the cell's start): each GPU's SM clock,
//! power against its limit, utilisation and temperature, the clock event reasons that held the
//! clocks down, this machine's CPU, and the server's generation tok/s (from its counter's
//! deltas), running and waiting requests and KV cache use. The cell's stages are shaded behind
//! every strip (prompts and warm-up, the ramp, the measured window), so the step where a GPU
//! throttled is seen against what was being measured.
//!
//! Laid out here in SVG user units with `chart_frame` (each strip its own frame); the template
//! only draws what it is given, and every text in it is escaped like the rest of the page. A
//! run without `telemetry.jsonl` (an older run) has no section.

use crate::chart_frame::{Area, Frame, Tick, r1};
use crate::model::Report;
use crate::telemetry_strips::{StripData, strips};
use llmib_core::{CellResult, CellTelemetry, HardwareVerdict};
use serde::Serialize;

/// The figure's width and margins, SVG units.
const W: f64 = 360.0;
const LEFT: f64 = 44.0;
const RIGHT: f64 = 10.0;
const TOP: f64 = 4.0;
/// Each strip: its title line, then its plot.
const TITLE_H: f64 = 15.0;
const PLOT_H: f64 = 36.0;
const GAP: f64 = 6.0;
/// Below the last strip: the time axis' ticks and label.
const BOTTOM: f64 = 30.0;
/// A polyline keeps at most this many points (a long cell at two samples a second).
const MAX_POINTS: usize = 240;

/// The section's words above the figures.
pub(crate) const TELEMETRY_CAPTION: &str = "Each cell over time, seconds from its start: this machine's GPUs (one line each) and CPU, sampled twice a second where the server runs here, and the server's own counters and gauges, read once a second. Shaded: preparing prompts and warming up (grey), the ramp before the window opened (amber), what was measured (blue). Clock events mark the samples in which a GPU reported a power cap, thermal slowdown or hardware slowdown.";

/// What the page's Telemetry section draws.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct TelemetryView {
    pub caption: &'static str,
    pub cells: Vec<CellFigure>,
}

/// One cell's small multiple.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CellFigure {
    pub id: String,
    pub title: String,
    /// The hardware verdict in words where it is not ok.
    pub verdict: Option<&'static str>,
    pub width: f64,
    pub height: f64,
    /// The shaded stages span every strip: from `top` to `bottom`.
    pub top: f64,
    pub bottom: f64,
    pub x0: f64,
    pub x1: f64,
    pub x_ticks: Vec<Tick>,
    pub x_label: &'static str,
    pub bands: Vec<Band>,
    pub strips: Vec<Strip>,
}

/// A span of the time axis: a stage of the cell, or a run of samples with a clock event.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Band {
    pub x: f64,
    pub w: f64,
    /// CSS class: `prep`, `ramp`, `meas` (stages); `ev-power`, `ev-thermal`, `ev-hw` (events).
    pub class: &'static str,
    pub title: String,
}

/// One strip of a small multiple.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Strip {
    /// Its key (`sm`, `power`, `gen`, …), in the element's `data-strip`.
    pub key: &'static str,
    pub title: String,
    pub frame: Frame,
    /// The axis' ends only (a strip is too short for more).
    pub y_ticks: Vec<Tick>,
    pub lines: Vec<Line>,
    pub events: Vec<Band>,
}

/// One polyline of a strip.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Line {
    /// CSS class: `gpu`, `cpu`, `s1`, `s2`.
    pub class: &'static str,
    pub points: String,
    pub title: String,
}

/// The Telemetry section of `report`, or `None` when no cell has a series (an older run, or
/// one with neither a local server nor readable metrics).
pub(crate) fn view(report: &Report) -> Option<TelemetryView> {
    let cells: Vec<CellFigure> = report
        .cells
        .iter()
        .filter_map(|c| Some((c, report.telemetry_of(c)?)))
        .enumerate()
        .map(|(i, (c, t))| figure(i, c, t))
        .collect();
    (!cells.is_empty()).then_some(TelemetryView {
        caption: TELEMETRY_CAPTION,
        cells,
    })
}

impl Report {
    /// The telemetry line of a row, where it has one with a series.
    pub(crate) fn telemetry_of(&self, c: &CellResult) -> Option<&CellTelemetry> {
        let key = c.key();
        self.telemetry
            .iter()
            .find(|t| t.cell == key)
            .filter(|t| t.has_series())
    }

    /// The cells whose GPUs did not hold their clocks, in words (every exporter's notes).
    pub(crate) fn hardware_verdict_note(&self) -> Option<String> {
        let slowed: Vec<String> = self
            .cells
            .iter()
            .filter_map(|c| {
                let v = c.hardware_verdict.filter(|v| *v != HardwareVerdict::Ok)?;
                Some(format!("{} ({})", Self::cell_label(c), v.label()))
            })
            .collect();
        (!slowed.is_empty()).then(|| {
            format!(
                "The GPUs did not hold their clocks in {}: their clock event reasons showed it in at least 10 % of the cell's samples (docs/method-notes.md, Telemetry). These figures are those of slowed GPUs.",
                slowed.join(", ")
            )
        })
    }
}

/// A cell's figure: its strips stacked, its stages shaded behind them.
fn figure(index: usize, c: &CellResult, t: &CellTelemetry) -> CellFigure {
    let data = strips(t);
    let x_max = x_extent(t);
    let bottom = TOP + data.len() as f64 * (TITLE_H + PLOT_H + GAP) - GAP;
    let laid: Vec<Strip> = data
        .into_iter()
        .enumerate()
        .map(|(k, d)| strip(k, d, x_max))
        .collect();
    let axis = Frame::in_area(area(0), x_max, 1.0, "", "");
    CellFigure {
        id: format!("telemetry-{index}"),
        title: format!("{} {}", c.phase.label(), Report::cell_label(c)),
        verdict: c
            .hardware_verdict
            .filter(|v| *v != HardwareVerdict::Ok)
            .map(HardwareVerdict::label),
        width: W,
        height: bottom + BOTTOM,
        top: TOP,
        bottom,
        x0: axis.x0,
        x1: axis.x1,
        x_ticks: axis.x_ticks.clone(),
        x_label: "seconds from the cell's start",
        bands: stage_bands(t, &axis),
        strips: laid,
    }
}

/// The time axis' end: the recording's length, or its last sample where that is later.
fn x_extent(t: &CellTelemetry) -> f64 {
    let last = |v: &[f64]| v.last().copied().unwrap_or(0.0);
    let hw = t.hw.as_ref().map_or(0.0, |h| last(&h.t));
    let srv = t.srv.as_ref().map_or(0.0, |s| last(&s.t));
    t.dur.max(hw).max(srv).max(0.1)
}

/// The plot area of strip `k`.
fn area(k: usize) -> Area {
    let y1 = TOP + k as f64 * (TITLE_H + PLOT_H + GAP) + TITLE_H;
    Area {
        x0: LEFT,
        x1: W - RIGHT,
        y0: y1 + PLOT_H,
        y1,
    }
}

/// Strip `k` laid out: its frame, its lines as polylines, its events as bands.
fn strip(k: usize, d: StripData, x_max: f64) -> Strip {
    let y_data = d
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0_f64, f64::max);
    let y_max = d.floor_top.map_or(y_data, |f| f.max(y_data));
    let frame = Frame::in_area(area(k), x_max, y_max, "", d.unit);
    let y_ticks = match (frame.y_ticks.first(), frame.y_ticks.last()) {
        (Some(a), Some(b)) if !d.events_only => vec![a.clone(), b.clone()],
        _ => Vec::new(),
    };
    let lines = d
        .lines
        .iter()
        .map(|l| Line {
            class: l.class,
            points: polyline(&frame, &l.points),
            title: l.name.clone(),
        })
        .collect();
    let events = d
        .events
        .iter()
        .map(|e| Band {
            x: frame.sx(e.from),
            w: r1((frame.sx(e.to) - frame.sx(e.from)).max(1.0)),
            class: e.class,
            title: e.title.clone(),
        })
        .collect();
    Strip {
        key: d.key,
        title: if d.unit.is_empty() {
            d.title.to_string()
        } else {
            format!("{} ({})", d.title, d.unit)
        },
        frame,
        y_ticks,
        lines,
        events,
    }
}

/// `points` as an SVG polyline in `frame`, thinned to at most [`MAX_POINTS`].
fn polyline(frame: &Frame, points: &[(f64, f64)]) -> String {
    let step = points.len().div_ceil(MAX_POINTS).max(1);
    points
        .iter()
        .step_by(step)
        .map(|(t, v)| format!("{},{}", frame.sx(*t), frame.sy(*v)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The cell's stages as shaded bands: preparing (prompts, warm-ups), the ramp (streams
/// started, window not yet open) and what was measured (the window; a prefill, a burst or an
/// open loop). Counting after the window is left plain.
fn stage_bands(t: &CellTelemetry, frame: &Frame) -> Vec<Band> {
    let mut out = Vec::new();
    let mut band = |from: f64, to: f64, class: &'static str, what: &str| {
        if to > from {
            out.push(Band {
                x: frame.sx(from),
                w: r1((frame.sx(to) - frame.sx(from)).max(0.5)),
                class,
                title: format!("{what}: {from:.2}–{to:.2} s"),
            });
        }
    };
    for (k, (start, stage)) in t.ph.iter().enumerate() {
        let end = t.ph.get(k + 1).map_or(t.dur, |n| n.0);
        match (stage.as_str(), t.win) {
            ("window", Some([open, close])) => {
                band(*start, open.min(end), "ramp", "ramp");
                band(open, close, "meas", "measured window");
            }
            ("window", None) => band(*start, end, "ramp", "window (not measured)"),
            ("prefill" | "burst" | "open loop", _) => band(*start, end, "meas", stage),
            ("counting", _) => {}
            (other, _) => band(*start, end, "prep", other),
        }
    }
    if let (Some([open, close]), false) = (t.win, t.ph.iter().any(|p| p.1 == "window")) {
        band(open, close, "meas", "measured window");
    }
    out
}

#[cfg(test)]
#[path = "tests/telemetry.rs"]
mod tests;
