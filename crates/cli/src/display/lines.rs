//! The line displays: `plain` (a line per event, a summary line per finished cell; logs, CI,
//! pipes) and `json` (one JSON object per event, for scripts). Both write to stdout.

use super::view::{cell_name, readiness_line, request_error_line, what};
use llmib_client::driver::{Progress, ProgressEvent};
use llmib_core::cell::{CellResult, CellStatus, Phase};
use llmib_core::redact::sanitize_terminal;
use serde_json::json;
use std::io::Write;
use std::time::Instant;

/// A finished cell in one line: what, status, and its figures (a dash for a figure the row
/// does not have, never a made-up 0).
pub fn describe(r: &CellResult) -> String {
    let what = what(r.phase, &r.context_label, r.concurrency, 6);
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
        (_, CellStatus::Failed) => r.first_error.clone().unwrap_or_default(),
        _ => String::new(),
    };
    // Labels and errors come from the server: no control character reaches the terminal.
    sanitize_terminal(&format!("{what}  {:<15} {figs}", r.status.label()))
}

/// `plain`: today's lines, plus one per phase and window.
pub struct PlainLines;

impl Progress for PlainLines {
    fn event(&self, e: ProgressEvent) {
        let line = match e {
            ProgressEvent::CellStarted { index, total, cell } => {
                format!("[{}/{}] {}", index + 1, total, cell_name(&cell))
            }
            ProgressEvent::Phase(p) => format!("  {p}"),
            ProgressEvent::WindowLive(w) => format!("  {} streams started", w.concurrency),
            ProgressEvent::Window { window, .. } => format!(
                "  window closed after {:.1} s",
                window.end_ns.saturating_sub(window.start_ns) as f64 / 1e9
            ),
            ProgressEvent::CellDone(r) => describe(&r),
            ProgressEvent::Note(n) => format!("note: {}", sanitize_terminal(&n)),
            ProgressEvent::Readiness { .. } => {
                format!("  {}", readiness_line(&e).unwrap_or_default())
            }
            // Server text: sanitised.
            ProgressEvent::RequestError { .. } => format!(
                "  {}",
                sanitize_terminal(&request_error_line(&e).unwrap_or_default())
            ),
            ProgressEvent::Skipped { cell, reason } => {
                format!("skipped: {}: {reason}", cell_name(&cell))
            }
        };
        // A closed stdout (`| head`) must not stop the run: the results are saved anyway.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

/// `json`: one event per line, `t_s` seconds since the run started.
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

impl Progress for JsonLines {
    fn event(&self, e: ProgressEvent) {
        let t_s = (self.started.elapsed().as_secs_f64() * 1e3).round() / 1e3;
        let v = match e {
            ProgressEvent::CellStarted { index, total, cell } => json!({
                "event": "cell_started", "t_s": t_s, "index": index, "total": total,
                "phase": cell.key.phase, "context_tokens": cell.key.context_tokens,
                "concurrency": cell.key.concurrency, "label": cell.label,
            }),
            ProgressEvent::Phase(p) => json!({"event": "phase", "t_s": t_s, "phase": p}),
            ProgressEvent::WindowLive(w) => json!({
                "event": "streams_started", "t_s": t_s, "concurrency": w.concurrency,
                "window_s": w.duration.as_secs_f64(),
            }),
            ProgressEvent::Window { window, .. } => json!({
                "event": "window", "t_s": t_s,
                "start_s": window.start_ns as f64 / 1e9, "end_s": window.end_ns as f64 / 1e9,
            }),
            ProgressEvent::CellDone(r) => json!({"event": "cell_done", "t_s": t_s, "row": r}),
            ProgressEvent::Note(n) => json!({"event": "note", "t_s": t_s, "text": n}),
            ProgressEvent::Readiness {
                by,
                after_s,
                reason,
                streams_with_token,
                concurrency,
                running,
                waiting,
            } => json!({
                "event": "readiness", "t_s": t_s, "readiness_by": by, "after_s": after_s,
                "reason": reason, "streams_with_token": streams_with_token,
                "concurrency": concurrency, "running": running, "waiting": waiting,
            }),
            ProgressEvent::RequestError {
                phase,
                stream,
                kind,
                message,
                retry_in_s,
                retry_after,
            } => json!({
                "event": "request_error", "t_s": t_s, "phase": phase, "stream": stream,
                "kind": kind, "message": message, "retry_in_s": retry_in_s,
                "retry_after": retry_after,
            }),
            ProgressEvent::Skipped { cell, reason } => json!({
                "event": "skipped", "t_s": t_s, "phase": cell.key.phase,
                "context_tokens": cell.key.context_tokens, "concurrency": cell.key.concurrency,
                "label": cell.label, "reason": reason,
            }),
        };
        let _ = writeln!(std::io::stdout().lock(), "{v}");
    }
}
