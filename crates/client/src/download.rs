//! Fetching a file whole (the datasets of `eval`): one GET with a total time limit and a size
//! cap, errors in one line that say what to do. Verification (sha256) is the caller's.

use crate::http::{HttpOptions, build_client, describe_request_error};
use futures_util::StreamExt;
use std::time::Duration;

/// Fetches `url` whole; refuses a body over `max_bytes` (hostile or wrong URL) and gives up
/// after `timeout` in all.
pub async fn download(url: &str, max_bytes: u64, timeout: Duration) -> Result<Vec<u8>, String> {
    let client = build_client(&HttpOptions {
        connect_timeout: Duration::from_secs(10),
        max_idle_per_host: 1,
        ..Default::default()
    })
    .map_err(|e| e.to_string())?;
    let fetch = async {
        let resp = client
            .get(url)
            .send()
            .await
            .map_err(|e| describe_request_error(&e, url))?;
        let status = resp.status();
        if !status.is_success() {
            return Err(format!(
                "{url} answered HTTP {}: check the address, or download the file yourself and pass --dataset-dir",
                status.as_u16()
            ));
        }
        if resp.content_length().is_some_and(|n| n > max_bytes) {
            return Err(format!(
                "{url} is larger than the {max_bytes} bytes a dataset may have: check the address"
            ));
        }
        let mut body = Vec::new();
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| {
                format!(
                    "the download from {url} broke after {} bytes: {e}",
                    body.len()
                )
            })?;
            if body.len() as u64 + chunk.len() as u64 > max_bytes {
                return Err(format!(
                    "{url} sent more than the {max_bytes} bytes a dataset may have: check the address"
                ));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    };
    tokio::time::timeout(timeout, fetch).await.unwrap_or_else(|_| {
        Err(format!(
            "the download from {url} took over {} s: retry, or download the file yourself and pass --dataset-dir",
            timeout.as_secs()
        ))
    })
}

/// A URL as printed and stored: without a user, password, query or fragment (a mirror's token
/// must not reach the terminal, `eval.json` or the page).
pub fn shown_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
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
        assert_eq!(shown_url("http://127.0.0.1:8/x"), "http://127.0.0.1:8/x");
        assert_eq!(shown_url("not a url"), "<an unparseable URL>");
    }
}
