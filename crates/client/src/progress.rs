//! The progress protocol: what the driver and a decode window tell the displays while they
//! work. The events ([`ProgressEvent`]) and their vocabulary are typed here — the stage a cell
//! is in ([`Stage`]), the kind of an event ([`EventKind`]) and of a failed request
//! ([`RequestErrorKind`]) — and so is their JSON form ([`json_line`], the `--display json`
//! format documented in docs/dashboard.md). The driver and the window both speak it; neither
//! imports the other for it.

use crate::live::LiveWindow;
use llmib_core::cell::{CellResult, Phase};
use llmib_core::figures::Window;
use llmib_core::plan::PlannedCell;
use llmib_core::readiness::ReadinessBy;
use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

/// Request errors reported one by one per cell; the rest are counted in one note (a failing
/// server at N = 256 must not flood the log).
pub const REQUEST_ERROR_EVENTS: u32 = 20;

/// Where a cell is: the `phase` of a [`ProgressEvent::Phase`] (and of a request error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The one-off concurrency-1 warm-up before the first cell.
    HiddenWarmUp,
    /// Building a decode or burst cell's prompts.
    Prompts,
    /// Building a prefill cell's prompt.
    Prompt,
    /// Sending the prompts the server has not seen once.
    WarmUp,
    /// The timed prefill request(s).
    Prefill,
    /// A decode window (ramp, readiness, the window itself).
    Window,
    /// Counting the tokens of chunks the server did not count.
    Counting,
    /// A burst cell's unmeasured warm-up requests.
    BurstWarmUp,
    /// A burst cell's measured requests.
    Burst,
}

impl Stage {
    /// Every stage (tests and documentation check the words of each).
    pub const ALL: [Stage; 9] = [
        Stage::HiddenWarmUp,
        Stage::Prompts,
        Stage::Prompt,
        Stage::WarmUp,
        Stage::Prefill,
        Stage::Window,
        Stage::Counting,
        Stage::BurstWarmUp,
        Stage::Burst,
    ];

    /// The word in the log and in the JSON events.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::HiddenWarmUp => "hidden warm-up",
            Stage::Prompts => "prompts",
            Stage::Prompt => "prompt",
            Stage::WarmUp => "warm-up",
            Stage::Prefill => "prefill",
            Stage::Window => "window",
            Stage::Counting => "counting",
            Stage::BurstWarmUp => "burst warm-up",
            Stage::Burst => "burst",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Stage {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Why a request failed: the `kind` of a request error, and the key of the row's `errors`
/// tally. The stream measurement is the only producer ([`crate::stream`]); the record keeps
/// the name as text (`Outcome::Error::kind`), which [`RequestErrorKind::parse`] reads back.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestErrorKind {
    /// The connection could not be made.
    Connect,
    /// The HTTP client's own timeout.
    Timeout,
    /// Any other failure of the HTTP exchange before a status.
    Http,
    /// The server answered with this non-success status (`http_500`).
    HttpStatus(u16),
    /// The body broke off mid-stream.
    StreamBroken,
    /// The server sent an error event inside the stream.
    StreamError,
    /// An event could not be parsed.
    Malformed,
    /// No token within `--first-token-timeout`.
    TimeoutFirstToken,
    /// Silence longer than `--idle-timeout` between chunks.
    TimeoutIdle,
    /// `[DONE]` without a finish reason.
    NoFinishReason,
    /// The stream ended without `[DONE]`.
    NoDone,
    /// A name this build does not produce (kept as written, never dropped).
    Other(String),
}

impl RequestErrorKind {
    /// The kinds with a fixed name (everything but `HttpStatus` and `Other`).
    const NAMED: [(RequestErrorKind, &'static str); 10] = [
        (RequestErrorKind::Connect, "connect"),
        (RequestErrorKind::Timeout, "timeout"),
        (RequestErrorKind::Http, "http"),
        (RequestErrorKind::StreamBroken, "stream_broken"),
        (RequestErrorKind::StreamError, "stream_error"),
        (RequestErrorKind::Malformed, "malformed"),
        (RequestErrorKind::TimeoutFirstToken, "timeout_first_token"),
        (RequestErrorKind::TimeoutIdle, "timeout_idle"),
        (RequestErrorKind::NoFinishReason, "no_finish_reason"),
        (RequestErrorKind::NoDone, "no_done"),
    ];

    /// The name in records, rows and events (`http_500`, `stream_error`, …).
    pub fn name(&self) -> Cow<'static, str> {
        match self {
            RequestErrorKind::HttpStatus(code) => Cow::Owned(format!("http_{code}")),
            RequestErrorKind::Other(s) => Cow::Owned(s.clone()),
            k => Cow::Borrowed(
                Self::NAMED
                    .iter()
                    .find(|(named, _)| named == k)
                    .map_or("", |(_, name)| name),
            ),
        }
    }

