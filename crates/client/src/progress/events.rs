//! The progress protocol: what the driver and a decode window tell the displays while they
//! work. The events ([`ProgressEvent`]) and their vocabulary are typed here — the stage a cell
//! is in ([`Stage`]), the kind of an event ([`EventKind`]) and of a failed request
//! ([`RequestErrorKind`]) — and so is their JSON form ([`json_line`], the `--display json`
//! format documented in docs/dashboard.md). The driver and the window both speak it; neither
//! imports the other for it.

use crate::progress::live::{LiveWindow, OpenLoopLive};
pub use crate::wire::error_kind::RequestErrorKind;
use llmib_core::PlannedCell;
use llmib_core::ReadinessBy;
use llmib_core::Window;
use llmib_core::{CellResult, Phase};
use serde::{Serialize, Serializer};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

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
    /// Open load: one request at a time, for the synchronous rate (`--request-rate auto`).
    Synchronous,
    /// Open load: as many requests at once as the server admits, for its saturation rate.
    Saturation,
    /// Open load: requests sent on the rate cell's schedule, then the drain.
    OpenLoop,
}

impl Stage {
    /// Every stage (tests and documentation check the words of each).
    pub const ALL: [Stage; 12] = [
        Stage::HiddenWarmUp,
        Stage::Prompts,
        Stage::Prompt,
        Stage::WarmUp,
        Stage::Prefill,
        Stage::Window,
        Stage::Counting,
        Stage::BurstWarmUp,
        Stage::Burst,
        Stage::Synchronous,
        Stage::Saturation,
        Stage::OpenLoop,
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
            Stage::Synchronous => "synchronous rate",
            Stage::Saturation => "saturation rate",
            Stage::OpenLoop => "open loop",
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

/// The kind of a [`ProgressEvent`]: the `event` field of its JSON form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// [`ProgressEvent::CellStarted`].
    CellStarted,
    /// [`ProgressEvent::Phase`].
    Phase,
    /// [`ProgressEvent::WindowLive`].
    StreamsStarted,
    /// [`ProgressEvent::OpenLoopLive`].
    OpenLoopStarted,
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
            EventKind::OpenLoopStarted => "open_loop_started",
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
    /// An open-load cell starts sending on its schedule: its live counts, to poll while it
    /// runs.
    OpenLoopLive(Arc<OpenLoopLive>),
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
            ProgressEvent::OpenLoopLive(_) => EventKind::OpenLoopStarted,
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
        ReadinessBy::FirstTokensNoWaiting => {
            "every stream had a token and nothing waited (short answers: the running gauge rarely shows all N)"
        }
        ReadinessBy::FirstTokensStalled => {
            "some streams got no first token long after the others (no queue gauge): queued"
        }
    }
}

/// A sink for progress events (the dashboard, plain lines or JSON events).
pub trait Progress: Send + Sync {
    /// Receives one event.
    fn event(&self, e: ProgressEvent);
}

/// A stage's failed requests as events: the first [`REQUEST_ERROR_EVENTS`] one by one, the
/// rest counted in one note by [`RequestErrors::finish`] (a failing server at N = 256 must not
/// flood the log). One per cell stage; the driver's warm-ups and bursts and the window's
/// closed loop all report through it.
pub struct RequestErrors<'a> {
    progress: &'a dyn Progress,
    stage: Stage,
    shown: u32,
    more: u32,
}

impl<'a> RequestErrors<'a> {
    /// None reported yet for `stage`.
    pub fn new(progress: &'a dyn Progress, stage: Stage) -> Self {
        RequestErrors {
            progress,
            stage,
            shown: 0,
            more: 0,
        }
    }

    /// One failed request: `kind` as the record names it, `message` (redacted by the caller)
    /// made only when the event is sent, and when it is sent again, if it is.
    pub fn report(
        &mut self,
        stream: u32,
        kind: &str,
        message: impl FnOnce() -> String,
        retry_in_s: Option<f64>,
        retry_after: bool,
    ) {
        if self.shown == REQUEST_ERROR_EVENTS {
            self.more += 1;
            return;
        }
        self.shown += 1;
        self.progress.event(ProgressEvent::RequestError {
            phase: self.stage,
            stream,
            kind: RequestErrorKind::parse(kind),
            message: message(),
            retry_in_s,
            retry_after,
        });
    }

    /// The note counting the errors not listed, if any.
    pub fn finish(&mut self) {
        if self.more > 0 {
            self.progress.event(ProgressEvent::Note(format!(
                "{} more {} request errors not listed",
                self.more, self.stage
            )));
            self.more = 0;
        }
    }
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
        /// Open-load cells only: the rate asked for.
        #[serde(skip_serializing_if = "Option::is_none")]
        request_rate: Option<f64>,
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
    OpenLoopStarted {
        request_rate: f64,
        scheduled: usize,
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
                request_rate: cell.key.request_rate(),
            },
            ProgressEvent::Phase(p) => WireBody::Phase { phase: *p },
            ProgressEvent::WindowLive(w) => WireBody::StreamsStarted {
                concurrency: w.concurrency,
                window_s: w.duration.as_secs_f64(),
            },
            ProgressEvent::OpenLoopLive(l) => WireBody::OpenLoopStarted {
                request_rate: l.requested_rate(),
                scheduled: l.scheduled.load(Ordering::Relaxed),
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
    json_value(e, t_s).map_or_else(String::new, |v| v.to_string())
}

/// [`json_line`]'s value, for a writer that adds keys of its own (the event file) without
/// parsing the line back; `None` only where not even the note could be written.
pub fn json_value(e: &ProgressEvent, t_s: f64) -> Option<serde_json::Value> {
    let wire = Wire {
        t_s,
        body: WireBody::of(e),
    };
    match serde_json::to_value(&wire) {
        Ok(v) => Some(v),
        Err(err) => {
            let text = format!("a {} event could not be written as JSON: {err}", e.kind());
            let note = Wire {
                t_s,
                body: WireBody::Note { text: &text },
            };
            serde_json::to_value(&note).ok()
        }
    }
}

#[cfg(test)]
#[path = "events_tests.rs"]
mod tests;
