//! The raw reader over TLS against a local rustls server whose certificate comes from a test
//! authority (`testdata/tls`: a CA and a `localhost`/`127.0.0.1` leaf, valid for a century;
//! the key is a test fixture and guards nothing).

use crate::wire::rawhttp::{KeyAuth, RawError, RawTarget};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::time::Instant;

const CA: &[u8] = include_bytes!("testdata/tls/ca.der");
const LEAF: &[u8] = include_bytes!("testdata/tls/leaf.der");
const LEAF_KEY: &[u8] = include_bytes!("testdata/tls/leaf.key.der");

/// How the server writes its answers.
#[derive(Clone, Copy)]
enum Style {
    /// One TLS record per SSE event, 5 ms apart.
    Events,
    /// One record whose encrypted bytes go out in two TCP writes 40 ms apart.
    SplitRecord,
    /// A close-delimited body ended by `close_notify`, the socket left open for 2 s.
    CloseNotify,
}

/// The server's address and how many TCP connections it accepted.
struct Server {
    port: u16,
    accepted: Arc<AtomicUsize>,
}

fn server(style: Style) -> Server {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(
            vec![rustls::pki_types::CertificateDer::from(LEAF.to_vec())],
            rustls::pki_types::PrivateKeyDer::Pkcs8(LEAF_KEY.to_vec().into()),
        )
        .expect("server certificate");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            count.fetch_add(1, Ordering::SeqCst);
            let config = config.clone();
            std::thread::spawn(move || serve(s, config, style));
        }
    });
    Server { port, accepted }
}

/// Answers requests on one connection until the client closes it.
fn serve(mut tcp: TcpStream, config: Arc<rustls::ServerConfig>, style: Style) {
    let _ = tcp.set_nodelay(true);
    let mut tls = rustls::ServerConnection::new(config).expect("session");
    while read_request(&mut tls, &mut tcp) {
        if matches!(style, Style::CloseNotify) {
            let answer = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\ndata: [DONE]\n\n";
            let _ = send(&mut tls, &mut tcp, answer, None);
            tls.send_close_notify();
            let _ = send(&mut tls, &mut tcp, b"", None);
            std::thread::sleep(Duration::from_secs(2));
            return;
        }
        let events = [
            "data: {\"n\":1}\n\n",
            "data: {\"n\":2}\n\n",
            "data: [DONE]\n\n",
        ];
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        if send(&mut tls, &mut tcp, head.as_bytes(), None).is_err() {
            return;
        }
        for ev in events {
            std::thread::sleep(Duration::from_millis(5));
            let chunk = format!("{:x}\r\n{ev}\r\n", ev.len());
            let split = matches!(style, Style::SplitRecord).then_some(Duration::from_millis(40));
            if send(&mut tls, &mut tcp, chunk.as_bytes(), split).is_err() {
                return;
            }
        }
        if send(&mut tls, &mut tcp, b"0\r\n\r\n", None).is_err() {
            return;
        }
    }
}

/// Encrypts `plain` as one record and writes it, in two parts `split` apart where given.
fn send(
    tls: &mut rustls::ServerConnection,
    tcp: &mut TcpStream,
    plain: &[u8],
    split: Option<Duration>,
) -> std::io::Result<()> {
    tls.writer().write_all(plain)?;
    let mut out = Vec::new();
    while tls.wants_write() {
        tls.write_tls(&mut out)?;
    }
    match split {
        Some(gap) => {
            let half = out.len() / 2;
            tcp.write_all(&out[..half])?;
            std::thread::sleep(gap);
            tcp.write_all(&out[half..])
        }
        None => tcp.write_all(&out),
    }
}

