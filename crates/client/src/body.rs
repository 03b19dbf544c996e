//! The body of a measured stream, read either by the reqwest client (the default) or by the
//! raw reader ([`crate::rawhttp`], `--http-reader raw`): one interface for `stream::drive`, so
//! that SSE decoding, limits, cancellation and accounting are the same code for both.

use crate::rawhttp::RawResponse;
use bytes::Bytes;
use tokio::time::Instant;

/// Which client reads the measured streams (`--http-reader`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HttpReader {
    /// The shared reqwest client: every chunk is stamped when the task reading the stream runs.
    #[default]
    Reqwest,
    /// The raw HTTP/1.1 reader over the socket, `http://` only: every chunk is stamped with
    /// the kernel's receive time where the system gives one (Linux).
    Raw,
}

impl HttpReader {
    /// The name in flags and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            HttpReader::Reqwest => "reqwest",
            HttpReader::Raw => "raw",
        }
    }
}

/// A response body being read.
#[derive(Debug)]
pub(crate) enum Body {
    /// Through reqwest (hyper's connection task reads the socket).
    Reqwest(reqwest::Response),
    /// Through the raw reader.
    Raw(RawResponse),
}

impl Body {
    /// The next bytes of the body, with the instant the reader gave them (the raw reader's:
    /// the kernel's receive time, else its read's); `None` at the body's clean end; `Err` with
    /// the reason, on one line, when the stream broke.
    pub async fn next(&mut self) -> Option<Result<(Bytes, Option<Instant>), String>> {
        match self {
            Body::Reqwest(r) => match r.chunk().await {
                Ok(Some(b)) => Some(Ok((b, None))),
                Ok(None) => None,
                // As reqwest's stream said it before this module existed.
                Err(e) => Some(Err(e.to_string())),
            },
            Body::Raw(r) => r.next().await.map(|p| p.map(|p| (p.data, Some(p.at)))),
        }
    }
}
