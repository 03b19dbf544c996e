//! The matrix runner, end to end: the real binary against the simulator on 127.0.0.1:0, whose
//! true rates are known from its configuration.

use crate::common::*;
use crate::e2e::Bench;
use llmib_sim::SimConfig;

/// A simulator with exactly known rates: fixed step times, no KV-dependent term, no prefill
/// overhead, so the expected figures follow from the configuration alone.
pub(crate) fn exact_sim() -> SimConfig {
    let mut c = llmib_sim::builtin_profile("tiny").expect("tiny profile");
    c.context_length = 8192;
    c.kv_capacity_tokens = 1 << 20;
    c.prefix_cache_tokens = 1 << 20;
    c.prefill_tok_per_s = 40_000.0;
    c.prefill_overhead_ms = 0.0;
    c.chunked_prefill_tokens = 1 << 20;
    c.decode_step_ms = vec![(1, 4.0), (4, 6.0), (8, 8.0)];
    c.per_kv_token_us = 0.0;
    c
}

/// Runs `run` against `url` on a small matrix into `dir`, without a report, plus `extra` flags
/// (`Bench::run`: `LLMIB_IT_HTTP_READER=raw|reqwest` runs it through that reader).
pub(crate) fn run_small(
    url: &str,
    dir: &std::path::Path,
    contexts: &str,
    concurrency: &str,
    duration: &str,
    max_output: &str,
    extra: &[&str],
) -> std::process::Output {
    Bench::run(url)
        .small(contexts, concurrency, duration, max_output)
        .out_at(dir)
        .args(extra)
        .go()
        .output
}

fn step_ms(n: u32) -> f64 {
    match n {
        1 => 4.0,
        4 => 6.0,
        8 => 8.0,
        _ => unreachable!(),
    }
}

/// A typed row's figure, or the test fails naming it.
fn fig(what: &str, v: Option<f64>) -> f64 {
    v.unwrap_or_else(|| panic!("{what} is absent"))
}

/// The matrix's figures against the simulator's configuration, read back typed (as `report`
/// and `merge` read them).
#[test]
fn figures_match_the_simulators_known_rates() {
    use llmib_core::{CellStatus, Phase, TokenCountSource};
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let run = Bench::run(&sim.url)
        .small("6K", "1,4", "2s", "256")
        .out("run-figures")
        .ok()
        .typed();
    let row = |phase: Phase, n: u32| {
        run.cells
            .iter()
            .find(|c| c.phase == phase && c.context_tokens == 6144 && c.concurrency == n)
            .unwrap_or_else(|| panic!("no {phase:?} row at N={n}: {:#?}", run.cells))
    };
    // Prefill: C / (C / rate) within 5%.
    let p = row(Phase::Prefill, 1);
    assert_eq!(p.status, CellStatus::Valid, "{p:#?}");
    assert_close(
        "prefill tok/s",
        fig("prompt tok/s", p.prompt_tok_per_s),
        40_000.0,
        5.0,
    );
    for n in [1u32, 4] {
        let r = row(Phase::Decode, n);
        assert_eq!(r.status, CellStatus::Valid, "{r:#?}");
        let step = step_ms(n);
        assert_close(
            &format!("TBT at N={n}"),
            fig("TBT", r.tbt_ms_p50),
            step,
            5.0,
        );
        // Known rate: N tokens per step, less one step per request for the re-send's first
        // token (prefix-cached, so no prefill): 256 tokens take 257 steps.
        let expect = f64::from(n) * 1000.0 / step * 256.0 / 257.0;
        let total = fig("total tok/s", r.total_tok_per_s);
        assert_close(&format!("total tok/s at N={n}"), total, expect, 3.0);
        let per_request = fig("per-request tok/s", r.per_request_tok_per_s);
        assert_close(
            &format!("per-request tok/s at N={n}"),
            per_request,
            1000.0 / step,
            5.0,
        );
        let active = fig("active requests", r.avg_active_requests);
        assert_close(
            &format!("active requests at N={n}"),
            active,
            f64::from(n),
            3.0,
        );
        // The server's generation counter agrees with the client's count.
        let output = r.output_tokens.unwrap_or(0) as f64;
        let server = fig("server tokens", r.server_generation_tokens);
        assert_close(&format!("server tokens at N={n}"), server, output, 3.0);
        assert_eq!(
            r.token_count_source,
            Some(TokenCountSource::ServerUsagePerChunk)
        );
        assert_eq!(
            r.prompt_check.as_ref().map(|c| c.mismatched),
            Some(0),
            "{r:#?}"
        );
        let measured = fig("measured s", r.measured_s);
        assert!((2.0..2.3).contains(&measured), "{r:#?}");
    }
}

