//! The tables of the dashboard as they fill in: the prefill row per context, the decode matrix
//! (context × concurrency) and, in a run of sessions, the sessions' own matrix (history depth ×
//! concurrent sessions, then each `--session-rate`), each with its own title; each cell its
//! figure or its status in as much room as the terminal gives, with a legend for the short
//! forms. A session cell is never drawn in the decode matrix.

use super::style::dim;
use super::view::Dashboard;
use llmib_core::{CellKey, CellResult, CellStatus, Phase};
use llmib_report::number::{rate, rate_compact, tbt_ms, ttft_ms};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};

/// Contexts of the plan, in run order.
fn contexts(d: &Dashboard) -> Vec<(u64, String)> {
    let mut v: Vec<(u64, String)> = Vec::new();
    for c in &d.plan.cells {
        if !v.iter().any(|(t, _)| *t == c.key.context_tokens) {
            v.push((c.key.context_tokens, c.label.clone()));
        }
    }
    v
}

fn concurrencies(d: &Dashboard) -> Vec<u32> {
    let mut v: Vec<u32> = d
        .plan
        .cells
        .iter()
        .filter(|c| c.key.phase == Phase::Decode)
        .map(|c| c.key.concurrency)
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// A matrix's rows (context tokens and label) and columns (concurrency, rate in mrps, and the
/// column's head).
struct Axes {
    rows: Vec<(u64, String)>,
    cols: Vec<(u32, u64, String)>,
}

/// The decode matrix's axes: the plan's contexts × its decode concurrencies.
fn decode_axes(d: &Dashboard) -> Axes {
    Axes {
        rows: contexts(d),
        cols: concurrencies(d)
            .into_iter()
            .map(|n| (n, 0, format!("N={n}")))
            .collect(),
    }
}

/// The sessions matrix's axes: the session contexts × S, then each session rate (a replay: its
/// file × its cells).
fn session_axes(d: &Dashboard) -> Axes {
    let mut rows: Vec<(u64, String)> = Vec::new();
    let mut cols: Vec<(u32, u64, String)> = Vec::new();
    for c in &d.sessions {
        let k = c.key;
        if !rows
            .iter()
            .any(|(t, l)| *t == k.context_tokens && *l == c.label)
        {
            rows.push((k.context_tokens, c.label.clone()));
        }
        if !cols
            .iter()
            .any(|(n, r, _)| (*n, *r) == (k.concurrency, k.rate_mrps))
        {
            let head = match k.request_rate() {
                Some(r) => format!("@{r}/s"),
                None if k.concurrency == 0 => "trace".into(),
                None => format!("S={}", k.concurrency),
            };
            cols.push((k.concurrency, k.rate_mrps, head));
        }
    }
    // Closed loops by S, then the open loops by rate.
    cols.sort_by_key(|(n, r, _)| (*r, *n));
    Axes { rows, cols }
}

/// The matrices the dashboard shows, each with its title: the decode matrix (where the plan
/// has decode cells, or the run no sessions) and the sessions' (where it plans session cells).
pub(crate) fn matrices(d: &Dashboard, width: u16) -> Vec<(&'static str, Vec<Line<'static>>)> {
    let mut v = Vec::new();
    let decode = decode_axes(d);
    if !decode.cols.is_empty() || d.sessions.is_empty() {
        v.push((
            " Sustained decode · total tok/s ",
            matrix_lines(d, width, Phase::Decode, &decode),
        ));
    }
    if !d.sessions.is_empty() {
        let axes = session_axes(d);
        v.push((
            " Sessions · total tok/s ",
            matrix_lines(d, width, Phase::Session, &axes),
        ));
    }
    v
}

fn status_style(s: CellStatus) -> Style {
    match s {
        CellStatus::Valid => Style::new().fg(Color::Green),
        CellStatus::RequestsQueued => Style::new().fg(Color::Yellow),
        CellStatus::Failed => Style::new().fg(Color::Red),
        CellStatus::OverCapacity | CellStatus::NotRun => dim(),
    }
}

fn planned_over_capacity(d: &Dashboard, key: CellKey) -> bool {
    d.planned_cells()
        .iter()
        .any(|c| c.key == key && c.over_capacity)
}

pub(crate) fn running(d: &Dashboard, key: CellKey) -> bool {
    d.current.as_ref().is_some_and(|c| c.cell.key == key)
}

pub(crate) fn prefill_lines(d: &Dashboard) -> Vec<Line<'static>> {
    let mut v = vec![Line::styled(
        format!("{:>6} {:>9} {:>10}", "ctx", "tok/s", "TTFT"),
        dim(),
    )];
    for (ctx, label) in contexts(d) {
        let key = CellKey {
            phase: Phase::Prefill,
            context_tokens: ctx,
            concurrency: 1,
            rate_mrps: 0,
        };
        let (text, style) = match d.rows.get(&key) {
            Some(r) if r.status.has_figures() => (
                format!(
                    "{:>9} {:>10}",
                    r.prompt_tok_per_s.map_or("–".into(), rate_compact),
                    r.ttft_ms_p50.map_or("–".into(), ttft_ms)
                ),
                Style::new(),
            ),
            Some(r) => (format!("{:>20}", short_status(r)), status_style(r.status)),
            None if running(d, key) => (format!("{:>9}", "…"), Style::new().fg(Color::Cyan)),
            None => (format!("{:>9}", "·"), dim()),
        };
        v.push(Line::from(vec![
            Span::raw(format!("{label:>6} ")),
            Span::styled(text, style),
        ]));
    }
    v
}

