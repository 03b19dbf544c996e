//! The client's own cost and timing error, measured against the simulator: CPU time per million
//! tokens ingested, tokens per second per core, peak RSS (and per stream), and the p99 error of
//! the chunk timestamps, at 1, 64 and 1024 streams.
//!
//! Run with `cargo bench -p llmib-client --bench overhead` (about a minute).
//! `LLMIB_OVERHEAD_ONLY=timing` (or any part of a case's label) runs only the matching cases;
//! `LLMIB_OVERHEAD_ONLY=fixed` prints only the fixed costs per second (`fixed.rs`).
//! Method and measured figures: `docs/benchmarks.md`.
//!
//! Three processes, so that every figure belongs to exactly one of them:
//! - this one orchestrates: for each case it starts a simulator and a client, both children
//!   running this same executable (`LLMIB_OVERHEAD_ROLE=sim|client`), and prints the tables;
//! - the simulator child serves `llmib_sim` on loopback and, for the timing cases, records when
//!   it handed each content chunk to hyper (`stamp_chunks`);
//! - the client child probes the simulator with `Engine::probe` and runs N closed-loop streams
//!   through `llmib_client::measure`, the per-request path of `run`. A fresh process
//!   per case, so its CPU time (`/proc/self/stat`) and peak RSS (`VmHWM`) are the client's
//!   alone and never carry over from another case. It also reads the simulator's CPU time over
//!   the same window, to show which side is the limit.
//!
//! Timing error: the two children are different processes, so each maps its monotonic
//! `Instant`s onto the shared realtime clock with a pair of readings taken within a fraction
//! of a microsecond. A client chunk is matched with the simulator's stamp by
//! (`usage.prompt_tokens`, cumulative `usage.completion_tokens`), which is unique because every
//! stream has a prompt of its own length and sends one request that outlasts the run.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use llmib_client::SseDecoder;
use llmib_client::{Engine, HttpReader, ProbeOptions, PromptInput};
use llmib_client::{Measured, StreamLimits, measure};
use llmib_client::{StreamItem, parse_event};
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

mod fixed;
mod fixture_server;
mod guard;
mod host;
mod raw;
mod tables;
use host::*;
use raw::raw_stream;
use tables::*;

const ROLE: &str = "LLMIB_OVERHEAD_ROLE";
const CASE: &str = "LLMIB_OVERHEAD_CASE";
const URL: &str = "LLMIB_OVERHEAD_URL";
const SIM_PID: &str = "LLMIB_OVERHEAD_SIM_PID";
const STAMPS_OUT: &str = "LLMIB_OVERHEAD_STAMPS";
const CHUNKS_OUT: &str = "LLMIB_OVERHEAD_CHUNKS";

/// Stream s sends a prompt of `PROMPT_BASE + s` token ids: distinct lengths make
/// `usage.prompt_tokens` name the stream.
const PROMPT_BASE: u32 = 16;

/// One measured configuration.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Case {
    /// `ingest` (throughput: the client's cost) or `timing` (realistic steps: its timing error).
    kind: String,
    /// `measure` (the client's real path, reqwest reading), `rawhttp` (the same path through
    /// `--http-reader raw`: kernel receive timestamps) or `raw` (a bare socket reader: the
    /// host's floor).
    reader: String,
    /// Threads that spin in the client process for the whole case (a CPU hog that makes the
    /// client's runtime late to its sockets).
    #[serde(default)]
    hog: u32,
    /// The simulator runs on CPU 0 and the client (with its hog) on CPU 1 (`taskset`), so a
    /// hog squeezes the client alone: its core is the one running the hog.
    #[serde(default)]
    pinned: bool,
    /// Concurrent streams.
    streams: u32,
    /// The simulator's decode step, whatever the batch size.
    step_ms: f64,
    /// Tokens per step, sent as one chunk.
    spec_tokens: u32,
    /// `max_tokens` of every request (closed loop: a finished request is sent again).
    max_tokens: u32,
    /// After every stream is admitted, before the window opens.
    warm_s: f64,
    /// The measured window.
    window_s: f64,
}

impl Case {
    fn timing(&self) -> bool {
        self.kind == "timing"
    }

    fn raw(&self) -> bool {
        self.reader == "raw"
    }

