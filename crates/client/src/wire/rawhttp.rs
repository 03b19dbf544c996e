//! The raw reader (the default on a directly reached endpoint, `--http-reader auto|raw`): a
//! minimal HTTP/1.1 client over the socket for the measured streams, with kernel receive
//! timestamps on each read ([`crate::wire::ktime`]) and, for `https://`, TLS run over those reads
//! ([`crate::wire::rawtls`]). It sends one POST, reads the response head, and yields the body
//! de-chunked, one piece per socket read, each with the instant the kernel received the bytes
//! that completed it. Everything else (probes, metrics) stays on the reqwest client.
//!
//! Why a reader of its own: hyper's connection task reads the socket, then hands the bytes
//! through a channel to the task that stamps them, so a chunk's instant is when the runtime got
//! to the second task. Here the task that reads is the task that stamps, the read is a
//! `recvmsg` whose control message carries the kernel's receive time, and no per-chunk
//! allocation beyond the piece itself is made.
//!
//! Connections: each target keeps a small pool of idle keep-alive connections (a complete
//! body whose server allowed keep-alive returns its connection), so a closed-loop stream
//! re-sends on the connection it just used, as reqwest's pool does. A pooled connection the
//! server has closed meanwhile (llama-server closes after every stream) is detected before
//! use where its FIN has arrived, and otherwise retried on a fresh connection when it fails
//! before any byte of an answer, as `http::send_fresh` does. One connection's reads, writes
//! and TLS handshake are in [`crate::wire::rawconn`].

use crate::wire::ktime::{self, Sock, Stamp};
use crate::wire::rawbody::{BodyDecoder, FramingError, Head};
use crate::wire::rawconn::{Conn, Exchange};
use bytes::Bytes;
use llmib_core::KernelStamps;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Attempts of one request when pooled connections turn out to be closed (as `http.rs`).
const STALE_ATTEMPTS: usize = 3;

/// The most bytes of an error body read for its message.
const MAX_ERROR_BODY: usize = 1024 * 1024;

/// Where the raw reader's requests go: the endpoint's address, the request head's fixed part,
/// and the idle connections to it. Its `Debug` leaves out the head, which carries the API key.
pub struct RawTarget {
    /// The URL, for messages.
    url: String,
    /// Host to connect to (an IPv6 literal without brackets).
    host: String,
    /// TCP port.
    port: u16,
    /// The request line and the fixed headers, up to (not including) `content-length`.
    head: String,
    /// Limit for establishing a connection.
    connect_timeout: Duration,
    /// Idle keep-alive connections, most recently used last.
    pool: Mutex<Vec<Conn>>,
    /// What the reads of this target's bodies did ([`RawTarget::stats`]).
    counts: Counts,
    /// `https://`: the TLS configuration every connection's session starts from.
    #[cfg(feature = "tls")]
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl std::fmt::Debug for RawTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawTarget")
            .field("url", &self.url)
            .field("tls", &self.uses_tls())
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

/// One response's pieces, as [`Counts`] adds them up.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    pieces: u64,
    kernel: u64,
    correction_ns: u64,
    max_correction_ns: u64,
}

impl Tally {
    /// Counts one piece and its correction.
    fn add(&mut self, p: &Piece) {
        self.pieces += 1;
        if p.kernel {
            let ns = p.read.saturating_duration_since(p.at).as_nanos() as u64;
            self.kernel += 1;
            self.correction_ns += ns;
            self.max_correction_ns = self.max_correction_ns.max(ns);
        }
    }
}

/// Relaxed counters behind [`RawTarget::stats`], added to once per response.
#[derive(Debug, Default)]
struct Counts {
    pieces: AtomicU64,
    kernel: AtomicU64,
    correction_ns: AtomicU64,
    max_correction_ns: AtomicU64,
    /// The largest correction since the last [`RawTarget::window_start`] (a maximum cannot be
    /// taken as the difference of two readings, so the window's own is kept apart).
    window_max_ns: AtomicU64,
    /// Pieces read without the kernel's receive time, counted as they are read (the others
    /// wait for their response's end): the client-lag probe reads it live
    /// (`llmib_core::probe_period_ms`). A piece without one is rare where the kernel stamps, so
    /// this shared counter costs nothing per chunk there.
    unstamped: AtomicU64,
}

