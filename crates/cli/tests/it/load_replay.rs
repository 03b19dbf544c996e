//! Open load's replays and caps end to end: `--time-scale auto` on a trace, ShareGPT's lengths
//! at a rate, and requests a `--max-concurrency` cap held past the drain (split from load.rs,
//! whose helpers these share).

use crate::common::*;
use crate::load::{count, last_served, rows_of, run_load, sample_path, stamped_sim};

/// `--time-scale auto --slo` on the `open-load` profile (capacity 20 requests/s at 512 prompt
/// and 16 output tokens, by construction): a trace of 40 such requests 100 ms apart (10/s) is
/// replayed at the speeds the search asks, and the capacity row's rate lands within the stated
/// 5 % of 20/s, its time scale K twice the trace's speed. The SLO, TTFT p90 within 40 ms, sits
/// between the 5 ms of an unqueued request and the queue a finite replay above 20/s builds
/// (request i waits i × (50 − 1000/rate) ms, past 35 ms at the 36th request from 20.4/s on).
#[test]
fn time_scale_auto_finds_the_known_limit() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("open-load").expect("open-load"));
    let dir = out_dir("load-time-scale");
    let trace: String = (0..40)
        .map(|i| {
            format!(
                "{{\"timestamp\": {}, \"input_length\": 512, \"output_length\": 16}}\n",
                i * 100
            )
        })
        .collect();
    let file = dir.join("constant.jsonl");
    std::fs::write(&file, trace).expect("write");
    let workload = format!("mooncake:{}", file.display());
    let rows = run_load(
        &sim.url,
        &dir.join("run"),
        "1s",
        &[
            "--workload",
            &workload,
            "--time-scale",
            "auto",
            "--slo",
            "ttft_p90=40ms",
            "--capacity-precision",
            "0.05",
            "--drain-timeout",
            "2s",
            "--skip-decode",
        ],
    );
    let cap = rows_of(&rows, "capacity");
    assert_eq!(cap.len(), 1, "{rows:#?}");
    let cap = cap[0];
    let found = num(cap, "capacity_request_rate");
    assert!(
        (found - 20.0).abs() <= 20.0 * 0.05,
        "capacity {found}/s, expected 20/s within 5 %: {cap:#}"
    );
    let k = num(&cap["capacity"], "time_scale");
    assert!((k - found / 10.0).abs() < 1e-6, "K = rate / 10: {cap:#}");
    let replays = rows_of(&rows, "rate");
    assert!(replays.len() >= 3, "{rows:#?}");
    for r in &replays {
        assert_eq!(
            count(r, "requests_sent"),
            40,
            "each point replays the trace: {r:#}"
        );
        assert_eq!(r["rate"]["stop_reason"], "trace_end", "{r:#}");
    }
}

/// A ShareGPT file gives lengths only: sent at `--request-rate`, each request one of the file's
/// 21 usable pairs (its turns counted by the server's tokenizer), so the simulator received at
/// most 21 distinct prompt lengths, all within the row's sent range, and the row names the file
/// and fits it (KS against the file's own lengths).
#[test]
fn sharegpt_lengths_are_sent_at_a_rate() {
    let _serial = timing_lock();
    let sim = stamped_sim(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let dir = out_dir("load-sharegpt");
    let workload = format!("sharegpt:{}", sample_path("sharegpt.json"));
    let rows = run_load(
        &sim.url,
        &dir,
        "1s",
        &[
            "--workload",
            &workload,
            "--request-rate",
            "20",
            "--seed",
            "3",
            "--skip-decode",
        ],
    );
    let rate = rows_of(&rows, "rate");
    assert_eq!(rate.len(), 1, "{rows:#?}");
    let row = rate[0];
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{row:#}");
    let wf = &row["rate"]["workload"];
    assert_eq!(wf["source"], workload.as_str(), "{wf:#}");
    let n = count(row, "requests_sent");
    let input = &wf["input"];
    assert_eq!(count(input, "count"), n, "{input:#}");
    let mut sent: Vec<u64> = last_served(&sim, n)
        .iter()
        .map(|r| r.prompt_tokens)
        .collect();
    let (lo, hi) = (num(input, "min") as u64, num(input, "max") as u64);
    assert!(
        sent.iter().all(|l| (lo..=hi).contains(l)),
        "{sent:?} within [{lo}, {hi}]"
    );
    sent.sort_unstable();
    sent.dedup();
    assert!(sent.len() <= 21, "{sent:?}");
    assert!(
        num(input, "ks") < num(input, "ks_critical_1pct"),
        "{input:#}"
    );
}

/// With `--max-concurrency`, requests still waiting for the cap at the drain limit were never
/// sent: they are no sends (requests sent, the achieved rate), they are counted as such, and
/// they fail the attainment. The `open-load` profile serves 20/s one at a time; 40/s offered
/// for 1 s through a cap of 2 with a 200 ms drain leaves about half unsent.
#[test]
fn requests_the_cap_held_past_the_drain_are_never_sent() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("open-load").expect("open-load"));
    let dir = out_dir("load-never-sent");
    let rows = run_load(
        &sim.url,
        &dir,
        "1s",
        &[
            "--request-rate",
            "40",
            "--arrival",
            "constant",
            "--max-concurrency",
            "2",
            "--drain-timeout",
            "200ms",
            "--slo",
            "e2e_p50=10s",
            "--skip-decode",
        ],
    );
    let r = rows_of(&rows, "rate")[0];
    let unsent = count(&r["rate"], "never_sent");
    let sent = count(r, "requests_sent");
    assert_eq!(sent + unsent, count(&r["rate"], "scheduled"), "{r:#}");
    assert!(unsent >= 5, "{r:#}");
    assert_eq!(
        r["errors"]["never_sent"].as_u64(),
        Some(unsent as u64),
        "{r:#}"
    );
    // Sends paced by a server of 20/s, not 40 crowded at the cut instant.
    assert!(num(r, "achieved_request_rate") < 30.0, "{r:#}");
    let attainment = num(r, "slo_attainment");
    assert!(
        attainment <= sent as f64 / (sent + unsent) as f64 + 1e-9,
        "{r:#}"
    );
}
