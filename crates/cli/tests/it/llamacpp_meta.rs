//! Real llama.cpp: the run's metadata and the API key's absence from every file (split from
//! llamacpp.rs, which starts the server and holds the matrix test).

use crate::common::*;
use crate::llamacpp::{LlamaServer, M, llama, run_args};

#[test]
fn llamacpp_run_metadata_and_the_api_key_leaves_no_trace() {
    let Some(paths) = llama() else { return };
    let _serial = exclusive();
    let key = "llmib-e2e-secret-7d1f0c";
    let server = LlamaServer::start(paths, "key", 2, 1024, Some(key));
    let dir = out_dir("llamacpp-key");

    // Without the key: refused up front, with a message that says what to do.
    let o = run_bin(&[
        "run",
        "--url",
        &server.url,
        "--contexts",
        "256",
        "--concurrency",
        "1",
        "--output",
        dir.join("refused").to_str().expect("utf-8 path"),
        "--format",
        "none",
    ]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("--api-key"), "{}", text(&o));

    let launch = format!("llama-server -m tiny.gguf --api-key {key} -np 2");
    let out = dir.join("run");
    let mut args = run_args(&server.url, &out);
    args.extend([
        "--api-key",
        key,
        "--launch-command",
        &launch,
        "--contexts",
        "256",
        "--concurrency",
        "1",
        "--duration",
        "1s",
        // The new request paths against a real server, with the key: a mixed-prefill cell
        // (its prompt in the second slot) and probes beside the decode cell.
        "--mixed-prefill",
        "512",
        "--mixed-span",
        "500ms",
        "--probe-rate",
        "2",
        "--save-requests",
        "--format",
        "html,md,csv,json",
    ]);
    let o = run_bin(&args);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&out);
    let decode = cell(&rows, "decode", 256, 1);
    assert_eq!(decode["status"], "valid", "{rows:#?}");
    let probe = &decode["probe"];
    assert!(probe["sent"].as_u64() >= Some(1), "{decode:#}");
    assert_eq!(probe["completed"], probe["sent"], "{decode:#}");
    let mixed = cell(&rows, "mixed_prefill", 512, 1);
    assert_eq!(mixed["status"], "valid", "{mixed:#}");
    let m = &mixed["mixed"];
    // The one stream's stall where its request ran across the injected prefill; at 1 ms a token
    // and short answers it may be between two requests at the send, and then has none (a
    // prefill wait is no decode stall: core's mixed known answers).
    let gaps = &m["longest_gap_ms"];
    assert!(gaps.is_null() || gaps["n"] == 1, "{m:#}");
    assert!(num(m, "before_tok_per_s") > 0.0, "{m:#}");
    assert!(num(m, "after_tok_per_s") > 0.0, "{m:#}");
    assert!(num(m, "injected_ttft_ms") > 0.0, "{m:#}");
    assert_eq!(m["standalone_ttft_ms"]["n"], 3, "{m:#}");

    // The metadata, as far as llama-server tells it.
    let run = run_json(&out);
    let e = &run["engine"];
    assert_eq!(e["name"], "llama.cpp", "{run:#}");
    assert_eq!(e["kind"], "llama_cpp", "{run:#}");
    assert_eq!(e["repository"], "github.com/ggml-org/llama.cpp");
    assert_eq!(e["build"], "b0-unknown", "this sdist's build_info");
    assert_eq!(e["context_length"]["value"], 1024, "{e:#}");
    assert!(
        e["context_length"]["source"]
            .as_str()
            .unwrap_or("")
            .contains("/props")
    );
    assert_eq!(e["kv_capacity_tokens"]["value"], 2 * 1024, "{e:#}");
    assert!(
        e["kv_capacity_tokens"]["source"]
            .as_str()
            .unwrap_or("")
            .contains("/props")
    );
    let caps = &e["capabilities"];
    assert_eq!(caps["ignore_eos"], true);
    assert_eq!(caps["continuous_usage_stats"], false);
    assert_eq!(caps["queue_gauge"], true, "{caps:#}");
    assert_eq!(caps["generation_counter"], true, "{caps:#}");
    assert_eq!(run["model"]["served_model"], "tiny-llama", "{run:#}");
    let model_path = run["model"]["model_path"].as_str().unwrap_or("");
    assert!(model_path.ends_with(".gguf"), "{run:#}");
    let hw = &run["hardware"];
    assert_eq!(hw["source"], "local", "{hw:#}");
    assert_eq!(hw["os"], std::env::consts::OS, "{hw:#}");
    assert!(!hw["cpu"].as_str().unwrap_or("").is_empty(), "{hw:#}");
    assert_eq!(run["tool"]["name"], "llm-inference-bench");
    let cmd = run["launch_command"].as_str().unwrap_or("");
    assert!(cmd.contains("--api-key <redacted>"), "{cmd}");
    assert_eq!(run["plan"]["settings"]["max_output"], M, "{run:#}");

    // Every file of the run, reports included, is free of the key.
    let mut files = Vec::new();
    let mut todo = vec![out.clone()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).expect("read results dir").flatten() {
            let p = entry.path();
            if p.is_dir() {
                todo.push(p);
            } else {
                files.push(p);
            }
        }
    }
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    for want in ["run.json", "cells.jsonl", "requests.jsonl"] {
        assert!(names.iter().any(|n| n == want), "{want} missing: {names:?}");
    }
    for ext in ["html", "md", "csv", "json"] {
        assert!(
            names
                .iter()
                .any(|n| n.ends_with(&format!(".{ext}")) && n != "run.json"),
            "no .{ext} report in {names:?}"
        );
    }
    for f in &files {
        let bytes = std::fs::read(f).expect("read a result file");
        assert!(
            !bytes.windows(key.len()).any(|w| w == key.as_bytes()),
            "{} contains the API key",
            f.display()
        );
    }
    // The server saw authenticated traffic (the run did not pass by accident of an open server).
    assert!(server.metric("llamacpp:tokens_predicted_total") > 0.0);
}
