//! Runs the driver in-process against the simulator and pairs each decode row with what the
//! simulator emitted inside that row's window. Shared by the CI test (`highconc.rs`) and the
//! `figures` benchmark (`benches/figures.rs` includes this file by path), so both judge the
//! tool by the same rule.
//!
//! In-process on purpose: the window's instants and the simulator's stamps are then on one
//! monotonic clock, so no clock mapping adds error to the comparison.

use llmib_client::{CancellationToken, MatrixEnd, MatrixRun, run_matrix};
use llmib_client::{Engine, ProbeOptions};
use llmib_client::{Progress, ProgressEvent};
use llmib_core::RunDir;
use llmib_core::{CellResult, Phase};
use llmib_core::{Plan, Settings};
use llmib_sim::{ChunkStamp, EmittedFigures, SimConfig};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// `LLMIB_IT_HOG=K`: K threads that spin in this process while the driver runs, so the
/// client's runtime is late to its sockets (the truth must hold anyway: the chunk instants are
/// the kernel's). They stop when it is dropped.
struct Hog(Arc<std::sync::atomic::AtomicBool>);

impl Hog {
    fn from_env() -> Hog {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let k: u32 = std::env::var("LLMIB_IT_HOG")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        for _ in 0..k {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            });
        }
        Hog(stop)
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Collects each window's absolute span.
#[derive(Default)]
struct Windows(Mutex<Vec<(Instant, Instant)>>);

impl Progress for Windows {
    fn event(&self, e: ProgressEvent) {
        if let ProgressEvent::Window { origin, window } = e
            && let Ok(mut v) = self.0.lock()
        {
            let at = |ns: u64| origin + Duration::from_nanos(ns);
            v.push((at(window.start_ns), at(window.end_ns)));
        }
    }
}

/// One decode cell: the tool's row, its window's origin-relative span in absolute instants,
/// what the simulator emitted inside it, and what it emitted in the window the gauges alone
/// would have opened (same length, from `gauges_ready_s`).
pub struct Judged {
    /// The tool's row.
    pub row: CellResult,
    /// The simulator's own figures inside the row's window.
    pub emitted: EmittedFigures,
    /// The simulator's figures inside the gauges-only window, if the row recorded when the
    /// gauges were ready.
    pub gauges_only: Option<EmittedFigures>,
}

/// Runs `settings` (decode cells only are judged) against a simulator started from `cfg` with
/// chunk stamps on; the results go under `dir`.
pub async fn run_and_judge(
    mut cfg: SimConfig,
    settings: Settings,
    dir: &std::path::Path,
) -> Result<Vec<Judged>, String> {
    cfg.stamp_chunks = true;
    let kv = cfg.kv_capacity_tokens;
    let context_length = cfg.context_length;
    // The simulator gets a runtime (and threads) of its own, as a real server has its own
    // process: the client's runtime then holds only the client's work, so its lateness probe
    // measures the client, not the server's scheduler running beside it.
    let sim_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("sim")
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let sim = sim_rt
        .spawn(llmib_sim::spawn(cfg))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let judged = judge(sim, settings, kv, context_length, dir).await;
    // Inside an async context a runtime may only be dropped in the background.
    sim_rt.shutdown_background();
    judged
}

async fn judge(
    sim: llmib_sim::SimHandle,
    settings: Settings,
    kv: u64,
    context_length: u64,
    dir: &std::path::Path,
) -> Result<Vec<Judged>, String> {
    let probe = Engine::probe(&ProbeOptions::new(sim.base_url()))
        .await
        .map_err(|e| e.to_string())?;
    let model = probe.engine.model().served_model.clone();
    let mut engine = probe.engine;
    // As `run`: the reader `--http-reader auto` picks, unless `LLMIB_IT_HTTP_READER` names one.
    let limit = Duration::from_secs(5);
    match std::env::var("LLMIB_IT_HTTP_READER").as_deref() {
        Ok("raw") => engine
            .set_http_reader(llmib_client::HttpReader::Raw, limit)
            .map_err(|e| e.to_string())?,
        Ok("reqwest") => engine
            .set_http_reader(llmib_client::HttpReader::Reqwest, limit)
            .map_err(|e| e.to_string())?,
        _ => drop(
            engine
                .set_http_reader_auto(limit, llmib_client::http_proxy_var())
                .map_err(|e| e.to_string())?,
        ),
    }
    let _hog = Hog::from_env();
    let plan = Plan::build(settings, Some(context_length), Some(kv));
    let store = RunDir::create(dir).map_err(|e| e.to_string())?;
    let progress = Windows::default();
    let end = run_matrix(MatrixRun {
        engine: Arc::new(engine),
        model,
        plan: &plan,
        store: &store,
        done: HashSet::new(),
        progress: &progress,
        cancel: CancellationToken::new(),
        hardware: None,
        skip: Default::default(),
        shard: None,
    })
    .await
    .map_err(|e| e.to_string())?;
    let stamps: Vec<ChunkStamp> = sim.take_chunk_stamps();
    sim.shutdown().await;
    if end != MatrixEnd::Completed {
        return Err(format!("the run ended early: {end:?}"));
    }
    let windows = progress.0.lock().map(|v| v.clone()).unwrap_or_default();
    let (rows, _) = store.load_cells().map_err(|e| e.to_string())?;
    let decode: Vec<CellResult> = rows
        .into_iter()
        .filter(|r| r.phase == Phase::Decode && r.total_tok_per_s.is_some())
        .collect();
    if decode.len() != windows.len() {
        return Err(format!(
            "{} measured decode rows but {} windows",
            decode.len(),
            windows.len()
        ));
    }
    Ok(decode
        .into_iter()
        .zip(windows)
        .map(|(row, (start, end))| {
            let emitted = EmittedFigures::within(&stamps, start, end);
            let gauges_only = row.queue.as_ref().and_then(|q| {
                let (ready, opened) = (q.gauges_ready_s?, q.readiness_s?);
                let at = start.checked_sub(Duration::from_secs_f64((opened - ready).max(0.0)))?;
                Some(EmittedFigures::within(&stamps, at, at + (end - start)))
            });
            Judged {
                row,
                emitted,
                gauges_only,
            }
        })
        .collect())
}

/// Signed error of `tool` against `truth`, percent.
pub fn error_pct(tool: f64, truth: f64) -> f64 {
    (tool - truth) / truth.abs().max(1e-12) * 100.0
}
