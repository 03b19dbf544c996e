//! Figures at high concurrency, judged against what the simulator actually emitted inside the
//! window (its chunk stamps), never against its nominal step times: on a loaded host the
//! simulator's steps slip, and only its emission log says what a client should have seen.
//!
//! The simulator runs in its vLLM-like mode: all N requests are admitted (and counted as
//! running) at once, but their prompts are prefilled one after another, so for a while the
//! running gauge says N while streams have no token yet. A window opened on the gauges alone
//! would contain that ramp and report low figures.

use crate::common::*;
use crate::emission::{error_pct, run_and_judge};
use llmib_core::CellStatus;
use llmib_core::ContextSpec;
use llmib_core::Settings;
use llmib_sim::SimConfig;

/// The vLLM-like simulator with room for N = 128 at 1K, its decode steps slow enough that a
/// 2-core machine running client and server in one debug process keeps up.
fn vllm_sim() -> SimConfig {
    let mut c = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    assert!(c.serial_prefill, "the vLLM-like profile prefills serially");
    c.context_length = 8192;
    c.kv_capacity_tokens = 1 << 20;
    c.prefix_cache_tokens = 1 << 20;
    c.decode_step_ms = vec![(1, 8.0), (64, 16.0), (128, 24.0)];
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
    let settings = Settings {
        contexts: vec![ContextSpec::Tokens(1024)],
        concurrency: vec![64, 128],
        duration_s: 5.0,
        // Short requests: every stream re-sends inside the window, so the closed loop's
        // re-sends (each prefilled serially too) are part of what is judged.
        max_output: 128,
        readiness_timeout_s: 60.0,
        ..Settings::default()
    };
    let judged = rt
        .block_on(run_and_judge(vllm_sim(), settings, &tmp.path().join("run")))
        .expect("run");
    assert_eq!(judged.len(), 2, "one judged window per decode cell");
    for (n, j) in [64u32, 128].into_iter().zip(judged) {
        let (row, e) = (&j.row, &j.emitted);
        assert_eq!(row.concurrency, n);
        assert_eq!(row.status, CellStatus::Valid, "N = {n}: {row:?}");
        let q = row.queue.as_ref().expect("queue");
        assert_eq!(
            q.readiness_by.as_deref(),
            Some("gauges_and_first_tokens"),
            "N = {n}: {q:?}"
        );
        // The ramp was real: the gauges said N running well before every stream had a token,
        // and the window opened only after the last first token.
        let (gauges, tokens, opened) = (
            q.gauges_ready_s.expect("gauges ready"),
            q.all_streams_token_s.expect("all tokens"),
            q.readiness_s.expect("opened"),
        );
        assert!(gauges < tokens && tokens <= opened, "N = {n}: {q:?}");
        assert!(q.ramp_tokens.is_some_and(|t| t > 0), "N = {n}: {q:?}");
        assert!(e.requests >= n as usize, "N = {n}: {e:?}");

        // Rates over whole requests are judged to 1 % whatever the host's load: a late stamp
        // moves only the ends of a long span.
        for (what, tool, truth) in [
            ("total tok/s", row.total_tok_per_s, Some(e.total_tok_per_s)),
            (
                "per-request tok/s p50",
                row.per_request_tok_per_s,
                e.per_request_tok_per_s_p50,
            ),
        ] {
            let (tool, truth) = (tool.expect(what), truth.expect(what));
            eprintln!("N = {n}: {what}: tool {tool:.3}, emitted {truth:.3}");
            assert_close(&format!("N = {n}: {what}"), tool, truth, 1.0);
        }
        // A single gap moves by the whole difference of two late stamps, so the TBT median is
        // judged to 1 % or to the client's own recorded lateness (its p90 scheduling delay
        // against the gap), whichever is wider: the tool must be right, or must have recorded
        // by how much it may be off (and warned past a tenth of a gap).
        let (tool, truth) = (row.tbt_ms_p50.expect("TBT"), e.tbt_ms_p50.expect("TBT"));
        let lag = row
            .client_lag
            .as_ref()
            .expect("the client's lateness is recorded");
        let lag_pct = lag.delay_ms.p90 / tool * 100.0;
        eprintln!(
            "N = {n}: TBT p50: tool {tool:.3}, emitted {truth:.3}; client delay p90 {:.3} ms ({lag_pct:.1} %), warned: {}",
            lag.delay_ms.p90,
            lag.warning.is_some()
        );
        assert_eq!(
            lag.warning.is_some(),
            lag_pct > llmib_core::WARN_SHARE_OF_TBT * 100.0
                && lag.delay_ms.p90 > llmib_core::WARN_FLOOR_MS,
            "N = {n}: the warning follows the recorded delay: {lag:?}"
        );
        assert_close(&format!("N = {n}: TBT p50"), tool, truth, lag_pct.max(1.0));
        // And the rule matters here: the window the gauges alone would have opened contains
        // the ramp, so what was emitted in it is well below the steady rate.
        let g = j.gauges_only.expect("gauges-only window");
        let ramp_err = error_pct(g.total_tok_per_s, e.total_tok_per_s);
        assert!(
            ramp_err < -2.0,
            "N = {n}: gauges-only window off by {ramp_err:.2}%"
        );
    }
}
