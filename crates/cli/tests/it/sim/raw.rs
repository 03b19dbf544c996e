//! A bare HTTP/1.1 client for the simulator suite: one connection per exchange, no client
//! library between the test and the bytes, so arrival times are the socket's and nothing is
//! parsed or retried for us (and the suite does not depend on the client crate's TLS setup).

use std::net::SocketAddr;
use std::time::Instant;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A bare HTTP/1.1 exchange on its own connection: no client library between the test and
/// the bytes, so arrival times are the socket's and nothing is parsed for us.
pub struct Conn {
    rd: BufReader<TcpStream>,
    pub status: u16,
    pub content_type: String,
    chunked: bool,
    length: Option<usize>,
    done: bool,
}

pub async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: Option<&Value>,
) -> Conn {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let payload = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    if let Some(a) = auth {
        head.push_str(&format!("Authorization: {a}\r\n"));
    }
    if body.is_some() {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            payload.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).await.expect("write head");
    stream
        .write_all(payload.as_bytes())
        .await
        .expect("write body");
    let mut rd = BufReader::new(stream);
    let mut line = String::new();
    rd.read_line(&mut line).await.expect("status line");
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let (mut content_type, mut chunked, mut length) = (String::new(), false, None);
    loop {
        line.clear();
        rd.read_line(&mut line).await.expect("header line");
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.to_ascii_lowercase(), v.trim().to_string());
            match k.as_str() {
                "content-type" => content_type = v,
                "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                "content-length" => length = v.parse().ok(),
                _ => {}
            }
        }
    }
    Conn {
        rd,
        status,
        content_type,
        chunked,
        length,
        done: false,
    }
}

impl Conn {
    /// The next piece of the body: `None` at a clean end, `Err` if the connection broke.
    pub async fn next_chunk(&mut self) -> Option<Result<Vec<u8>, String>> {
        if self.done {
            return None;
        }
        if !self.chunked {
            self.done = true;
            let mut buf = Vec::new();
            let r = match self.length {
                Some(n) => {
                    buf.resize(n, 0);
                    self.rd.read_exact(&mut buf).await.map(|_| ())
                }
                None => self.rd.read_to_end(&mut buf).await.map(|_| ()),
            };
            return Some(r.map(|()| buf).map_err(|e| e.to_string()));
        }
        let mut line = String::new();
        match self.rd.read_line(&mut line).await {
            Ok(0) | Err(_) => {
                self.done = true;
                return Some(Err("connection closed inside a chunked body".into()));
            }
            Ok(_) => {}
        }
        let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16);
        let Ok(size) = size else {
            self.done = true;
            return Some(Err(format!("bad chunk size line {line:?}")));
        };
        if size == 0 {
            self.done = true;
            return None;
        }
        let mut buf = vec![0; size + 2];
        if let Err(e) = self.rd.read_exact(&mut buf).await {
            self.done = true;
            return Some(Err(e.to_string()));
        }
        buf.truncate(size);
        Some(Ok(buf))
    }

    pub async fn text(mut self) -> String {
        let mut out = Vec::new();
        while let Some(c) = self.next_chunk().await {
            out.extend(c.expect("body"));
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// One SSE `data:` payload and when it arrived.
pub struct Event {
    pub at: Instant,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).unwrap_or(Value::Null)
    }
}

/// Posts `body` to `path` and collects the SSE events with their arrival times.
pub async fn stream(addr: SocketAddr, path: &str, body: Value) -> (Instant, Vec<Event>) {
    let sent = Instant::now();
    let mut conn = send(addr, "POST", path, None, Some(&body)).await;
    assert_eq!(conn.status, 200, "stream status");
    assert!(
        conn.content_type.starts_with("text/event-stream"),
        "SSE content type"
    );
    let mut buf = String::new();
    let mut events = Vec::new();
    while let Some(chunk) = conn.next_chunk().await {
        let chunk = chunk.expect("stream chunk");
        let at = Instant::now();
        buf.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buf.find("\n\n") {
            let ev: String = buf.drain(..end + 2).collect();
            for line in ev.lines() {
                if let Some(d) = line.strip_prefix("data: ") {
                    events.push(Event {
                        at,
                        data: d.to_string(),
                    });
                }
            }
        }
    }
    (sent, events)
}

pub async fn get(addr: SocketAddr, path: &str, auth: Option<&str>) -> (u16, String) {
    let conn = send(addr, "GET", path, auth, None).await;
    let status = conn.status;
    (status, conn.text().await)
}

pub async fn get_json(addr: SocketAddr, path: &str) -> Value {
    serde_json::from_str(&get(addr, path, None).await.1).expect("json")
}

pub async fn post_json(addr: SocketAddr, path: &str, body: Value) -> (u16, Value) {
    let conn = send(addr, "POST", path, None, Some(&body)).await;
    let status = conn.status;
    (
        status,
        serde_json::from_str(&conn.text().await).unwrap_or(Value::Null),
    )
}

/// The value of the first sample of `name` in `/metrics`.
pub async fn metric(addr: SocketAddr, name: &str) -> f64 {
    let text = get(addr, "/metrics", None).await.1;
    text.lines()
        .find(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("metric {name} missing in:\n{text}"))
}
