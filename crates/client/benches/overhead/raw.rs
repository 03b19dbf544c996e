//! The bare floor `[raw]`: the same requests read from a bare tokio `TcpStream`, with no HTTP
//! library, SSE decoder or JSON parser (moved out of `main.rs` to keep each file short).

use crate::Entry;
use tokio_util::sync::CancellationToken;

/// The floor any tokio client pays on this host: the same requests read from a bare socket,
/// timestamped right after each read returns, chunks found by a substring scan. No HTTP
/// library, SSE decoder or JSON parser; the same cancellation check per read as `measure`.
/// Its reads are tokio's `AsyncRead`, which takes one system call per chunk (a short read
/// drops the socket's readiness). `closed_loop`: send the request again on the same
/// connection when a response ends, as `measure`'s callers do.
pub(crate) async fn raw_stream(
    addr: &str,
    body: &[u8],
    origin: tokio::time::Instant,
    stop: &CancellationToken,
    closed_loop: bool,
) -> Result<Vec<Entry>, String> {
    use tokio::io::AsyncWriteExt;
    let io = |e: std::io::Error| e.to_string();
    let mut s = tokio::net::TcpStream::connect(addr).await.map_err(io)?;
    s.set_nodelay(true).map_err(io)?;
    let mut req = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(body);
    let mut buf = vec![0u8; 64 << 10];
    let mut out = Vec::new();
    loop {
        s.write_all(&req).await.map_err(io)?;
        let ended = raw_response(&mut s, &mut buf, origin, stop, &mut out).await?;
        if !ended || !closed_loop || stop.is_cancelled() {
            return Ok(out);
        }
    }
}

/// Reads one chunked response of the bare reader into `out`: `true` at its end, `false` when
/// `stop` came first.
async fn raw_response(
    s: &mut tokio::net::TcpStream,
    buf: &mut [u8],
    origin: tokio::time::Instant,
    stop: &CancellationToken,
    out: &mut Vec<Entry>,
) -> Result<bool, String> {
    use tokio::io::AsyncReadExt;
    let mut pending: Vec<u8> = Vec::new();
    let mut last = 0u64;
    loop {
        let n = tokio::select! {
            biased;
            _ = stop.cancelled() => return Ok(false),
            r = s.read(buf) => r.map_err(|e| e.to_string())?,
        };
        if n == 0 {
            return Err("the simulator closed the connection".into());
        }
        let t = origin.elapsed().as_nanos() as u64;
        pending.extend_from_slice(&buf[..n]);
        // An SSE event ends with a blank line; HTTP chunk framing uses CRLF, never "\n\n".
        let mut start = 0;
        while let Some(i) = memchr::memmem::find(&pending[start..], b"\n\n") {
            let ev = &pending[start..start + i];
            if let (Some(p), Some(c)) = (
                number_after(ev, b"\"prompt_tokens\":"),
                number_after(ev, b"\"completion_tokens\":"),
            ) && c > last
            {
                out.push(Entry {
                    prompt_tokens: p,
                    completion_tokens: c,
                    t_ns: t,
                    tokens: (c - last) as u32,
                });
                last = c;
            }
            start += i + 2;
        }
        pending.drain(..start);
        // The chunked body's last chunk (after the previous chunk's CRLF).
        if memchr::memmem::find(&pending, b"\r\n0\r\n\r\n").is_some() {
            return Ok(true);
        }
    }
}

/// The unsigned integer right after `key` in `hay`.
fn number_after(hay: &[u8], key: &[u8]) -> Option<u64> {
    let at = memchr::memmem::find(hay, key)? + key.len();
    let digits = hay[at..]
        .iter()
        .skip_while(|b| **b == b' ')
        .take_while(|b| b.is_ascii_digit());
    let mut v = None;
    for d in digits {
        v = Some(v.unwrap_or(0u64) * 10 + u64::from(d - b'0'));
    }
    v
}
