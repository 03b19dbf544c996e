//! Draws the dashboard ([`Dashboard`]) with ratatui: header, current cell, server gauges,
//! hardware, the prefill table and decode matrix filling in, the event log and a footer. A
//! terminal under 100 columns or 30 rows gets the compact layout (no borders, one line per
//! panel). Everything shown from the server was sanitised when it entered the model.

use super::session_lines::session_lines;
use super::style::{bold, dim};
use super::tables::{matrices, prefill_lines};
use super::view::{Dashboard, LiveFigures, OpenFigures, cell_name};
use super::viewer::draw_viewer;
use llmib_core::short_duration;
use llmib_core::{CpuReading, GpuReading, HwSample};
use llmib_report::number::rate;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph};
use std::time::Instant;

/// Below either, the compact layout.
const WIDE_MIN: (u16, u16) = (100, 30);
/// Rows the wide layout's event log keeps when the hardware panel grows for more GPUs.
const LOG_MIN: u16 = 8;

/// Draws the whole dashboard at `now`; `hw` is the latest hardware reading (`None`: the
/// monitor is off or has not read yet).
pub fn draw(f: &mut Frame, d: &Dashboard, hw: Option<&HwSample>, now: Instant) {
    let area = f.area();
    if area.width < WIDE_MIN.0 || area.height < WIDE_MIN.1 {
        draw_compact(f, d, hw, now, area);
    } else {
        draw_wide(f, d, hw, now, area);
    }
    if let Some(v) = &d.viewer {
        draw_viewer(f, v, area);
    }
}

