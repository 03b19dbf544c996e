//! `import aiperf:DIR` and `import guidellm:FILE` end to end (issue 46): the real AIPerf and
//! GuideLLM (the pinned versions `scripts/peers/install.sh` installs) measure the simulator,
//! their results are imported, and the imported row's figures must equal the tool's own file;
//! `report` renders the directory, its `results.json` passes the results schema, `compare` sets
//! it beside a run of this tool, and a hub store accepts it as an upload.
//!
//! Without the tool (or the local tokenizer, vLLM's converted tiny model) the test prints why
//! and passes, unless `CI` is set and the tool is AIPerf: CI installs AIPerf and must run it.
//! GuideLLM needs torch, whose only PyPI build is CUDA's (about 6 GB installed), so the test
//! command does not install it and its test runs where `scripts/peers/install.sh guidellm` has;
//! its samples, made by the real GuideLLM against the simulator (`testdata/guidellm/`), are
//! imported by `llmib-core`'s unit tests on every run.

use crate::common::*;
use crate::import::import_and_check;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The tool's venv and the tokenizer's directory, or `None` (with the reason printed) where
/// either is missing and `CI` is unset (as `sweep.rs`'s `vllm_paths`).
fn peer_paths(tool: &str) -> Option<(PathBuf, String)> {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts");
    let script = format!(
        "'{s}/peers/install.sh' --installed {tool} && source '{s}/vllm/common.sh' && test -f \"$VLLM_MODEL/tokenizer.json\" && printf '%s\\n' \"$VLLM_MODEL\"",
        s = scripts.display()
    );
    let out = Command::new("bash").args(["-c", &script]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut lines = text.lines();
    match (out.status.success(), lines.next(), lines.next()) {
        (true, Some(venv), Some(model)) => Some((PathBuf::from(venv), model.to_string())),
        _ if tool == "aiperf" && std::env::var_os("CI").is_some() => panic!(
            "CI is set, so the {tool} import must run, but {tool} or the tokenizer is not installed"
        ),
        _ => {
            eprintln!(
                "skipping the {tool} import: run scripts/peers/install.sh (and scripts/vllm/install.sh for the tokenizer)"
            );
            None
        }
    }
}

/// A simulator serving `tiny-llama` as vLLM does (the samples' README says the same).
fn sim() -> Sim {
    let mut cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm");
    cfg.model = "tiny-llama".to_string();
    Sim::start(cfg)
}

/// Runs `aiperf profile` against `url` as `testdata/aiperf/README.md` says, and returns its
/// artifacts directory.
fn aiperf(venv: &Path, tokenizer: &str, url: &str, dir: &Path) -> PathBuf {
    assert_exclusive("AIPerf");
    let artifacts = dir.join("aiperf");
    let o = Command::new(venv.join("bin/aiperf"))
        .args(["profile", "--model", "tiny-llama", "--url", url])
        .args(["--endpoint-type", "completions", "--streaming"])
        .args(["--tokenizer", tokenizer])
        .args([
            "--synthetic-input-tokens-mean",
            "64",
            "--output-tokens-mean",
            "32",
        ])
        .args([
            "--extra-inputs",
            "ignore_eos:true",
            "--use-server-token-count",
        ])
        .args([
            "--request-count",
            "20",
            "--request-rate",
            "10",
            "--random-seed",
            "0",
        ])
        .arg("--artifact-dir")
        .arg(&artifacts)
        .args(["--ui", "none", "--no-server-metrics", "--no-gpu-telemetry"])
        .output()
        .expect("run aiperf");
    assert!(o.status.success(), "aiperf profile: {}", text(&o));
    artifacts
}

/// Runs `guidellm run` against `url` as `testdata/guidellm/README.md` says, and returns its
/// JSON report.
fn guidellm(venv: &Path, tokenizer: &str, url: &str, dir: &Path) -> PathBuf {
    assert_exclusive("GuideLLM");
    let report = dir.join("guidellm.json");
    let backend =
        format!("kind=openai_http,target={url},model=tiny-llama,request_format=/v1/completions");
    let o = Command::new(venv.join("bin/guidellm"))
        .args(["run", "--backend", &backend])
        .args(["--profile", "kind=constant,rate=10"])
        .args(["--constraint", "kind=max_requests,count=20"])
        .args([
            "--data",
            "kind=synthetic_text,prompt_tokens=64,output_tokens=32",
        ])
        .args([
            "--tokenizer",
            &format!("kind=huggingface_auto,model={tokenizer}"),
        ])
        .args(["--seed", "kind=static,value=0"])
        .args(["--output", &format!("kind=json,path={}", report.display())])
        .arg("--disable-console-interactive")
        .output()
        .expect("run guidellm");
    assert!(o.status.success(), "guidellm run: {}", text(&o));
    report
}

/// `row[field]` and `want` as numbers, equal to the last bit (an integer count and the
/// tool's `20.0` are one number).
fn same(row: &Value, field: &str, want: &Value) {
    let (got, w) = (row[field].as_f64(), want.as_f64());
    assert!(
        got.is_some() && got == w,
        "{field}: {got:?} != {w:?} in {row:#}"
    );
}

#[test]
fn a_real_aiperf_run_imports_with_its_own_figures() {
    let Some((venv, tokenizer)) = peer_paths("aiperf") else {
        return;
    };
    let _serial = exclusive();
    let sim = sim();
    let dir = out_dir("import-aiperf");
    let artifacts = aiperf(&venv, &tokenizer, &sim.url, &dir);
    let file = artifacts.join("profile_export_aiperf.json");
    let arg = format!("aiperf:{}", artifacts.display());
    let row = import_and_check(&arg, &file, "AIPerf", &sim, &dir);

    let f: Value = serde_json::from_slice(&std::fs::read(&file).expect("file")).expect("JSON");
    same(
        &row,
        "total_tok_per_s",
        &f["output_token_throughput"]["avg"],
    );
    same(&row, "measured_s", &f["benchmark_duration"]["avg"]);
    same(&row, "completed_requests", &f["request_count"]["avg"]);
    same(&row, "output_tokens", &f["total_output_tokens"]["avg"]);
    same(&row, "ttft_ms_p50", &f["time_to_first_token"]["p50"]);
    same(&row, "tbt_ms_p50", &f["inter_chunk_latency"]["p50"]);
    let rate = &row["rate"];
    same(&rate["ttft_ms"], "p99", &f["time_to_first_token"]["p99"]);
    same(&rate["tpot_ms"], "p50", &f["inter_token_latency"]["p50"]);
    same(&rate["tpot_ms"], "p99", &f["inter_token_latency"]["p99"]);
    same(&rate["itl_ms"], "p99", &f["inter_chunk_latency"]["p99"]);
    same(&rate["e2e_ms"], "p50", &f["request_latency"]["p50"]);
    assert_eq!(
        (&row["status"], &row["request_rate"]),
        (&"valid".into(), &10.0.into())
    );
}

#[test]
fn a_real_guidellm_report_imports_with_its_own_figures() {
    let Some((venv, tokenizer)) = peer_paths("guidellm") else {
        return;
    };
    let _serial = exclusive();
    let sim = sim();
    let dir = out_dir("import-guidellm");
    let file = guidellm(&venv, &tokenizer, &sim.url, &dir);
    let arg = format!("guidellm:{}", file.display());
    let row = import_and_check(&arg, &file, "GuideLLM", &sim, &dir);

    let f: Value = serde_json::from_slice(&std::fs::read(&file).expect("file")).expect("JSON");
    let b = &f["benchmarks"][0];
    let m = &b["metrics"];
    same(
        &row,
        "total_tok_per_s",
        &m["output_tokens_per_second"]["total"]["mean"],
    );
    same(&row, "measured_s", &b["duration"]);
    same(
        &row,
        "completed_requests",
        &m["request_totals"]["successful"],
    );
    same(&row, "requests_sent", &m["request_totals"]["total"]);
    same(
        &row,
        "output_tokens",
        &m["output_token_count"]["total"]["total_sum"],
    );
    let ttft = &m["time_to_first_token_ms"]["successful"]["percentiles"];
    same(&row, "ttft_ms_p50", &ttft["p50"]);
    let rate = &row["rate"];
    same(&rate["ttft_ms"], "p99", &ttft["p99"]);
    let itl = &m["inter_token_latency_ms"]["successful"]["percentiles"];
    same(&rate["tpot_ms"], "p50", &itl["p50"]);
    same(&rate["tpot_ms"], "p99", &itl["p99"]);
    // GuideLLM keeps no per-gap ITL: null, never derived.
    assert!(
        row["tbt_ms_p50"].is_null() && rate["itl_ms"].is_null(),
        "{row:#}"
    );
    assert_eq!(
        (&row["status"], &row["request_rate"]),
        (&"valid".into(), &10.0.into())
    );
}

/// Results of two tools in one directory are refused in one line, with nothing written.
#[test]
fn two_tools_in_one_import_are_refused() {
    let dir = out_dir("import-mixed-tools");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let out = dir.join("out");
    let o = run_bin(&[
        "import",
        &format!("aiperf:{}", data.join("aiperf/rate10").display()),
        &format!("guidellm:{}", data.join("guidellm/rate10.json").display()),
        "--output",
        out.to_str().unwrap_or(""),
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{}", text(&o));
    assert!(
        err.contains("a guidellm result among aiperf results"),
        "{}",
        text(&o)
    );
    assert!(!out.exists(), "nothing written on a refusal");
}