#[test]
fn statuses_follow_the_kv_capacity_and_queueing_is_detected() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    // Room for exactly two requests of 1K + 128.
    cfg.kv_capacity_tokens = 2 * (1024 + 128);
    cfg.prefix_cache_tokens = 4096;
    let sim = Sim::start(cfg);

    // The server's own capacity: N = 4 is predicted Over capacity and never sent.
    let dir = out_dir("run-capacity");
    let o = run_small(&sim.url, &dir, "1K", "1,2,4", "600ms", "128", &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    assert_eq!(cell(&rows, "decode", 1024, 1)["status"], "valid");
    assert_eq!(cell(&rows, "decode", 1024, 2)["status"], "valid");
    let over = cell(&rows, "decode", 1024, 4);
    assert_eq!(over["status"], "over_capacity");
    assert!(
        over["total_tok_per_s"].is_null() && over["output_tokens"].is_null(),
        "null, never 0: {over:#}"
    );

    // Told a larger capacity than the server has, N = 4 runs and the server queues two.
    let dir = out_dir("run-queued");
    let o = run_small(
        &sim.url,
        &dir,
        "1K",
        "4",
        "600ms",
        "128",
        &["--kv-capacity", "100K", "--readiness-timeout", "1s"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let q = cell(&rows, "decode", 1024, 4);
    assert_eq!(q["status"], "requests_queued", "{q:#}");
    assert!(
        q["total_tok_per_s"].as_f64().is_some(),
        "a queued cell is still measured: {q:#}"
    );
}

#[test]
fn speculative_chunks_give_exact_counts_and_a_third_of_the_step() {
    let _serial = timing_lock();
    for profile_flavor in ["sglang", "vllm"] {
        let mut cfg = exact_sim();
        cfg.spec_tokens = 3;
        cfg.decode_step_ms = vec![(1, 6.0), (8, 6.0)];
        if profile_flavor == "vllm" {
            cfg.flavor = llmib_sim::Flavor::Vllm;
        }
        let sim = Sim::start(cfg);
        let dir = out_dir(&format!("run-spec-{profile_flavor}"));
        let o = run_small(
            &sim.url,
            &dir,
            "1K",
            "2",
            "1500ms",
            "90",
            &["--save-requests"],
        );
        assert!(o.status.success(), "{}", text(&o));
        let rows = cells(&dir);
        let r = cell(&rows, "decode", 1024, 2);
        assert_eq!(r["status"], "valid", "{r:#}");
        assert_close(
            &format!("{profile_flavor}: TBT = step / 3"),
            num(r, "tbt_ms_p50"),
            2.0,
            5.0,
        );
        assert_close(
            &format!("{profile_flavor}: per request"),
            num(r, "per_request_tok_per_s"),
            500.0,
            5.0,
        );
        // Both flavours stream usage on every chunk when asked (SGLang and vLLM support
        // `continuous_usage_stats`), so counts are exact per chunk.
        assert_eq!(r["token_count_source"], "server_usage_per_chunk");
        // The client's own tokens per chunk: 3 per step, a request's first chunk 1.
        let tpc = num(r, "tokens_per_chunk");
        assert!(
            (2.5..=3.0).contains(&tpc),
            "{profile_flavor}: tokens per chunk {tpc}"
        );
        // Every finished request: token counts per chunk sum to the server's usage.
        let reqs = std::fs::read_to_string(dir.join("requests.jsonl")).expect("requests.jsonl");
        let mut finished = 0;
        for line in reqs.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("json");
            if v["outcome"]["end"] != "finished" {
                continue;
            }
            finished += 1;
            let chunks = v["chunks"].as_array().expect("chunks");
            // The prefill yields the first token alone; then every step delivers 3 in one
            // chunk, the last one whatever is left of max_tokens: 1 + 29 × 3 + 2 = 90.
            let tokens: Vec<u64> = chunks
                .iter()
                .map(|c| c["tokens"].as_u64().unwrap_or(0))
                .collect();
            assert_eq!(tokens.iter().sum::<u64>(), 90, "{tokens:?}");
            assert_eq!(tokens.first(), Some(&1), "{tokens:?}");
            assert!(
                tokens[1..tokens.len() - 1].iter().all(|&k| k == 3),
                "{tokens:?}"
            );
            assert_eq!(v["completion_tokens_reported"], 90);
            assert_eq!(v["prompt_tokens_reported"], 1024);
        }
        assert!(
            finished >= 4,
            "expected several finished requests, got {finished}"
        );
    }
}

#[test]
fn a_prompt_length_mismatch_is_caught_and_reported() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.faults.usage_prompt_tokens_offset = 1;
    let sim = Sim::start(cfg);
    let dir = out_dir("run-mismatch");
    let o = run_small(&sim.url, &dir, "1K", "1", "300ms", "32", &[]);
    // A failed cell is data: the run goes on to the end; since every cell failed, it exits 4.
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let rows = cells(&dir);
    for (phase, n) in [("prefill", 1), ("decode", 1)] {
        let r = cell(&rows, phase, 1024, n);
        assert_eq!(r["status"], "failed", "{r:#}");
        assert!(
            r["errors"]["prompt_mismatch"].as_u64().unwrap_or(0) >= 1,
            "{r:#}"
        );
        assert_eq!(r["prompt_check"]["max_diff"], 1, "{r:#}");
        assert!(
            r["first_error"]
                .as_str()
                .unwrap_or("")
                .contains("prompt length mismatch"),
            "{r:#}"
        );
        assert!(
            r["total_tok_per_s"].is_null(),
            "a failed cell has no figures: {r:#}"
        );
    }
}

