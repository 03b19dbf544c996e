//! `import vllm:FILE` end to end (issue 46): the real `vllm bench serve` (the CPU build that
//! `scripts/vllm/install.sh` installs) measures the simulator, its result file is imported, and
//! the imported row's figures must equal the file's; `report` renders the directory, its
//! `results.json` passes the results schema, `compare` sets it beside a run of this tool, and a
//! hub store accepts it as an upload.
//!
//! Without vLLM installed the test prints why and passes, unless `CI` is set: there a missing
//! vLLM is a failure, since CI must run it.

use crate::common::*;
use crate::e2e::Bench;
use crate::sweep::vllm_paths;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs `vllm bench serve` against `url` as `testdata/vllm-bench-serve/README.md` says, and
/// returns the result file it saved.
fn vllm_bench(py: &str, tokenizer: &str, url: &str, dir: &Path) -> PathBuf {
    assert_exclusive("vLLM's benchmark client");
    let driver =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/vllm-bench-serve/run_bench.py");
    let d = dir.display().to_string();
    let o = Command::new(py)
        .arg(driver)
        .args([
            "--backend",
            "openai",
            "--base-url",
            url,
            "--model",
            "tiny-llama",
        ])
        .args(["--tokenizer", tokenizer, "--dataset-name", "random"])
        .args(["--random-input-len", "64", "--random-output-len", "32"])
        .args(["--num-prompts", "20", "--request-rate", "10", "--seed", "0"])
        .args(["--ignore-eos", "--save-result", "--save-detailed"])
        .args(["--result-dir", &d, "--result-filename", "rate10.json"])
        .env("VLLM_TARGET_DEVICE", "cpu")
        .output()
        .expect("run vllm bench serve");
    assert!(o.status.success(), "vllm bench serve: {}", text(&o));
    dir.join("rate10.json")
}

/// The imported row's figures against the file's own (both read as JSON text, so equal
/// numbers are equal text).
fn assert_row_is_the_file(row: &Value, file: &Value) {
    let pairs = [
        ("total_tok_per_s", &file["output_throughput"]),
        ("ttft_ms_p50", &file["median_ttft_ms"]),
        ("tbt_ms_p50", &file["median_itl_ms"]),
        ("completed_requests", &file["completed"]),
        ("output_tokens", &file["total_output_tokens"]),
        ("measured_s", &file["duration"]),
    ];
    for (field, want) in pairs {
        assert_eq!(&row[field], want, "{field}: {row:#}");
    }
    let rate = &row["rate"];
    assert_eq!(rate["ttft_ms"]["p99"], file["p99_ttft_ms"], "{rate:#}");
    assert_eq!(rate["tpot_ms"]["p50"], file["median_tpot_ms"], "{rate:#}");
    assert_eq!(rate["tpot_ms"]["p99"], file["p99_tpot_ms"], "{rate:#}");
    assert_eq!(rate["itl_ms"]["p50"], file["median_itl_ms"], "{rate:#}");
    assert_eq!(rate["itl_ms"]["p99"], file["p99_itl_ms"], "{rate:#}");
    assert_eq!(row["status"], "valid");
    assert_eq!(row["request_rate"], 10.0);
}

/// The directory as the hub takes it: an in-memory store with a token accepts its upload.
fn assert_hub_accepts(dir: &Path) {
    let mut store = llmib_hub::Store::open_sqlite_in_memory(llmib_hub::Settings::default())
        .expect("open a hub store");
    let token = store.create_token("import").expect("a token").secret;
    store
        .upload_dir(dir, Some(&token), false)
        .expect("the hub accepts the imported run");
}

#[test]
fn a_real_vllm_bench_file_imports_with_its_own_figures() {
    let Some((py, tokenizer)) = vllm_paths() else {
        return;
    };
    let _serial = exclusive();
    let mut cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm");
    cfg.model = "tiny-llama".to_string();
    let sim = Sim::start(cfg);
    let dir = out_dir("import-vllm");
    let file = vllm_bench(&py, &tokenizer, &sim.url, &dir);
    let arg = format!("vllm:{}", file.display());
    let row = import_and_check(&arg, &file, "vllm bench serve", &sim, &dir);
    let want: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("the file")).expect("JSON");
    assert_row_is_the_file(&row, &want);
}

/// Imports `arg`, then checks what every import must give: one row, the sha256 in the notes,
/// the report naming `tool`, the results schema, `compare` beside a run of this tool on `sim`,
/// and the hub's acceptance. Returns the row.
pub(crate) fn import_and_check(arg: &str, file: &Path, tool: &str, sim: &Sim, dir: &Path) -> Value {
    let imported = dir.join("imported");
    let o = run_bin(&["import", arg, "--output", imported.to_str().unwrap_or("")]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&imported);
    assert_eq!(rows.len(), 1, "{rows:#?}");
    let notes = run_json(&imported)["notes"].to_string();
    assert!(notes.contains(&llmib_hub::hex_sha256(&std::fs::read(file).expect("file"))));
    let o = run_bin(&["report", imported.to_str().unwrap_or("")]);
    assert!(o.status.success(), "{}", text(&o));
    let html = std::fs::read_to_string(imported.join("report.html")).expect("report.html");
    assert!(html.contains(tool), "the report names {tool}");
    let results: Value = serde_json::from_slice(
        &std::fs::read(imported.join("results.json")).expect("results.json written"),
    )
    .expect("results.json is JSON");
    llmib_report::check_results_schema(&results).expect("the results schema holds");
    let other = dir.join("other");
    let o = Bench::run(&sim.url)
        .small("64", "1", "2", "16")
        .set("--request-rate", "10")
        .arg("--skip-decode")
        .out_at(&other)
        .go()
        .output;
    assert!(o.status.success(), "{}", text(&o));
    let o = run_bin(&[
        "compare",
        imported.to_str().unwrap_or(""),
        other.to_str().unwrap_or(""),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert_hub_accepts(&imported);
    rows[0].clone()
}

/// Refusals are one line each, with a non-zero exit: a file that is not JSON (named), and
/// files of two models in one directory.
#[test]
fn bad_and_mixed_files_are_refused_in_one_line() {
    let dir = out_dir("import-refusals");
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/vllm-bench-serve/rate10.json");
    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"date\": ").expect("write");
    let mut v: Value =
        serde_json::from_slice(&std::fs::read(&fixture).expect("fixture")).expect("JSON");
    v["model_id"] = "other-model".into();
    v["request_rate"] = 5.0.into();
    let other = dir.join("other.json");
    std::fs::write(&other, v.to_string()).expect("write");
    let out = dir.join("out");
    let out = out.to_str().unwrap_or("");
    for (files, says) in [
        (
            vec![format!("vllm:{}", bad.display())],
            "bad.json: not a vllm bench serve result file",
        ),
        (
            vec![
                format!("vllm:{}", fixture.display()),
                format!("vllm:{}", other.display()),
            ],
            "model other-model differs",
        ),
        (
            vec![format!("sglang:{}", fixture.display())],
            "unknown tool",
        ),
    ] {
        let mut args = vec!["import"];
        args.extend(files.iter().map(String::as_str));
        args.extend(["--output", out]);
        let o = run_bin(&args);
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{}", text(&o));
        assert!(err.contains(says), "{}", text(&o));
        assert!(!Path::new(out).exists(), "nothing written on a refusal");
    }
}
