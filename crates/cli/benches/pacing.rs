//! The open-loop pacing error (send instant − scheduled instant) at 100, 1,000 and 5,000
//! requests/s, in two parts. Prints tables for `docs/benchmarks.md`; asserts nothing.
//!
//! 1. **The pacer alone** (`llmib_client::Pacer`, the thread the driver fires requests from):
//!    a constant schedule, each firing stamped inside `fire` — the pacer's own error, with no
//!    server and no runtime in between.
//! 2. **The driver end to end**: the real binary's `run --request-rate 100,1000,5000
//!    --arrival constant --skip-decode` against the simulator (`tiny`, 64-token prompts, 2
//!    output tokens), and each rate row's `rate.pacing_error_us`: the driver's own figure, from
//!    the pacer's firing through the request task's start to the instant the request goes to
//!    the HTTP client, while the same machine serves the requests.
//!
//! `cargo bench -p llm-inference-bench --bench pacing` (about half a minute).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use llmib_client::{CancellationToken, Pacer};

const RATES: [f64; 3] = [100.0, 1000.0, 5000.0];

/// p50, p99 and max of `v` (sorted here), in µs.
fn quantiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.50), at(0.99), v[v.len() - 1])
}

/// Part 1: `seconds` of a constant schedule at `rate`, fired by the pacer; the error of each
/// firing, µs.
fn pacer_alone(rate: f64, seconds: f64) -> Vec<f64> {
    let n = (rate * seconds) as u64;
    let gap = 1e9 / rate;
    // Start a little ahead, as a cell does once its prompts are built.
    let due: Arc<[u64]> = (0..n)
        .map(|i| 5_000_000 + (i as f64 * gap) as u64)
        .collect();
    let origin = Instant::now();
    let fired = Arc::new(Mutex::new(Vec::with_capacity(n as usize)));
    let log = Arc::clone(&fired);
    let pacer = Pacer::start(
        origin,
        Arc::clone(&due),
        CancellationToken::new(),
        move |i| {
            let at = Instant::now();
            if let Ok(mut v) = log.lock() {
                v.push((i, at));
            }
        },
    );
    pacer.join();
    let fired = fired.lock().map(|v| v.clone()).unwrap_or_default();
    fired
        .iter()
        .map(|(i, at)| {
            let due = origin + Duration::from_nanos(due[*i]);
            at.saturating_duration_since(due).as_secs_f64() * 1e6
        })
        .collect()
}

/// Part 2: the binary against the simulator; each rate row's (rate, sent, pacing p50, p99,
/// max µs, warning).
fn driver_end_to_end() -> Vec<(f64, u64, f64, f64, f64, String)> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let cfg = llmib_sim::builtin_profile("tiny").expect("tiny profile");
    let sim = rt.block_on(llmib_sim::spawn(cfg)).expect("simulator");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_llm-inference-bench"))
        .args(["run", "--url", &sim.base_url(), "--contexts", "64"])
        .args([
            "--concurrency",
            "1",
            "--duration",
            "2s",
            "--max-output",
            "2",
        ])
        .args(["--request-rate", "100,1000,5000", "--arrival", "constant"])
        .args(["--skip-decode", "--skip-prefill", "--format", "none"])
        .arg("--output")
        .arg(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run the binary");
    rt.block_on(sim.shutdown());
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
    let text = std::fs::read_to_string(dir.path().join("cells.jsonl")).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|r| r["phase"] == "rate")
        .map(|r| {
            let p = &r["rate"]["pacing_error_us"];
            let f = |k: &str| p[k].as_f64().unwrap_or(f64::NAN);
            let warning = r["rate"]["pacing_warning"].as_str().unwrap_or("–");
            (
                r["request_rate"].as_f64().unwrap_or(f64::NAN),
                r["requests_sent"].as_u64().unwrap_or(0),
                f("p50"),
                f("p99"),
                f("max"),
                warning.to_string(),
            )
        })
        .collect()
}

fn main() {
    println!("1. The pacer alone (fire instant − due instant), 2 s per rate");
    println!("| rate /s | fired | p50 µs | p99 µs | max µs |");
    println!("|---:|---:|---:|---:|---:|");
    for rate in RATES {
        let errors = pacer_alone(rate, 2.0);
        let n = errors.len();
        let (p50, p99, max) = quantiles(errors);
        println!("| {rate} | {n} | {p50:.1} | {p99:.1} | {max:.1} |");
    }
    println!();
    println!("2. The driver end to end (rate.pacing_error_us of each rate row), 2 s per rate");
    println!("| rate /s | sent | p50 µs | p99 µs | max µs | pacing warning |");
    println!("|---:|---:|---:|---:|---:|---|");
    for (rate, sent, p50, p99, max, warning) in driver_end_to_end() {
        println!("| {rate} | {sent} | {p50:.1} | {p99:.1} | {max:.1} | {warning} |");
    }
}
