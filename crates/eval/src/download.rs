//! Fetching a file whole (the datasets of `eval`): one GET with a total time limit and a size
//! cap, errors in one line that say what to do. Verification (sha256) is the caller's.
//!
//! A mirror's address may carry a token (`user:password@`, `?sig=…`): every message names the
//! URL as [`shown_url`] prints it, never as given.

use futures_util::StreamExt;
use llmib_client::{HttpError, HttpOptions, build_client};
use std::time::Duration;

/// Why a download failed. `url` is always the shown form.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The HTTP client could not be built.
    #[error(transparent)]
    Client(#[from] HttpError),
    /// No HTTP answer (refused, unreachable, TLS…), in the client's words.
    #[error("{0}")]
    Transport(String),
    /// The server answered with an error status.
    #[error(
        "{url} answered HTTP {status}: check the address, or download the file yourself and pass --dataset-dir"
    )]
    Status {
        /// The URL, as shown.
        url: String,
        /// The HTTP status.
        status: u16,
    },
    /// The body is larger than any dataset (a wrong URL or a hostile server).
    #[error("{url} {verb} the {max_bytes} bytes a dataset may have: check the address")]
    TooLarge {
        /// The URL, as shown.
        url: String,
        /// `is larger than` (announced) or `sent more than` (counted).
        verb: &'static str,
        /// The cap.
        max_bytes: u64,
    },
    /// The body stopped coming.
    #[error("the download from {url} broke after {bytes} bytes: {reason}")]
    Broken {
        /// The URL, as shown.
        url: String,
        /// Bytes received.
        bytes: usize,
        /// What the client said.
        reason: String,
    },
    /// The whole download took too long.
    #[error(
        "the download from {url} took over {secs} s: retry, or download the file yourself and pass --dataset-dir"
    )]
    TimedOut {
        /// The URL, as shown.
        url: String,
        /// The limit.
        secs: u64,
    },
}

/// An error and its causes in one line, without advice (the client's advice is a server's).
fn causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = c.source();
    }
    parts.join(": ")
}

/// Fetches `url` whole; refuses a body over `max_bytes` (hostile or wrong URL) and gives up
/// after `timeout` in all.
pub async fn download(
    url: &str,
    max_bytes: u64,
    timeout: Duration,
) -> Result<Vec<u8>, DownloadError> {
    let client = build_client(&HttpOptions {
        connect_timeout: Duration::from_secs(10),
        max_idle_per_host: 1,
        ..Default::default()
    })?;
    let shown = shown_url(url);
    let fetch = async {
        let resp = client.get(url).send().await.map_err(|e| {
            // The client's words name the URL as a server's (`check --url`, "is the server
            // running"): here it is the dataset's, so the advice is the dataset's.
            DownloadError::Transport(format!(
                "cannot download the dataset from {shown} ({}): check the network, or download the file yourself and pass --dataset-dir (or point --dataset-url at a copy)",
                causes(&e.without_url())
            ))
        })?;
        let status = resp.status();
        if !status.is_success() {
            return Err(DownloadError::Status {
                url: shown.clone(),
                status: status.as_u16(),
            });
        }
        let too_large = |verb| DownloadError::TooLarge {
            url: shown.clone(),
            verb,
            max_bytes,
        };
        if resp.content_length().is_some_and(|n| n > max_bytes) {
            return Err(too_large("is larger than"));
        }
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| DownloadError::Broken {
                url: shown.clone(),
                bytes: body.len(),
                reason: e.without_url().to_string(),
            })?;
            if body.len() as u64 + chunk.len() as u64 > max_bytes {
                return Err(too_large("sent more than"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(timeout, fetch)
        .await
        .unwrap_or_else(|_| {
            Err(DownloadError::TimedOut {
                url: shown.clone(),
                secs: timeout.as_secs(),
            })
        })
}

/// A URL as printed and stored: without a user, password, query or fragment (a mirror's token
/// must not reach the terminal, `eval.json` or the page). The credentials go by
/// [`llmib_core::strip_url_userinfo`], the one function that strips them everywhere.
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            llmib_core::strip_url_userinfo(u.as_str())
        }
        Err(_) => "<an unparseable URL>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_urls_drop_credentials_and_queries() {
        assert_eq!(
            shown_url("https://user:tok3n@mirror.example/a/b.csv?sig=s3cret#x"),
            "https://mirror.example/a/b.csv"
        );
        assert_eq!(
            shown_url("https://tok3n@mirror.example"),
            "https://mirror.example/"
        );
        assert_eq!(shown_url("http://127.0.0.1:8/x"), "http://127.0.0.1:8/x");
        assert_eq!(shown_url("not a url"), "<an unparseable URL>");
    }

    /// An unreachable dataset host is the network's or the dataset URL's problem: the advice
    /// says so, never "check --url" (the server's flag).
    #[tokio::test]
    async fn a_failed_download_says_to_check_the_network_not_the_server() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let e = download(
            &format!("http://127.0.0.1:{port}/d.csv"),
            1 << 20,
            Duration::from_secs(5),
        )
        .await
        .expect_err("refused")
        .to_string();
        assert!(
            e.contains("check the network") && e.contains("--dataset-dir"),
            "{e}"
        );
        assert!(!e.contains("--url") || e.contains("--dataset-url"), "{e}");
        assert!(!e.contains("is the server running"), "{e}");
    }
}