    /// The kind a record's error names (the inverse of [`RequestErrorKind::name`]).
    pub fn parse(name: &str) -> RequestErrorKind {
        if let Some((k, _)) = Self::NAMED.iter().find(|(_, n)| *n == name) {
            return k.clone();
        }
        match name.strip_prefix("http_").map(str::parse::<u16>) {
            Some(Ok(code)) => RequestErrorKind::HttpStatus(code),
            _ => RequestErrorKind::Other(name.to_string()),
        }
    }
}

impl fmt::Display for RequestErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for RequestErrorKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

/// The kind of a [`ProgressEvent`]: the `event` field of its JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// [`ProgressEvent::CellStarted`].
    CellStarted,
    /// [`ProgressEvent::Phase`].
    Phase,
    /// [`ProgressEvent::WindowLive`].
    StreamsStarted,
    /// [`ProgressEvent::Readiness`].
    Readiness,
    /// [`ProgressEvent::RequestError`].
    RequestError,
    /// [`ProgressEvent::Window`].
    Window,
    /// [`ProgressEvent::Skipped`].
    Skipped,
    /// [`ProgressEvent::CellDone`].
    CellDone,
    /// [`ProgressEvent::Note`].
    Note,
}

impl EventKind {
    /// The `event` name in the JSON events.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::CellStarted => "cell_started",
            EventKind::Phase => "phase",
            EventKind::StreamsStarted => "streams_started",
            EventKind::Readiness => "readiness",
            EventKind::RequestError => "request_error",
            EventKind::Window => "window",
            EventKind::Skipped => "skipped",
            EventKind::CellDone => "cell_done",
            EventKind::Note => "note",
        }
    }
}

impl fmt::Display for EventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the driver tells the terminal while it works.
#[derive(Debug, Clone)]
pub enum ProgressEvent {
    /// A cell starts (`index` of `total` in run order).
    CellStarted {
        /// Position in run order (0-based).
        index: usize,
        /// Cells in the plan.
        total: usize,
        /// The cell.
        cell: PlannedCell,
    },
    /// The cell moved to a stage.
    Phase(Stage),
    /// A decode window closed: its span on the cell's clock, and that clock's origin on the
    /// process's monotonic clock (live views and timing tests relate it to other timestamps).
    Window {
        /// The cell's origin.
        origin: std::time::Instant,
        /// The window, ns from `origin`.
        window: Window,
    },
    /// A decode window's streams start: its live state, to poll while it runs (ramp, then the
    /// window).
    WindowLive(Arc<LiveWindow>),
    /// A row was saved.
    CellDone(Box<CellResult>),
    /// Something a user should read.
    Note(String),
    /// The readiness judge decided how a decode window opens (once per window). The rule in
    /// words is [`readiness_reason`] of `by`.
    Readiness {
        /// The rule that decided (`RequestsErrored`: the cell fails, no window is measured).
        by: ReadinessBy,
        /// Seconds from the streams' start to the decision.
        after_s: f64,
        /// Streams with a token then, of `concurrency`.
        streams_with_token: u32,
        /// N.
        concurrency: u32,
        /// The last running and waiting gauges read, where the engine has them.
        running: Option<f64>,
        /// See `running`.
        waiting: Option<f64>,
    },
    /// A request ended with an error (one event per request, at most
    /// [`REQUEST_ERROR_EVENTS`] per cell; never per chunk).
    RequestError {
        /// Where: [`Stage::WarmUp`], [`Stage::Window`] or [`Stage::Burst`].
        phase: Stage,
        /// The stream (its fixed prompt).
        stream: u32,
        /// The error's kind.
        kind: RequestErrorKind,
        /// The error, redacted.
        message: String,
        /// When the window's closed loop sends it again, seconds (`None`: not re-sent).
        retry_in_s: Option<f64>,
        /// Whether that wait is the server's `Retry-After` (else the client's backoff).
        retry_after: bool,
    },
    /// A planned cell is not run, and why (Over capacity: predicted from the plan); its row
    /// follows as [`ProgressEvent::CellDone`].
    Skipped {
        /// The cell.
        cell: PlannedCell,
        /// Why, in words.
        reason: String,
    },
}

