//! Figures at high concurrency, judged against what the simulator actually emitted inside the
//! window (its chunk stamps), never against its nominal step times: on a loaded host the
//! simulator's steps slip, and only its emission log says what a client should have seen.
//!
//! The simulator runs in its vLLM-like mode: all N requests are admitted (and counted as
//! running) at once, but their prompts are prefilled one after another, so for a while the
//! running gauge says N while streams have no token yet. A window opened on the gauges alone
//! would contain that ramp and report low figures.

use crate::common::*;
use llmib_client::driver::{
    CancellationToken, MatrixEnd, MatrixRun, Progress, ProgressEvent, run_matrix,
};
use llmib_client::engine::{Engine, ProbeOptions};
use llmib_core::plan::{Plan, Settings};
use llmib_core::size::ContextSpec;
use llmib_core::store::RunDir;
use llmib_sim::{EmittedFigures, SimConfig};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

/// The vLLM-like simulator with room for N = 128 at 1K, its decode steps slow enough that a
/// 2-core machine running client and server in one debug process keeps up.
fn vllm_sim() -> SimConfig {
    let mut c = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    assert!(c.serial_prefill, "the vLLM-like profile prefills serially");
    c.context_length = 8192;
    c.kv_capacity_tokens = 1 << 20;
    c.prefix_cache_tokens = 1 << 20;
    c.decode_step_ms = vec![(1, 8.0), (64, 16.0), (128, 24.0)];
    c.stamp_chunks = true;
    c
}

#[test]
fn high_concurrency_figures_match_what_the_simulator_emitted_in_the_window() {
    let _t = timing_lock();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    let cfg = vllm_sim();
    let kv = cfg.kv_capacity_tokens;
    let (rows, windows, stamps) = rt.block_on(async {
        let sim = llmib_sim::spawn(cfg).await.expect("simulator");
        let probe = Engine::probe(&ProbeOptions::new(sim.base_url()))
            .await
            .expect("probe");
        let settings = Settings {
            contexts: vec![ContextSpec::Tokens(1024)],
            concurrency: vec![64, 128],
            duration_s: 5.0,
            max_output: 128,
            readiness_timeout_s: 60.0,
            ..Settings::default()
        };
        let plan = Plan::build(settings, Some(8192), Some(kv));
        let store = RunDir::create(tmp.path().join("run")).expect("run dir");
        let progress = Windows::default();
        let end = run_matrix(MatrixRun {
            engine: Arc::new(probe.engine),
            model: "sim/tiny".into(),
            plan: &plan,
            store: &store,
            done: HashSet::new(),
            progress: &progress,
            cancel: CancellationToken::new(),
        })
        .await
        .expect("run");
        assert_eq!(end, MatrixEnd::Completed);
        let stamps = sim.take_chunk_stamps();
        sim.shutdown().await;
        let windows = progress.0.lock().map(|v| v.clone()).unwrap_or_default();
        (cells(&tmp.path().join("run")), windows, stamps)
    });
    assert_eq!(windows.len(), 2, "one window per decode cell");
    for (n, (start, end)) in [64u64, 128].into_iter().zip(windows) {
        let row = cell(&rows, "decode", 1024, n);
        assert_eq!(row["status"], "valid", "N = {n}: {row}");
        let q = &row["queue"];
        assert_eq!(q["readiness_by"], "gauges_and_first_tokens", "N = {n}: {q}");
        // The ramp was real: the gauges said N running well before every stream had a token,
        // and the window opened only after the last first token.
        let (gauges, tokens, opened) = (
            num(q, "gauges_ready_s"),
            num(q, "all_streams_token_s"),
            num(q, "readiness_s"),
        );
        assert!(gauges < tokens && tokens <= opened, "N = {n}: {q}");
        assert!(num(q, "ramp_tokens") > 0.0, "N = {n}: {q}");

        let e = EmittedFigures::within(&stamps, start, end);
        eprintln!(
            "N = {n}: tool {:.1} tok/s, {:.2} per request, TBT {:.3} ms; emitted {e:?}",
            num(row, "total_tok_per_s"),
            num(row, "per_request_tok_per_s"),
            num(row, "tbt_ms_p50")
        );
        assert!(e.requests >= n as usize, "N = {n}: {e:?}");
        let what = |f: &str| format!("N = {n}: {f} (emitted {e:?})");
        assert_close(
            &what("total tok/s"),
            num(row, "total_tok_per_s"),
            e.total_tok_per_s,
            1.0,
        );
        assert_close(
            &what("per-request tok/s p50"),
            num(row, "per_request_tok_per_s"),
            e.per_request_tok_per_s_p50.expect("rates"),
            1.0,
        );
        assert_close(
            &what("TBT p50"),
            num(row, "tbt_ms_p50"),
            e.tbt_ms_p50.expect("gaps"),
            1.0,
        );
    }
}
