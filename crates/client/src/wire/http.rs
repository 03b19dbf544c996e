//! The HTTP client every request goes through, and error messages that say what to do.
//!
//! One `reqwest::Client` is shared by all streams. It is HTTP/1.1 only (no `http2` feature):
//! each in-flight stream owns one connection, so cancelling a request at the end of a window
//! closes its connection and the server frees that request's KV cache. The idle pool is sized for
//! the largest concurrency the tool runs (1024 streams) so that the closed loop reuses
//! connections instead of reconnecting between requests. There is a connect timeout but no
//! total timeout: a decode request legitimately streams for minutes.
//!
//! With the `tls` feature, HTTPS uses rustls with the `ring` provider, installed once per
//! process before the first client is built.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use thiserror::Error;

use crate::wire::chunk::error_body_message;

/// The most concurrent streams the tool runs; the idle pool keeps this many connections.
pub const MAX_STREAMS: usize = 1024;

/// Which headers carry the API key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyHeader {
    /// `Authorization: Bearer KEY` (OpenAI's, and what vLLM and SGLang check).
    #[default]
    Bearer,
    /// `x-api-key: KEY` (Anthropic's).
    XApiKey,
    /// Both: a Messages server may check either (the default of `--api messages`).
    Both,
}

/// The version header Anthropic's API asks every request to carry; servers that copy the API
/// take it and need none.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The headers that carry `key` as `how` says, plus `anthropic-version` where `anthropic`
/// (the Messages API): one list for the reqwest client and the raw reader.
pub(crate) fn key_headers(
    key: Option<&str>,
    how: KeyHeader,
    anthropic: bool,
) -> Vec<(&'static str, String)> {
    let mut h = Vec::new();
    if let Some(key) = key.filter(|k| !k.is_empty()) {
        if how != KeyHeader::XApiKey {
            h.push(("authorization", format!("Bearer {key}")));
        }
        if how != KeyHeader::Bearer {
            h.push(("x-api-key", key.to_owned()));
        }
    }
    if anthropic {
        h.push(("anthropic-version", ANTHROPIC_VERSION.to_owned()));
    }
    h
}

/// How the client is built.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Sent on every request, in the headers `key_header` names.
    pub api_key: Option<String>,
    /// Which headers carry the key.
    pub key_header: KeyHeader,
    /// Send `anthropic-version` (the Messages API).
    pub anthropic: bool,
    /// Limit for establishing a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Idle connections kept per host (at least the run's largest concurrency).
    pub max_idle_per_host: usize,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            api_key: None,
            key_header: KeyHeader::Bearer,
            anthropic: false,
            connect_timeout: Duration::from_secs(5),
            max_idle_per_host: MAX_STREAMS,
        }
    }
}

/// Building the client failed.
#[derive(Debug, Error)]
pub enum HttpError {
    /// The API key cannot be sent in an HTTP header.
    #[error(
        "the API key contains characters that cannot be sent in an HTTP header; check the key (`--api-key` or `OPENAI_API_KEY`)"
    )]
    InvalidApiKey,
    /// reqwest refused the configuration (for example no TLS backend).
    #[error("cannot build the HTTP client: {0}")]
    Build(String),
}