fn short_status(r: &CellResult) -> String {
    match r.status {
        CellStatus::Valid => "valid".into(),
        CellStatus::RequestsQueued => match r.server_ran() {
            Some(x) => format!("({x}/{})*", r.concurrency),
            None => "queued".into(),
        },
        CellStatus::OverCapacity => "over cap".into(),
        CellStatus::NotRun => "not run".into(),
        CellStatus::Failed => "failed".into(),
    }
}

/// A status in as few characters as a narrow column allows; the legend spells them out.
fn tiny_status(s: CellStatus) -> &'static str {
    match s {
        CellStatus::Valid => "ok",
        CellStatus::RequestsQueued => "q",
        CellStatus::OverCapacity => "over",
        CellStatus::NotRun => "n/r",
        CellStatus::Failed => "fail",
    }
}

/// The first of `options` that fits in `room` characters.
fn fitting(options: impl IntoIterator<Item = String>, room: usize) -> Option<String> {
    options.into_iter().find(|t| t.chars().count() <= room)
}

/// What a narrow matrix shortened, spelled out under it.
#[derive(Default)]
struct Legend {
    /// Queued cells shown as `rate*`: `32K×16 12/16`.
    queued: Vec<String>,
    /// Whether a status was shortened to [`tiny_status`].
    tiny_words: bool,
}

impl Legend {
    fn lines(self) -> Vec<Line<'static>> {
        let mut v = Vec::new();
        if !self.queued.is_empty() {
            v.push(Line::styled(
                format!("* requests queued, server ran: {}", self.queued.join(" · ")),
                Style::new().fg(Color::Yellow),
            ));
        }
        if self.tiny_words {
            v.push(Line::styled(
                "fail: failed · over: over KV capacity · n/r: not run · q: queued",
                dim(),
            ));
        }
        v
    }
}

/// One decode cell's text in `room` characters. The Requests queued marker `(X/N)*` is never
/// cut: when the column is too narrow for it, the cell shows `rate*` and the legend lists it.
fn matrix_cell(r: &CellResult, room: usize, inline: bool, legend: &mut Legend) -> String {
    let n = r.concurrency;
    if !r.status.has_figures() {
        if let Some(t) = fitting([short_status(r)], room) {
            return t;
        }
        legend.tiny_words = true;
        return tiny_status(r.status).into();
    }
    let full = r.total_tok_per_s.map_or("–".into(), rate);
    let compact = r.total_tok_per_s.map_or("–".into(), rate_compact);
    if r.status == CellStatus::RequestsQueued {
        let Some(x) = r.server_ran() else {
            legend.tiny_words = true;
            return fitting([format!("{full} q"), format!("{compact} q")], room)
                .unwrap_or_else(|| "q".into());
        };
        let marker = format!("({x}/{n})*");
        if let Some(t) = fitting(
            [format!("{full} {marker}"), format!("{compact} {marker}")],
            room,
        ) {
            return t;
        }
        legend
            .queued
            .push(format!("{}×{n} {x}/{n}", r.context_label));
        return format!("{compact}*");
    }
    if inline {
        let ttft = r.ttft_ms_p50.map_or("–".into(), ttft_ms);
        // A session row's second figure is its prefix cache's hit rate (it has no TBT).
        let t = match r.phase {
            Phase::Session => {
                let hit = r.session.cache_hit_rate.flatten();
                let hit = hit.map_or("–".into(), |h| format!("{:.0}%", h * 100.0));
                format!("{full} {ttft} hit {hit}")
            }
            _ => format!("{full} {ttft}/{}", r.tbt_ms_p50.map_or("–".into(), tbt_ms)),
        };
        if t.chars().count() <= room {
            return t;
        }
    }
    fitting([full], room).unwrap_or(compact)
}

/// A matrix of `phase`'s cells: contexts down, N (or S, or a session rate) across; each cell
/// its total tok/s (with TTFT and TBT, or a session's TTFT and hit rate, inline when the
/// column is wide enough), or its status in a word; under it, a legend of what a narrow column
/// shortened.
fn matrix_lines(d: &Dashboard, width: u16, phase: Phase, axes: &Axes) -> Vec<Line<'static>> {
    let ns = &axes.cols;
    let label_w = 6usize;
    let col = ((width as usize).saturating_sub(label_w + 1) / ns.len().max(1)).clamp(7, 26);
    let room = col - 1;
    let inline = col >= 24;
    let mut head = vec![Span::styled(format!("{:>label_w$} ", "ctx"), dim())];
    head.extend(
        ns.iter()
            .map(|(_, _, h)| Span::styled(format!("{h:>col$}"), dim())),
    );
    let mut v = vec![Line::from(head)];
    let mut legend = Legend::default();
    for (ctx, label) in &axes.rows {
        let label: String = label.chars().take(label_w).collect();
        let mut spans = vec![Span::raw(format!("{label:>label_w$} "))];
        for &(n, rate_mrps, _) in ns {
            let key = CellKey {
                phase,
                context_tokens: *ctx,
                concurrency: n,
                rate_mrps,
            };
            let (text, style) = match d.rows.get(&key) {
                Some(r) => (
                    matrix_cell(r, room, inline, &mut legend),
                    status_style(r.status),
                ),
                None if running(d, key) => ("…".into(), Style::new().fg(Color::Cyan)),
                // A prediction, known from the plan before the row is written.
                None if planned_over_capacity(d, key) => {
                    let t = fitting(["over cap".to_string()], room).unwrap_or_else(|| {
                        legend.tiny_words = true;
                        tiny_status(CellStatus::OverCapacity).into()
                    });
                    (t, dim())
                }
                None => ("·".into(), dim()),
            };
            // Every form above fits; the cut only guards a label wider than any column.
            let text: String = text.chars().take(room).collect();
            spans.push(Span::styled(format!("{text:>col$}"), style));
        }
        v.push(Line::from(spans));
    }
    v.extend(legend.lines());
    v
}
