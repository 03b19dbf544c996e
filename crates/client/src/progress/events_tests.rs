//! The progress protocol's tests: the JSON wire format against the hand-written format it
//! replaced (byte for byte) and against docs/dashboard.md; the names of stages and kinds.

use super::*;
use llmib_core::bare_result;
use llmib_core::{CellKey, CellStatus};
use serde_json::{Value, json};
use std::time::Duration;

fn cell(phase: Phase) -> PlannedCell {
    PlannedCell {
        key: CellKey {
            phase,
            context_tokens: 32768,
            concurrency: 4,
            rate_mrps: 0,
        },
        label: "32K".into(),
        over_capacity: false,
    }
}

/// One event of each kind, with every optional field both set and unset somewhere.
fn every_kind() -> Vec<ProgressEvent> {
    let mut row = bare_result(&cell(Phase::Decode), CellStatus::Failed, Some("why".into()));
    row.first_error = Some("HTTP 500: boom".into());
    vec![
        ProgressEvent::CellStarted {
            index: 3,
            total: 12,
            cell: cell(Phase::Prefill),
        },
        ProgressEvent::Phase(Stage::HiddenWarmUp),
        ProgressEvent::WindowLive(Arc::new(LiveWindow::new(
            4,
            Duration::from_millis(30_500),
            true,
        ))),
        ProgressEvent::Readiness {
            by: ReadinessBy::QueueStalled,
            after_s: 2.04,
            streams_with_token: 3,
            concurrency: 4,
            running: Some(3.0),
            waiting: None,
        },
        ProgressEvent::RequestError {
            phase: Stage::Window,
            stream: 2,
            kind: RequestErrorKind::HttpStatus(503),
            message: "Service \"unavailable\"\n".into(),
            retry_in_s: Some(0.05),
            retry_after: false,
        },
        ProgressEvent::RequestError {
            phase: Stage::WarmUp,
            stream: 0,
            kind: RequestErrorKind::TimeoutFirstToken,
            message: "no token".into(),
            retry_in_s: None,
            retry_after: false,
        },
        ProgressEvent::Window {
            origin: std::time::Instant::now(),
            window: Window {
                start_ns: 2_040_000_000,
                end_ns: 32_040_000_001,
            },
        },
        ProgressEvent::Skipped {
            cell: cell(Phase::Decode),
            reason: "over KV capacity (needs 8650752 tokens, has 1000000)".into(),
        },
        ProgressEvent::CellDone(Box::new(row)),
        ProgressEvent::Note("3 more window request errors not listed".into()),
        ProgressEvent::OpenLoopLive(Arc::new(open_live())),
        ProgressEvent::CellStarted {
            index: 12,
            total: 14,
            cell: llmib_core::rate_cell(32768, "32K", 2.5),
        },
    ]
}

fn open_live() -> OpenLoopLive {
    let l = OpenLoopLive::default();
    l.scheduled.store(30, Ordering::Relaxed);
    l.rate_mrps.store(2_500, Ordering::Relaxed);
    l
}

/// The JSON events as they were written by hand before the wire type (version 1 of the
/// format): the reference the serde form must match byte for byte.
fn hand_written(e: &ProgressEvent, t_s: f64) -> Value {
    match e {
        ProgressEvent::CellStarted { index, total, cell } => {
            let mut v = json!({
                "event": "cell_started", "t_s": t_s, "index": index, "total": total,
                "phase": cell.key.phase, "context_tokens": cell.key.context_tokens,
                "concurrency": cell.key.concurrency, "label": cell.label,
            });
            // Added with open load: only on a rate cell, so older events keep their bytes.
            if cell.key.phase == Phase::Rate {
                v["request_rate"] = json!(cell.key.rate_mrps as f64 / 1000.0);
            }
            v
        }
        ProgressEvent::Phase(p) => json!({"event": "phase", "t_s": t_s, "phase": p.as_str()}),
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
        // Added with open load (not in version 1 of the format).
        ProgressEvent::OpenLoopLive(l) => json!({
            "event": "open_loop_started", "t_s": t_s,
            "request_rate": l.rate_mrps.load(Ordering::Relaxed) as f64 / 1000.0,
            "scheduled": l.scheduled.load(Ordering::Relaxed),
        }),
        ProgressEvent::Readiness {
            by,
            after_s,
            streams_with_token,
            concurrency,
            running,
            waiting,
        } => json!({
            "event": "readiness", "t_s": t_s, "readiness_by": by, "after_s": after_s,
            "reason": readiness_reason(*by), "streams_with_token": streams_with_token,
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
            "event": "request_error", "t_s": t_s, "phase": phase.as_str(), "stream": stream,
            "kind": kind.name(), "message": message, "retry_in_s": retry_in_s,
            "retry_after": retry_after,
        }),
        ProgressEvent::Skipped { cell, reason } => json!({
            "event": "skipped", "t_s": t_s, "phase": cell.key.phase,
            "context_tokens": cell.key.context_tokens, "concurrency": cell.key.concurrency,
            "label": cell.label, "reason": reason,
        }),
    }
}

