//! Tests of the raw reader against a scripted local server and against the simulator.

use super::*;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

/// How the fixture writes an answer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Delivery {
    /// One write.
    Whole,
    /// One write per byte, a millisecond apart: every split a reader can meet.
    ByteByByte,
    /// One write, then the connection is closed.
    ThenClose,
}

/// A server that answers the requests it gets, over all its connections, with `answers` in
/// order; it counts connections and keeps each request's head.
struct Fixture {
    url: String,
    conns: Arc<AtomicUsize>,
    heads: Arc<Mutex<Vec<String>>>,
}

async fn fixture(answers: Vec<(&'static [u8], Delivery)>) -> Fixture {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
    let conns = Arc::new(AtomicUsize::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (c, h) = (conns.clone(), heads.clone());
    tokio::spawn(async move {
        while let Ok((s, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(serve(s, answers.clone(), h.clone()));
        }
    });
    Fixture {
        url: format!("http://{addr}/v1/completions"),
        conns,
        heads,
    }
}

type Answers = Arc<Mutex<VecDeque<(&'static [u8], Delivery)>>>;

async fn serve(mut s: TcpStream, answers: Answers, heads: Arc<Mutex<Vec<String>>>) {
    while let Some(head) = read_request(&mut s).await {
        heads.lock().expect("heads").push(head);
        let Some((bytes, how)) = answers.lock().expect("answers").pop_front() else {
            return;
        };
        if how == Delivery::ByteByByte {
            for b in bytes {
                if s.write_all(&[*b]).await.is_err() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        } else if s.write_all(bytes).await.is_err() {
            return;
        }
        if how == Delivery::ThenClose {
            return;
        }
    }
}

/// One request (head and `content-length` body); `None` at EOF.
async fn read_request(s: &mut TcpStream) -> Option<String> {
    let mut buf = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..i]).to_string();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            while buf.len() < i + 4 + len {
                let n = s.read(&mut b).await.ok().filter(|n| *n > 0)?;
                buf.extend_from_slice(&b[..n]);
            }
            return Some(head);
        }
        let n = s.read(&mut b).await.ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&b[..n]);
    }
}

fn target(url: &str, key: Option<&str>) -> Arc<RawTarget> {
    Arc::new(RawTarget::new(url, key, Duration::from_secs(5)).expect("target"))
}

/// The whole body and every piece's stamps, or the error that ended it.
async fn body_of(resp: &mut RawResponse) -> Result<(Vec<u8>, Vec<Piece>), PieceError> {
    let mut out = Vec::new();
    let mut pieces = Vec::new();
    while let Some(p) = resp.next().await {
        let p = p?;
        assert!(p.at <= Instant::now(), "stamped in the future");
        out.extend_from_slice(&p.data);
        pieces.push(p);
    }
    Ok((out, pieces))
}

const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
f\r\ndata: {\"a\":1}\n\n\r\n8;x=y\r\ndata: [D\r\n6\r\nONE]\n\n\r\n0\r\n\r\n";

#[tokio::test]
async fn a_chunked_body_arrives_whole_at_every_split_and_the_connection_is_reused() {
    let f = fixture(vec![
        (CHUNKED, Delivery::ByteByByte),
        (CHUNKED, Delivery::Whole),
    ])
    .await;
    let t = target(&f.url, Some("sk-1"));
    for _ in 0..2 {
        let (mut resp, _) = t.send(b"{}", || {}).await.expect("answered");
        assert_eq!(resp.status(), 200);
        let (body, _) = body_of(&mut resp).await.expect("complete");
        assert_eq!(body, b"data: {\"a\":1}\n\ndata: [DONE]\n\n");
    }
    assert_eq!(f.conns.load(Ordering::SeqCst), 1, "keep-alive reused it");
    let heads = f.heads.lock().expect("heads").clone();
    let h = &heads[0];
    assert!(h.starts_with("POST /v1/completions HTTP/1.1\r\n"), "{h}");
    for want in [
        "authorization: Bearer sk-1",
        "content-type: application/json",
        "accept: text/event-stream",
        "content-length: 2",
        "user-agent: llm-inference-bench/",
        "host: 127.0.0.1:",
    ] {
        assert!(h.contains(want), "{want} missing from {h}");
    }
}

#[tokio::test]
async fn a_length_body_ends_at_its_length_and_an_error_status_keeps_its_message() {
    let f = fixture(vec![
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            Delivery::ByteByByte,
        ),
        (
            b"HTTP/1.1 429 Too Many\r\nRetry-After: 3\r\nContent-Type: application/json\r\nContent-Length: 44\r\n\r\n{\"error\":{\"message\":\"slow down\",\"code\":429}}",
            Delivery::Whole,
        ),
    ])
    .await;
    let t = target(&f.url, None);
    let (mut resp, _) = t.send(b"{}", || {}).await.expect("answered");
    assert_eq!(body_of(&mut resp).await.expect("complete").0, b"hello");
    let (resp, _) = t.send(b"{}", || {}).await.expect("answered");
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.retry_after(), Some(Duration::from_secs(3)));
    let text = resp.text().await;
    assert_eq!(
        crate::wire::chunk::error_body_message(&text),
        "slow down (code 429)",
        "{text}"
    );
    assert!(!f.heads.lock().expect("heads")[0].contains("authorization"));
}

