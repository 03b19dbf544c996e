//! The HTML page: one self-contained file (inline CSS, inline SVG chart, a little inline script)
//! drawn by minijinja templates from `templates/`. Auto-escaping is on for every `.html`
//! template, so any string from a server or a user (model name, GPU name, launch command, error
//! text) is printed as text. The only unescaped values are our own CSS and script, compiled in.

use crate::legend::legend;
use crate::model::Report;
use crate::number;
use crate::table::{self, Column, Table, status_key};
use crate::{Exporter, Format, ReportError};
use llmib_core::CellResult;
use minijinja::{Environment, Value};
use serde::Serialize;

/// The page's stylesheet (shared with the compare page).
pub const CSS: &str = include_str!("../templates/style.css");
/// The page's script: copy button and table sorting.
pub const JS: &str = include_str!("../templates/script.js");
const REPORT_TEMPLATE: &str = include_str!("../templates/report.html");
const COMPARE_TEMPLATE: &str = include_str!("../templates/compare.html");
const ACCURACY_TEMPLATE: &str = include_str!("../templates/accuracy.html");
const LOAD_TEMPLATE: &str = include_str!("../templates/load.html");
const SESSIONS_TEMPLATE: &str = include_str!("../templates/sessions.html");
const CHART_TEMPLATE: &str = include_str!("../templates/chart.html");
const TELEMETRY_TEMPLATE: &str = include_str!("../templates/telemetry.html");
const SWEEP_TEMPLATE: &str = include_str!("../templates/sweep.html");

/// The HTML exporter.
#[derive(Debug, Clone, Copy, Default)]
pub struct HtmlExporter;

/// The template environment. Names end in `.html`, which turns HTML auto-escaping on.
pub(crate) fn environment() -> Result<Environment<'static>, ReportError> {
    let mut env = Environment::new();
    let err = |name: &str| {
        let name = name.to_string();
        move |e: minijinja::Error| ReportError::Template {
            template: name,
            detail: e.to_string(),
        }
    };
    env.add_template("report.html", REPORT_TEMPLATE)
        .map_err(err("report.html"))?;
    env.add_template("compare.html", COMPARE_TEMPLATE)
        .map_err(err("compare.html"))?;
    env.add_template("accuracy.html", ACCURACY_TEMPLATE)
        .map_err(err("accuracy.html"))?;
    env.add_template("load.html", LOAD_TEMPLATE)
        .map_err(err("load.html"))?;
    env.add_template("sessions.html", SESSIONS_TEMPLATE)
        .map_err(err("sessions.html"))?;
    env.add_template("chart.html", CHART_TEMPLATE)
        .map_err(err("chart.html"))?;
    env.add_template("telemetry.html", TELEMETRY_TEMPLATE)
        .map_err(err("telemetry.html"))?;
    env.add_template("sweep.html", SWEEP_TEMPLATE)
        .map_err(err("sweep.html"))?;
    Ok(env)
}

/// Renders `name` with `ctx`, mapping template errors.
pub(crate) fn render_template(name: &str, ctx: Value) -> Result<String, ReportError> {
    let env = environment()?;
    let tmpl = env.get_template(name).map_err(|e| ReportError::Template {
        template: name.to_string(),
        detail: e.to_string(),
    })?;
    tmpl.render(ctx).map_err(|e| ReportError::Template {
        template: name.to_string(),
        detail: format!("{e:#}"),
    })
}

/// A serializable value for a template context.
pub(crate) fn ser<T: Serialize>(v: T) -> Value {
    Value::from(minijinja::value::Serde(v))
}

/// Who wrote the page (this build), for the footer.
pub fn generator() -> String {
    format!("llm-inference-bench {}", env!("CARGO_PKG_VERSION"))
}

/// One bar of the prefill chart, laid out in SVG user units.
#[derive(Debug, Serialize)]
struct Bar {
    label: String,
    status: String,
    value: String,
    ttft: String,
    y: u32,
    width: u32,
    /// Where the value and the TTFT go: `inside` (both in the bar), `split` (value in the bar,
    /// TTFT after it) or `outside` (both after it).
    layout: &'static str,
    /// The phone chart: row top, bar width, whether the value fits inside the bar.
    cy: u32,
    cwidth: u32,
    cinside: bool,
}