fn draw_wide(f: &mut Frame, d: &Dashboard, hw: Option<&HwSample>, now: Instant, area: Rect) {
    // A matrix is as wide as the area less the prefill table (30) and its own borders.
    let shown = matrices(d, area.width.saturating_sub(32));
    let heights: Vec<u16> = shown.iter().map(|(_, m)| m.len() as u16 + 2).collect();
    let tables_h = heights
        .iter()
        .sum::<u16>()
        .min(area.height.saturating_sub(16))
        .max(4);
    // The middle row grows to show every GPU (totals, one line each, the CPU, borders) while
    // the event log keeps 8 rows; what does not fit is counted in a "+N more GPUs" line.
    let gpu_rows = hw.filter(|_| d.hw_on).map_or(0, |s| s.gpus.len() as u16);
    let spare = area.height.saturating_sub(2 + 7 + tables_h + 1 + LOG_MIN);
    let mid_h = (gpu_rows + 5).clamp(7, 7 + spare);
    let [head, mid, tables, log, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(mid_h),
        Constraint::Length(tables_h),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(area);
    f.render_widget(Paragraph::new(header_lines(d)), head);
    let [cur, server, hwa] = Layout::horizontal([
        Constraint::Percentage(38),
        Constraint::Percentage(24),
        Constraint::Percentage(38),
    ])
    .areas(mid);
    draw_current(f, d, now, cur, true);
    f.render_widget(
        Paragraph::new(server_lines(d)).block(Block::bordered().title(" Server ")),
        server,
    );
    let hw_rows = hwa.height.saturating_sub(2) as usize;
    f.render_widget(
        Paragraph::new(hw_lines(d, hw, hw_rows)).block(Block::bordered().title(hw_title(d))),
        hwa,
    );
    let [pre, dec] =
        Layout::horizontal([Constraint::Length(30), Constraint::Min(20)]).areas(tables);
    f.render_widget(
        Paragraph::new(prefill_lines(d)).block(Block::bordered().title(" Prefill ")),
        pre,
    );
    // Stacked, each its own block and title; the last takes what the first leave.
    let n = heights.len();
    let rows = Layout::vertical(heights.iter().enumerate().map(|(i, h)| match i + 1 == n {
        true => Constraint::Min(3),
        false => Constraint::Length(*h),
    }))
    .split(dec);
    for ((title, lines), at) in shown.into_iter().zip(rows.iter()) {
        f.render_widget(
            Paragraph::new(lines).block(Block::bordered().title(title)),
            *at,
        );
    }
    let log_rows = log.height.saturating_sub(2) as usize;
    f.render_widget(
        Paragraph::new(log_lines(d, log_rows)).block(Block::bordered().title(" Events ")),
        log,
    );
    f.render_widget(Paragraph::new(footer_line(d, now)), foot);
}

fn draw_compact(f: &mut Frame, d: &Dashboard, hw: Option<&HwSample>, now: Instant, area: Rect) {
    // No borders: the matrices one under the other, their heads (N=, S=) telling them apart.
    let matrix: Vec<Line> = matrices(d, area.width)
        .into_iter()
        .flat_map(|(_, m)| m)
        .collect();
    let [head, cur, server, hwa, tables, log, foot] = Layout::vertical([
        Constraint::Length(2),
        Constraint::Length(3),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(
            (matrix.len() as u16)
                .min(area.height.saturating_sub(10))
                .max(2),
        ),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let h = &d.header;
    let kv =
        h.kv.as_ref()
            .map_or("KV capacity unknown".into(), |(t, _)| {
                format!("KV {} tokens", llmib_report::number::count(*t))
            });
    f.render_widget(
        Paragraph::new(vec![
            Line::from(vec![
                Span::styled(h.model.clone(), bold()),
                Span::raw(format!(" · {} · {}", h.engine, h.url)),
            ]),
            Line::styled(
                format!(
                    "{kv} · {} cells planned, {} over capacity",
                    h.planned, h.over_capacity
                ),
                dim(),
            ),
        ]),
        head,
    );
    draw_current(f, d, now, cur, false);
    let server_text: Vec<Span> = server_lines(d)
        .into_iter()
        .flat_map(|l| {
            let mut v = l.spans;
            v.push(Span::raw("  "));
            v
        })
        .collect();
    f.render_widget(Paragraph::new(Line::from(server_text)), server);
    let hw_line = hw_lines(d, hw, 1).into_iter().next().unwrap_or_default();
    f.render_widget(Paragraph::new(hw_line), hwa);
    f.render_widget(Paragraph::new(matrix), tables);
    f.render_widget(Paragraph::new(log_lines(d, log.height as usize)), log);
    f.render_widget(Paragraph::new(footer_line(d, now)), foot);
}

fn header_lines(d: &Dashboard) -> Vec<Line<'static>> {
    let h = &d.header;
    let kv = match &h.kv {
        Some((t, src)) => format!("KV {} tokens ({src})", llmib_report::number::count(*t)),
        None => "KV capacity unknown".into(),
    };
    vec![
        Line::from(vec![
            Span::styled("llm-inference-bench ", Style::new().fg(Color::Cyan)),
            Span::styled(h.model.clone(), bold()),
            Span::raw(format!(" · {}", h.engine)),
        ]),
        Line::from(Span::styled(
            format!(
                "{} · {kv} · {} cells planned, {} over capacity",
                h.url, h.planned, h.over_capacity
            ),
            dim(),
        )),
    ]
}

/// The current cell: name, phase, the window's progress bar, live figures.
fn draw_current(f: &mut Frame, d: &Dashboard, now: Instant, area: Rect, bordered: bool) {
    let inner = if bordered {
        let b = Block::bordered().title(" Current cell ");
        let i = b.inner(area);
        f.render_widget(b, area);
        i
    } else {
        area
    };
    let Some(c) = &d.current else {
        f.render_widget(Paragraph::new("between cells"), inner);
        return;
    };
    let [title, bar, rest] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Min(0),
    ])
    .areas(inner);
    let elapsed = now.saturating_duration_since(c.started).as_secs_f64();
    let phase = c.phase.label();
    let name = cell_name(&c.cell);
    let words = c.words();
    f.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(name.clone(), bold()),
            Span::raw(format!(
                "{} · {}/{} · {}",
                words.strip_prefix(&name).unwrap_or_default(),
                c.index + 1,
                c.total,
                short_duration(elapsed)
            )),
        ])),
        title,
    );
    let l = &d.live;
    if let Some(s) = &l.sessions {
        // The turns' bar; before and after the turns, the stage beside it.
        let (ratio, label) = match (c.doing(), s.bar()) {
            ("turns", Some(b)) => b,
            (doing, Some((r, turns))) => (r, format!("{doing} · {turns}")),
            (doing, None) => (0.0, doing.to_string()),
        };
        let gauge = Gauge::default().gauge_style(Style::new().fg(Color::Cyan));
        f.render_widget(gauge.ratio(ratio).label(label), bar);
        draw_lines(f, session_lines(l, s, rest.width as usize), rest);
        return;
    }
    if let Some(o) = &l.open {
        let ratio = if o.scheduled > 0 {
            o.fired as f64 / o.scheduled as f64
        } else {
            0.0
        };
        let label = format!("sent {}/{}", o.fired, o.scheduled);
        let gauge = Gauge::default().gauge_style(Style::new().fg(Color::Cyan));
        f.render_widget(gauge.ratio(ratio.clamp(0.0, 1.0)).label(label), bar);
        f.render_widget(Paragraph::new(open_lines(o)), rest);
        return;
    }
    let (ratio, label) = match l.window {
        Some((done, total)) if total > 0.0 => (
            (done / total).clamp(0.0, 1.0),
            format!("{done:.1} / {total:.0} s"),
        ),
        _ if c.live.is_some() => (0.0, format!("ramp {:.1} s", l.ramp_s)),
        _ => (0.0, phase.to_string()),
    };
    f.render_widget(
        Gauge::default()
            .gauge_style(Style::new().fg(Color::Cyan))
            .ratio(ratio)
            .label(label),
        bar,
    );
    if c.live.is_some() {
        draw_lines(f, live_lines(l), rest);
    }
}