/// The counters when a window started ([`crate::Engine::raw_window_start`]), for
/// [`crate::Engine::raw_window_stamps`] to subtract.
#[derive(Debug, Clone, Copy, Default)]
pub struct RawMark {
    pieces: u64,
    kernel: u64,
    correction_ns: u64,
}

/// The reads of `pieces` pieces, `kernel` of them kernel-stamped with corrections summing to
/// `sum_ns`, the largest `max_ns` (ms, as `llmib_core::lag` records a window's).
fn stamps_of(pieces: u64, kernel: u64, sum_ns: u64, max_ns: u64) -> KernelStamps {
    KernelStamps {
        pieces,
        kernel_pieces: kernel,
        mean_correction_ms: if kernel == 0 {
            0.0
        } else {
            sum_ns as f64 / kernel as f64 / 1e6
        },
        max_correction_ms: max_ns as f64 / 1e6,
    }
}

/// Why the raw reader cannot read a URL as reqwest would.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unreadable {
    /// Neither `http` nor (where the build has TLS) `https`.
    Scheme,
    /// The URL carries a user or password, which only reqwest sends.
    Credentials,
}

/// The one rule of which URLs the raw reader reads, for [`RawTarget::new`] (which refuses the
/// others) and `HttpReader::auto` (which gives them to reqwest).
pub(crate) fn unreadable(u: &reqwest::Url) -> Option<Unreadable> {
    let tls_built = cfg!(feature = "tls");
    if u.scheme() != "http" && !(u.scheme() == "https" && tls_built) {
        return Some(Unreadable::Scheme);
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Some(Unreadable::Credentials);
    }
    None
}

/// The API key and the headers that carry it, as the reqwest client sends them.
#[derive(Debug, Clone, Copy)]
pub struct KeyAuth<'a> {
    /// The key, where one is sent.
    pub key: Option<&'a str>,
    /// Which headers carry it.
    pub header: crate::wire::http::KeyHeader,
    /// Send `anthropic-version` too.
    pub anthropic: bool,
}

impl<'a> KeyAuth<'a> {
    /// `Authorization: Bearer` only, without `anthropic-version`.
    pub fn bearer(key: Option<&'a str>) -> KeyAuth<'a> {
        KeyAuth {
            key,
            header: crate::wire::http::KeyHeader::Bearer,
            anthropic: false,
        }
    }
}

/// An HTTP failure of the raw reader before the response body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawError {
    /// No connection could be made.
    Connect(String),
    /// The connection failed or the server sent no valid response head.
    Http(String),
}

/// Why the raw reader (`--http-reader raw`) cannot read an endpoint: each message says what to
/// give instead. Causes are in the text rather than a `source`, so that a chain printed whole
/// says them once.
#[derive(Debug, thiserror::Error)]
pub enum RawReaderError {
    /// The URL does not parse.
    #[error("invalid URL {url}: {reason}")]
    InvalidUrl {
        /// The URL as given.
        url: String,
        /// The parser's reason.
        reason: String,
    },
    /// The URL is neither `http://` nor (where the build has TLS) `https://`.
    #[error(
        "--http-reader raw reads http:// and https:// endpoints only ({url} is {scheme}://): use --http-reader reqwest"
    )]
    Scheme {
        /// The URL as given.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// The URL carries a user or password, which only reqwest sends.
    #[error(
        "--http-reader raw does not send a URL's user:password: give --api-key, or use --http-reader reqwest"
    )]
    Credentials,
    /// The URL has no host.
    #[error("invalid URL {0}: no host")]
    NoHost(String),
    /// The URL has no port, nor a scheme with a known one.
    #[error("invalid URL {0}: no port")]
    NoPort(String),
    /// The API key holds a character no header can carry (CR, LF, NUL).
    #[error(
        "the API key contains characters that cannot be sent in an HTTP header; check the key (`--api-key` or `OPENAI_API_KEY`)"
    )]
    ApiKey,
    /// The TLS configuration of an `https://` endpoint could not be made.
    #[cfg(feature = "tls")]
    #[error(transparent)]
    Tls(#[from] crate::wire::rawtls::TlsError),
}

