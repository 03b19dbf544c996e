//! The fixed costs of a run (issue 44): what the client spends every second whatever its token
//! rate, each on its own line as CPU µs per call and as ms of CPU per second at a run's cadence:
//! - the server's metrics read: `Engine::gauges` (a GET of `/metrics` on the engine's pooled
//!   client, the parse and the row's gauges) against a keep-alive server of a recorded vLLM
//!   page and an SGLang page; a decode window reads every 250 ms and the telemetry sampler every
//!   second, so 5 reads a second;
//! - the hardware monitor: its own thread at the run's default 500 ms, measured whole (samples
//!   and wake-ups) over a few seconds;
//! - the client-lag probe a decode window runs: its samples at 10 ms (the reqwest reader, or
//!   chunk instants without the kernel's time) and at 250 ms (the raw reader while the kernel
//!   stamps every piece, a run's usual case on Linux), each measured whole on its runtime's
//!   thread over a few seconds;
//! - the progress feed: a gauge sample published to the live window and one dashboard frame's
//!   reads of it, 4 a second each (the window's gauge interval and the dashboard's frame).
//!
//! CPU is that of the thread doing the work (`/proc/thread-self/sched`, ns), so the fixture
//! server's threads and the rest of the process never count.

use crate::fixture_server::{FixtureServer, Route};
use llmib_client::{
    CancellationToken, Engine, Gauges, HwMonitor, LiveWindow, Metrics, ProbeOptions, ProgressEvent,
    Stage, UnstampedCount, json_line, spawn_lag_probe,
};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Metrics reads a second during a decode window: the window's own (every 250 ms, the default
/// `gauge_interval_ms`) and the telemetry sampler's (every second).
const METRICS_READS_PER_S: f64 = 5.0;
/// Live-window updates a second: one gauge publish (the window) and one frame (the dashboard).
const FEED_PER_S: f64 = 4.0;
/// Reads timed per page (after a warm-up of a tenth as many).
const READS: u32 = 2000;

const VLLM_PAGE: &str = include_str!("../../fixtures/transcripts/vllm/live/metrics_queued.txt");
const SGLANG_PAGE: &str = include_str!("../../testdata/metrics/sglang.txt");

/// The metric names each adapter's gauges read (`crates/client/src/server/engine/vllm.rs` and
/// `sglang.rs`), for timing the parse without the request.
const VLLM_NAMES: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:generation_tokens_total",
    "vllm:prompt_tokens_total",
    "vllm:prompt_tokens_cached_total",
    "vllm:prefix_cache_queries_total",
    "vllm:num_preemptions_total",
    "vllm:kv_cache_usage_perc",
    "vllm:request_prefill_time_seconds_sum",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_draft_tokens_total",
    "vllm:spec_decode_num_accepted_tokens_total",
];
const SGLANG_NAMES: &[&str] = &[
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:generation_tokens_total",
    "sglang:prompt_tokens_total",
    "sglang:cached_tokens_total",
    "sglang:num_retracted_requests_total",
    "sglang:token_usage",
    "sglang:spec_accept_rate",
    "sglang:spec_accept_length",
];

/// Nanoseconds of CPU the thread `task` (`thread-self`, `self/task/TID`) has run: the
/// scheduler's `se.sum_exec_runtime` (ns precision), else utime + stime (10 ms ticks).
fn thread_cpu_ns(task: &str) -> Option<u64> {
    if let Ok(s) = std::fs::read_to_string(format!("/proc/{task}/sched")) {
        let ms = s
            .lines()
            .find(|l| l.starts_with("se.sum_exec_runtime"))
            .and_then(|l| l.split(':').nth(1))
            .and_then(|v| v.trim().parse::<f64>().ok());
        if let Some(ms) = ms {
            return Some((ms * 1e6) as u64);
        }
    }
    let stat = std::fs::read_to_string(format!("/proc/{task}/stat")).ok()?;
    let f: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
    let ticks: u64 = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000_000)
}

fn self_ns() -> u64 {
    thread_cpu_ns("thread-self").unwrap_or(0)
}

/// µs per call of `calls` calls that started at `t0` (this thread's CPU).
fn us_per(t0: u64, calls: u32) -> f64 {
    self_ns().saturating_sub(t0) as f64 / 1e3 / f64::from(calls)
}

/// One page's read costs, CPU µs per read.
struct ReadCost {
    /// `Engine::gauges`: request, body, parse, gauges.
    read: f64,
    /// The same GET and body on the engine's client, nothing parsed.
    get: f64,
    /// `Metrics::parse` and the adapter's lookups alone.
    parse: f64,
    /// Connections the server accepted during the timed reads (0: the pooled one was reused).
    new_connections: usize,
}

fn routes(files: [(&'static str, &'static str, &str); 5]) -> Vec<Route> {
    files.map(|(m, p, b)| (m, p, b.to_owned())).into()
}

