//! A bare HTTP/1.1 client for the crate's HTTP-level tests: one connection per exchange, no
//! client library between the test and the bytes. Bodies are read as text; SSE events are the
//! `data: ` lines (the chunked encoding's size lines are other lines, so they never mix).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sends one request on a fresh connection (`Connection: close`).
async fn send(addr: SocketAddr, method: &str, path: &str, body: Option<&str>) -> TcpStream {
    send_with(addr, method, path, "", body).await
}

/// [`send`] with extra header lines (`headers`: each `Name: value\r\n`).
async fn send_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &str,
    body: Option<&str>,
) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let _ = s.set_nodelay(true);
    let body = body.unwrap_or("");
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).await.expect("writes");
    s
}

/// The status and the body of a whole response.
pub(crate) async fn exchange(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let mut s = send(addr, method, path, body).await;
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("reads");
    split_response(&out)
}

/// [`exchange`] with extra header lines (each `Name: value\r\n`).
pub(crate) async fn exchange_with(
    addr: SocketAddr,
    path: &str,
    headers: &str,
    body: &Value,
) -> (u16, String) {
    let mut s = send_with(addr, "POST", path, headers, Some(&body.to_string())).await;
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("reads");
    split_response(&out)
}

/// (status, body) of a raw response.
fn split_response(raw: &str) -> (u16, String) {
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (status, body)
}

/// POSTs JSON and returns the body.
pub(crate) async fn post(addr: SocketAddr, path: &str, body: &Value) -> String {
    exchange(addr, "POST", path, Some(&body.to_string()))
        .await
        .1
}

/// The JSON events of an SSE body (`[DONE]` left out).
pub(crate) fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("event JSON"))
        .collect()
}

/// The `(event, data)` pairs of an SSE body whose events have `event:` lines.
pub(crate) fn named_events(body: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut name = String::new();
    for l in body.lines() {
        if let Some(n) = l.strip_prefix("event: ") {
            name = n.to_string();
        } else if let Some(d) = l.strip_prefix("data: ") {
            let v = serde_json::from_str(d).expect("event JSON");
            out.push((std::mem::take(&mut name), v));
        }
    }
    out
}

/// The sum of a metric's samples in `/metrics` (`None` when it is not there).
pub(crate) async fn metric(addr: SocketAddr, name: &str) -> Option<f64> {
    let (_, text) = exchange(addr, "GET", "/metrics", None).await;
    metric_in(&text, name)
}

/// The sum of a metric's samples in a Prometheus text.
pub(crate) fn metric_in(text: &str, name: &str) -> Option<f64> {
    let values: Vec<f64> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|r| r.starts_with(['{', ' ']))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse().ok())
        .collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

/// Polls a metric until it reads `want` (the engine publishes after each iteration), for at
/// most two seconds; returns the last value read.
pub(crate) async fn wait_metric(addr: SocketAddr, name: &str, want: f64) -> f64 {
    let mut last = f64::NAN;
    for _ in 0..200 {
        last = metric(addr, name).await.unwrap_or(f64::NAN);
        if last == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    last
}

/// A stream being read a piece at a time; dropping it drops the connection.
pub(crate) struct OpenStream {
    s: TcpStream,
    /// Everything read so far (headers included).
    pub raw: String,
}

impl OpenStream {
    /// Sends a streaming request and reads until its first SSE event.
    pub(crate) async fn open(addr: SocketAddr, path: &str, body: &Value) -> OpenStream {
        let s = send(addr, "POST", path, Some(&body.to_string())).await;
        let mut o = OpenStream {
            s,
            raw: String::new(),
        };
        o.read_until("data: ").await;
        o
    }

    /// Reads until the text read so far contains `needle` (at most five seconds).
    pub(crate) async fn read_until(&mut self, needle: &str) {
        self.read_until_count(needle, 1).await;
    }

    /// Reads until the text read so far contains `needle` `count` times (at most five
    /// seconds).
    pub(crate) async fn read_until_count(&mut self, needle: &str, count: usize) {
        let mut buf = [0u8; 4096];
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while self.raw.matches(needle).count() < count {
            let n = tokio::time::timeout_at(deadline, self.s.read(&mut buf))
                .await
                .unwrap_or_else(|_| panic!("no {needle:?} within 5 s in {}", self.raw))
                .expect("reads");
            assert!(n > 0, "closed before {needle:?}: {}", self.raw);
            self.raw.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }

    /// Reads the rest, until the server closes the connection (at most five seconds).
    pub(crate) async fn finish(mut self) -> String {
        let mut rest = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), self.s.read_to_end(&mut rest))
            .await
            .expect("the stream ends")
            .expect("reads");
        self.raw.push_str(&String::from_utf8_lossy(&rest));
        self.raw
    }
}

/// How a raw response ended.
pub(crate) struct Ending {
    /// Everything read (headers included).
    pub raw: String,
    /// The chunked body ended with its terminating empty chunk.
    pub clean: bool,
    /// Nothing more came for `limit` and the connection was still open.
    pub silent: bool,
}

/// POSTs `body` and reads until the server closes, the connection fails, or nothing comes
/// for `limit`.
pub(crate) async fn read_ending(
    addr: SocketAddr,
    path: &str,
    body: &Value,
    limit: Duration,
) -> Ending {
    let mut s = send(addr, "POST", path, Some(&body.to_string())).await;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let silent = loop {
        match tokio::time::timeout(limit, s.read(&mut buf)).await {
            Err(_) => break true,
            Ok(Ok(0) | Err(_)) => break false,
            Ok(Ok(n)) => raw.extend_from_slice(&buf[..n]),
        }
    };
    let raw = String::from_utf8_lossy(&raw).into_owned();
    Ending {
        clean: raw.ends_with("\r\n0\r\n\r\n"),
        raw,
        silent,
    }
}

/// The prompt tokens an answer's usage reports on `path` (Messages: its uncached,
/// cache-written and cache-read parts together).
pub(crate) fn usage_prompt_tokens(path: &str, body: &str) -> u64 {
    let v: Value = serde_json::from_str(body).expect("JSON");
    let u = &v["usage"];
    let n = if path == "/v1/messages" {
        // Anthropic's usage splits the prompt into uncached, cache-written and cache-read.
        let part = |k: &str| u[k].as_u64().unwrap_or(0);
        u["input_tokens"]
            .as_u64()
            .map(|n| n + part("cache_creation_input_tokens") + part("cache_read_input_tokens"))
    } else {
        u["prompt_tokens"].as_u64().or(u["input_tokens"].as_u64())
    };
    n.unwrap_or_else(|| panic!("{path}: no prompt count in {body}"))
}