impl RawTarget {
    /// The target of `url`: `http://`, and `https://` where the build has TLS (the `tls`
    /// feature: rustls and the platform's roots, as the reqwest client). The headers are those
    /// the reqwest client sends: `host`, `user-agent`, `authorization` (with `api_key`),
    /// `content-type`, `accept`, `content-length`.
    #[cfg(test)]
    pub(crate) fn new(
        url: &str,
        api_key: Option<&str>,
        connect_timeout: Duration,
    ) -> Result<RawTarget, RawReaderError> {
        Self::with_roots(url, KeyAuth::bearer(api_key), connect_timeout, Vec::new())
    }

    /// [`RawTarget::new`] with the key in the headers `auth` names (the Messages API's
    /// `x-api-key`, and its `anthropic-version`).
    pub fn with_auth(
        url: &str,
        auth: KeyAuth<'_>,
        connect_timeout: Duration,
    ) -> Result<RawTarget, RawReaderError> {
        Self::with_roots(url, auth, connect_timeout, Vec::new())
    }

    /// [`RawTarget::new`], trusting `extra_roots` (DER certificates) beside the platform's
    /// roots (a test's own authority).
    pub(crate) fn with_roots(
        url: &str,
        auth: KeyAuth<'_>,
        connect_timeout: Duration,
        #[cfg_attr(not(feature = "tls"), allow(unused_variables))] extra_roots: Vec<Vec<u8>>,
    ) -> Result<RawTarget, RawReaderError> {
        let u = reqwest::Url::parse(url).map_err(|e| RawReaderError::InvalidUrl {
            url: url.to_string(),
            reason: e.to_string(),
        })?;
        match unreadable(&u) {
            Some(Unreadable::Scheme) => {
                return Err(RawReaderError::Scheme {
                    url: url.to_string(),
                    scheme: u.scheme().to_string(),
                });
            }
            Some(Unreadable::Credentials) => return Err(RawReaderError::Credentials),
            None => {}
        }
        let host_str = u
            .host_str()
            .ok_or_else(|| RawReaderError::NoHost(url.to_string()))?;
        let port = u
            .port_or_known_default()
            .ok_or_else(|| RawReaderError::NoPort(url.to_string()))?;
        // As reqwest writes it: the port only where it is not the scheme's default.
        let host_header = match u.port() {
            Some(p) => format!("{host_str}:{p}"),
            None => host_str.to_string(),
        };
        let mut path = u.path().to_string();
        if let Some(q) = u.query() {
            path.push('?');
            path.push_str(q);
        }
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nhost: {host_header}\r\nuser-agent: llm-inference-bench/{}\r\n",
            env!("CARGO_PKG_VERSION")
        );
        for (name, value) in crate::wire::http::key_headers(auth.key, auth.header, auth.anthropic) {
            // The check reqwest makes: nothing a header cannot carry (no CR, LF or NUL).
            reqwest::header::HeaderValue::from_str(&value).map_err(|_| RawReaderError::ApiKey)?;
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("content-type: application/json\r\naccept: text/event-stream\r\n");
        ktime::keep_enabled();
        #[cfg(feature = "tls")]
        let tls = match u.scheme() {
            "https" => Some(crate::wire::rawtls::client_config(extra_roots)?),
            _ => None,
        };
        Ok(RawTarget {
            url: url.to_string(),
            host: host_str
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            head,
            connect_timeout,
            pool: Mutex::new(Vec::new()),
            counts: Counts::default(),
            #[cfg(feature = "tls")]
            tls,
        })
    }

    /// Whether connections run TLS, for `Debug`.
    fn uses_tls(&self) -> bool {
        #[cfg(feature = "tls")]
        return self.tls.is_some();
        #[cfg(not(feature = "tls"))]
        false
    }

