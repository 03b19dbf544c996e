//! Emission jitter: how closely the simulator keeps its token schedule, seen from a client.
//!
//! N streams of `TOKENS` tokens run against a constant `STEP_MS` decode step (prefill made
//! instant). A perfect engine delivers token i of a stream at `base + i × STEP_MS`. For each
//! stream the base is its earliest `arrival_i - i × STEP_MS`, so a token's jitter is how much
//! later than that perfect grid it reached the client (never negative). Tokens are read
//! over raw HTTP/1.1 in the same process, so the figures include the server's formatting
//! and writes, loopback TCP and the client's reads: an upper bound on the engine's own error.
//!
//! Run with `cargo bench -p llmib-sim --bench jitter`.

use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

const STEP_MS: f64 = 10.0;
const TOKENS: u32 = 100;

/// Streams one request and returns the arrival time of every content chunk.
async fn one_stream(addr: std::net::SocketAddr, i: u32) -> Vec<Instant> {
    let body = format!(
        "{{\"prompt\":[{},2,3,4],\"max_tokens\":{TOKENS},\"ignore_eos\":true,\"stream\":true}}",
        1000 + i
    );
    let mut s = match TcpStream::connect(addr).await {
        Ok(s) => s,
        Err(_) => return Vec::new(),
    };
    let _ = s.set_nodelay(true);
    let head = format!(
        "POST /v1/completions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    if s.write_all(head.as_bytes()).await.is_err() {
        return Vec::new();
    }
    let mut rd = BufReader::new(s);
    let mut line = String::new();
    // Status line and headers.
    loop {
        line.clear();
        match rd.read_line(&mut line).await {
            Ok(0) | Err(_) => return Vec::new(),
            Ok(_) if line == "\r\n" => break,
            Ok(_) => {}
        }
    }
    let mut arrivals = Vec::with_capacity(TOKENS as usize);
    let mut buf = Vec::new();
    loop {
        line.clear();
        if rd.read_line(&mut line).await.unwrap_or(0) == 0 {
            break;
        }
        let size = usize::from_str_radix(line.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        buf.resize(size + 2, 0);
        if rd.read_exact(&mut buf).await.is_err() {
            break;
        }
        let at = Instant::now();
        // One chunk per SSE event; count those that carry a token.
        let text = String::from_utf8_lossy(&buf[..size]);
        for ev in text.split("\n\n") {
            if ev.starts_with("data: {") && ev.contains("\"text\"") {
                arrivals.push(at);
            }
        }
    }
    arrivals
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

async fn run(streams: u32) -> (usize, f64, f64, f64) {
    let mut cfg = llmib_sim::builtin_profile("tiny").expect("tiny profile");
    cfg.decode_step_ms = vec![(1, STEP_MS)];
    cfg.prefill_tok_per_s = 1e12;
    cfg.prefill_overhead_ms = 0.0;
    cfg.kv_capacity_tokens = 10_000_000;
    cfg.prefix_cache_tokens = 0;
    let sim = llmib_sim::spawn(cfg).await.expect("simulator starts");
    let addr = sim.addr();
    let tasks: Vec<_> = (0..streams)
        .map(|i| tokio::spawn(one_stream(addr, i)))
        .collect();
    let mut jitter = Vec::new();
    for t in tasks {
        let arrivals = t.await.unwrap_or_default();
        let Some(&first) = arrivals.first() else {
            continue;
        };
        let offsets: Vec<f64> = arrivals
            .iter()
            .enumerate()
            .map(|(i, a)| (*a - first).as_secs_f64() * 1000.0 - i as f64 * STEP_MS)
            .collect();
        let base = offsets.iter().copied().fold(f64::INFINITY, f64::min);
        jitter.extend(offsets.iter().map(|o| o - base));
    }
    sim.shutdown().await;
    jitter.sort_by(f64::total_cmp);
    let n = jitter.len();
    (
        n,
        percentile(&jitter, 0.5),
        percentile(&jitter, 0.99),
        jitter.last().copied().unwrap_or(f64::NAN),
    )
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    println!("emission jitter vs a perfect {STEP_MS} ms grid, {TOKENS} tokens per stream");
    println!("| streams | tokens measured | p50 ms | p99 ms | max ms |");
    println!("|---:|---:|---:|---:|---:|");
    for streams in [1, 64, 512] {
        let (n, p50, p99, max) = rt.block_on(run(streams));
        println!("| {streams} | {n} | {p50:.3} | {p99:.3} | {max:.3} |");
        std::thread::sleep(Duration::from_millis(200));
    }
}