/// Builds the shared client.
pub fn build_client(opts: &HttpOptions) -> Result<reqwest::Client, HttpError> {
    #[cfg(feature = "tls")]
    install_crypto_provider();
    let mut headers = HeaderMap::new();
    for (name, value) in key_headers(opts.api_key.as_deref(), opts.key_header, opts.anthropic) {
        let mut v = HeaderValue::from_str(&value).map_err(|_| HttpError::InvalidApiKey)?;
        // Keeps the key out of reqwest's Debug output.
        v.set_sensitive(name != "anthropic-version");
        headers.insert(HeaderName::from_static(name), v);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .user_agent(concat!("llm-inference-bench/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(opts.connect_timeout)
        .pool_max_idle_per_host(opts.max_idle_per_host.max(1))
        .pool_idle_timeout(Duration::from_secs(90))
        // Tokens are small writes; Nagle would delay our request bytes, not the server's.
        .tcp_nodelay(true)
        .build()
        .map_err(|e| HttpError::Build(error_chain(&e)))
}

/// Attempts of one request when pooled connections turn out to be closed already (the first
/// try plus retries). Each stale connection fails at once, and several streams ending together
/// can leave several of them in the pool, so one retry is not always enough.
const STALE_ATTEMPTS: usize = 3;

/// Whether a failed request met a pooled keep-alive connection that the server had already
/// closed: the request was written, and the connection closed or was reset before any byte of
/// an answer came back, so the server never processed it.
///
/// llama.cpp's `llama-server` closes the connection after every streamed response although its
/// headers say `Keep-Alive: timeout=5, max=100` (its stream handler returns "no more data" after
/// ending the chunked body, which cpp-httplib treats as a failed write). The client pools the
/// connection as soon as the body ends, before the server's FIN arrives, so a closed-loop
/// re-send or a metrics read right after a stream can be written into a dead connection. The
/// same race exists with any server's keep-alive timeout.
pub fn is_stale_connection(e: &reqwest::Error) -> bool {
    if e.is_connect() || e.is_timeout() || e.is_builder() || e.is_status() {
        return false;
    }
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::BrokenPipe
            )
        {
            return true;
        }
        // hyper's `IncompleteMessage` (hyper is not a direct dependency; reqwest exposes no
        // predicate for it): EOF before the response head.
        if err
            .to_string()
            .contains("connection closed before message completed")
        {
            return true;
        }
        cur = err.source();
    }
    false
}

/// Sends `req`, and sends it again on another connection when the pooled one was stale (see
/// [`is_stale_connection`]); any other error is returned as it is. `before_send` runs right
/// before each attempt, so a caller that times the request can take its send instant from the
/// attempt that was answered.
pub async fn send_fresh(
    req: reqwest::RequestBuilder,
    mut before_send: impl FnMut(),
) -> reqwest::Result<reqwest::Response> {
    let mut req = req;
    for _ in 1..STALE_ATTEMPTS {
        let again = req.try_clone();
        before_send();
        match req.send().await {
            Err(e) if is_stale_connection(&e) => match again {
                Some(r) => req = r,
                None => return Err(e),
            },
            r => return r,
        }
    }
    before_send();
    req.send().await
}

/// Installs rustls' `ring` crypto provider as the process default, once. Safe to call many
/// times and from many threads; a provider installed earlier by someone else is kept.
#[cfg(feature = "tls")]
pub fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // An Err means another provider is already installed, which is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The error and all its sources on one line (`a: b: c`), without repeats.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    crate::wire::chunk::one_line(&parts.join(": "))
}

/// A one-line message for a transport error (no HTTP status), saying what to do.
pub fn describe_request_error(e: &reqwest::Error, url: &str) -> String {
    let chain = error_chain(e);
    let lower = chain.to_ascii_lowercase();
    // A resource limit on this machine, not the server: say so, before any connect wording.
    if lower.contains("too many open files") || lower.contains("os error 24") {
        return format!(
            "this machine ran out of file descriptors (too many open files) talking to {url}: raise `ulimit -n` above the concurrency, or lower --concurrency ({chain})"
        );
    }
    if lower.contains("cannot allocate memory") || lower.contains("os error 12") {
        return format!("this machine ran out of memory talking to {url} ({chain})");
    }
    if e.is_timeout() {
        if e.is_connect() {
            return format!(
                "timed out connecting to {url}: is the server running and reachable? ({chain})"
            );
        }
        return format!(
            "{url} did not answer in time: is the server overloaded or still loading? ({chain})"
        );
    }
    if e.is_connect() {
        if lower.contains("refused") {
            return format!("connection refused: is the server running at {url}?");
        }
        if lower.contains("dns") || lower.contains("resolve") || lower.contains("lookup") {
            return format!("cannot resolve the host of {url}: check --url ({chain})");
        }
        if lower.contains("certificate") || lower.contains("tls") || lower.contains("handshake") {
            return format!(
                "TLS handshake with {url} failed: check the URL scheme and certificate ({chain})"
            );
        }
        return format!("cannot connect to {url}: is the server running there? ({chain})");
    }
    if e.is_builder() {
        return format!("invalid URL {url}: check --url ({chain})");
    }
    format!("request to {url} failed: {chain}")
}

