//! Why a request failed, as one word: the `kind` of a request error and the key of a row's
//! `errors` tally. It lives on the wire because the request executor (`stream`) is its only
//! producer; the progress protocol and the rows name it too, so it sits below both.

use serde::{Serialize, Serializer};
use std::borrow::Cow;
use std::fmt;

/// Why a request failed: the `kind` of a request error, and the key of the row's `errors`
/// tally. The stream measurement is the only producer (`stream::measure`); the record keeps
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
    /// The server's usage claims more completion tokens than the request's `max_tokens`.
    CountDisagreement,
    /// The stream ended without `[DONE]`.
    NoDone,
    /// A name this build does not produce (kept as written, never dropped).
    Other(String),
}

impl RequestErrorKind {
    /// The kinds with a fixed name (everything but `HttpStatus` and `Other`).
    const NAMED: [(RequestErrorKind, &'static str); 11] = [
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
        (RequestErrorKind::CountDisagreement, "count_disagreement"),
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

#[cfg(test)]
mod tests {
    use super::*;

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