fn vllm_routes() -> Vec<Route> {
    routes([
        (
            "GET",
            "/v1/models",
            include_str!("../../fixtures/transcripts/vllm/live/models.json"),
        ),
        (
            "GET",
            "/version",
            include_str!("../../fixtures/transcripts/vllm/live/version.json"),
        ),
        ("GET", "/metrics", VLLM_PAGE),
        (
            "POST",
            "/tokenize",
            include_str!("../../fixtures/transcripts/vllm/live/tokenize.json"),
        ),
        (
            "POST",
            "/detokenize",
            include_str!("../../fixtures/transcripts/vllm/live/detokenize.json"),
        ),
    ])
}

fn sglang_routes() -> Vec<Route> {
    routes([
        (
            "GET",
            "/v1/models",
            include_str!("../../fixtures/transcripts/sglang/v1_models.json"),
        ),
        (
            "GET",
            "/get_server_info",
            include_str!("../../fixtures/transcripts/sglang/get_server_info.json"),
        ),
        ("GET", "/metrics", SGLANG_PAGE),
        (
            "POST",
            "/tokenize",
            include_str!("../../fixtures/transcripts/sglang/tokenize.json"),
        ),
        (
            "POST",
            "/detokenize",
            include_str!("../../fixtures/transcripts/sglang/detokenize.json"),
        ),
    ])
}

/// Times the reads of one engine's page on a current-thread runtime, so that the client's whole
/// read (hyper's connection task included) runs on this thread.
fn metrics_read(routes: Vec<Route>, page: &str, names: &[&str]) -> Result<ReadCost, String> {
    let server = FixtureServer::start(routes)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let (read, get, new_connections) = rt.block_on(async {
        let err = |e: &dyn std::fmt::Display| e.to_string();
        let engine = Engine::probe(&ProbeOptions::new(&server.url))
            .await
            .map_err(|e| err(&e))?
            .engine;
        let url = format!("{}/metrics", server.url);
        for _ in 0..READS / 10 {
            let g = engine.gauges().await.map_err(|e| err(&e))?;
            if g.running.is_none() || g.generation_tokens_total.is_none() {
                return Err(format!("{url}: the gauges were not read: {g:?}"));
            }
        }
        let conns = server.connections();
        let t0 = self_ns();
        for _ in 0..READS {
            black_box(engine.gauges().await.map_err(|e| err(&e))?);
        }
        let read = us_per(t0, READS);
        let t0 = self_ns();
        for _ in 0..READS {
            let r = engine
                .client()
                .get(&url)
                .send()
                .await
                .map_err(|e| err(&e))?;
            black_box(r.text().await.map_err(|e| err(&e))?);
        }
        let get = us_per(t0, READS);
        Ok::<_, String>((read, get, server.connections() - conns))
    })?;
    let t0 = self_ns();
    for _ in 0..READS {
        let m = Metrics::parse(black_box(page));
        for n in names {
            black_box(m.sum(n));
        }
    }
    Ok(ReadCost {
        read,
        get,
        parse: us_per(t0, READS),
        new_connections,
    })
}

/// The thread named `name` in this process.
fn thread_named(name: &str) -> Option<String> {
    std::fs::read_dir("/proc/self/task")
        .ok()?
        .flatten()
        .find_map(|t| {
            let comm = std::fs::read_to_string(t.path().join("comm")).ok()?;
            (comm.trim() == name).then(|| t.file_name().to_string_lossy().into_owned())
        })
}

/// The hardware monitor's thread over `window` at the run's 500 ms: CPU µs per sample and ms
/// per second (wake-ups included), the samples, and the GPU reader it found.
fn hw_monitor(window: Duration) -> Result<(f64, f64, u32, String), String> {
    let m = HwMonitor::start(Duration::from_millis(500), None);
    // The first sample carries the detection (NVML, nvidia-smi): a start-up cost, not a
    // per-second one.
    let t0 = Instant::now();
    while m.latest().is_none() && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let source = m
        .latest()
        .ok_or("the hardware monitor took no sample")?
        .gpu_source;
    let tid = thread_named("hw-monitor").ok_or("no hw-monitor thread")?;
    let task = format!("self/task/{tid}");
    m.begin_cell();
    let (t0, c0) = (Instant::now(), thread_cpu_ns(&task));
    std::thread::sleep(window);
    let (secs, c1) = (t0.elapsed().as_secs_f64(), thread_cpu_ns(&task));
    let samples = m.end_cell().map_or(0, |s| s.samples);
    let ns = c1.zip(c0).map_or(0, |(b, a)| b.saturating_sub(a)) as f64;
    Ok((
        ns / 1e3 / f64::from(samples.max(1)),
        ns / 1e6 / secs,
        samples,
        source,
    ))
}

