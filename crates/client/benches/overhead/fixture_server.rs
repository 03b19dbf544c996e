//! A keep-alive HTTP/1.1 server of recorded answers, for timing the client's metrics read
//! against an engine's real `/metrics` page without the engine. It runs on threads of its own,
//! so its CPU is never counted as the client's, and it counts the connections it accepts, so
//! the bench can show that the reads reuse one connection.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One route: method, path and the body answered (always 200).
pub(crate) type Route = (&'static str, &'static str, String);

/// A running server; its threads live until the process ends (the bench is short-lived).
pub(crate) struct FixtureServer {
    /// `http://127.0.0.1:PORT`.
    pub(crate) url: String,
    accepted: Arc<AtomicUsize>,
}

impl FixtureServer {
    /// Serves `routes` on a free loopback port; anything else is a 404.
    pub(crate) fn start(routes: Vec<Route>) -> Result<FixtureServer, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let url = format!(
            "http://{}",
            listener.local_addr().map_err(|e| e.to_string())?
        );
        let accepted = Arc::new(AtomicUsize::new(0));
        let (routes, count) = (Arc::new(routes), accepted.clone());
        std::thread::spawn(move || {
            for sock in listener.incoming().flatten() {
                count.fetch_add(1, Ordering::Relaxed);
                let routes = routes.clone();
                std::thread::spawn(move || serve(sock, &routes));
            }
        });
        Ok(FixtureServer { url, accepted })
    }

    /// Connections accepted so far.
    pub(crate) fn connections(&self) -> usize {
        self.accepted.load(Ordering::Relaxed)
    }
}

/// Answers requests on one connection until the client closes it.
fn serve(sock: TcpStream, routes: &[Route]) {
    let _ = sock.set_nodelay(true);
    let Ok(mut out) = sock.try_clone() else {
        return;
    };
    let mut input = BufReader::new(sock);
    loop {
        let Some((method, path, body_len)) = read_head(&mut input) else {
            return;
        };
        let mut body = vec![0u8; body_len];
        if input.read_exact(&mut body).is_err() {
            return;
        }
        let found = routes.iter().find(|r| r.0 == method && r.1 == path);
        let (status, body) = match found {
            Some(r) => ("200 OK", r.2.as_str()),
            None => ("404 Not Found", r#"{"detail":"Not Found"}"#),
        };
        let kind = if body.starts_with(['{', '[']) {
            "application/json"
        } else {
            "text/plain; version=0.0.4; charset=utf-8"
        };
        let head = format!(
            "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(body.as_bytes()).is_err() {
            return;
        }
    }
}

/// The request line's method and path (query dropped) and the body's length.
fn read_head(input: &mut impl BufRead) -> Option<(String, String, usize)> {
    let mut line = String::new();
    if input.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.split('?').next()?.to_owned();
    let mut len = 0;
    loop {
        let mut h = String::new();
        if input.read_line(&mut h).ok()? == 0 {
            return None;
        }
        let h = h.trim_end();
        if h.is_empty() {
            return Some((method, path, len));
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().ok()?;
        }
    }
}