#[test]
fn bad_input_fails_fast_with_one_line() {
    // Nothing listens on this port: a fresh listener is bound and dropped to find a free one.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9);
    let url = format!("http://127.0.0.1:{port}");
    let t = std::time::Instant::now();
    let err = Bench::run(&url).out("bad-unreachable").go().refusal();
    assert!(t.elapsed().as_secs() < 15, "took {:?}", t.elapsed());
    assert!(err.contains(&url) || err.contains("127.0.0.1"), "{err}");

    let mut cfg = exact_sim();
    cfg.api_key = Some("sk-right-key-123".into());
    let sim = Sim::start(cfg);
    let err = Bench::run(&sim.url)
        .set("--api-key", "sk-wrong-key-456")
        .go()
        .refusal();
    assert!(err.to_lowercase().contains("key"), "says what to do: {err}");
    assert!(
        !err.contains("sk-wrong-key-456"),
        "the key is never printed: {err}"
    );

    let err = Bench::run(&sim.url)
        .set("--api-key", "sk-right-key-123")
        .set("--model", "no-such-model")
        .go()
        .refusal();
    assert!(err.contains("sim/tiny"), "lists the served model: {err}");

    let o = run_bin(&["run", "--url", &sim.url, "--contexts", "8Q"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("8Q"));

    // Huge durations are refused at parse time (they used to panic adding to an instant).
    for flag in ["--duration", "--max-time", "--readiness-timeout"] {
        let err = Bench::cmd(&["run", "--url", &sim.url, flag, "99999999999999999999"])
            .go()
            .refusal();
        assert!(
            err.contains(flag) && err.contains("30 days"),
            "{flag}: {err}"
        );
    }
}

/// A 1M-token prompt is built through the server's tokenizer in seconds, and is exact.
#[test]
fn a_million_token_prompt_is_exact_and_quick() {
    let _serial = exclusive();
    let mut cfg = exact_sim();
    cfg.context_length = 1 << 21;
    cfg.kv_capacity_tokens = 1 << 22;
    let sim = Sim::start(cfg);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let probe = llmib_client::Engine::probe(&llmib_client::ProbeOptions::new(sim.url.clone()))
            .await
            .expect("probe");
        let engine = std::sync::Arc::new(probe.engine);
        let mut builder = llmib_client::PromptBuilder::new(engine.clone(), 42);
        let t = std::time::Instant::now();
        let p = builder.build(1 << 20, 0).await.expect("prompt");
        let took = t.elapsed();
        eprintln!("built a {}-token prompt in {took:?}", p.tokens);
        assert_eq!(p.tokens, 1 << 20);
        let llmib_client::PromptInput::Text(text) = &p.input else {
            panic!("a text prompt")
        };
        // The server's own count of the prompt as it will be sent (BOS included).
        let ids = engine
            .tokenize(text, engine.prompt_adds_bos())
            .await
            .expect("tokenize");
        assert_eq!(ids.len(), 1 << 20);
        // A second stream's prompt differs from its very first token on (no shared prefix).
        let q = builder.build(1 << 20, 1).await.expect("prompt");
        let llmib_client::PromptInput::Text(text2) = &q.input else {
            panic!("a text prompt")
        };
        assert_ne!(text.get(..40), text2.get(..40));
    });
}

