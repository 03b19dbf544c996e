//! Reliability against silent, hostile and failing servers, and against the machine's own
//! limits (docs/reliability.md): the real binary against the simulator's fault knobs.

use crate::common::*;
use crate::run::{exact_sim, run_small};

/// A server that accepts requests and then stays silent (before its headers, or mid-stream)
/// fails the cells it touches within the silence limits; it never hangs the run.
#[test]
fn a_silent_server_fails_its_cells_within_the_limits_and_never_hangs() {
    let _serial = timing_lock();
    for (name, fault, kind) in [
        ("headers", "slow_first_byte", "timeout_first_token"),
        ("stall", "stall", "timeout_idle"),
    ] {
        let mut cfg = exact_sim();
        if fault == "slow_first_byte" {
            cfg.faults.slow_first_byte_rate = 1.0;
            cfg.faults.slow_first_byte_ms = 3_600_000;
        } else {
            cfg.faults.stall_rate = 1.0;
        }
        let sim = Sim::start(cfg);
        let dir = out_dir(&format!("run-silent-{name}"));
        let t = std::time::Instant::now();
        let o = run_small(
            &sim.url,
            &dir,
            "512",
            "1,2",
            "1s",
            "32",
            &["--first-token-timeout", "1s", "--idle-timeout", "1s"],
        );
        let took = t.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.code().is_some(), "{name}: no crash: {err}");
        assert!(took.as_secs() < 40, "{name}: took {took:?}");
        let rows = cells(&dir);
        assert_eq!(rows.len(), 3, "{name}: every cell has a row: {rows:#?}");
        // A prefill asks for one token: a stream that stalls after its first token finishes.
        let hit = rows
            .iter()
            .filter(|r| fault == "slow_first_byte" || r["phase"] == "decode");
        assert_eq!(hit.clone().count(), if name == "stall" { 2 } else { 3 });
        for r in hit {
            assert_eq!(r["status"], "failed", "{name}: {r:#}");
            let errors = r["errors"].as_object().expect("errors");
            assert!(
                errors.keys().any(|k| k.ends_with(kind)),
                "{name}: {kind} in {errors:?}"
            );
            let first = r["first_error"].as_str().unwrap_or_default();
            assert!(
                first.contains("timeout"),
                "{name}: says which flag: {first}"
            );
        }
    }
}

/// A server whose error bodies quote the API key, and a launch command that nests the key in a
/// quoted shell line: the key reaches no file of the results and not the terminal.
#[test]
fn an_echoed_key_never_reaches_results_reports_or_the_terminal() {
    let _serial = timing_lock();
    const KEY: &str = "sk-echo-secret-9";
    let mut cfg = exact_sim();
    cfg.api_key = Some(KEY.into());
    cfg.faults.http_error_rate = 1.0;
    cfg.faults.echo_api_key = true;
    let sim = Sim::start(cfg);
    let dir = out_dir("run-echoed-key");
    let d = dir.to_str().unwrap_or_default();
    let launch = format!(r#"bash -c "sglang serve --api-key {KEY} --port 1" GITHUB_PAT={KEY}"#);
    let o = run_bin(&[
        "run",
        "--url",
        &sim.url,
        "--api-key",
        KEY,
        "--contexts",
        "512",
        "--concurrency",
        "1",
        "--duration",
        "1s",
        "--max-output",
        "16",
        "--save-requests",
        "--launch-command",
        &launch,
        "--output",
        d,
    ]);
    let (out, err) = (text(&o), String::from_utf8_lossy(&o.stderr).to_string());
    // Every cell failed: the run says so with its own exit code.
    assert_eq!(o.status.code(), Some(4), "{err}");
    assert!(err.contains("every measured cell failed"), "{err}");
    let rows = cells(&dir);
    assert!(
        rows.iter().any(|r| r["first_error"]
            .as_str()
            .is_some_and(|e| e.contains("<redacted>"))),
        "the error is kept, redacted: {rows:#?}"
    );
    assert!(
        !out.contains(KEY) && !err.contains(KEY),
        "terminal: {out}\n{err}"
    );
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).expect("results dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read");
        files += 1;
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "{} holds the key",
            path.display()
        );
    }
    assert!(files >= 4, "results and reports were written: {files}");
}

/// `-o` on a directory that holds another run refuses (appending would mix two runs under one
/// header) unless `--force`, which replaces it.
#[test]
fn a_second_run_into_the_same_directory_is_refused_unless_forced() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-twice");
    let first = run_small(&sim.url, &dir, "512", "1", "300ms", "16", &[]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let rows = cells(&dir).len();
    let again = run_small(&sim.url, &dir, "512", "1", "300ms", "16", &[]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(err.contains("--resume") && err.contains("--force"), "{err}");
    assert_eq!(cells(&dir).len(), rows, "nothing appended");
    let forced = run_small(&sim.url, &dir, "512", "1", "300ms", "16", &["--force"]);
    assert!(
        forced.status.success(),
        "{}",
        String::from_utf8_lossy(&forced.stderr)
    );
    assert_eq!(cells(&dir).len(), rows, "replaced, not appended");
}

/// Out of file descriptors on this machine is said as such, not as "is the server running?".
#[test]
fn running_out_of_file_descriptors_is_named() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-fd-limit");
    let cmd = format!(
        "ulimit -n 48 && exec '{}' run --url {} --contexts 512 --concurrency 64 --duration 1s --max-output 16 --format none --output '{}'",
        bin().display(),
        sim.url,
        dir.display()
    );
    let o = std::process::Command::new("sh")
        .args(["-c", &cmd])
        .env_remove("OPENAI_API_KEY")
        .output()
        .expect("sh");
    let rows = cells(&dir);
    let r = cell(&rows, "decode", 512, 64);
    assert_eq!(r["status"], "failed", "{r:#}\n{}", text(&o));
    let first = r["first_error"].as_str().unwrap_or_default();
    assert!(
        first.contains("too many open files") && first.contains("ulimit"),
        "{first}"
    );
}