/// The client-lag probe over `window` on a current-thread runtime (so its timer, its yields and
/// the runtime's wake-ups all run on this thread): ms of CPU per second and samples per second,
/// with a raw reader whose every piece had a kernel time (`covered`) or without one.
fn lag_probe(window: Duration, covered: bool) -> Result<(f64, f64), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    /// A raw reader none of whose pieces lacked a kernel time.
    struct EveryPieceStamped;
    impl UnstampedCount for EveryPieceStamped {
        fn unstamped(&self) -> u64 {
            0
        }
    }
    let raw = covered.then(|| Arc::new(EveryPieceStamped) as Arc<dyn UnstampedCount>);
    let (samples, ns, secs) = rt.block_on(async move {
        let stop = CancellationToken::new();
        let (t0, c0) = (Instant::now(), self_ns());
        let probe = spawn_lag_probe(stop.clone(), raw);
        tokio::time::sleep(window).await;
        stop.cancel();
        let samples = probe.await.map_or(0, |d| d.len());
        (
            samples,
            self_ns().saturating_sub(c0),
            t0.elapsed().as_secs_f64(),
        )
    });
    Ok((ns as f64 / 1e6 / secs, samples as f64 / secs))
}

/// The progress feed at N = 1: CPU ns of one gauge publish plus one dashboard frame's reads
/// (`crates/dashboard/src/view.rs`), and µs of one JSON event line (`--display json`; a few
/// per cell, none per second).
fn feed() -> (f64, f64) {
    const N: u32 = 1_000_000;
    let live = LiveWindow::new(1, Duration::from_secs(60), true);
    let g = Gauges {
        running: Some(1.0),
        waiting: Some(0.0),
        ..Gauges::default()
    };
    let t0 = self_ns();
    for _ in 0..N {
        live.set_gauges(black_box(g), Instant::now());
        let (ended, errors) = live.ended();
        black_box((ended, errors, live.tokens(), live.streams_with_token()));
        black_box(live.gauges());
    }
    let frame_ns = us_per(t0, N) * 1e3;
    let e = ProgressEvent::Phase(Stage::Window);
    let t0 = self_ns();
    for _ in 0..N / 10 {
        black_box(json_line(black_box(&e), 1.5));
    }
    (frame_ns, us_per(t0, N / 10))
}

/// Prints the fixed costs' lines (`LLMIB_OVERHEAD_ONLY=fixed`: these alone).
pub(crate) fn print_fixed_costs() -> Result<(), String> {
    println!(
        "Fixed costs per second of run (issue 44): CPU of the thread doing the work; target: \
         under 2 ms per second in all"
    );
    let mut total = 0.0;
    for (name, routes, page, names) in [
        ("vLLM (recorded)", vllm_routes(), VLLM_PAGE, VLLM_NAMES),
        ("SGLang", sglang_routes(), SGLANG_PAGE, SGLANG_NAMES),
    ] {
        let c = metrics_read(routes, page, names)?;
        let per_s = c.read * METRICS_READS_PER_S / 1e3;
        if name.starts_with("vLLM") {
            total += per_s;
        }
        println!(
            "  metrics read, {name} page ({} KB, {} lines): {:.1} µs per read (GET {:.1}, parse \
             and gauges {:.1}; parse alone {:.1}) × {METRICS_READS_PER_S}/s = {per_s:.3} ms/s; \
             {} new connections over {READS} reads",
            page.len() / 1000,
            page.lines().count(),
            c.read,
            c.get,
            c.read - c.get,
            c.parse,
            c.new_connections
        );
    }
    let (us, per_s, samples, source) = hw_monitor(Duration::from_secs(5))?;
    total += per_s;
    println!(
        "  hardware monitor (GPU reader: {source}; CPU: /proc and sysfs): {us:.1} µs per sample \
         ({samples} samples, wake-ups included) = {per_s:.3} ms/s"
    );
    for (what, covered) in [
        ("raw reader, every piece kernel-stamped", true),
        ("reqwest reader or unstamped pieces", false),
    ] {
        let (per_s, rate) = lag_probe(Duration::from_secs(3), covered)?;
        if covered {
            total += per_s;
        }
        println!(
            "  client-lag probe ({what}): {rate:.0} samples/s = {per_s:.3} ms/s{}",
            if covered { "" } else { " (not in the total)" }
        );
    }
    let (frame_ns, json_us) = feed();
    let feed_per_s = frame_ns * FEED_PER_S / 1e6;
    total += feed_per_s;
    println!(
        "  progress feed (N=1: a gauge publish + a dashboard frame's reads): {frame_ns:.0} ns × \
         {FEED_PER_S}/s = {feed_per_s:.4} ms/s; a JSON event line {json_us:.2} µs (per stage, \
         not per second)"
    );
    println!("  total (vLLM page): {total:.3} ms of CPU per second of run");
    Ok(())
}
