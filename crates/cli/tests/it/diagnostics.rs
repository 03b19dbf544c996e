//! Startup diagnostics, end to end: a run against a server on 127.0.0.1 records this machine's
//! (the tool's environment filtered and redacted, kernel, NVIDIA facts or why they are
//! missing) in `run.json`, and the reports show them; no secret of the environment reaches a
//! file.

use crate::common::*;
use crate::run::exact_sim;
use std::process::Command;

#[test]
fn a_local_run_records_the_diagnostics_and_no_secret() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("diagnostics-local");
    let d = dir.to_str().unwrap_or_default();
    let o = Command::new(bin())
        .args([
            "run",
            "--url",
            &sim.url,
            "--contexts",
            "512",
            "--concurrency",
            "1",
        ])
        .args(["--duration", "300ms", "--max-output", "16", "--output", d])
        .args(["--format", "html,md,json"])
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env("NCCL_DEBUG", "WARN")
        .env("VLLM_API_KEY", "llmib-diag-secret-1")
        .env(
            "SGLANG_CACHE_URL",
            "https://bench:llmib-diag-pw@cache.internal/v1",
        )
        .env("LLMIB_DIAG_UNLISTED", "1")
        .output()
        .expect("run the binary");
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&dir);
    let diag = &run["diagnostics"];
    let env = diag["env"].as_array().expect("env list");
    let value = |name: &str| {
        env.iter()
            .find(|v| v["name"] == name)
            .map(|v| v["value"].as_str().unwrap_or("").to_owned())
    };
    assert_eq!(value("NCCL_DEBUG").as_deref(), Some("WARN"));
    assert_eq!(value("VLLM_API_KEY").as_deref(), Some("<redacted>"));
    assert_eq!(
        value("SGLANG_CACHE_URL").as_deref(),
        Some("https://bench:<redacted>@cache.internal/v1")
    );
    assert_eq!(value("LLMIB_DIAG_UNLISTED"), None);
    // Whatever this machine has, each fact has a value or a reason.
    for fact in [
        "uname",
        "driver_version",
        "cuda_version",
        "topology",
        "p2p_override",
    ] {
        let f = &diag[fact];
        assert!(
            f["value"].is_null() != f["reason"].is_null(),
            "{fact}: {f:#}"
        );
    }
    for file in ["run.json", "report.html", "report.md", "results.json"] {
        let text = std::fs::read_to_string(dir.join(file)).expect(file);
        for secret in ["llmib-diag-secret-1", "llmib-diag-pw"] {
            assert!(!text.contains(secret), "{secret} in {file}");
        }
    }
    let html = std::fs::read_to_string(dir.join("report.html")).expect("html");
    assert!(html.contains(r#"<section class="panel" id="diagnostics">"#));
}