#[test]
fn the_wire_format_is_the_hand_written_one_byte_for_byte() {
    for e in every_kind() {
        assert_eq!(json_line(&e, 12.345), hand_written(&e, 12.345).to_string());
    }
}

#[test]
fn a_json_event_has_the_documented_shape() {
    let line = json_line(&every_kind()[4], 1.5);
    assert_eq!(
        line,
        r#"{"event":"request_error","kind":"http_503","message":"Service \"unavailable\"\n","phase":"window","retry_after":false,"retry_in_s":0.05,"stream":2,"t_s":1.5}"#
    );
    let line = json_line(&ProgressEvent::Phase(Stage::BurstWarmUp), 0.0);
    assert_eq!(
        line,
        r#"{"event":"phase","phase":"burst warm-up","t_s":0.0}"#
    );
}

/// The fields docs/dashboard.md lists for each event kind ("JSON events"): the backticked
/// names of the "other fields" column, outside parentheses.
fn documented_fields() -> Vec<(String, Vec<String>)> {
    let doc = include_str!("../../../../docs/dashboard.md");
    let table = doc
        .split("### JSON events")
        .nth(1)
        .expect("a JSON events section");
    let ticked = |s: &str| -> Vec<String> {
        let (mut depth, mut out) = (0i32, String::new());
        for c in s.chars() {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                c if depth == 0 => out.push(c),
                _ => {}
            }
        }
        out.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    table
        .lines()
        .skip_while(|l| !l.starts_with("| `"))
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cols: Vec<&str> = l.split(" | ").collect();
            let kind = ticked(cols[0]).into_iter().next()?;
            // The header row names the `event` column itself.
            (kind != "event").then(|| (kind, ticked(cols[cols.len() - 1])))
        })
        .collect()
}

#[test]
fn every_event_round_trips_with_the_documented_fields() {
    let doc = documented_fields();
    let mut seen = Vec::new();
    for e in every_kind() {
        let v: Value = serde_json::from_str(&json_line(&e, 3.0)).expect("valid JSON");
        let kind = e.kind().as_str();
        assert_eq!(v["event"], kind);
        assert_eq!(v["t_s"], 3.0);
        let (_, fields) = doc
            .iter()
            .find(|(k, _)| k == kind)
            .unwrap_or_else(|| panic!("{kind} is not documented"));
        let mut want: Vec<&str> = fields.iter().map(String::as_str).collect();
        want.extend(["event", "t_s"]);
        // The one optional field: a cell_started event has it on an open-load cell only.
        want.retain(|f| *f != "request_rate" || kind != "cell_started" || v.get(f).is_some());
        want.sort_unstable();
        let mut got: Vec<&str> = v
            .as_object()
            .expect("an object")
            .keys()
            .map(String::as_str)
            .collect();
        got.sort_unstable();
        assert_eq!(got, want, "{kind}");
        seen.push(kind);
    }
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), doc.len(), "an undocumented or untested kind");
}

#[test]
fn every_stage_is_documented() {
    let doc = include_str!("../../../../docs/dashboard.md");
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `phase` |"))
        .expect("the phase row");
    for s in Stage::ALL {
        assert!(row.contains(&format!("`{s}`")), "{s} is not documented");
    }
}

/// Collects events.
#[derive(Default)]
struct Sink(std::sync::Mutex<Vec<ProgressEvent>>);

impl Progress for Sink {
    fn event(&self, e: ProgressEvent) {
        if let Ok(mut v) = self.0.lock() {
            v.push(e);
        }
    }
}

#[test]
fn request_errors_past_the_limit_are_counted_in_one_note() {
    let sink = Sink::default();
    let mut errors = RequestErrors::new(&sink, Stage::Window);
    let mut made = 0;
    for i in 0..REQUEST_ERROR_EVENTS + 5 {
        errors.report(
            i,
            "http_500",
            || {
                made += 1;
                "boom".into()
            },
            Some(0.05),
            false,
        );
    }
    errors.finish();
    let events = sink.0.into_inner().expect("events");
    assert_eq!(events.len() as u32, REQUEST_ERROR_EVENTS + 1);
    // Messages of the errors not listed are never made (redaction is not free).
    assert_eq!(made, REQUEST_ERROR_EVENTS);
    assert!(matches!(
        &events[0],
        ProgressEvent::RequestError {
            kind: RequestErrorKind::HttpStatus(500),
            phase: Stage::Window,
            ..
        }
    ));
    let ProgressEvent::Note(n) = &events[events.len() - 1] else {
        panic!("a note last");
    };
    assert_eq!(n, "5 more window request errors not listed");
}
