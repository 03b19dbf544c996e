//! Mixed-prefill cells end to end (issue 42, "Prefill stalling decode"): docs/mixed-prefill.md's
//! simulator commands, run as written (the server on a free port), once without chunked
//! prefill and once in chunks of 512 tokens. Each cell's stall — every stream's longest gap —
//! and the injected prompt's TTFT hold within 5 % of the simulator's own model (a prefill pass
//! of at most `chunked_prefill_tokens` alternating with a decode step), and so does the
//! standalone TTFT; the streams' tok/s before and after are the decode step's.

use crate::common::*;
use crate::e2e::Bench;
use crate::first_use::{doc_commands, run_doc_pair};

/// The model's figures of a prompt of `p` tokens sent into `n` streams: (longest gap, injected
/// TTFT, standalone TTFT), ms.
fn model(cfg: &llmib_sim::SimConfig, p: u64, n: usize) -> (f64, f64, f64) {
    let step = cfg.step_ms(n, 0);
    let pass = |t: u64| cfg.prefill_overhead_ms + t as f64 * 1000.0 / cfg.prefill_tok_per_s;
    let chunk = cfg.chunked_prefill_tokens;
    let passes = p.div_ceil(chunk);
    let prefill: f64 = (0..passes).map(|k| pass((p - k * chunk).min(chunk))).sum();
    // A stream waits one pass (the longest, the first) and its own step; the injected prompt
    // waits its passes, a step between two of them, and on average half a step in flight
    // when it arrives.
    let gap = pass(p.min(chunk)) + step;
    let injected = prefill + (passes - 1) as f64 * step + step / 2.0;
    (gap, injected, prefill)
}

/// The sim command's config: the `tiny` profile with the flags the docs give it.
fn sim_config(args: &[String]) -> llmib_sim::SimConfig {
    let mut cfg = llmib_sim::builtin_profile("tiny").expect("tiny");
    let flag = |name: &str| {
        let i = args.iter().position(|a| a == name).expect(name);
        args[i + 1].parse::<f64>().expect("a number")
    };
    cfg.prefill_tok_per_s = flag("--prefill-tok-per-s");
    cfg.chunked_prefill_tokens = flag("--chunked-prefill-tokens") as u64;
    cfg
}

/// Runs one sim/run pair of the docs and checks its cell against the model.
fn check_pair(sim_args: &[String], run_args: &[String], name: &str) {
    let dir = out_dir(name);
    let o = run_doc_pair(sim_args, run_args, &dir);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let row = cell(&rows, "mixed_prefill", 3000, 4);
    assert_eq!(row["status"], "valid", "{row:#}");
    let m = &row["mixed"];
    assert_eq!(m["stream_context_tokens"], 256, "{m:#}");
    assert_eq!(m["prompt_tokens"], 3000, "{m:#}");
    let cfg = sim_config(sim_args);
    let (gap, injected, alone) = model(&cfg, 3000, 4);
    let longest = &m["longest_gap_ms"];
    assert_eq!(longest["n"], 4, "every stream stalled: {m:#}");
    assert_close("longest gap p50", num(longest, "p50"), gap, 5.0);
    assert_close("longest gap max", num(longest, "max"), gap, 5.0);
    assert_close("injected TTFT", num(m, "injected_ttft_ms"), injected, 5.0);
    assert_close(
        "standalone TTFT",
        num(&m["standalone_ttft_ms"], "p50"),
        alone,
        5.0,
    );
    // Unstalled, the streams make a token per step each.
    let free = 4.0 * 1000.0 / cfg.step_ms(4, 0);
    assert_close("tok/s before", num(m, "before_tok_per_s"), free, 5.0);
    assert_close("tok/s after", num(m, "after_tok_per_s"), free, 5.0);
    assert!(num(m, "during_tok_per_s") < free / 2.0, "{m:#}");
    // The report carries the section, and the results hold their schema.
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Mixed prefill"), "{md}");
    let json = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let results: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    llmib_report::check_results_schema(&results).expect("the results schema holds");
}

#[test]
fn the_docs_stall_with_and_without_chunking_is_the_simulators() {
    let _serial = timing_lock();
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/mixed-prefill.md"
    ));
    let cmds = doc_commands(doc);
    let names: Vec<&str> = cmds.iter().map(|c| c[0].as_str()).collect();
    assert_eq!(names, ["run", "sim", "run", "sim", "run"], "{cmds:?}");
    assert_eq!(cmds[0], cmds[2], "the first example is the one measured");
    assert_eq!(cmds[2], cmds[4]);
    check_pair(&cmds[1], &cmds[2], "mixed-prefill-whole");
    check_pair(&cmds[3], &cmds[4], "mixed-prefill-chunked");
}

/// Probe requests (`--probe-rate`) beside a decode cell and a rate cell: each row reports its
/// probes apart (sent at the asked rate over the measured span, every one completed, its
/// prompt as the server counted it), and none of them is among the cell's own requests; the
/// report has the section and the results hold their schema.
#[test]
fn probes_beside_a_decode_and_a_rate_cell_are_reported_apart() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let ran = Bench::run(&sim.url)
        .small("1K", "4", "3s", "512")
        .set("--prefill-contexts", "none")
        .set("--request-rate", "2")
        .set("--probe-rate", "2")
        .arg("--save-requests")
        .set("--display", "plain")
        .set("--format", "md,json")
        .out("probes")
        .go();
    let (dir, o) = (&ran.dir, &ran.output);
    assert!(o.status.success(), "{}", text(o));
    let rows = cells(dir);
    for phase in ["decode", "rate"] {
        let row = rows
            .iter()
            .find(|r| r["phase"] == phase && r["status"] == "valid")
            .unwrap_or_else(|| panic!("a valid {phase} row: {rows:#?}"));
        let p = &row["probe"];
        let sent = p["sent"].as_u64().unwrap_or(0);
        // 2/s over a span of about 3 s (the rate cell's schedule, the decode window).
        assert!((4..=8).contains(&sent), "{phase}: {p:#}");
        assert_eq!(p["completed"], sent, "{phase}: {p:#}");
        assert_eq!(p["failed"], 0, "{phase}: {p:#}");
        let prompt = num(&p["prompt_tokens"], "p50");
        assert!((64.0..=256.0).contains(&prompt), "about 128 tokens: {p:#}");
        assert!(num(&p["ttft_ms"], "p50") > 0.0, "{p:#}");
    }
    // The decode cell's own requests are its four streams' only.
    let decode = requests(dir);
    let streams: Vec<u64> = decode
        .get(&(1024, 4))
        .expect("the decode cell's records")
        .iter()
        .filter_map(|r| r["stream"].as_u64())
        .collect();
    assert!(streams.iter().all(|s| *s < 4), "{streams:?}");
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Probe requests"), "{md}");
    let json = std::fs::read_to_string(dir.join("results.json")).expect("results.json");
    let results: serde_json::Value = serde_json::from_str(&json).expect("JSON");
    llmib_report::check_results_schema(&results).expect("the results schema holds");
}