/// Live lines in `area`: one a row, or where the rows are too few (compact), on one line.
fn draw_lines(f: &mut Frame, lines: Vec<Line<'static>>, area: Rect) {
    if area.height as usize >= lines.len() {
        f.render_widget(Paragraph::new(lines), area);
        return;
    }
    let mut one: Vec<Span> = Vec::new();
    for (i, line) in lines.into_iter().enumerate() {
        if i > 0 {
            one.push(Span::raw(" · "));
        }
        one.extend(line.spans);
    }
    f.render_widget(Paragraph::new(Line::from(one)), area);
}

/// An open-load cell's live lines: the rate asked and kept, the queue, the SLO so far.
fn open_lines(o: &OpenFigures) -> Vec<Line<'static>> {
    let achieved = o.achieved.map_or("–".into(), |a| format!("{a:.2}"));
    let attainment = if o.ended > 0 {
        format!("{:.1} %", 100.0 * o.met as f64 / o.ended as f64)
    } else {
        "–".into()
    };
    vec![
        Line::from(vec![
            Span::raw("rate "),
            Span::styled(format!("{achieved}/s"), bold()),
            Span::raw(format!(" of {}/s asked", o.requested)),
        ]),
        Line::from(format!(
            "in flight {} · queued for the cap {}",
            o.in_flight, o.waiting
        )),
        Line::from(format!(
            "ended {} · errors {} · SLO met {} ({attainment})",
            o.ended, o.errors, o.met
        )),
    ]
}

fn live_lines(l: &LiveFigures) -> Vec<Line<'static>> {
    let rate_text = match l.tok_per_s {
        Some(r) if l.tokens_exact => format!("{} tok/s", rate(r)),
        Some(r) => format!("≈{} tok/s (chunks until counted)", rate(r)),
        None => "– tok/s".into(),
    };
    vec![
        Line::from(vec![Span::raw("live "), Span::styled(rate_text, bold())]),
        Line::from(format!(
            "streams with a token {}/{}",
            l.streams_with_token, l.concurrency
        )),
        Line::from(format!("requests ended {} · errors {}", l.ended, l.errors)),
    ]
}

fn server_lines(d: &Dashboard) -> Vec<Line<'static>> {
    let Some(g) = &d.gauges else {
        return vec![Line::styled("no gauges read yet", dim())];
    };
    let num = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.0}"));
    let mut v = vec![Line::from(format!(
        "running {} · waiting {}",
        num(g.running),
        num(g.waiting)
    ))];
    if let Some(r) = d.server_gen_tok_per_s {
        v.push(Line::from(format!("generation {} tok/s", rate(r))));
    }
    if let Some(k) = g.kv_usage {
        v.push(Line::from(format!("KV usage {:.0}%", k * 100.0)));
    }
    if let Some((r, len)) = d.spec {
        v.push(Line::from(format!(
            "spec accept {:.0}% · {len:.2} tok/step",
            r * 100.0
        )));
    }
    v
}

fn hw_title(d: &Dashboard) -> &'static str {
    if d.server_local {
        " Hardware "
    } else {
        " Hardware (this machine, not the server's) "
    }
}

fn gib(b: u64) -> f64 {
    b as f64 / f64::from(1u32 << 30)
}

/// The hardware panel's lines, for `rows` rows: GPU totals, a line per GPU that fits (the
/// rest counted), the CPU; one line for all when there is one row.
fn hw_lines(d: &Dashboard, hw: Option<&HwSample>, rows: usize) -> Vec<Line<'static>> {
    if !d.hw_on {
        return vec![Line::styled(
            "hardware monitor off (--no-hw-monitor)",
            dim(),
        )];
    }
    let Some(s) = hw else {
        return vec![Line::styled("reading…", dim())];
    };
    let cpu = s.cpu.as_ref().map(cpu_text);
    let mut v: Vec<Line> = Vec::new();
    if s.gpus.is_empty() {
        v.push(Line::styled(
            "no GPU visible",
            Style::new().fg(Color::Yellow),
        ));
    } else {
        v.extend(gpu_totals(&s.gpus));
        let mut per_gpu = rows.saturating_sub(2 + usize::from(cpu.is_some()));
        // GPUs that do not fit are counted, on the last GPU line.
        let hidden = if s.gpus.len() > per_gpu && per_gpu > 0 {
            per_gpu -= 1;
            s.gpus.len() - per_gpu
        } else {
            0
        };
        v.extend(s.gpus.iter().take(per_gpu).map(gpu_line));
        if hidden > 0 {
            v.push(Line::styled(format!("+{hidden} more GPUs"), dim()));
        }
    }
    if rows <= 1 {
        // Compact: one line for all.
        let mut one: Vec<Span> = Vec::new();
        for (i, l) in v.into_iter().take(2).enumerate() {
            if i > 0 {
                one.push(Span::raw(" · "));
            }
            one.extend(l.spans);
        }
        if let Some(c) = cpu {
            one.push(Span::raw(format!(" · {c}")));
        }
        return vec![Line::from(one)];
    }
    v.extend(cpu.map(Line::from));
    v
}

