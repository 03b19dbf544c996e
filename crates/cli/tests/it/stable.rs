//! `--until-stable` end to end against the simulator's `open-load` profile (one request at a
//! time, 50 ms each: 20 requests/s): a rate the server keeps up with settles and its schedule
//! stops early; a rate above it queues, its TTFT grows without end, and the cell runs to
//! `--duration`.

use crate::common::*;
use serde_json::Value;

/// The rate row of an open-load run at `rate` over `duration` with `--until-stable 5%`, and
/// how long the run took.
fn rate_row(name: &str, rate: &str, duration: &str) -> (Value, std::time::Duration) {
    let mut cfg = llmib_sim::builtin_profile("open-load").expect("open-load");
    // The same 50 ms per request, most of it before the first token (35 ms of prefill, then
    // 15 steps of 1 ms): TTFT is a figure the cell settles on, and the profile's 6 ms TTFT
    // was the size of a debug client's jitter on two shared cores (p99 16 ms, max 51 ms), so
    // a steady rate did not settle within ±5 % in 20 s on CI.
    cfg.prefill_overhead_ms = 30.0;
    cfg.decode_step_ms = vec![(1, 1.0)];
    let sim = Sim::start(cfg);
    let dir = out_dir(name);
    let t0 = std::time::Instant::now();
    let rows = crate::load::run_load(
        &sim.url,
        &dir,
        duration,
        &[
            "--request-rate",
            rate,
            "--arrival",
            "constant",
            "--until-stable",
            "5%",
            "--drain-timeout",
            "500ms",
            "--skip-decode",
        ],
    );
    let took = t0.elapsed();
    let row = rows
        .iter()
        .find(|r| r["phase"] == "rate")
        .cloned()
        .expect("a rate row");
    (row, took)
}

#[test]
fn a_steady_rate_stops_once_stable() {
    let _serial = timing_lock();
    let (r, took) = rate_row("stable-steady", "10", "20s");
    eprintln!("stopped after {:.1} s", num(&r, "measured_s"));
    assert_eq!(r["rate"]["stop_reason"], "stable", "{r:#}");
    let scheduled = r["rate"]["scheduled"].as_u64().unwrap_or(0);
    // 10/s for 20 s would be 200; it stopped after its first verdict (5 s at the earliest).
    assert!((40..190).contains(&scheduled), "{r:#}");
    assert_eq!(r["requests_sent"].as_u64(), Some(scheduled), "{r:#}");
    assert!(num(&r, "measured_s") < 19.0, "{r:#}");
    assert!(took.as_secs_f64() < 19.0, "{took:?}");
}

#[test]
fn a_rate_above_capacity_never_settles_and_runs_its_duration() {
    let _serial = timing_lock();
    let (r, _) = rate_row("stable-drift", "30", "6s");
    assert_eq!(r["rate"]["stop_reason"], "duration", "{r:#}");
    // 30/s for 6 s, every arrival sent.
    let scheduled = r["rate"]["scheduled"].as_u64().unwrap_or(0);
    assert!((170..=181).contains(&scheduled), "{r:#}");
}

/// A decode window on the exact simulator (a fixed step time, so a steady output rate) closes
/// once its output tok/s settles: the row says `stable` and ran well short of its 20 s.
#[test]
fn a_steady_decode_window_closes_once_stable() {
    let _serial = timing_lock();
    let sim = Sim::start(crate::run::exact_sim());
    let dir = out_dir("stable-decode");
    let o = crate::run::run_small(
        &sim.url,
        &dir,
        "1K",
        "2",
        "20s",
        "64",
        &["--until-stable", "5%", "--skip-prefill"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let r = cell(&rows, "decode", 1024, 2);
    assert_eq!(r["status"], "valid", "{r:#}");
    assert_eq!(r["queue"]["stop_reason"], "stable", "{r:#}");
    let ran = num(r, "measured_s");
    assert!((5.0..19.0).contains(&ran), "{r:#}");
}