    fn label(&self) -> String {
        let mut l = format!("{} N={} step={}ms", self.kind, self.streams, self.step_ms);
        if self.spec_tokens > 1 {
            l += &format!(" spec={}", self.spec_tokens);
        }
        if self.reader != "measure" {
            l += &format!(" [{}]", self.reader);
        }
        if self.hog > 0 {
            l += &format!(" hog={}", self.hog);
        }
        if self.pinned {
            l += " pinned";
        }
        l
    }
}

fn cases() -> Vec<Case> {
    let ingest = |streams, step_ms, spec_tokens, reader: &str| Case {
        kind: "ingest".into(),
        reader: reader.into(),
        hog: 0,
        pinned: false,
        streams,
        step_ms,
        spec_tokens,
        max_tokens: 2048,
        warm_s: 0.5,
        window_s: 3.0,
    };
    // One request per stream that outlasts the run (4096 × 10 ms = 41 s), so that chunks match
    // unambiguously.
    let timing = |streams, step_ms, reader: &str| Case {
        kind: "timing".into(),
        reader: reader.into(),
        hog: 0,
        pinned: false,
        streams,
        step_ms,
        spec_tokens: 1,
        max_tokens: 4096,
        warm_s: 0.5,
        window_s: 3.0,
    };
    let mut v = Vec::new();
    // Steps as short as the simulator can serve for each N, one token per chunk (what most
    // engines send), then eight (speculative decoding: the same chunks carry 8× the tokens).
    // The two readers of `run` (`--http-reader`) beside the bare floor, one token per chunk.
    for (n, step) in [(1, 0.05), (64, 0.5), (256, 2.0), (1024, 8.0)] {
        for reader in ["measure", "rawhttp", "raw"] {
            v.push(ingest(n, step, 1, reader));
        }
    }
    for (n, step) in [(1, 0.05), (64, 0.5), (1024, 8.0)] {
        v.push(ingest(n, step, 8, "measure"));
    }
    // 10 ms steps; at 1024 streams that is 100k chunks/s, far above a real engine's batch of
    // 1024 (tens of ms per step), so 1024 also runs at 20 ms. Each beside the raw floor.
    for (n, step) in [(1, 10.0), (64, 10.0), (1024, 10.0), (1024, 20.0)] {
        v.push(timing(n, step, "measure"));
        v.push(timing(n, step, "raw"));
        v.push(timing(n, step, "rawhttp"));
    }
    // With a CPU hog in the client process (two spinning threads): how far each reader's
    // instants drift when the runtime is late, and how much the kernel's stamps hold.
    for reader in ["measure", "rawhttp"] {
        v.push(Case {
            hog: 2,
            ..timing(64, 10.0, reader)
        });
    }
    // The same with the simulator on a core of its own, so the hog squeezes only the client.
    if std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2) {
        for reader in ["measure", "rawhttp"] {
            v.push(Case {
                hog: 2,
                pinned: true,
                ..timing(64, 10.0, reader)
            });
        }
    }
    v
}

/// One content chunk as a reader saw it.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// `usage.prompt_tokens` of its request (names the stream).
    prompt_tokens: u64,
    /// Cumulative `usage.completion_tokens` after it.
    completion_tokens: u64,
    /// Arrival, ns from the origin.
    t_ns: u64,
    /// Tokens it carried.
    tokens: u32,
}

/// What the client child reports.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct ClientResult {
    window_s: f64,
    /// Tokens and chunks that arrived inside the window.
    tokens: u64,
    chunks: u64,
    /// CPU seconds (user + system) over the window.
    client_cpu_s: f64,
    sim_cpu_s: f64,
    rss_base_kb: u64,
    rss_peak_kb: u64,
    /// Heap held by the per-chunk timing records at the end (capacity × 16 bytes).
    record_bytes: u64,
    requests: u64,
    errors: u64,
    first_error: Option<String>,
    /// `rawhttp`: the raw reader's pieces, those with a kernel instant, and how much the
    /// kernel instants corrected the reads' (mean, largest; µs).
    #[serde(default)]
    raw_reader: Option<(u64, u64, f64, f64)>,
}

fn main() {
    let r = match std::env::var(ROLE).as_deref() {
        Ok("sim") => sim_role(),
        Ok("client") => client_role(),
        _ => orchestrate(),
    };
    if let Err(e) = r {
        eprintln!("overhead bench: {e}");
        std::process::exit(1);
    }
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("{name} is not set"))
}

