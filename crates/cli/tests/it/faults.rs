//! Reliability against silent, hostile and failing servers, and against the machine's own
//! limits (docs/reliability.md): the real binary against the simulator's fault knobs.

use crate::common::*;
use crate::e2e::Bench;
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
        // The idle limit is well inside the window: a stall comes within 32 tokens of the
        // start, so its silence passes the limit before the window ends, on any host (with a
        // limit as long as the window, a fast host reached the window's end first and the
        // cancelled streams left a Valid row).
        let o = run_small(
            &sim.url,
            &dir,
            "512",
            "1,2",
            "2s",
            "32",
            &["--first-token-timeout", "1s", "--idle-timeout", "500ms"],
        );
        let took = t.elapsed();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.code().is_some(), "{name}: no crash: {err}");
        assert!(took.as_secs() < 40, "{name}: took {took:?}");
        let rows = cells(&dir);
        assert_eq!(rows.len(), 3, "{name}: every cell has a row: {rows:#?}");
        // A prefill asks for one token: a stream that stalls after its first token finishes.
        // A server that never sends a first token is given up after two cells: the third is
        // Not run, and the run exits 3 saying why.
        if name == "headers" {
            assert_eq!(o.status.code(), Some(3), "{name}: {err}");
            assert!(err.contains("no first token in two cells"), "{name}: {err}");
            let last = &rows[2];
            assert_eq!(last["status"], "not_run", "{last:#}");
        }
        let hit = rows
            .iter()
            .take(2)
            .chain(rows.iter().skip(2).filter(|_| name == "stall"));
        let hit = hit.filter(|r| fault == "slow_first_byte" || r["phase"] == "decode");
        assert_eq!(hit.clone().count(), 2);
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
    let launch = format!(r#"bash -c "sglang serve --api-key {KEY} --port 1" GITHUB_PAT={KEY}"#);
    // A hardware string given by flag is text from outside too.
    let hardware = format!("8x H200 {KEY} 141GB");
    // The default report formats: the key must reach none of them.
    let o = Bench::run(&sim.url)
        .unset("--format")
        .set("--api-key", KEY)
        .small("512", "1", "1s", "16")
        .arg("--save-requests")
        .set("--launch-command", &launch)
        .set("--hardware", &hardware)
        .out_at(&dir)
        .go()
        .output;
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

/// A key from the environment and a URL's password are secrets too: the refused probe says
/// what to check and names neither.
#[test]
fn a_refused_probe_names_neither_the_env_key_nor_the_urls_password() {
    let mut cfg = exact_sim();
    cfg.api_key = Some("sk-right-1".into());
    let sim = Sim::start(cfg);
    let url = sim.url.replacen("://", "://bob:pw-secret-7@", 1);
    let dir = out_dir("run-refused-probe");
    let o = std::process::Command::new(bin())
        .args([
            "run",
            "--url",
            &url,
            "--contexts",
            "512",
            "--concurrency",
            "1",
        ])
        .args([
            "--duration",
            "1s",
            "--output",
            dir.to_str().unwrap_or_default(),
        ])
        .env("OPENAI_API_KEY", "sk-wrong-2")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run the binary");
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("HTTP 401") && err.contains("`--api-key`"),
        "{err}"
    );
    assert!(
        !err.contains("pw-secret-7") && !err.contains("sk-wrong-2"),
        "{err}"
    );
    assert!(!text(&o).contains("pw-secret-7"));
}

/// A server that starts refusing mid-window (a hosted quota running out, 429): with
/// `Retry-After` each stream waits what the server asked before it sends again; without it, the
/// stream backs off from 50 ms, doubling. Either way the cell is Failed with the server's words.
#[test]
fn refused_requests_honour_retry_after_or_back_off() {
    let _serial = timing_lock();
    for retry_after in [Some(1u64), None] {
        let mut cfg = exact_sim();
        cfg.faults.queue_full_status = 429;
        // The warm-ups and the first requests of the window pass; then every request is refused.
        cfg.faults.refuse_after_requests = Some(24);
        cfg.faults.retry_after_s = retry_after;
        let sim = Sim::start(cfg);
        let dir = out_dir(&format!("run-retry-after-{}", retry_after.is_some()));
        let o = run_small(&sim.url, &dir, "512", "2", "3s", "32", &["--save-requests"]);
        // The prefill cell was measured before the quota ran out: the run is not all-failed.
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let rows = cells(&dir);
        let decode = cell(&rows, "decode", 512, 2);
        assert_eq!(decode["status"], "failed", "{decode:#}");
        assert!(
            decode["first_error"]
                .as_str()
                .is_some_and(|e| e.contains("429") && e.contains("Rate limit")),
            "{decode:#}"
        );
        let reqs = requests(&dir).remove(&(512, 2)).unwrap_or_default();
        for stream in 0..2u64 {
            let refused: Vec<f64> = reqs
                .iter()
                .filter(|r| r["stream"] == stream && r["outcome"]["end"] == "error")
                .map(|r| num(r, "sent_ns") / 1e9)
                .collect();
            assert!(refused.len() >= 2, "stream {stream}: {refused:?}");
            let gaps: Vec<f64> = refused.windows(2).map(|w| w[1] - w[0]).collect();
            match retry_after {
                Some(s) => assert!(
                    gaps.iter().all(|g| *g >= s as f64 * 0.95),
                    "Retry-After {s} s not honoured: {gaps:?}"
                ),
                None => {
                    assert!(gaps[0] < 0.5, "first backoff is short: {gaps:?}");
                    assert!(
                        gaps.windows(2).all(|w| w[1] > w[0] * 1.5),
                        "backoff grows: {gaps:?}"
                    );
                }
            }
        }
    }
}

/// A connection that closes in the middle of an event (half its JSON sent): the request fails
/// as a broken stream, the cell is Failed with that reason, the run goes on and nothing panics.
#[test]
fn a_stream_cut_mid_event_fails_its_cell_cleanly() {
    let _serial = timing_lock();
    let mut cfg = exact_sim();
    cfg.faults.disconnect_rate = 1.0;
    cfg.faults.disconnect_mid_event = true;
    let sim = Sim::start(cfg);
    let dir = out_dir("run-cut-mid-event");
    let o = run_small(&sim.url, &dir, "512", "2", "1s", "32", &[]);
    // The one-token prefill finishes before any cut: the run as a whole is not all-failed.
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!text(&o).contains("panicked"), "{}", text(&o));
    let rows = cells(&dir);
    assert_eq!(cell(&rows, "prefill", 512, 1)["status"], "valid");
    let d = cell(&rows, "decode", 512, 2);
    assert_eq!(d["status"], "failed", "{d:#}");
    let kinds: Vec<&String> = d["errors"]
        .as_object()
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    assert!(
        kinds.iter().any(|k| k.contains("stream_broken")
            || k.contains("malformed")
            || k.contains("no_done")),
        "{d:#}"
    );
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