#[tokio::test]
async fn a_connection_closed_mid_body_is_an_error_not_an_end() {
    let f = fixture(vec![
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
            Delivery::ThenClose,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhel",
            Delivery::ThenClose,
        ),
        (b"HTTP/1.1 200 OK\r\n\r\nuntil close", Delivery::ThenClose),
    ])
    .await;
    let t = target(&f.url, None);
    for _ in 0..2 {
        let (mut resp, _) = t.send(b"{}", || {}).await.expect("answered");
        let e = body_of(&mut resp).await.expect_err("cut short").to_string();
        assert!(e.contains("connection closed"), "{e}");
    }
    let (mut resp, _) = t.send(b"{}", || {}).await.expect("answered");
    assert_eq!(body_of(&mut resp).await.expect("clean").0, b"until close");
}

#[tokio::test]
async fn a_pooled_connection_the_server_closed_is_replaced() {
    let ok: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    // The server answers with keep-alive, then closes: the pooled connection is dead.
    let f = fixture(vec![(ok, Delivery::ThenClose), (ok, Delivery::Whole)]).await;
    let t = target(&f.url, None);
    for _ in 0..2 {
        let mut sends = 0;
        let (mut resp, _) = t.send(b"{}", || sends += 1).await.expect("answered");
        assert_eq!(body_of(&mut resp).await.expect("complete").0, b"ok");
        assert!(sends <= 2, "{sends}");
    }
    assert_eq!(f.conns.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn refusals_and_https_say_what_to_do() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let t = target(&format!("http://127.0.0.1:{port}/v1/completions"), None);
    match t.send(b"{}", || {}).await {
        Err(RawError::Connect(m)) => assert!(m.contains("is the server running"), "{m}"),
        other => panic!("{other:?}"),
    }
    let e = RawTarget::new("ftp://h/v1", None, Duration::from_secs(1))
        .expect_err("ftp")
        .to_string();
    assert!(e.contains("http:// and https:// endpoints only"), "{e}");
    let https = RawTarget::new("https://h/v1", None, Duration::from_secs(1));
    assert_eq!(https.is_ok(), cfg!(feature = "tls"));
    assert!(RawTarget::new("http://h/v1", Some("a\nb"), Duration::from_secs(1)).is_err());
    let e = RawTarget::new("http://u:p@h/v1", None, Duration::from_secs(1))
        .expect_err("creds")
        .to_string();
    assert!(e.contains("--api-key"), "{e}");
    // The key rides in the request head, which `Debug` leaves out.
    let keyed =
        RawTarget::new("http://h/v1", Some("sk-secret-1"), Duration::from_secs(1)).expect("target");
    assert!(!format!("{keyed:?}").contains("sk-secret-1"));
}

/// The simulator's stream through the raw reader: SSE events that end with `[DONE]`, and on
/// Linux nearly every piece has a kernel instant (a fallback piece has its read's), between
/// the send and the user-space read.
#[tokio::test]
async fn the_simulator_streams_through_the_raw_reader_with_kernel_instants() {
    let mut cfg = llmib_sim::builtin_profile("tiny").expect("tiny");
    cfg.decode_step_ms = vec![(1, 2.0)];
    let sim = llmib_sim::spawn(cfg).await.expect("sim");
    let t = target(&format!("{}/v1/completions", sim.base_url()), None);
    let body = serde_json::json!({
        "model": "tiny", "prompt": "hello", "max_tokens": 8, "stream": true, "ignore_eos": true,
    });
    let body = serde_json::to_vec(&body).expect("json");
    let (mut kernel, mut total) = (0, 0);
    for _ in 0..2 {
        let sent = Instant::now();
        let (mut resp, head) = t.send(&body, || {}).await.expect("answered");
        assert_eq!(resp.status(), 200);
        assert!(head.best() >= sent - Duration::from_millis(1));
        let (bytes, pieces) = body_of(&mut resp).await.expect("complete");
        let mut dec = crate::wire::sse::SseDecoder::new();
        dec.push(&bytes);
        let mut events = Vec::new();
        while let Some(ev) = dec.next_event() {
            events.push(ev.expect("event").data.to_string());
        }
        assert_eq!(
            events.last().map(String::as_str),
            Some("[DONE]"),
            "{events:?}"
        );
        assert!(events.len() >= 9, "{events:?}");
        for p in &pieces {
            assert!(p.at >= sent && p.at <= p.read, "{p:?}");
            assert!(
                p.kernel || p.at == p.read,
                "a fallback keeps its read's instant: {p:?}"
            );
        }
        kernel += pieces.iter().filter(|p| p.kernel).count();
        total += pieces.len();
    }
    // A read without the kernel's time keeps its user-space instant and is counted
    // (`RawTarget::stats`). One came now and then (one run of the suite in five) until
    // `ktime::keep_enabled` waited for the kernel to switch timestamping on; the margin stays,
    // as a loaded host can still hold that switch back past the wait.
    if cfg!(target_os = "linux") {
        assert!(
            kernel * 10 >= total * 8,
            "{kernel} of {total} kernel-stamped"
        );
    } else {
        assert_eq!(kernel, 0);
    }
    sim.shutdown().await;
}

/// A window's stats are those of the responses counted since its start: their pieces, their
/// mean correction, and the window's own largest one (a larger one before it is the run's).
#[test]
fn a_window_counts_the_responses_since_its_start() {
    let t = target("http://127.0.0.1:9/v1/completions", None);
    let tally = |pieces, kernel, sum_us: u64, max_us: u64| Tally {
        pieces,
        kernel,
        correction_ns: sum_us * 1000,
        max_correction_ns: max_us * 1000,
    };
    t.count(&tally(10, 10, 1000, 500));
    let mark = t.window_start();
    t.count(&tally(100, 99, 990, 40));
    t.count(&tally(100, 100, 1010, 60));
    let w = t.window_stats(mark);
    assert_eq!((w.pieces, w.kernel_pieces), (200, 199));
    assert!(
        (w.mean_correction_ms - 2000.0 / 199.0 / 1e3).abs() < 1e-12,
        "{w:?}"
    );
    assert!((w.max_correction_ms - 0.060).abs() < 1e-12, "{w:?}");
    let run = t.stats();
    assert_eq!((run.pieces, run.kernel_pieces), (210, 209));
    assert!((run.max_correction_ms - 0.5).abs() < 1e-12, "{run:?}");
    // A window with no response counted yet: nothing, not the previous window's figures.
    let w = t.window_stats(t.window_start());
    let nothing = llmib_core::KernelStamps {
        pieces: 0,
        kernel_pieces: 0,
        mean_correction_ms: 0.0,
        max_correction_ms: 0.0,
    };
    assert_eq!(w, nothing);
}

/// A redirect is not followed: its status and target come back, the target printable only
/// (it goes into a one-line message).
#[tokio::test]
async fn a_redirect_gives_its_status_and_printable_target() {
    let f = fixture(vec![(
        b"HTTP/1.1 308 Permanent Redirect\r\nLocation: https://api.example.com/v1/completions \xc3\xa9\r\nContent-Length: 0\r\n\r\n",
        Delivery::Whole,
    )])
    .await;
    let t = target(&f.url, None);
    let (resp, _) = t.send(b"{}", || {}).await.expect("answered");
    assert_eq!(resp.status(), 308);
    assert_eq!(
        resp.location(),
        Some("https://api.example.com/v1/completions")
    );
}

/// What the raw reader says of an endpoint it refuses, word for word: these messages end a run
/// before it starts, and each says what to do.
#[test]
fn a_refused_endpoint_keeps_its_words() {
    let refuse = |url: &str, key: Option<&str>| {
        RawTarget::new(url, key, Duration::from_secs(1))
            .expect_err("refused")
            .to_string()
    };
    assert_eq!(
        refuse("ftp://h/v1", None),
        "--http-reader raw reads http:// and https:// endpoints only (ftp://h/v1 is ftp://): use --http-reader reqwest"
    );
    assert_eq!(
        refuse("http://u:p@h/v1", None),
        "--http-reader raw does not send a URL's user:password: give --api-key, or use --http-reader reqwest"
    );
    assert_eq!(
        refuse("http://h/v1", Some("a\nb")),
        "the API key contains characters that cannot be sent in an HTTP header; check the key (`--api-key` or `OPENAI_API_KEY`)"
    );
    assert_eq!(
        refuse("http://h:99999/v1", None),
        "invalid URL http://h:99999/v1: invalid port number"
    );
}
