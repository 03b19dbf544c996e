//! A running session cell's live lines on the dashboard: the live rate and its sessions, the
//! turns and the prefix cache's hit rate against the prediction, and the latest turns' TTFTs.
//! Drawing apart from `sessions.rs`, which plans and reads the figures (the view holds them).

use super::sessions::SessionFigures;
use super::style::bold;
use super::view::LiveFigures;
use llmib_report::number::{rate, ttft_ms};
use ratatui::text::{Line, Span};

fn pct(v: Option<f64>) -> String {
    v.map_or("–".into(), |x| format!("{:.1} %", x * 100.0))
}

/// A session cell's live lines: the live rate and its sessions, the turns and the cache's hit
/// rate against the prediction, the latest turns' TTFTs (newest last, as many as fit `width`).
pub fn session_lines(l: &LiveFigures, s: &SessionFigures, width: usize) -> Vec<Line<'static>> {
    let rate_text = match l.tok_per_s {
        Some(r) if l.tokens_exact => format!("{} tok/s", rate(r)),
        Some(r) => format!("≈{} tok/s", rate(r)),
        None => "– tok/s".into(),
    };
    let planned = s.turns_planned.map_or(String::new(), |p| format!("/{p}"));
    // Newest first until the line is full, then shown oldest first.
    let head = "TTFT latest turns";
    let mut used = head.chars().count();
    let mut fit: Vec<String> = Vec::new();
    for (_, _, t) in s.latest.iter().rev() {
        let t = t.map_or("–".into(), ttft_ms);
        used += t.chars().count() + 1;
        if used > width {
            break;
        }
        fit.push(t);
    }
    fit.reverse();
    let ttfts = match fit.is_empty() {
        true => format!("{head} –"),
        false => format!("{head} {}", fit.join(" ")),
    };
    vec![
        Line::from(vec![
            Span::raw("live "),
            Span::styled(rate_text, bold()),
            Span::raw(format!(
                " · {} {}, {}/{} with a token",
                s.sessions,
                if s.sessions == 1 {
                    "session"
                } else {
                    "sessions"
                },
                l.streams_with_token,
                s.sessions
            )),
        ]),
        Line::from(format!(
            "turns {}{planned} · errors {} · hit {} (predicted {})",
            s.turns_done,
            s.turn_errors,
            pct(s.hit),
            pct(s.predicted_hit)
        )),
        Line::from(ttfts),
    ]
}