/// The prefill chart's geometry.
#[derive(Debug, Serialize)]
struct PrefillChart {
    width: u32,
    height: u32,
    label_x: u32,
    bar_x: u32,
    /// The phone chart's size: label and TTFT above each bar, so the text stays legible.
    cwidth: u32,
    cheight: u32,
    bars: Vec<Bar>,
}

const CHART_W: u32 = 640;
const LABEL_W: u32 = 104;
const ROW_H: u32 = 34;
const PHONE_W: u32 = 340;
const PHONE_ROW_H: u32 = 44;

/// Rough text widths in SVG units at the chart's 13px (bold for values), to decide what fits
/// inside a bar. Digits and `,` dominate, so a per-character width is close enough.
fn value_w(s: &str) -> u32 {
    (s.chars().count() as u32).saturating_mul(9) + 16
}
fn ttft_w(s: &str) -> u32 {
    (s.chars().count() as u32).saturating_mul(7) + 14
}

fn prefill_chart(report: &Report) -> PrefillChart {
    let rows: Vec<&CellResult> = report.prefill().collect();
    let max = rows
        .iter()
        .filter(|c| c.status.has_figures())
        .filter_map(|c| table::total(c))
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(0.0_f64, f64::max);
    let span = CHART_W - LABEL_W - 4;
    let bars = rows
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let v = table::total(c).filter(|_| c.status.has_figures());
            let scaled = |span: u32| match v {
                Some(v) if max > 0.0 && v.is_finite() && v > 0.0 => ((v / max) * f64::from(span))
                    .round()
                    .clamp(2.0, f64::from(span))
                    as u32,
                _ => 0,
            };
            let width = scaled(span);
            let cwidth = scaled(PHONE_W);
            let value = match v {
                Some(v) => number::rate_compact(v),
                None => c.status.label().to_string(),
            };
            let ttft = match c.ttft_ms_p50 {
                Some(t) if v.is_some() => format!("{} TTFT", number::ttft_ms(t)),
                _ => String::new(),
            };
            let layout = if width >= value_w(&value) + ttft_w(&ttft) + 8 {
                "inside"
            } else if width >= value_w(&value) {
                "split"
            } else {
                "outside"
            };
            Bar {
                label: Report::context_label(c),
                status: status_key(c),
                cinside: cwidth >= value_w(&value),
                value,
                ttft,
                y: (i as u32).saturating_mul(ROW_H),
                width,
                layout,
                cy: (i as u32).saturating_mul(PHONE_ROW_H),
                cwidth,
            }
        })
        .collect();
    PrefillChart {
        width: CHART_W,
        height: (rows.len() as u32).saturating_mul(ROW_H).max(ROW_H),
        label_x: LABEL_W - 10,
        bar_x: LABEL_W,
        cwidth: PHONE_W,
        cheight: (rows.len() as u32)
            .saturating_mul(PHONE_ROW_H)
            .max(PHONE_ROW_H),
        bars,
    }
}

/// One cell of the heatmap.
#[derive(Debug, Serialize)]
struct HeatCell {
    status: String,
    n: u32,
    lines: Vec<String>,
    /// Shade 0–1 by total tok/s relative to the matrix's best; None without figures.
    alpha: Option<String>,
    /// Dark enough that text must turn white.
    hot: bool,
    tooltip: String,
}

#[derive(Debug, Serialize)]
struct HeatRow {
    label: String,
    cells: Vec<Option<HeatCell>>,
}

#[derive(Debug, Serialize)]
struct HeatMatrix {
    concurrency: Vec<u32>,
    rows: Vec<HeatRow>,
}

