//! The two tables of the dashboard as they fill in: the prefill row per context and the decode
//! matrix (context × concurrency; for a run of sessions alone, the session matrix: history
//! depth × concurrent sessions), each cell its figure or its status in as much room as the
//! terminal gives, with a legend for the short forms.

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

/// Which closed-loop cells the matrix shows: the decode cells, or where the run has none, its
/// session cells (history depth × concurrent sessions), with the columns' letter.
fn matrix_axis(d: &Dashboard) -> (Phase, Vec<u32>, &'static str) {
    let ns = concurrencies(d);
    match &d.plan.settings.sessions {
        Some(s) if ns.is_empty() && !s.sessions.is_empty() => {
            let mut v = s.sessions.clone();
            v.sort_unstable();
            v.dedup();
            (Phase::Session, v, "S")
        }
        _ => (Phase::Decode, ns, "N"),
    }
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
    d.plan.cells.iter().any(|c| c.key == key && c.over_capacity)
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
        let t = format!(
            "{full} {}/{}",
            r.ttft_ms_p50.map_or("–".into(), ttft_ms),
            r.tbt_ms_p50.map_or("–".into(), tbt_ms)
        );
        if t.chars().count() <= room {
            return t;
        }
    }
    fitting([full], room).unwrap_or(compact)
}

/// The decode matrix: contexts down, N across; each cell its total tok/s (with TTFT and TBT
/// inline when the column is wide enough), or its status in a word; under it, a legend of what
/// a narrow column shortened.
pub(crate) fn matrix_lines(d: &Dashboard, width: u16) -> Vec<Line<'static>> {
    let (phase, ns, letter) = matrix_axis(d);
    let label_w = 6usize;
    let col = ((width as usize).saturating_sub(label_w + 1) / ns.len().max(1)).clamp(7, 26);
    let room = col - 1;
    let inline = col >= 24;
    let mut head = vec![Span::styled(format!("{:>label_w$} ", "ctx"), dim())];
    head.extend(
        ns.iter()
            .map(|n| Span::styled(format!("{:>col$}", format!("{letter}={n}")), dim())),
    );
    let mut v = vec![Line::from(head)];
    let mut legend = Legend::default();
    for (ctx, label) in contexts(d) {
        let mut spans = vec![Span::raw(format!("{label:>label_w$} "))];
        for &n in &ns {
            let key = CellKey {
                phase,
                context_tokens: ctx,
                concurrency: n,
                rate_mrps: 0,
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