    /// The reads so far: pieces, those with the kernel's receive time, and how far those moved
    /// the read instants.
    pub fn stats(&self) -> KernelStamps {
        let c = &self.counts;
        stamps_of(
            c.pieces.load(Ordering::Relaxed),
            c.kernel.load(Ordering::Relaxed),
            c.correction_ns.load(Ordering::Relaxed),
            c.max_correction_ns.load(Ordering::Relaxed),
        )
    }

    /// Pieces read so far without the kernel's receive time, including those of responses
    /// still open (the live count the client-lag probe reads).
    pub fn unstamped(&self) -> u64 {
        self.counts.unstamped.load(Ordering::Relaxed)
    }

    /// Starts a window: the counters now, and the window's largest correction reset. One
    /// window at a time per target (a run's windows follow one another); the responses it
    /// counts are those that end (are dropped) before [`RawTarget::window_stats`].
    pub fn window_start(&self) -> RawMark {
        let c = &self.counts;
        c.window_max_ns.store(0, Ordering::Relaxed);
        RawMark {
            pieces: c.pieces.load(Ordering::Relaxed),
            kernel: c.kernel.load(Ordering::Relaxed),
            correction_ns: c.correction_ns.load(Ordering::Relaxed),
        }
    }

    /// The reads of the responses counted since `mark` (its window's).
    pub fn window_stats(&self, mark: RawMark) -> KernelStamps {
        let c = &self.counts;
        let since = |a: &AtomicU64, m: u64| a.load(Ordering::Relaxed).saturating_sub(m);
        stamps_of(
            since(&c.pieces, mark.pieces),
            since(&c.kernel, mark.kernel),
            since(&c.correction_ns, mark.correction_ns),
            c.window_max_ns.load(Ordering::Relaxed),
        )
    }

    /// Adds one response's tally (once per response: per-piece atomics on counters every
    /// stream shares would bounce their cache line between the runtime's threads).
    fn count(&self, t: &Tally) {
        let c = &self.counts;
        c.pieces.fetch_add(t.pieces, Ordering::Relaxed);
        c.kernel.fetch_add(t.kernel, Ordering::Relaxed);
        c.correction_ns
            .fetch_add(t.correction_ns, Ordering::Relaxed);
        c.max_correction_ns
            .fetch_max(t.max_correction_ns, Ordering::Relaxed);
        c.window_max_ns
            .fetch_max(t.max_correction_ns, Ordering::Relaxed);
    }

    /// Sends a POST of `body` and reads the response head. `before_send` runs right before
    /// each attempt (a stale pooled connection is retried), so the caller's send instant is
    /// the answered attempt's. Returns the response and the instants of the read that
    /// completed its head.
    pub async fn send(
        self: &Arc<Self>,
        body: &[u8],
        mut before_send: impl FnMut(),
    ) -> Result<(RawResponse, Stamp), RawError> {
        let mut request = Vec::with_capacity(self.head.len() + 32 + body.len());
        request.extend_from_slice(self.head.as_bytes());
        request.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
        request.extend_from_slice(body);
        for attempt in 1..=STALE_ATTEMPTS {
            let (mut conn, pooled) = match self.pooled() {
                Some(c) if attempt < STALE_ATTEMPTS => (c, true),
                _ => (self.connect().await?, false),
            };
            before_send();
            let floor = Instant::now();
            match conn.exchange(&request).await {
                Ok((head, stamp)) => {
                    let resp = RawResponse::new(self.clone(), conn, head, floor, stamp);
                    return Ok((resp, stamp));
                }
                // Nothing came back on a connection the server may have closed while it
                // idled: the server never saw the request, so it goes out again.
                Err(Exchange::NoAnswer(_)) if pooled => continue,
                Err(Exchange::NoAnswer(e) | Exchange::Bad(e)) => {
                    return Err(RawError::Http(format!(
                        "request to {} failed: {e}",
                        self.url
                    )));
                }
            }
        }
        Err(RawError::Http(format!(
            "request to {} failed: every connection was closed before an answer",
            self.url
        )))
    }

