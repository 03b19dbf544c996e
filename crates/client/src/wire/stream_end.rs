//! How a measured stream ended, in words that say what to do: broken, silent past a limit,
//! ended without its API's end event or stop reason, or with usage reports that agree on no
//! prompt length; and the timer that tells when a stream has been silent past its limit
//! ([`Silence`]). Kept apart from the stream's loop (`stream.rs`), which only observes.

use std::time::Duration;
use tokio::time::Instant;

use llmib_core::Outcome;

use crate::wire::error_kind::RequestErrorKind;

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 300 {
        line.chars().take(300).collect::<String>() + "…"
    } else {
        line.to_string()
    }
}

/// An error outcome with its first line only.
pub(crate) fn error(kind: RequestErrorKind, msg: String) -> Outcome {
    Outcome::Error {
        kind: kind.name().into_owned(),
        message: first_line(&msg),
    }
}

/// A Messages stream's prompt length, from all of its usage reports read together (see
/// `llmib_core::request_prompt_tokens`); reports that agree under no reading fail the request
/// with the server's numbers, never a guessed length.
pub(crate) fn messages_prompt(
    reports: &[llmib_core::MessagesUsage],
    reading: llmib_core::InputReading,
) -> Result<Option<u64>, Outcome> {
    match llmib_core::request_prompt_tokens(reports, reading) {
        Ok(n) => Ok(n.map(|(n, _)| n)),
        Err(e) => Err(error(RequestErrorKind::CountDisagreement, e.to_string())),
    }
}

/// The outcome of a stream whose body broke after `chunks` chunks.
pub(crate) fn broken(chunks: usize, e: &dyn std::fmt::Display) -> Outcome {
    let msg = format!("the stream broke after {chunks} chunks: {e}");
    error(RequestErrorKind::StreamBroken, msg)
}

/// The outcome of a stream given up for silence after `chunks` chunks, with what to do about
/// it: `first_token` and `idle` are the limits it was held to (`StreamLimits`).
pub(crate) fn silent(first_token: Duration, idle: Duration, chunks: usize) -> Outcome {
    let secs = |d: Duration| format!("{:.0} s", d.as_secs_f64());
    if chunks == 0 {
        error(
            RequestErrorKind::TimeoutFirstToken,
            format!(
                "no token within {} of sending the request: the server accepted it but stayed silent (raise --first-token-timeout if its prefill is that slow)",
                secs(first_token)
            ),
        )
    } else {
        error(
            RequestErrorKind::TimeoutIdle,
            format!(
                "the stream went silent for {} after {chunks} chunks (raise --idle-timeout if the server stalls that long on purpose)",
                secs(idle)
            ),
        )
    }
}

/// How a stream that ended on its own ended: its API's end event (`[DONE]`, `message_stop`,
/// `response.completed`) with a finish reason is a finished request; anything else is an error
/// of the server's.
pub(crate) fn end_outcome(
    api: llmib_core::Api,
    done: bool,
    finish: Option<String>,
    chunks: usize,
) -> Outcome {
    let end = match api {
        llmib_core::Api::Completions | llmib_core::Api::Chat => "[DONE]",
        llmib_core::Api::Messages => "message_stop",
        llmib_core::Api::Responses => "response.completed",
    };
    match (done, finish) {
        (true, Some(reason)) => Outcome::Finished { reason },
        (true, None) => error(
            RequestErrorKind::NoFinishReason,
            format!("the stream ended with {end} but no stop reason"),
        ),
        (false, _) => error(
            RequestErrorKind::NoDone,
            format!(
                "the stream ended without {end} after {chunks} chunks (the server closed the connection)"
            ),
        ),
    }
}

/// The stream's one silence timer: the send-to-first-token limit until content arrives, then
/// the idle limit from the last read. It moves when content first arrives and when it fires
/// early (reads came since it was set), never per read: a read costs it no clock read and no
/// timer update.
pub(crate) struct Silence<'a> {
    /// The timer, at the limit's end or before it.
    pub(crate) timer: std::pin::Pin<&'a mut tokio::time::Sleep>,
    /// The cell's origin, which read instants are offsets from.
    origin: Instant,
    /// The idle limit.
    idle: Duration,
    /// The instant of the last read since content arrived.
    last_ns: Option<u64>,
}

impl<'a> Silence<'a> {
    /// The timer, set to the first-token limit's end, and the idle limit that follows it.
    pub(crate) fn new(
        timer: std::pin::Pin<&'a mut tokio::time::Sleep>,
        origin: Instant,
        idle: Duration,
    ) -> Self {
        Silence {
            timer,
            origin,
            idle,
            last_ns: None,
        }
    }

    /// After a read at `t_ns`; `content`: whether content has arrived by now.
    pub(crate) fn read(&mut self, t_ns: u64, content: bool) {
        if !content {
            return;
        }
        let first = self.last_ns.is_none();
        self.last_ns = Some(t_ns);
        if first {
            // The idle limit replaces the first-token limit, which may end later than it.
            let d = self.deadline(t_ns);
            self.timer.as_mut().reset(d);
        }
    }

    /// The timer fired: whether the stream really was silent for its limit. Where reads came
    /// since the timer was set, it is moved to the limit's true end instead.
    pub(crate) fn expired(&mut self) -> bool {
        match self.last_ns.map(|t| self.deadline(t)) {
            Some(d) if d > Instant::now() => {
                self.timer.as_mut().reset(d);
                false
            }
            _ => true,
        }
    }

    /// When the idle limit ends after a read at `t_ns`.
    fn deadline(&self, t_ns: u64) -> Instant {
        self.origin + Duration::from_nanos(t_ns) + self.idle
    }
}