#[test]
fn garbage_from_the_server_fails_the_cell_and_the_run_goes_on() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.faults.malformed_chunk_rate = 1.0;
    let sim = Sim::start(cfg);
    let dir = out_dir("run-garbage");
    let o = run_small(&sim.url, &dir, "512,1K", "1", "300ms", "32", &[]);
    // Every cell has its row; a run where all failed exits 4, not 0.
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let rows = cells(&dir);
    assert_eq!(rows.len(), 4, "every cell has a row: {rows:#?}");
    for r in &rows {
        assert_eq!(r["status"], "failed", "{r:#}");
        assert!(
            r["first_error"]
                .as_str()
                .unwrap_or("")
                .contains("malformed"),
            "{r:#}"
        );
    }
}

#[test]
fn a_spent_time_budget_marks_the_rest_not_run() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-budget");
    let cfg = dir.join("bench.toml");
    // The settings come from a config file; the budget flag is layered on top.
    std::fs::write(&cfg, "contexts = [\"512\", \"1K\"]\nconcurrency = [1, 2]\nduration = \"400ms\"\nmax_output = 32\nformat = \"none\"\n")
        .expect("config");
    let o = run_bin(&[
        "run",
        "--url",
        &sim.url,
        "--config",
        cfg.to_str().unwrap_or_default(),
        "--max-time",
        "700ms",
        "--output",
        dir.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert_eq!(rows[0]["status"], "valid");
    let not_run: Vec<&serde_json::Value> =
        rows.iter().filter(|r| r["status"] == "not_run").collect();
    assert!(!not_run.is_empty(), "{rows:#?}");
    assert!(
        not_run.iter().all(|r| r["status_reason"]
            .as_str()
            .unwrap_or("")
            .contains("--max-time")),
        "{not_run:#?}"
    );
    assert!(
        !dir.join("report.html").exists(),
        "format = none from the file"
    );
    // The default 8K prefill context does not fit the 4K server: a default, not a request, so
    // it is neither planned nor listed as dropped (issue 42), and no note speaks of it.
    let run = run_json(&dir);
    let dropped = run["plan"]["dropped_contexts"].as_array().expect("dropped");
    assert!(dropped.is_empty(), "{dropped:#?}");
    let notes = run["notes"].as_array().expect("notes");
    assert!(
        !notes
            .iter()
            .any(|n| n.as_str().unwrap_or("").contains("dropped")),
        "{notes:#?}"
    );
}

/// Without gauges (an engine started without metrics) readiness comes from first tokens, and a
/// request that waited far longer than the warm TTFT marks the cell queued (METHOD's third rule).
#[test]
fn without_gauges_queueing_is_detected_from_ttft() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.metrics_enabled = false;
    cfg.kv_capacity_tokens = 2 * (1024 + 128);
    cfg.prefix_cache_tokens = 4096;
    let sim = Sim::start(cfg);
    let dir = out_dir("run-no-gauges");
    let o = run_small(
        &sim.url,
        &dir,
        "1K",
        "1,2,4",
        "600ms",
        "128",
        &["--kv-capacity", "100K", "--readiness-timeout", "10s"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    for n in [1u64, 2] {
        let r = cell(&rows, "decode", 1024, n);
        assert_eq!(r["status"], "valid", "{r:#}");
        assert_eq!(r["queue"]["readiness_by"], "first_tokens", "{r:#}");
        assert!(
            r["server_generation_tokens"].is_null(),
            "no counter, null: {r:#}"
        );
    }
    let q = cell(&rows, "decode", 1024, 4);
    assert_eq!(q["status"], "requests_queued", "{q:#}");
    assert!(q["queue"]["max_waiting"].is_null(), "{q:#}");
    assert!(
        q["queue"]["ttft_over_threshold"].as_u64().unwrap_or(0) >= 2,
        "two waited for a slot: {q:#}"
    );
    assert!(
        q["queue"]["ttft_queue_threshold_ms"].as_f64().is_some(),
        "the threshold is kept: {q:#}"
    );
}

/// `--max-total-tokens` caps the KV the plan predicts with; `--show-capacity-limited-values`
/// measures the cells it predicts Over capacity anyway, and marks their rows.
#[test]
fn a_kv_budget_predicts_over_capacity_and_such_cells_can_be_measured_anyway() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    for (name, extra) in [
        ("run-kv-budget", vec!["--max-total-tokens", "600"]),
        (
            "run-kv-budget-measured",
            vec![
                "--max-total-tokens",
                "600",
                "--show-capacity-limited-values",
            ],
        ),
    ] {
        let dir = out_dir(name);
        let mut args = extra.clone();
        args.extend(["--prefill-contexts", "none"]);
        let o = run_small(&sim.url, &dir, "512", "1,2", "1s", "16", &args);
        assert!(o.status.success(), "{name}: {}", text(&o));
        let rows = cells(&dir);
        let n2 = cell(&rows, "decode", 512, 2);
        if extra.len() == 2 {
            // 2 × (512 + 16) = 1056 tokens > 600.
            assert_eq!(n2["status"], "over_capacity", "{n2:#}");
            assert_eq!(run_json(&dir)["plan"]["kv_capacity_tokens"], 600);
        } else {
            assert!(
                ["valid", "requests_queued"].contains(&n2["status"].as_str().unwrap_or("")),
                "{n2:#}"
            );
            assert_eq!(n2["capacity_limited"], true, "{n2:#}");
            let why = n2["status_reason"].as_str().unwrap_or("");
            assert!(why.contains("measured anyway"), "{why}");
            assert!(
                cell(&rows, "decode", 512, 1)
                    .get("capacity_limited")
                    .is_none()
            );
        }
    }
}

#[test]
fn context_zero_decodes_the_minimal_prompt_with_no_prefill_cell() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-context-zero");
    let o = run_small(&sim.url, &dir, "0,1K", "1,2", "300ms", "32", &[]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    assert!(
        !rows
            .iter()
            .any(|r| r["phase"] == "prefill" && r["context_tokens"] == 0),
        "context 0 has no filler to prefill"
    );
    for n in [1, 2] {
        let r = cell(&rows, "decode", 0, n);
        assert_eq!(r["status"], "valid", "{r:#}");
        assert_eq!(r["context_label"], "0", "{r:#}");
        assert!(num(r, "total_tok_per_s") > 0.0, "{r:#}");
        // The prompt is only its fixed part: a few tokens, as the server counted them.
        let expected = r["prompt_check"]["expected"].as_u64().unwrap_or(0);
        assert!((1..=64).contains(&expected), "{r:#}");
        assert_eq!(r["prompt_check"]["mismatched"], 0, "{r:#}");
    }
    assert_eq!(cell(&rows, "prefill", 1024, 1)["status"], "valid");
}

#[test]
fn a_decode_warm_up_runs_hidden_at_the_largest_context_before_the_first_cell() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.stamp_chunks = true;
    let sim = Sim::start(cfg);
    let dir = out_dir("run-decode-warmup");
    let o = run_small(
        &sim.url,
        &dir,
        "1K,2K",
        "1,2",
        "300ms",
        "32",
        &["--decode-warmup-seconds", "0.5", "--skip-prefill"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let mut arrivals = sim.handle().take_arrival_stamps();
    arrivals.sort_by_key(|a| a.at);
    let first_measured = arrivals
        .iter()
        .position(|a| a.prompt_tokens == 1024)
        .expect("a measured 1K request");
    // Two streams of throwaway prompts near 0.8 × 2K (not the measured prompts, which are
    // exact), all before the first measured request.
    let warm: Vec<usize> = arrivals
        .iter()
        .enumerate()
        .filter(|(_, a)| (1200..2000).contains(&a.prompt_tokens))
        .map(|(i, _)| i)
        .collect();
    assert!(warm.len() >= 2, "{arrivals:?}");
    assert!(warm.iter().all(|&i| i < first_measured), "{arrivals:?}");
    // Nothing of it is recorded: the rows are the plan's four decode cells.
    assert_eq!(cells(&dir).len(), 4);
    assert_eq!(
        run_json(&dir)["plan"]["settings"]["decode_warmup_s"],
        0.5,
        "recorded in run.json"
    );
}