/// Reads one request (head and `content-length` body), answering the handshake on the way;
/// `false` when the client closed the connection.
fn read_request(tls: &mut rustls::ServerConnection, tcp: &mut TcpStream) -> bool {
    let mut got = Vec::new();
    loop {
        if let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if got.len() >= end + 4 + len {
                return true;
            }
        }
        while tls.wants_write() {
            if tls.write_tls(tcp).is_err() {
                return false;
            }
        }
        match tls.read_tls(tcp) {
            Ok(0) | Err(_) => return false,
            Ok(_) => {}
        }
        if tls.process_new_packets().is_err() {
            let _ = tls.write_tls(tcp);
            return false;
        }
        let mut buf = [0u8; 4096];
        while let Ok(n) = tls.reader().read(&mut buf) {
            if n == 0 {
                return false;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }
}

fn target(port: u16, roots: Vec<Vec<u8>>) -> Arc<RawTarget> {
    let url = format!("https://localhost:{port}/v1/completions");
    Arc::new(
        RawTarget::with_roots(&url, KeyAuth::bearer(None), Duration::from_secs(5), roots)
            .expect("target"),
    )
}

/// The body's bytes and each piece's (arrival, kernel-stamped) after `sent`.
async fn body(t: &Arc<RawTarget>) -> (Vec<u8>, Vec<(Duration, bool)>, Instant) {
    let sent = Instant::now();
    let (mut resp, _) = t.send(b"{}", || {}).await.expect("answered");
    assert_eq!(resp.status(), 200);
    let (mut bytes, mut pieces) = (Vec::new(), Vec::new());
    while let Some(p) = resp.next().await {
        let p = p.expect("piece");
        bytes.extend_from_slice(&p.data);
        pieces.push((p.at - sent, p.kernel));
    }
    (bytes, pieces, sent)
}

#[tokio::test]
async fn an_https_stream_arrives_whole_with_kernel_instants_on_one_connection() {
    let s = server(Style::Events);
    let t = target(s.port, vec![CA.to_vec()]);
    for _ in 0..2 {
        let (bytes, pieces, _) = body(&t).await;
        let text = String::from_utf8_lossy(&bytes);
        assert!(text.starts_with("data: {\"n\":1}\n\n"), "{text:?}");
        assert!(text.ends_with("data: [DONE]\n\n"), "{text:?}");
        // One piece per event: each record is read and decrypted as it comes.
        assert!(pieces.len() >= 3, "{pieces:?}");
        if cfg!(target_os = "linux") {
            assert!(pieces.iter().all(|p| p.1), "{pieces:?}");
        }
    }
    // The second request went out on the first one's connection.
    assert_eq!(s.accepted.load(Ordering::SeqCst), 1);
}

/// A record whose second half comes 40 ms after its first is a piece only when it is whole,
/// with the instant of the read that completed it.
#[tokio::test]
async fn a_record_split_across_reads_takes_the_instant_of_its_last_part() {
    let s = server(Style::SplitRecord);
    let t = target(s.port, vec![CA.to_vec()]);
    let (bytes, pieces, _) = body(&t).await;
    assert!(String::from_utf8_lossy(&bytes).ends_with("data: [DONE]\n\n"));
    assert_eq!(pieces.len(), 3, "one piece per event: {pieces:?}");
    // Each event's record completes 5 ms + 40 ms after the previous one.
    for w in pieces.windows(2) {
        let gap = w[1].0.saturating_sub(w[0].0);
        assert!(gap >= Duration::from_millis(40), "{pieces:?}");
    }
    assert!(
        pieces
            .last()
            .is_some_and(|p| p.0 >= Duration::from_millis(120)),
        "{pieces:?}"
    );
}

/// The session's end is the body's end, whether or not the socket closes with it.
#[tokio::test]
async fn close_notify_ends_a_close_delimited_body() {
    let s = server(Style::CloseNotify);
    let t = target(s.port, vec![CA.to_vec()]);
    let (bytes, _, sent) = body(&t).await;
    assert_eq!(bytes, b"data: [DONE]\n\n");
    assert!(
        sent.elapsed() < Duration::from_secs(1),
        "{:?}",
        sent.elapsed()
    );
}

#[tokio::test]
async fn a_certificate_nobody_vouches_for_is_a_one_line_connect_error() {
    let s = server(Style::Events);
    let t = target(s.port, Vec::new());
    match t.send(b"{}", || {}).await {
        Err(RawError::Connect(msg)) => {
            assert!(
                msg.contains("TLS handshake with https://localhost"),
                "{msg}"
            );
            assert!(msg.to_ascii_lowercase().contains("certificate"), "{msg}");
            assert!(!msg.contains('\n'), "{msg}");
        }
        other => panic!("expected a connect error, got {:?}", other.map(|_| ())),
    }
}

/// A host that TLS cannot name is refused with the words the message always had.
#[test]
fn a_host_tls_cannot_name_keeps_its_message() {
    let config = super::client_config(vec![CA.to_vec()]).expect("config");
    let e = super::Tls::new(config, "bad host").expect_err("not a name");
    assert_eq!(
        e.to_string(),
        "bad host is not a valid TLS server name: invalid dns name"
    );
}
