//! `report --format vllm` end to end (issue 46): a short open-load run against the simulator is
//! exported as `vllm bench serve` result files, each file is read back by a reader of the field
//! names vLLM's own scripts read (`vllm bench sweep plot` / `plot_pareto`, the result-JSON
//! comparisons), and `import vllm:` of the exported files gives back the run's figures where
//! both tools define them alike.

use crate::common::*;
use crate::e2e::Bench;
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The fields of a vLLM result file that vLLM's plotting and comparison scripts read, under
/// vLLM's names; a missing required one fails the parse, as it fails those scripts.
#[derive(Debug, Deserialize)]
struct VllmReader {
    date: String,
    backend: String,
    model_id: String,
    num_prompts: u64,
    /// A number, or `"inf"` (the scripts turn the string into a float).
    request_rate: Value,
    burstiness: Option<f64>,
    max_concurrency: Option<u32>,
    duration: f64,
    completed: u64,
    failed: u64,
    total_input_tokens: u64,
    total_output_tokens: u64,
    request_throughput: f64,
    output_throughput: f64,
    total_token_throughput: f64,
    mean_ttft_ms: f64,
    median_ttft_ms: f64,
    std_ttft_ms: f64,
    p99_ttft_ms: f64,
    mean_tpot_ms: f64,
    median_tpot_ms: f64,
    p99_tpot_ms: f64,
    median_itl_ms: f64,
    p99_itl_ms: f64,
    median_e2el_ms: f64,
    input_lens: Vec<u64>,
    output_lens: Vec<u64>,
    ttfts: Vec<f64>,
    itls: Vec<Vec<f64>>,
    errors: Vec<String>,
    /// `--save-detailed`'s texts: the run kept them (`run --save-texts`).
    generated_texts: Vec<String>,
}

