//! The body of a measured stream, read either by the reqwest client (the default) or by the
//! raw reader ([`crate::wire::rawhttp`], `--http-reader raw`): one interface for `stream::drive`, so
//! that SSE decoding, limits, cancellation and accounting are the same code for both.

use crate::wire::rawhttp::{PieceError, RawResponse};
use bytes::Bytes;
use tokio::time::Instant;

/// Which client reads the measured streams (`--http-reader`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum HttpReader {
    /// The shared reqwest client: every chunk is stamped when the task reading the stream runs.
    #[default]
    Reqwest,
    /// The raw HTTP/1.1 reader over the socket (`https://` through rustls where the build has
    /// TLS): every chunk is stamped with the kernel's receive time where the system gives one
    /// (Linux).
    Raw,
}

/// The environment variable of a proxy reqwest would send `http://` requests through, if one
/// is set (non-empty): `HTTP_PROXY`, `http_proxy`, `ALL_PROXY` or `all_proxy`.
pub fn http_proxy_var() -> Option<&'static str> {
    ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .into_iter()
        .find(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
}

impl HttpReader {
    /// The reader `--http-reader auto` (the default) takes for `url`: the raw reader wherever
    /// it reads the endpoint exactly as reqwest would (an `http://` URL, or `https://` where
    /// the build has TLS, without credentials, no proxy), reqwest otherwise; and why, for
    /// `run.json`. `proxy`: the proxy variable set in the environment (`HTTP_PROXY`,
    /// `ALL_PROXY`, in either case), which reqwest honours and the raw reader does not.
    pub fn auto(url: &str, proxy: Option<&str>) -> (HttpReader, String) {
        use crate::wire::rawhttp::{Unreadable, unreadable};
        let why = match reqwest::Url::parse(url.trim()) {
            Err(_) => Some("not a URL the raw reader can parse: reqwest, with user-space instants"),
            Ok(u) => match unreadable(&u) {
                Some(Unreadable::Scheme) => Some(
                    "neither http:// nor https:// with TLS built in: reqwest, with user-space instants",
                ),
                Some(Unreadable::Credentials) => {
                    Some("the URL carries credentials, which only reqwest sends")
                }
                None => None,
            },
        };
        if let Some(why) = why {
            return (HttpReader::Reqwest, why.into());
        }
        if let Some(var) = proxy {
            return (
                HttpReader::Reqwest,
                format!("{var} is set: reqwest goes through the proxy, the raw reader would not"),
            );
        }
        (
            HttpReader::Raw,
            "an endpoint reached directly: the raw reader, with kernel receive times".into(),
        )
    }

    /// The name in flags and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            HttpReader::Reqwest => "reqwest",
            HttpReader::Raw => "raw",
        }
    }
}

/// Why a measured stream's body broke off, in the words of the reader that read it (the
/// stream's error message quotes them after how many chunks came).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyReadError {
    /// reqwest's error, as its stream said it before this module existed.
    #[error(transparent)]
    Reqwest(#[from] reqwest::Error),
    /// The raw reader's.
    #[error(transparent)]
    Raw(#[from] PieceError),
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
    /// the reason, on one line, when the stream broke. One call per chunk: nothing is allocated
    /// on the way to a piece.
    pub async fn next(&mut self) -> Option<Result<(Bytes, Option<Instant>), BodyReadError>> {
        match self {
            Body::Reqwest(r) => match r.chunk().await {
                Ok(Some(b)) => Some(Ok((b, None))),
                Ok(None) => None,
                Err(e) => Some(Err(e.into())),
            },
            Body::Raw(r) => r
                .next()
                .await
                .map(|p| p.map(|p| (p.data, Some(p.at))).map_err(Into::into)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_takes_the_raw_reader_only_where_it_reads_as_reqwest_would() {
        let pick = |url, proxy| HttpReader::auto(url, proxy).0;
        assert_eq!(pick("http://127.0.0.1:30000", None), HttpReader::Raw);
        assert_eq!(pick("HTTP://gpu-01:8000/v1", None), HttpReader::Raw);
        let https = if cfg!(feature = "tls") {
            HttpReader::Raw
        } else {
            HttpReader::Reqwest
        };
        assert_eq!(pick("https://api.example.com", None), https);
        assert_eq!(pick("ftp://host", None), HttpReader::Reqwest);
        assert_eq!(pick("http://u:p@host:8000", None), HttpReader::Reqwest);
        // An '@' in the path is not a credential.
        assert_eq!(pick("http://host:8000/v1/@x", None), HttpReader::Raw);
        let (r, why) = HttpReader::auto("http://host:8000", Some("HTTP_PROXY"));
        assert_eq!(r, HttpReader::Reqwest);
        assert!(why.contains("HTTP_PROXY"), "{why}");
    }
}
