//! The simulator under open load: requests sent on a constant schedule, whatever the server
//! is doing, to the `open-load` profile (one request at a time, S = 50 ms each at C = 512,
//! M = 16). Below 1/S every request finds the engine idle and its TTFT is the prefill time;
//! above it the queue grows by S − 1/r per request, so TTFT grows with the arrival index.
//! Judged with the simulator's own per-request oracle (`served_requests`).

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{ServedRequest, SimConfig, builtin_profile, served_requests};

/// The profile's prefill time and service time at C = 512, M = 16 (docs/simulator.md).
const PREFILL_MS: f64 = 5.0;
const SERVICE_MS: f64 = 50.0;
const PROMPT: u32 = 512;
const OUTPUT: u32 = 16;

/// Streams one completion of a distinct 512-token prompt over raw HTTP and reads it whole.
async fn stream_once(addr: std::net::SocketAddr, index: u32) {
    let ids: Vec<String> = (0..PROMPT)
        .map(|t| (10 + index * PROMPT + t).to_string())
        .collect();
    let body = format!(
        r#"{{"prompt":[{}],"max_tokens":{OUTPUT},"ignore_eos":true,"stream":true}}"#,
        ids.join(",")
    );
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let _ = s.set_nodelay(true);
    let head = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).await.expect("writes");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("reads");
}

/// Sends `n` requests at `rate` per second on a constant schedule (open loop: never waiting
/// for an answer before the next send) and returns the oracle's view of them.
async fn open_loop(rate: f64, n: u32) -> Vec<ServedRequest> {
    let cfg = SimConfig {
        stamp_chunks: true,
        ..builtin_profile("open-load").expect("open-load profile")
    };
    let sim = crate::spawn(cfg).await.expect("starts");
    let addr = sim.addr();
    let start = tokio::time::Instant::now();
    let mut tasks = Vec::new();
    for i in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(f64::from(i) / rate)).await;
        tasks.push(tokio::spawn(stream_once(addr, i)));
    }
    for t in tasks {
        t.await.expect("request task");
    }
    let served = served_requests(&sim.take_arrival_stamps(), &sim.take_chunk_stamps());
    sim.shutdown().await;
    assert_eq!(
        served.len(),
        n as usize,
        "every request stamped: {served:?}"
    );
    assert!(
        served.iter().all(|r| r.finished && r.tokens == OUTPUT),
        "{served:?}"
    );
    served
}

fn ms(d: Option<Duration>) -> f64 {
    d.expect("the figure exists").as_secs_f64() * 1e3
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn below_the_service_rate_ttft_is_the_prefill_time() {
    // 10/s = half of 1/S: the engine is idle when each request arrives.
    let served = open_loop(10.0, 8).await;
    for r in &served {
        let ttft = ms(r.ttft());
        // Never below the prefill pass; above it only by host jitter.
        assert!(
            (PREFILL_MS - 0.1..PREFILL_MS + 20.0).contains(&ttft),
            "{ttft} ms"
        );
        let e2e = ms(r.e2e());
        assert!(
            (SERVICE_MS - 0.1..SERVICE_MS + 25.0).contains(&e2e),
            "{e2e} ms"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn above_the_service_rate_ttft_grows_with_the_arrival_index() {
    // 30/s = 1.5/S: each arrival finds the queue S − 1/r = 16.7 ms longer than the last.
    let rate = 30.0;
    let n = 16;
    let served = open_loop(rate, n).await;
    let ttft: Vec<f64> = served.iter().map(|r| ms(r.ttft())).collect();
    let growth = SERVICE_MS - 1e3 / rate;
    for (i, t) in ttft.iter().enumerate() {
        let expected = PREFILL_MS + growth * i as f64;
        // Arrivals are sent by tokio's millisecond timer on a shared host: allow its jitter.
        assert!(
            (t - expected).abs() < 25.0,
            "request {i}: {t} ms, expected {expected}: {ttft:?}"
        );
    }
    assert!(
        ttft.windows(2).all(|w| w[1] > w[0] - 5.0),
        "TTFT grows with the arrival index: {ttft:?}"
    );
    // Saturated, the engine starts one request every S: first chunks exactly S apart (its own
    // clock keeps passes back to back, so host jitter does not accumulate).
    let firsts: Vec<Instant> = served.iter().filter_map(|r| r.first_chunk).collect();
    let mut gaps: Vec<f64> = firsts
        .windows(2)
        .map(|w| w[1].duration_since(w[0]).as_secs_f64() * 1e3)
        .collect();
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    assert!((median - SERVICE_MS).abs() < 2.0, "{gaps:?}");
}