// ---------------------------------------------------------------------------------------------
// The simulator child.

fn sim_role() -> Result<(), String> {
    let case: Case = serde_json::from_str(&env(CASE)?).map_err(|e| e.to_string())?;
    let mut cfg = llmib_sim::builtin_profile("tiny").ok_or("no tiny profile")?;
    // Room for 1024 streams of (prompt + max_tokens); prefill made near instant so that the
    // cases measure decode streaming only.
    cfg.context_length = 1 << 16;
    cfg.kv_capacity_tokens = 1 << 30;
    cfg.prefix_cache_tokens = 0;
    cfg.prefill_tok_per_s = 1e9;
    cfg.prefill_overhead_ms = 0.0;
    cfg.chunked_prefill_tokens = 1 << 30;
    cfg.decode_step_ms = vec![(1, case.step_ms)];
    cfg.per_kv_token_us = 0.0;
    cfg.spec_tokens = case.spec_tokens;
    cfg.stamp_chunks = case.timing();
    // Named apart from the client's (default-named) workers, for profilers.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("llmib-sim-rt")
        .build()
        .map_err(|e| e.to_string())?;
    let sim = rt
        .block_on(llmib_sim::spawn(cfg))
        .map_err(|e| e.to_string())?;
    println!("PORT {}", sim.addr().port());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    // Serve until the orchestrator closes our stdin.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    let stamps = sim.take_chunk_stamps();
    if let Ok(path) = std::env::var(STAMPS_OUT) {
        let clock = ClockPair::now();
        let f = std::fs::File::create(&path).map_err(|e| format!("{path}: {e}"))?;
        let mut w = BufWriter::new(f);
        for s in &stamps {
            writeln!(
                w,
                "{} {} {}",
                s.prompt_tokens,
                s.completion_tokens,
                clock.unix_ns(s.at)
            )
            .map_err(|e| e.to_string())?;
        }
        w.flush().map_err(|e| e.to_string())?;
    }
    rt.block_on(sim.shutdown());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// The client child.

fn client_role() -> Result<(), String> {
    let case: Case = serde_json::from_str(&env(CASE)?).map_err(|e| e.to_string())?;
    let url = env(URL)?;
    let sim_pid = env(SIM_PID)?;
    let chunks_out = std::env::var(CHUNKS_OUT).ok();
    // As the CLI builds it (crates/cli/src/main.rs).
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    for _ in 0..case.hog {
        // Spins until the process exits: competes with the runtime's workers for the cores.
        std::thread::spawn(|| {
            loop {
                std::hint::spin_loop();
            }
        });
    }
    let rss_base_kb = status_kb("VmRSS");
    let mut r = rt.block_on(run_client(&case, &url, &sim_pid, chunks_out.as_deref()))?;
    r.rss_base_kb = rss_base_kb;
    println!(
        "RESULT {}",
        serde_json::to_string(&r).map_err(|e| e.to_string())?
    );
    Ok(())
}

async fn run_client(
    case: &Case,
    url: &str,
    sim_pid: &str,
    chunks_out: Option<&str>,
) -> Result<ClientResult, String> {
    let ticks = ticks_per_second();
    let probe = Engine::probe(&ProbeOptions::new(url))
        .await
        .map_err(|e| e.to_string())?;
    let mut engine = probe.engine;
    if case.reader == "rawhttp" {
        engine
            .set_http_reader(HttpReader::Raw, Duration::from_secs(5))
            .map_err(|e| e.to_string())?;
    }
    let engine = Arc::new(engine);
    let model = engine.model().served_model.clone();
    let addr = url.trim_start_matches("http://").to_string();
    let origin = tokio::time::Instant::now();
    let clock = ClockPair::now();
    let stop = CancellationToken::new();
    let mut workers = Vec::with_capacity(case.streams as usize);
    for s in 0..case.streams {
        let ids: Vec<u32> = (0..PROMPT_BASE + s).map(|k| 100 + k % 997).collect();
        // As the driver builds it: usage on every chunk where the engine streams it.
        let limits = StreamLimits::default();
        let spec = engine
            .stream_request(
                &model,
                PromptInput::Ids(ids),
                case.max_tokens,
                false,
                limits,
            )
            .map_err(|e| e.to_string())?;
        let body = spec.body.clone();
        let engine = Arc::clone(&engine);
        let (addr, stop) = (addr.clone(), stop.clone());
        let (raw, closed_loop) = (case.raw(), !case.timing());
        workers.push(tokio::spawn(async move {
            if raw {
                return Out::Raw(raw_stream(&addr, &body, origin, &stop, closed_loop).await);
            }
            // The closed loop of window.rs: a finished request is sent again at once.
            let mut done: Vec<Measured> = Vec::new();
            while !stop.is_cancelled() {
                let m = measure(engine.client(), &spec, s, origin, &stop, None).await;
                let failed = m.record.is_error();
                done.push(m);
                if failed {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            Out::Measured(done)
        }));
    }
    // Readiness by the simulator's gauges, as the driver does: every stream admitted.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(g) = engine.gauges().await
            && g.running.is_some_and(|r| r >= f64::from(case.streams))
            && g.waiting.is_some_and(|w| w <= 0.0)
        {
            break;
        }
        if Instant::now() > deadline {
            return Err("the streams were not all admitted within 60 s".into());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_secs_f64(case.warm_s)).await;
    let (self_cpu0, sim_cpu0) = (cpu_seconds("self", ticks), cpu_seconds(sim_pid, ticks));
    let t0 = tokio::time::Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(case.window_s)).await;
    let t1 = tokio::time::Instant::now();
    let (self_cpu1, sim_cpu1) = (cpu_seconds("self", ticks), cpu_seconds(sim_pid, ticks));
    stop.cancel();
    let mut outs = Vec::with_capacity(workers.len());
    for w in workers {
        outs.push(w.await.map_err(|e| e.to_string())?);
    }
    // Peak memory before anything below allocates.
    let rss_peak_kb = status_kb("VmHWM");
    let ns = |t: tokio::time::Instant| t.saturating_duration_since(origin).as_nanos() as u64;
    let (w0, w1) = (ns(t0), ns(t1));
    let mut r = ClientResult {
        window_s: (t1 - t0).as_secs_f64(),
        client_cpu_s: self_cpu1.zip(self_cpu0).map_or(f64::NAN, |(b, a)| b - a),
        sim_cpu_s: sim_cpu1.zip(sim_cpu0).map_or(f64::NAN, |(b, a)| b - a),
        rss_peak_kb,
        ..ClientResult::default()
    };
    let mut entries = Vec::new();
    for out in outs {
        match out {
            Out::Raw(Ok(e)) => {
                r.requests += 1;
                entries.extend(e);
            }
            Out::Raw(Err(e)) => {
                r.requests += 1;
                r.errors += 1;
                r.first_error.get_or_insert(e);
            }
            Out::Measured(ms) => {
                for m in ms {
                    let rec = &m.record;
                    r.requests += 1;
                    r.record_bytes +=
                        (rec.chunks.capacity() * std::mem::size_of::<llmib_core::Chunk>()) as u64;
                    if rec.is_error() {
                        r.errors += 1;
                        r.first_error
                            .get_or_insert_with(|| format!("{:?}", rec.outcome));
                    }
                    let p = rec.prompt_tokens_reported.unwrap_or(0);
                    let mut cum = 0u64;
                    for c in &rec.chunks {
                        cum += u64::from(c.tokens);
                        entries.push(Entry {
                            prompt_tokens: p,
                            completion_tokens: cum,
                            t_ns: c.t_ns,
                            tokens: c.tokens,
                        });
                    }
                }
            }
        }
    }
    r.raw_reader = engine.raw_reader_stats().map(|s| {
        (
            s.pieces,
            s.kernel_pieces,
            s.mean_correction_ms * 1e3,
            s.max_correction_ms * 1e3,
        )
    });
    entries.retain(|e| (w0..w1).contains(&e.t_ns));
    r.chunks = entries.len() as u64;
    r.tokens = entries.iter().map(|e| u64::from(e.tokens)).sum();
    if let Some(path) = chunks_out {
        let f = std::fs::File::create(path).map_err(|e| format!("{path}: {e}"))?;
        let mut w = BufWriter::new(f);
        let base = clock.unix_ns(origin.into_std());
        for e in &entries {
            writeln!(
                w,
                "{} {} {}",
                e.prompt_tokens,
                e.completion_tokens,
                base + i128::from(e.t_ns)
            )
            .map_err(|e| e.to_string())?;
        }
        w.flush().map_err(|e| e.to_string())?;
    }
    Ok(r)
}

/// What one stream's worker returns.
enum Out {
    /// Every request `measure` ran.
    Measured(Vec<Measured>),
    /// The raw reader's chunks, or why it failed.
    Raw(Result<Vec<Entry>, String>),
}

// ---------------------------------------------------------------------------------------------
// The orchestrator.

/// One case's outcome.
struct Outcome {
    case: Case,
    client: ClientResult,
    /// Timing cases: client instant − simulator stamp, in ns, one per matched chunk.
    errors_ns: Vec<i64>,
    unmatched: u64,
    load_before: String,
    load_after: String,
}

fn orchestrate() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let only = std::env::var("LLMIB_OVERHEAD_ONLY").ok();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("llmib-client overhead vs the simulator ({cpus} CPUs, loopback, separate processes)");
    // `fixed` names no case: the fixed costs alone (issue 44), in seconds rather than minutes.
    if only.as_deref() == Some("fixed") {
        return fixed::print_fixed_costs();
    }
    let started = Instant::now();
    let (us, per_core) = client_code_only();
    println!(
        "Client code alone (SSE decode + chunk parse + record, the simulator's chunk, no I/O): \
         {us:.2} µs CPU per chunk = {:.2}M chunks/s per core",
        per_core / 1e6
    );
    guard::print_costs(us);
    fixed::print_fixed_costs()?;
    let mut outcomes = Vec::new();
    for case in cases() {
        if only.as_deref().is_some_and(|o| !case.label().contains(o)) {
            continue;
        }
        eprintln!("  running {} …", case.label());
        let o = run_case(&exe, &case)?;
        eprintln!(
            "    {:.0} tok/s, client {:.2} cores, sim {:.2} cores, {} errors",
            o.client.tokens as f64 / o.client.window_s,
            o.client.client_cpu_s / o.client.window_s,
            o.client.sim_cpu_s / o.client.window_s,
            o.client.errors
        );
        if let Some((pieces, kernel, mean, max)) = o.client.raw_reader {
            eprintln!(
                "    raw reader: {kernel} of {pieces} pieces kernel-stamped, correction mean {mean:.1} µs, max {max:.0} µs"
            );
        }
        outcomes.push(o);
    }
    print_tables(&outcomes);
    println!("(all cases: {:.0} s)", started.elapsed().as_secs_f64());
    Ok(())
}

/// The per-chunk work `measure` does once a body frame is in hand, on the simulator's exact
/// chunk (SGLang completion with continuous usage): the instant, the SSE decoder, the chunk
/// parser and the record push. Returns CPU µs per chunk and chunks per CPU second.
fn client_code_only() -> (f64, f64) {
    const CHUNK: &[u8] = b"data: {\"id\":\"cmpl-09f1fd9d03f0a9b4553274161bbf8475\",\"object\":\"text_completion\",\"created\":1796227471,\"model\":\"sim/tiny\",\"choices\":[{\"index\":0,\"text\":\" run\",\"logprobs\":null,\"finish_reason\":null,\"matched_stop\":null}],\"usage\":{\"prompt_tokens\":1040,\"total_tokens\":1441,\"completion_tokens\":401,\"prompt_tokens_details\":null,\"reasoning_tokens\":0}}\n\n";
    const N: usize = 500_000;
    let ticks = ticks_per_second();
    let origin = Instant::now();
    let mut dec = SseDecoder::new();
    let mut chunks: Vec<llmib_core::Chunk> = Vec::new();
    let cpu0 = cpu_seconds("self", ticks).unwrap_or(0.0);
    for _ in 0..N {
        let t_ns = origin.elapsed().as_nanos() as u64;
        dec.push(CHUNK);
        while let Some(Ok(ev)) = dec.next_event() {
            if let Ok(StreamItem::Chunk(c)) = parse_event(&ev)
                && c.usage.and_then(|u| u.completion_tokens).is_some()
            {
                chunks.push(llmib_core::Chunk { t_ns, tokens: 1 });
            }
        }
        // A window keeps its records; a long one is cleared here to keep memory flat.
        if chunks.len() == 1 << 16 {
            chunks.clear();
        }
    }
    let cpu = cpu_seconds("self", ticks).unwrap_or(0.0) - cpu0;
    (cpu * 1e6 / N as f64, N as f64 / cpu)
}

/// A command that runs `exe`, on CPU `cpu` alone where one is given (`taskset` execs the
/// program, so the child's pid is the program's).
fn on_cpu(exe: &std::path::Path, cpu: Option<u32>) -> Command {
    match cpu {
        Some(c) => {
            let mut cmd = Command::new("taskset");
            cmd.arg("-c").arg(c.to_string()).arg(exe);
            cmd
        }
        None => Command::new(exe),
    }
}

fn run_case(exe: &std::path::Path, case: &Case) -> Result<Outcome, String> {
    let case_json = serde_json::to_string(case).map_err(|e| e.to_string())?;
    let tmp = std::env::temp_dir();
    let tag = format!(
        "llmib-overhead-{}-{}-{}-{}",
        std::process::id(),
        case.streams,
        case.reader,
        case.hog
    );
    let stamps_path = tmp.join(format!("{tag}-sim.txt"));
    let chunks_path = tmp.join(format!("{tag}-client.txt"));
    let load_before = load_average();

    let mut sim = on_cpu(exe, case.pinned.then_some(0));
    sim.env(ROLE, "sim")
        .env(CASE, &case_json)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    if case.timing() {
        sim.env(STAMPS_OUT, &stamps_path);
    }
    let mut sim = sim
        .spawn()
        .map_err(|e| format!("cannot start the simulator: {e}"))?;
    let mut line = String::new();
    if let Some(out) = sim.stdout.take() {
        BufReader::new(out)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
    }
    let port = line
        .strip_prefix("PORT ")
        .map(str::trim)
        .ok_or_else(|| format!("the simulator did not start: {line:?}"))?
        .to_string();

    let mut client = on_cpu(exe, case.pinned.then_some(1));
    client
        .env(ROLE, "client")
        .env(CASE, &case_json)
        .env(URL, format!("http://127.0.0.1:{port}"))
        .env(SIM_PID, sim.id().to_string());
    if case.timing() {
        client.env(CHUNKS_OUT, &chunks_path);
    }
    let out = client
        .output()
        .map_err(|e| format!("cannot run the client: {e}"))?;
    // Closing its stdin tells the simulator to write its stamps and stop.
    drop(sim.stdin.take());
    let _ = sim.wait();
    let load_after = load_average();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let result = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .ok_or_else(|| {
            format!(
                "{}: the client failed: {}",
                case.label(),
                String::from_utf8_lossy(&out.stderr).trim()
            )
        })?;
    let client: ClientResult = serde_json::from_str(result).map_err(|e| e.to_string())?;

    let (mut errors_ns, mut unmatched) = (Vec::new(), 0);
    if case.timing() {
        let read = |p: &std::path::Path| -> Result<Vec<(u64, u64, i128)>, String> {
            let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
            Ok(text
                .lines()
                .filter_map(|l| {
                    let mut it = l.split(' ');
                    Some((
                        it.next()?.parse().ok()?,
                        it.next()?.parse().ok()?,
                        it.next()?.parse().ok()?,
                    ))
                })
                .collect())
        };
        // A key seen twice (a stream that had to send again) is ambiguous: dropped.
        let mut sim_at: HashMap<(u64, u64), Option<i128>> = HashMap::new();
        for (p, c, t) in read(&stamps_path)? {
            sim_at
                .entry((p, c))
                .and_modify(|v| *v = None)
                .or_insert(Some(t));
        }
        for (p, c, t) in read(&chunks_path)? {
            match sim_at.get(&(p, c)).copied().flatten() {
                Some(s) => errors_ns.push((t - s) as i64),
                None => unmatched += 1,
            }
        }
        errors_ns.sort_unstable();
        let _ = std::fs::remove_file(&stamps_path);
        let _ = std::fs::remove_file(&chunks_path);
    }
    Ok(Outcome {
        case: case.clone(),
        client,
        errors_ns,
        unmatched,
        load_before,
        load_after,
    })
}