/// Words for a cell's tooltip: every figure of the row, plus why it has none.
pub(crate) fn tooltip(c: &CellResult) -> String {
    let mut s = format!(
        "{} × {} requests: {}",
        Report::context_label(c),
        c.concurrency,
        c.status.label()
    );
    if c.status.has_figures() {
        for col in Column::FIGURES.iter() {
            s.push_str(&format!("\n{}: {}", col.title(), col.text(c)));
        }
    }
    if let Some(r) = &c.status_reason {
        s.push_str(&format!("\n{r}"));
    }
    if let Some(e) = &c.first_error {
        s.push_str(&format!("\nFirst error: {e}"));
    }
    if let Some(v) = c
        .hardware_verdict
        .filter(|v| *v != llmib_core::HardwareVerdict::Ok)
    {
        s.push_str(&format!("\nGPU clocks: {}", v.label()));
    }
    s
}

fn heat_matrix(report: &Report) -> HeatMatrix {
    let m = report.matrix();
    let max = report
        .decode()
        .filter(|c| c.status.has_figures())
        .filter_map(|c| c.total_tok_per_s)
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(0.0_f64, f64::max);
    let rows = m
        .contexts
        .iter()
        .zip(&m.cells)
        .map(|((_, label), row)| HeatRow {
            label: label.clone(),
            cells: row
                .iter()
                .map(|c| {
                    c.map(|c| {
                        let t = c
                            .total_tok_per_s
                            .filter(|v| c.status.has_figures() && v.is_finite() && max > 0.0)
                            .map(|v| (v / max).clamp(0.0, 1.0));
                        HeatCell {
                            status: status_key(c),
                            n: c.concurrency,
                            lines: table::matrix_cell_lines(c),
                            alpha: t.map(|t| format!("{t:.3}")),
                            // Past ~60 % shade the blue is dark enough to need white text.
                            hot: t.is_some_and(|t| 0.1 + t * 0.8 > 0.55),
                            tooltip: tooltip(c),
                        }
                    })
                })
                .collect(),
        })
        .collect();
    HeatMatrix {
        concurrency: m.concurrency,
        rows,
    }
}

impl Exporter for HtmlExporter {
    fn format(&self) -> Format {
        Format::Html
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let ctx = minijinja::context! {
            title => ser(report.title()),
            summary => ser(report.summary_line()),
            cards => ser(report.cards()),
            launch_command => ser(report.launch_command()),
            prefill => ser(prefill_chart(report)),
            prefill_rows => ser(report.prefill().map(table::prefill_row).collect::<Vec<_>>()),
            matrix => ser(heat_matrix(report)),
            legend => ser(legend(&report.statuses_present())),
            table => ser(Table::measurements(report, &Column::ALL)),
            hardware => ser(Table::hardware(report)),
            economics => ser(Table::economics(report)),
            economics_caption => ser(crate::table::ECONOMICS_CAPTION),
            telemetry => ser(crate::telemetry_chart::view(report)),
            speculative => ser(Table::speculative(report)),
            bursts => ser(Table::bursts(report)),
            mixed => ser(Table::mixed_prefill(report)),
            mixed_caption => ser(crate::mixed::MIXED_CAPTION),
            probes => ser(Table::probes(report)),
            probes_caption => ser(crate::probe::PROBE_CAPTION),
            percentiles => ser(Table::percentiles(report)),
            percentiles_caption => ser(crate::percentiles::PERCENTILES_CAPTION),
            lora => ser(Table::lora(report)),
            lora_caption => ser(crate::lora::LORA_CAPTION),
            images => ser(Table::images(report)),
            images_caption => ser(crate::images::IMAGES_CAPTION),
            structured => ser(Table::structured(report)),
            structured_caption => ser(crate::structured::STRUCTURED_CAPTION),
            load => ser(crate::load_chart::view(report)),
            sessions => ser(crate::sessions_chart::view(report)),
            shards => ser(crate::shards::view(report)),
            diagnostics => ser(crate::diagnostics::view(report)),
            diagnostics_caption => ser(crate::diagnostics::CAPTION),
            notes => ser(report.notes()),
            generator => ser(generator()),
            css => Value::from_safe_string(CSS.to_string()),
            js => Value::from_safe_string(JS.to_string()),
        };
        render_template("report.html", ctx)
    }
}