    /// An idle connection whose server has not closed it (as far as this side can tell).
    fn pooled(&self) -> Option<Conn> {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(c) = pool.pop() {
            if c.is_idle_open() {
                return Some(c);
            }
        }
        None
    }

    /// Keeps `conn` for the next request (the pool holds at most one per stream the tool runs).
    fn put_back(&self, conn: Conn) {
        let mut pool = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        if pool.len() < crate::wire::http::MAX_STREAMS {
            pool.push(conn);
        }
    }

    /// A new connection, with `TCP_NODELAY` and kernel timestamps where the system has them.
    async fn connect(&self) -> Result<Conn, RawError> {
        let url = &self.url;
        let sock = tokio::time::timeout(
            self.connect_timeout,
            TcpStream::connect((self.host.as_str(), self.port)),
        )
        .await
        .map_err(|_| {
            RawError::Connect(format!(
                "timed out connecting to {url}: is the server running and reachable?"
            ))
        })?
        .map_err(|e| RawError::Connect(describe_connect(&e, url)))?;
        // Our request is one write; Nagle would only delay it.
        sock.set_nodelay(true)
            .map_err(|e| RawError::Connect(format!("cannot connect to {url}: {e}")))?;
        let (sock, kernel) = Sock::new(sock)
            .map_err(|e| RawError::Connect(format!("cannot connect to {url}: {e}")))?;
        #[cfg_attr(not(feature = "tls"), allow(unused_mut))]
        let mut conn = Conn::new(sock, kernel);
        #[cfg(feature = "tls")]
        if let Some(config) = &self.tls {
            let tls = crate::wire::rawtls::Tls::new(config.clone(), &self.host);
            conn.set_tls(tls.map_err(|e| RawError::Connect(e.to_string()))?);
            // Before the request is sent, so its send instant does not include the handshake.
            match tokio::time::timeout(self.connect_timeout, conn.handshake()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    return Err(RawError::Connect(format!(
                        "TLS handshake with {url} failed: {e}"
                    )));
                }
                Err(_) => {
                    return Err(RawError::Connect(format!(
                        "timed out in the TLS handshake with {url}: is it an https:// server?"
                    )));
                }
            }
        }
        Ok(conn)
    }
}

/// A one-line message for a failed connect, worded as `http::describe_request_error`.
fn describe_connect(e: &std::io::Error, url: &str) -> String {
    let text = e.to_string();
    let lower = text.to_ascii_lowercase();
    if lower.contains("too many open files") || e.raw_os_error() == Some(24) {
        return format!(
            "this machine ran out of file descriptors (too many open files) talking to {url}: raise `ulimit -n` above the concurrency, or lower --concurrency ({text})"
        );
    }
    if e.kind() == std::io::ErrorKind::ConnectionRefused {
        return format!("connection refused: is the server running at {url}?");
    }
    if lower.contains("lookup") || lower.contains("resolve") || lower.contains("name") {
        return format!("cannot resolve the host of {url}: check --url ({text})");
    }
    format!("cannot connect to {url}: is the server running there? ({text})")
}

