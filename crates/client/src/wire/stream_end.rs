//! How a measured stream ended, in words that say what to do: broken, silent past a limit,
//! ended without its API's end event or stop reason, or with usage reports that agree on no
//! prompt length. Kept apart from the stream's loop (`stream.rs`), which only observes.

use std::time::Duration;

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
