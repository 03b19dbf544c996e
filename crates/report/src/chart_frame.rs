//! The frame of the report's small SVG charts (the Load section's throughput–latency charts,
//! the Pareto chart, the telemetry strips): size, margins, nice axis steps and ticks, and the
//! mapping from values to SVG units.

use crate::number;
use serde::Serialize;

/// Chart size and plot margins, SVG units.
pub(crate) const W: f64 = 360.0;
pub(crate) const H: f64 = 220.0;
const LEFT: f64 = 58.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 14.0;
const BOTTOM: f64 = 40.0;

/// One tick of an axis: where, and its label.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Tick {
    pub pos: f64,
    pub label: String,
}

/// The plot area and its axes.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Frame {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
    /// The values at the ends of the axes.
    pub x_top: f64,
    pub y_top: f64,
    pub x_ticks: Vec<Tick>,
    pub y_ticks: Vec<Tick>,
    pub x_label: String,
    pub y_label: String,
}

/// Rounds to one decimal (SVG coordinates stay short).
pub(crate) fn r1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// A "nice" step (1, 2, 2.5 or 5 × 10^k) that cuts `max` into about four ticks.
pub(crate) fn nice_step(max: f64) -> f64 {
    if !(max.is_finite() && max > 0.0) {
        return 1.0;
    }
    let raw = max / 4.0;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let m = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

/// The axis top (a whole number of steps at or above `max`) and its ticks from 0.
fn ticks(max: f64, fmt: fn(f64) -> String) -> (f64, Vec<(f64, String)>) {
    let step = nice_step(max);
    let n = (max / step).ceil().max(1.0) as u32;
    let top = step * f64::from(n);
    let t = (0..=n)
        .map(|i| {
            let v = step * f64::from(i);
            (v, fmt(v))
        })
        .collect();
    (top, t)
}

/// A short axis number: `12`, `2.5`, `1.2K`.
pub(crate) fn axis_num(v: f64) -> String {
    if v.abs() >= 10_000.0 {
        format!("{}K", number::grouped(v / 1000.0, 0))
    } else if v.abs() >= 1000.0 {
        format!("{}K", number::grouped(v / 1000.0, 1))
    } else if (v - v.round()).abs() < 1e-9 {
        number::grouped(v, 0)
    } else {
        let s = number::grouped(v, 3);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Where a frame's plot lies in its SVG, SVG units: left and right, bottom and top.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Area {
    pub x0: f64,
    pub x1: f64,
    pub y0: f64,
    pub y1: f64,
}

impl Frame {
    /// Axes from 0 to the data's maxima, rounded up to a whole number of nice steps.
    pub(crate) fn new(x_max: f64, y_max: f64, x_label: &str, y_label: &str) -> Frame {
        let area = Area {
            x0: LEFT,
            x1: W - RIGHT,
            y0: H - BOTTOM,
            y1: TOP,
        };
        Frame::in_area(area, x_max, y_max, x_label, y_label)
    }

    /// [`Frame::new`] with the plot in `area` (the strips of a telemetry small multiple share
    /// one SVG, each its own frame).
    pub(crate) fn in_area(
        area: Area,
        x_max: f64,
        y_max: f64,
        x_label: &str,
        y_label: &str,
    ) -> Frame {
        let (x_top, xs) = ticks(x_max, axis_num);
        let (y_top, ys) = ticks(y_max, axis_num);
        let mut f = Frame {
            x0: area.x0,
            x1: area.x1,
            y0: area.y0,
            y1: area.y1,
            x_top,
            y_top,
            x_ticks: Vec::new(),
            y_ticks: Vec::new(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
        };
        f.x_ticks = xs
            .into_iter()
            .map(|(v, label)| Tick {
                pos: f.sx(v),
                label,
            })
            .collect();
        f.y_ticks = ys
            .into_iter()
            .map(|(v, label)| Tick {
                pos: f.sy(v),
                label,
            })
            .collect();
        f
    }

    /// Where `v` lies on the x axis.
    pub(crate) fn sx(&self, v: f64) -> f64 {
        r1(self.x0 + v / self.x_top * (self.x1 - self.x0))
    }

    /// Where `v` lies on the y axis.
    pub(crate) fn sy(&self, v: f64) -> f64 {
        r1(self.y0 - v / self.y_top * (self.y0 - self.y1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps_and_axis_numbers() {
        assert_eq!(nice_step(10.0), 2.5);
        assert_eq!(nice_step(100.0), 25.0);
        assert_eq!(nice_step(16.0), 5.0);
        assert_eq!(nice_step(7.0), 2.0);
        assert_eq!(nice_step(0.0), 1.0);
        assert_eq!(axis_num(2.5), "2.5");
        assert_eq!(axis_num(1500.0), "1.5K");
        assert_eq!(axis_num(20.0), "20");
        let (top, t) = ticks(9.0, axis_num);
        assert_eq!(top, 10.0);
        assert_eq!(t.len(), 5);
    }
}