/// Runs `report DIR --format vllm --output OUT` and returns the files it lists.
fn export(dir: &Path, out: &Path) -> Vec<PathBuf> {
    let o = run_bin(&[
        "report",
        dir.to_str().unwrap_or_default(),
        "--format",
        "vllm",
        "--output",
        out.to_str().unwrap_or_default(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// The original rate row whose rate is `rate`.
fn row_at(rows: &[Value], rate: f64) -> &Value {
    rows.iter()
        .find(|r| r["phase"] == "rate" && r["request_rate"].as_f64() == Some(rate))
        .unwrap_or_else(|| panic!("no rate row at {rate}/s: {rows:#?}"))
}

/// Each file read by the reader agrees with the run's row it came from.
fn check_file(file: &Path, rows: &[Value], model: &str) -> f64 {
    let bytes = std::fs::read(file).expect("the exported file");
    let r: VllmReader =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let rate = r.request_rate.as_f64().expect("a finite rate");
    let row = row_at(rows, rate);
    let fig = &row["rate"];
    assert_eq!((r.backend.as_str(), r.model_id.as_str()), ("openai", model));
    assert_eq!(r.date.len(), 15, "vLLM's %Y%m%d-%H%M%S: {}", r.date);
    assert_eq!((r.burstiness, r.max_concurrency), (Some(1.0), None));
    assert_eq!(r.num_prompts, fig["scheduled"].as_u64().expect("scheduled"));
    assert_eq!(Some(r.completed), row["completed_requests"].as_u64());
    assert_eq!(Some(r.failed), row["failed_requests"].as_u64());
    assert_eq!(Some(r.total_output_tokens), row["output_tokens"].as_u64());
    assert_eq!(
        r.total_input_tokens,
        512 * r.completed,
        "every prompt is 512 tokens"
    );
    assert_eq!(Some(r.duration), fig["span_s"].as_f64());
    assert_eq!(Some(r.output_throughput), fig["output_tok_per_s"].as_f64());
    assert_close(
        "request_throughput",
        r.request_throughput,
        r.completed as f64 / r.duration,
        1e-9,
    );
    let total = (r.total_input_tokens + r.total_output_tokens) as f64 / r.duration;
    assert_close(
        "total_token_throughput",
        r.total_token_throughput,
        total,
        1e-9,
    );
    for (got, want) in [
        (r.median_ttft_ms, &fig["ttft_ms"]["p50"]),
        (r.p99_ttft_ms, &fig["ttft_ms"]["p99"]),
        (r.mean_ttft_ms, &fig["ttft_ms"]["mean"]),
        (r.median_tpot_ms, &fig["tpot_ms"]["p50"]),
        (r.p99_tpot_ms, &fig["tpot_ms"]["p99"]),
        (r.mean_tpot_ms, &fig["tpot_ms"]["mean"]),
        (r.median_e2el_ms, &fig["e2e_ms"]["p50"]),
    ] {
        assert_eq!(Some(got), want.as_f64(), "{}: {fig:#}", file.display());
    }
    assert!(r.std_ttft_ms >= 0.0 && r.median_itl_ms > 0.0 && r.p99_itl_ms >= r.median_itl_ms);
    let n = (r.completed + r.failed) as usize;
    assert_eq!([r.ttfts.len(), r.itls.len(), r.input_lens.len()], [n; 3]);
    assert_eq!(r.output_lens.iter().sum::<u64>(), r.total_output_tokens);
    assert_eq!(r.generated_texts.len(), n);
    for ((t, e), out) in r.generated_texts.iter().zip(&r.errors).zip(&r.output_lens) {
        assert_eq!(e.is_empty() && *out > 0, !t.is_empty(), "{t:?} {e:?} {out}");
    }
    rate
}

/// The simulator's own count of `text` (no special tokens).
fn sim_token_count(sim: &Sim, text: &str) -> u64 {
    let body = serde_json::json!({"prompt": text, "add_special_tokens": false}).to_string();
    let (status, answer) =
        crate::llamacpp::http(sim.handle().addr(), "POST", "/tokenize", &body, None)
            .expect("tokenize");
    let v: Value = serde_json::from_str(&answer).expect("tokenize answer");
    assert_eq!(status, 200, "{v}");
    v["tokens"].as_array().map_or(0, |a| a.len() as u64)
}

/// The imported rows hold the run's figures where both tools define them alike.
fn check_round_trip(imported: &[Value], rows: &[Value]) {
    assert_eq!(imported.len(), 2, "{imported:#?}");
    for back in imported {
        let rate = back["request_rate"].as_f64().expect("a rate row");
        let row = row_at(rows, rate);
        assert_eq!(back["phase"], "rate");
        assert_eq!(back["context_tokens"], row["context_tokens"]);
        assert_eq!(
            back["context_label"], "512",
            "every prompt exactly 512: {back:#}"
        );
        assert_eq!(back["completed_requests"], row["completed_requests"]);
        assert_eq!(back["output_tokens"], row["output_tokens"]);
        assert_eq!(back["status"], row["status"]);
        let (b, o) = (&back["rate"], &row["rate"]);
        for (metric, stat) in [
            ("ttft_ms", "p50"),
            ("ttft_ms", "p99"),
            ("ttft_ms", "mean"),
            ("tpot_ms", "p50"),
            ("tpot_ms", "p99"),
            ("tpot_ms", "mean"),
            ("e2e_ms", "p50"),
            ("e2e_ms", "p99"),
        ] {
            assert_eq!(
                b[metric][stat], o[metric][stat],
                "{metric}.{stat}: {b:#}\n{o:#}"
            );
        }
        assert_eq!(back["ttft_ms_p50"], o["ttft_ms"]["p50"]);
        assert_eq!(b["output_tok_per_s"], o["output_tok_per_s"]);
        assert_eq!(back["total_tok_per_s"], o["output_tok_per_s"]);
        assert_eq!(b["span_s"], o["span_s"]);
        assert_eq!(b["scheduled"], o["scheduled"]);
        assert_eq!(b["arrival"], o["arrival"]);
    }
}

#[test]
fn a_rate_run_exports_as_vllm_results_and_imports_back() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let dir = out_dir("export-vllm");
    let run = dir.join("run");
    let d = run.to_str().unwrap_or_default();
    let ran = Bench::run(&sim.url)
        .small("512", "1", "2s", "16")
        .set("--request-rate", "4,8")
        .args(["--skip-decode", "--save-texts"])
        .out_at(&run)
        .ok();
    let rows = ran.rows();
    // `--save-texts` keeps the records (`--save-requests`) with each answer's text: what the
    // simulator streamed, which its tokenizer counts as the tokens it reported.
    let settings = &ran.run_json()["plan"]["settings"];
    assert_eq!(
        (&settings["save_texts"], &settings["save_requests"]),
        (&Value::Bool(true), &Value::Bool(true))
    );
    let records: Vec<Value> = ran.requests().into_values().flatten().collect();
    assert!(records.len() >= 8, "{} records", records.len());
    for r in records.iter().filter(|r| r["outcome"]["end"] == "finished") {
        let t = r["text"]
            .as_str()
            .unwrap_or_else(|| panic!("no text in {r:#}"));
        let counted = sim_token_count(&sim, t);
        assert_eq!(
            Some(counted),
            r["completion_tokens_reported"].as_u64(),
            "{t:?}"
        );
    }
    let model = ran.run_json()["model"]["served_model"]
        .as_str()
        .expect("model")
        .to_string();

    let files = export(&run, &dir.join("vllm"));
    assert_eq!(files.len(), 2, "one file per rate cell: {files:?}");
    let mut rates: Vec<f64> = files.iter().map(|f| check_file(f, &rows, &model)).collect();
    rates.sort_by(f64::total_cmp);
    assert_eq!(rates, [4.0, 8.0]);
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| Some(f.file_name()?.to_string_lossy().into_owned()))
        .collect();
    assert!(
        names.contains(&"vllm-512-4qps.json".to_string()),
        "{names:?}"
    );

    let back = dir.join("imported");
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|f| format!("vllm:{}", f.display())));
    args.extend(["--output".into(), back.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_bin(&args);
    assert!(o.status.success(), "{}", text(&o));
    check_round_trip(&cells(&back), &rows);

    // `--output -`: every cell in one JSON list, the shape of vLLM's sweep `summary.json`.
    let out = Bench::cmd(&["report", d, "--format", "vllm", "--output", "-"])
        .ok()
        .stdout();
    let list: Vec<VllmReader> = serde_json::from_str(&out).expect("a list of results");
    assert_eq!(list.len(), 2);
}