impl ProgressEvent {
    /// The event's kind.
    pub fn kind(&self) -> EventKind {
        match self {
            ProgressEvent::CellStarted { .. } => EventKind::CellStarted,
            ProgressEvent::Phase(_) => EventKind::Phase,
            ProgressEvent::Window { .. } => EventKind::Window,
            ProgressEvent::WindowLive(_) => EventKind::StreamsStarted,
            ProgressEvent::CellDone(_) => EventKind::CellDone,
            ProgressEvent::Note(_) => EventKind::Note,
            ProgressEvent::Readiness { .. } => EventKind::Readiness,
            ProgressEvent::RequestError { .. } => EventKind::RequestError,
            ProgressEvent::Skipped { .. } => EventKind::Skipped,
        }
    }
}

/// The readiness rule in words (the `reason` of a readiness event).
pub fn readiness_reason(by: ReadinessBy) -> &'static str {
    match by {
        ReadinessBy::GaugesAndFirstTokens => {
            "the server ran all N with none waiting, and every stream had a token"
        }
        ReadinessBy::FirstTokens => "every stream had a token (the engine has no queue gauges)",
        ReadinessBy::QueueStalled => {
            "requests stayed queued while the running count stopped growing"
        }
        ReadinessBy::Timeout => "the readiness limit passed",
        ReadinessBy::RequestsErrored => {
            "a request errored before the window opened: the cell fails"
        }
        ReadinessBy::TokensFlowing => "tokens flow on a stream (--serial-server)",
    }
}

/// A sink for progress events (terminal bar, plain lines, or nothing in tests).
pub trait Progress: Send + Sync {
    /// Receives one event.
    fn event(&self, e: ProgressEvent);
}

/// A progress sink that drops everything.
pub struct NoProgress;

impl Progress for NoProgress {
    fn event(&self, _e: ProgressEvent) {}
}

/// The wire format of one JSON event (docs/dashboard.md "JSON events"): `event` names the
/// kind ([`EventKind`]), `t_s` the time, and the other fields are the variant's.
#[derive(Serialize)]
struct Wire<'a> {
    t_s: f64,
    #[serde(flatten)]
    body: WireBody<'a>,
}

/// The fields of each kind of event; the variant names are the [`EventKind`] names.
#[derive(Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
enum WireBody<'a> {
    CellStarted {
        index: usize,
        total: usize,
        phase: Phase,
        context_tokens: u64,
        concurrency: u32,
        label: &'a str,
    },
    Phase {
        phase: Stage,
    },
    StreamsStarted {
        concurrency: u32,
        window_s: f64,
    },
    Readiness {
        readiness_by: ReadinessBy,
        after_s: f64,
        reason: &'static str,
        streams_with_token: u32,
        concurrency: u32,
        running: Option<f64>,
        waiting: Option<f64>,
    },
    RequestError {
        phase: Stage,
        stream: u32,
        kind: &'a RequestErrorKind,
        message: &'a str,
        retry_in_s: Option<f64>,
        retry_after: bool,
    },
    Window {
        start_s: f64,
        end_s: f64,
    },
    Skipped {
        phase: Phase,
        context_tokens: u64,
        concurrency: u32,
        label: &'a str,
        reason: &'a str,
    },
    CellDone {
        row: &'a CellResult,
    },
    Note {
        text: &'a str,
    },
}

