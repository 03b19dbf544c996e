//! When a decode window opens, end to end against the simulator: the readiness rules that
//! decide before the readiness limit where the server shows no queue gauge (a hosted
//! endpoint) or where short answers keep the running gauge below N.

use crate::common::*;
use crate::run::{exact_sim, run_small};

/// A server without gauges that holds 2 of 4 streams, with answers far longer than the
/// window: the two queued streams would get no first token for about 8 s. The first-token
/// stall rule judges them queued after its 2 s floor, not at the readiness limit (30 s).
#[test]
fn a_gaugeless_server_that_queues_is_judged_at_the_stall_not_the_limit() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.metrics_enabled = false;
    cfg.kv_capacity_tokens = 2 * (1024 + 2048);
    cfg.prefix_cache_tokens = 4096;
    let sim = Sim::start(cfg);
    let dir = out_dir("readiness-gaugeless-stall");
    let o = run_small(
        &sim.url,
        &dir,
        "1K",
        "4",
        "500ms",
        "2048",
        &[
            "--kv-capacity",
            "100K",
            "--readiness-timeout",
            "30s",
            "--skip-prefill",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let q = cell(&rows, "decode", 1024, 4);
    assert_eq!(q["status"], "requests_queued", "{q:#}");
    assert_eq!(q["queue"]["readiness_by"], "first_tokens_stalled", "{q:#}");
    let opened = num(&q["queue"], "readiness_s");
    assert!((2.0..6.0).contains(&opened), "opened at {opened} s: {q:#}");
}

/// Short answers with `--respect-eos`: requests end and re-send, so the running gauge rarely
/// reads N, yet nothing waits; the window opens on first tokens with nothing waiting instead
/// of waiting out the readiness limit.
///
/// The answers are about 20 tokens, not 1 or 2: a request that ends at its first token spends
/// most of its life waiting for the next scheduler step (on the simulator as on vLLM), so the
/// waiting gauge then reads 0 in two polls running only by luck (CI once saw 5 of 8 waiting
/// for 6 s on a loaded machine and judged the queue stalled).
#[test]
fn short_answers_open_the_window_without_the_running_gauge_at_n() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    // Answers end at EOS after about 20 tokens.
    cfg.eos_rate = 0.05;
    let sim = Sim::start(cfg);
    let dir = out_dir("readiness-short-answers");
    let o = run_small(
        &sim.url,
        &dir,
        "1K",
        "8",
        "500ms",
        "64",
        &[
            "--respect-eos",
            "--readiness-timeout",
            "30s",
            "--skip-prefill",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let r = cell(&rows, "decode", 1024, 8);
    let by = r["queue"]["readiness_by"].as_str().unwrap_or_default();
    assert!(
        by == "first_tokens_no_waiting" || by == "gauges_and_first_tokens",
        "{r:#}"
    );
    assert_eq!(r["status"], "valid", "{r:#}");
    assert!(num(&r["queue"], "readiness_s") < 5.0, "{r:#}");
}
