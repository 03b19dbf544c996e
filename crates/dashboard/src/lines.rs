//! The line displays: `plain` (a line per event, a summary line per finished cell; logs, CI,
//! pipes) and `json` (one JSON object per event, for scripts). Both write to stdout.

use super::row_words::{failed_why, session_figures};
use super::view::{event_words, what};
use llmib_client::{EventKind, Progress, ProgressEvent, json_line};
use llmib_core::terminal_line;
use llmib_core::{CellResult, CellStatus, Phase};
use std::io::Write;
use std::time::Instant;

/// A finished cell in one line: what, status, and its figures (a dash for a figure the row
/// does not have, never a made-up 0).
pub fn describe(r: &CellResult) -> String {
    let what = what(r.key(), &r.context_label, 6);
    let fig =
        |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |x| format!("{x:.digits$}"));
    let figs = match (r.phase, r.status) {
        (Phase::Prefill, s) if s.has_figures() => format!(
            "{:>10} prompt tok/s  TTFT {} ms",
            fig(r.prompt_tok_per_s, 1),
            fig(r.ttft_ms_p50, 0)
        ),
        (Phase::Decode | Phase::Burst, s) if s.has_figures() => format!(
            "{:>10} tok/s  TTFT {} ms  TBT {} ms",
            fig(r.total_tok_per_s, 1),
            fig(r.ttft_ms_p50, 0),
            fig(r.tbt_ms_p50, 1)
        ),
        (Phase::Rate, s) if s != CellStatus::NotRun => format!(
            "{:>10} tok/s  sent {}/s  TTFT {} ms  SLO met {}  {}",
            fig(r.total_tok_per_s, 1),
            fig(r.achieved_request_rate.flatten(), 2),
            fig(r.ttft_ms_p50, 0),
            r.slo_attainment
                .flatten()
                .map_or("–".into(), |a| format!("{:.1} %", a * 100.0)),
            failed_why(r),
        ),
        (Phase::Session, s) if s != CellStatus::NotRun => session_figures(r),
        (Phase::Capacity, CellStatus::Valid) => format!(
            "max rate {}  max concurrency {}  {}",
            r.capacity_request_rate
                .flatten()
                .map_or("none".into(), |x| format!("{x}/s")),
            r.capacity_concurrency
                .flatten()
                .map_or("none".into(), |n| n.to_string()),
            r.status_reason.as_deref().unwrap_or_default()
        ),
        (_, CellStatus::Failed) => failed_why(r),
        _ => String::new(),
    };
    // Labels and errors come from the server: no control character reaches the terminal, and
    // a runaway string is cut.
    terminal_line(&format!("{what}  {:<15} {figs}", r.status.label()))
}

/// `plain`: a line per event (in the words of the dashboard's event log), a stage's details
/// indented under its cell.
pub struct PlainLines;

impl Progress for PlainLines {
    fn event(&self, e: ProgressEvent) {
        let line = match (&e, event_words(&e)) {
            (ProgressEvent::CellDone(r), _) => describe(r),
            (_, None) => return,
            (_, Some(words)) => {
                let indent = match e.kind() {
                    EventKind::Phase
                    | EventKind::StreamsStarted
                    | EventKind::OpenLoopStarted
                    | EventKind::Window
                    | EventKind::Readiness
                    | EventKind::RequestError => "  ",
                    EventKind::CellStarted
                    | EventKind::CellDone
                    | EventKind::Note
                    | EventKind::Skipped => "",
                };
                // Notes, errors and labels carry server or user text: no control character
                // reaches the terminal, and a runaway string is cut.
                format!("{indent}{}", terminal_line(&words))
            }
        };
        // A closed stdout (`| head`) must not stop the run: the results are saved anyway.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

/// `json`: one event per line ([`json_line`]), `t_s` seconds since the run started.
pub struct JsonLines {
    started: Instant,
}

impl JsonLines {
    /// Events timed from now.
    pub fn new() -> Self {
        JsonLines {
            started: Instant::now(),
        }
    }
}

impl Default for JsonLines {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress for JsonLines {
    fn event(&self, e: ProgressEvent) {
        let t_s = (self.started.elapsed().as_secs_f64() * 1e3).round() / 1e3;
        let _ = writeln!(std::io::stdout().lock(), "{}", json_line(&e, t_s));
    }
}