impl<'a> WireBody<'a> {
    fn of(e: &'a ProgressEvent) -> WireBody<'a> {
        match e {
            ProgressEvent::CellStarted { index, total, cell } => WireBody::CellStarted {
                index: *index,
                total: *total,
                phase: cell.key.phase,
                context_tokens: cell.key.context_tokens,
                concurrency: cell.key.concurrency,
                label: &cell.label,
            },
            ProgressEvent::Phase(p) => WireBody::Phase { phase: *p },
            ProgressEvent::WindowLive(w) => WireBody::StreamsStarted {
                concurrency: w.concurrency,
                window_s: w.duration.as_secs_f64(),
            },
            ProgressEvent::Window { window, .. } => WireBody::Window {
                start_s: window.start_ns as f64 / 1e9,
                end_s: window.end_ns as f64 / 1e9,
            },
            ProgressEvent::CellDone(r) => WireBody::CellDone { row: r },
            ProgressEvent::Note(n) => WireBody::Note { text: n },
            ProgressEvent::Readiness {
                by,
                after_s,
                streams_with_token,
                concurrency,
                running,
                waiting,
            } => WireBody::Readiness {
                readiness_by: *by,
                after_s: *after_s,
                reason: readiness_reason(*by),
                streams_with_token: *streams_with_token,
                concurrency: *concurrency,
                running: *running,
                waiting: *waiting,
            },
            ProgressEvent::RequestError {
                phase,
                stream,
                kind,
                message,
                retry_in_s,
                retry_after,
            } => WireBody::RequestError {
                phase: *phase,
                stream: *stream,
                kind,
                message,
                retry_in_s: *retry_in_s,
                retry_after: *retry_after,
            },
            ProgressEvent::Skipped { cell, reason } => WireBody::Skipped {
                phase: cell.key.phase,
                context_tokens: cell.key.context_tokens,
                concurrency: cell.key.concurrency,
                label: &cell.label,
                reason,
            },
        }
    }
}

/// The JSON event of `e` at `t_s` seconds since the run started, as one line (no newline).
///
/// Keys come out in alphabetical order, at every level: the format has always been written
/// that way (through `serde_json::Value`, whose maps are sorted), and scripts diffing the
/// output must see the same bytes. An event that cannot be written (a row with a value JSON
/// cannot hold) becomes a `note` saying so, never a panic or a silent gap.
pub fn json_line(e: &ProgressEvent, t_s: f64) -> String {
    let wire = Wire {
        t_s,
        body: WireBody::of(e),
    };
    match serde_json::to_value(&wire) {
        Ok(v) => v.to_string(),
        Err(err) => {
            let text = format!("a {} event could not be written as JSON: {err}", e.kind());
            let note = Wire {
                t_s,
                body: WireBody::Note { text: &text },
            };
            serde_json::to_value(&note).map_or_else(|_| String::new(), |v| v.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmib_core::cell::{CellKey, CellStatus};
    use llmib_core::verdict::bare_result;
    use serde_json::{Value, json};
    use std::time::Duration;

    fn cell(phase: Phase) -> PlannedCell {
        PlannedCell {
            key: CellKey {
                phase,
                context_tokens: 32768,
                concurrency: 4,
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
        ]
    }

    /// The JSON events as they were written by hand before the wire type (version 1 of the
    /// format): the reference the serde form must match byte for byte.
    fn hand_written(e: &ProgressEvent, t_s: f64) -> Value {
        match e {
            ProgressEvent::CellStarted { index, total, cell } => json!({
                "event": "cell_started", "t_s": t_s, "index": index, "total": total,
                "phase": cell.key.phase, "context_tokens": cell.key.context_tokens,
                "concurrency": cell.key.concurrency, "label": cell.label,
            }),
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
        let doc = include_str!("../../../docs/dashboard.md");
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
        seen.dedup();
        assert_eq!(seen.len(), doc.len(), "an undocumented or untested kind");
    }

    #[test]
    fn every_stage_is_documented() {
        let doc = include_str!("../../../docs/dashboard.md");
        let row = doc
            .lines()
            .find(|l| l.starts_with("| `phase` |"))
            .expect("the phase row");
        for s in Stage::ALL {
            assert!(row.contains(&format!("`{s}`")), "{s} is not documented");
        }
    }

    #[test]
    fn error_kind_names_read_back() {
        let mut kinds: Vec<RequestErrorKind> = RequestErrorKind::NAMED
            .iter()
            .map(|(k, _)| k.clone())
            .collect();
        kinds.push(RequestErrorKind::HttpStatus(429));
        kinds.push(RequestErrorKind::Other("http_x".into()));
        for k in kinds {
            assert!(!k.name().is_empty());
            assert_eq!(RequestErrorKind::parse(&k.name()), k);
        }
        assert_eq!(RequestErrorKind::HttpStatus(500).to_string(), "http_500");
    }
}