/// Why a body being read broke off: the connection failed or closed inside it, or the server's
/// framing is malformed. Its text is the cause's own (the I/O error's, or the framing's one-line
/// reason), as a stream's error message carries it.
#[derive(Debug, thiserror::Error)]
pub enum PieceError {
    /// A read failed: the connection, or its TLS session, broke.
    #[error(transparent)]
    Read(#[from] std::io::Error),
    /// The framing is malformed, or the connection closed before the body's end.
    #[error(transparent)]
    Framing(#[from] FramingError),
}

/// One piece of a body: the data of one read (de-chunked), and when it arrived.
#[derive(Debug, Clone)]
pub struct Piece {
    /// The body bytes.
    pub data: Bytes,
    /// The kernel's receive instant of the read that completed the piece, or the read's own
    /// instant where there is none; never before the request was sent nor before the
    /// previous piece.
    pub at: Instant,
    /// Whether `at` is the kernel's.
    pub kernel: bool,
    /// When the read that completed the piece returned (user space): `read - at` is how much
    /// the kernel's instant corrected the user-space one.
    pub read: Instant,
}

/// A response whose head has been read; its body is read with [`RawResponse::next`].
/// Dropping it before the end closes the connection (the server then aborts the request).
#[derive(Debug)]
pub struct RawResponse {
    target: Arc<RawTarget>,
    conn: Option<Conn>,
    head: Head,
    dec: BodyDecoder,
    /// No piece is stamped before this (the send, then the previous piece).
    floor: Instant,
    /// The instants of the read whose bytes are in the buffer.
    last: Option<Stamp>,
    /// This response's pieces, added to the target's counts when it is dropped.
    tally: Tally,
}

impl Drop for RawResponse {
    fn drop(&mut self) {
        self.target.count(&self.tally);
    }
}

impl RawResponse {
    /// The response `head` read on `conn` by the read of `stamp` (whose leftover body bytes
    /// are stamped with it); `floor`: the send instant.
    fn new(
        target: Arc<RawTarget>,
        conn: Conn,
        head: Head,
        floor: Instant,
        stamp: Stamp,
    ) -> RawResponse {
        let dec = BodyDecoder::new(head.framing);
        RawResponse {
            target,
            conn: Some(conn),
            head,
            dec,
            // No chunk before the head's own instant (two reads' clock pairs may differ by tens
            // of nanoseconds).
            floor: floor.max(stamp.best()),
            last: Some(stamp),
            tally: Tally::default(),
        }
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.head.status
    }

    /// `Retry-After` in seconds, capped at 60 s.
    pub fn retry_after(&self) -> Option<Duration> {
        self.head.retry_after
    }

    /// A redirect's target (`Location`), printable and short.
    pub fn location(&self) -> Option<&str> {
        self.head.location.as_deref()
    }

    /// The next piece of the body; `None` at its clean end; `Err` (why, one line) when the
    /// connection broke or closed inside the body, or the body's framing is malformed.
    pub async fn next(&mut self) -> Option<Result<Piece, PieceError>> {
        loop {
            let conn = self.conn.as_mut()?;
            if !conn.buf.is_empty() || self.dec.is_done() {
                let data = match self.dec.decode(&mut conn.buf) {
                    Ok(d) => d,
                    Err(e) => {
                        self.conn = None;
                        return Some(Err(e.into()));
                    }
                };
                if self.dec.is_done() {
                    self.release();
                }
                if !data.is_empty() {
                    return Some(Ok(self.piece(data)));
                }
                // The body ended with this read's framing: nothing more to read.
                self.conn.as_ref()?;
            }
            let conn = self.conn.as_mut()?;
            match conn.fill().await {
                Ok((0, _)) => {
                    self.conn = None;
                    return self.dec.at_eof().err().map(|e| Err(e.into()));
                }
                Ok((_, stamp)) => self.last = Some(stamp),
                Err(e) => {
                    self.conn = None;
                    return Some(Err(e.into()));
                }
            }
        }
    }

    /// The whole body as text (at most 1 MiB of it), for an error status's message; what was
    /// read before a failure.
    pub async fn text(mut self) -> String {
        let mut out = Vec::new();
        while let Some(Ok(p)) = self.next().await {
            out.extend_from_slice(&p.data);
            if out.len() >= MAX_ERROR_BODY {
                break;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// A piece of `data` stamped with the last read's instants, kept monotone.
    fn piece(&mut self, data: Bytes) -> Piece {
        let stamp = self.last.unwrap_or(Stamp {
            read: Instant::now(),
            kernel: None,
        });
        let at = stamp.best().max(self.floor);
        self.floor = at;
        let p = Piece {
            data,
            at,
            kernel: stamp.kernel.is_some(),
            read: stamp.read,
        };
        self.tally.add(&p);
        if !p.kernel {
            self.target.counts.unstamped.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    /// The body is complete: its connection goes back to the pool where the server allows.
    fn release(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.head.keep_alive
            && conn.buf.is_empty()
        {
            self.target.put_back(conn);
        }
    }
}

#[cfg(test)]
#[path = "rawhttp_tests.rs"]
mod tests;