/// A one-line message for an HTTP error status, with the server's own message where the body
/// has one, and what to do for the common cases.
pub fn describe_status(status: StatusCode, body: &str, url: &str) -> String {
    let server = error_body_message(body);
    let code = status.as_u16();
    match code {
        401 | 403 => format!(
            "{url} rejected the request with HTTP {code} ({server}): check the key (`--api-key` or `OPENAI_API_KEY`)"
        ),
        404 => format!(
            "{url} answered 404 ({server}): check --url (it should point at the server root or its /v1)"
        ),
        429 => {
            format!("{url} is rate limiting (HTTP 429: {server}): lower the concurrency or wait")
        }
        503 => format!("{url} is unavailable (HTTP 503: {server}): is the model still loading?"),
        _ => format!("{url} answered HTTP {code}: {server}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_with_and_without_key() {
        assert!(build_client(&HttpOptions::default()).is_ok());
        let opts = HttpOptions {
            api_key: Some("sk-test".into()),
            ..HttpOptions::default()
        };
        assert!(build_client(&opts).is_ok());
        let bad = HttpOptions {
            api_key: Some("bad\nkey".into()),
            ..HttpOptions::default()
        };
        assert!(matches!(build_client(&bad), Err(HttpError::InvalidApiKey)));
    }

    #[test]
    fn status_messages_say_what_to_do() {
        let m = describe_status(
            StatusCode::UNAUTHORIZED,
            r#"{"error":{"message":"Invalid API Key","type":"authentication_error","code":401}}"#,
            "http://h:8000",
        );
        assert!(
            m.contains("check the key (`--api-key` or `OPENAI_API_KEY`)"),
            "{m}"
        );
        assert!(m.contains("Invalid API Key"));
        let m = describe_status(StatusCode::BAD_REQUEST, "oops", "http://h");
        assert_eq!(m, "http://h answered HTTP 400: oops");
    }

    /// A server that answers one request per connection with keep-alive headers, then reads
    /// the next request written on that connection and closes it unanswered: what a client
    /// meets after a llama-server stream, made deterministic.
    async fn one_answer_per_connection() -> (String, tokio::task::JoinHandle<()>) {
        // Reads whatever the client wrote (one small request), waiting for it.
        async fn read_some(s: &tokio::net::TcpStream) {
            let mut buf = [0u8; 4096];
            loop {
                if s.readable().await.is_err() {
                    return;
                }
                match s.try_read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    _ => return,
                }
            }
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    read_some(&s).await;
                    let answer: &[u8] =
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nKeep-Alive: timeout=5, max=100\r\n\r\nok";
                    if s.writable().await.is_ok() {
                        let _ = s.try_write(answer);
                    }
                    // Wait until the client has written its next request here, then close.
                    read_some(&s).await;
                });
            }
        });
        (format!("http://{addr}/"), task)
    }

    #[tokio::test]
    async fn a_request_on_a_connection_the_server_closed_is_sent_again() {
        let (url, task) = one_answer_per_connection().await;
        let client = build_client(&HttpOptions::default()).expect("client");
        // Without the retry, the second request meets the closed connection.
        let r = client.get(&url).send().await.expect("first answer");
        assert_eq!(r.text().await.expect("body"), "ok");
        let e = client
            .get(&url)
            .send()
            .await
            .expect_err("the pooled connection is dead");
        assert!(is_stale_connection(&e), "{}", error_chain(&e));
        // With it, the request goes out again on a new connection and is answered.
        let r = send_fresh(client.get(&url), || {}).await.expect("answer");
        assert_eq!(r.text().await.expect("body"), "ok");
        let mut sends = 0;
        let r = send_fresh(client.get(&url), || sends += 1)
            .await
            .expect("answer after a retry");
        assert_eq!(r.text().await.expect("body"), "ok");
        assert_eq!(sends, 2, "one stale attempt, one answered");
        task.abort();
    }

    #[tokio::test]
    async fn a_refused_connection_is_not_retried() {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let client = build_client(&HttpOptions::default()).expect("client");
        let mut sends = 0;
        let e = send_fresh(client.get(format!("http://127.0.0.1:{port}")), || {
            sends += 1
        })
        .await
        .expect_err("closed port");
        assert!(!is_stale_connection(&e));
        assert_eq!(sends, 1);
    }

    #[tokio::test]
    async fn connection_refused_says_is_the_server_running() {
        // Bind then drop a listener: the port is then (almost certainly) closed.
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            l.local_addr().expect("addr").port()
        };
        let url = format!("http://127.0.0.1:{port}");
        let client = build_client(&HttpOptions::default()).expect("client");
        let err = client.get(&url).send().await.expect_err("closed port");
        let m = describe_request_error(&err, &url);
        assert!(m.contains("is the server running"), "{m}");
    }
}