/// The CPU in a few words: utilisation, frequency, temperature.
fn cpu_text(c: &CpuReading) -> String {
    let mut t = format!(
        "CPU {}",
        c.util_pct.map_or("–".into(), |u| format!("{u:.0}%"))
    );
    if let Some(f) = c.freq_mhz {
        t.push_str(&format!(" {:.1} GHz", f as f64 / 1000.0));
    }
    if let Some(temp) = c.temp_c {
        t.push_str(&format!(" {temp:.0}°C"));
    }
    t
}

/// The two total lines of the GPUs: count, mean utilisation, power; VRAM and PCIe.
fn gpu_totals(gpus: &[GpuReading]) -> [Line<'static>; 2] {
    // The mean over the GPUs that reported one: a GPU without a reading is not idle.
    let reported: Vec<f64> = gpus.iter().filter_map(|g| g.util_pct).collect();
    let util = if reported.is_empty() {
        "–".to_string()
    } else {
        format!(
            "{:.0}%",
            reported.iter().sum::<f64>() / reported.len() as f64
        )
    };
    let power: f64 = gpus.iter().filter_map(|g| g.power_w).sum();
    let limit: f64 = gpus.iter().filter_map(|g| g.power_limit_w).sum();
    let used: u64 = gpus.iter().filter_map(|g| g.vram_used_bytes).sum();
    let total: u64 = gpus.iter().filter_map(|g| g.vram_total_bytes).sum();
    let rx: f64 = gpus.iter().filter_map(|g| g.pcie_rx_bytes_per_s).sum();
    let tx: f64 = gpus.iter().filter_map(|g| g.pcie_tx_bytes_per_s).sum();
    let mut mem = format!("VRAM {:.0}/{:.0} GiB", gib(used), gib(total));
    if gpus.iter().any(|g| g.pcie_rx_bytes_per_s.is_some()) {
        mem.push_str(&format!(
            " · PCIe rx {:.1} tx {:.1} MB/s",
            rx / 1e6,
            tx / 1e6
        ));
    }
    [
        Line::from(format!(
            "{} GPU · {util} · {power:.0}/{limit:.0} W",
            gpus.len()
        )),
        Line::from(mem),
    ]
}

/// One GPU's line: index, utilisation, memory controller, VRAM, power, temperature, clock.
fn gpu_line(g: &GpuReading) -> Line<'static> {
    let opt = |x: Option<f64>, unit: &str| x.map_or("–".into(), |x| format!("{x:.0}{unit}"));
    Line::from(format!(
        "{} {} mem {} {:.0}/{:.0}G {}/{} {} {}MHz",
        g.index,
        opt(g.util_pct, "%"),
        opt(g.mem_util_pct, "%"),
        g.vram_used_bytes.map_or(0.0, gib),
        g.vram_total_bytes.map_or(0.0, gib),
        opt(g.power_w, ""),
        opt(g.power_limit_w, "W"),
        opt(g.temp_c, "°C"),
        g.sm_clock_mhz.map_or("–".into(), |c| c.to_string()),
    ))
}
fn log_lines(d: &Dashboard, rows: usize) -> Vec<Line<'static>> {
    let skip = d.log.len().saturating_sub(rows);
    d.log
        .iter()
        .skip(skip)
        .map(|l| {
            let style = if l.text.contains("Failed")
                || l.text.contains("request error")
                || l.text.starts_with("note:")
            {
                Style::new().fg(Color::Yellow)
            } else {
                Style::new()
            };
            Line::from(vec![
                Span::styled(format!("{:>7} ", short_duration(l.at_s)), dim()),
                Span::styled(l.text.clone(), style),
            ])
        })
        .collect()
}

fn footer_line(d: &Dashboard, now: Instant) -> Line<'static> {
    let (done, planned) = d.progress();
    let elapsed = now.saturating_duration_since(d.started).as_secs_f64();
    Line::from(vec![
        Span::styled(format!(" cells {done}/{planned}"), bold()),
        Span::raw(format!(
            " · elapsed {} · ETA {}",
            short_duration(elapsed),
            short_duration(d.eta_s(now))
        )),
        Span::styled("   o: output  s: skip  q: stop", dim()),
    ])
}
