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
