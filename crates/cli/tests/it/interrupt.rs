//! Runs that stop before their end — killed, interrupted by Ctrl-C, or cut by a server that
//! died — keep every finished row readable, and `--resume` finishes them.

use crate::common::*;
use crate::run::exact_sim;

/// Starts `run` in the background on contexts 512, 1K × concurrency 1, 2 (6 rows), stderr piped.
fn spawn_small_run(url: &str, dir: &str, duration: &str) -> std::process::Child {
    std::process::Command::new(bin())
        .args([
            "run",
            "--url",
            url,
            "--contexts",
            "512,1K",
            "--concurrency",
            "1,2",
            "--duration",
            duration,
        ])
        .args(["--max-output", "64", "--output", dir, "--format", "none"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn the run")
}

/// Waits (30 s at most) until `dir` holds `n` rows.
fn wait_for_rows(dir: &std::path::Path, n: usize) {
    let t = std::time::Instant::now();
    while cells(dir).len() < n && t.elapsed().as_secs() < 30 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_killed_run_leaves_readable_results_and_resume_finishes_it() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-kill-resume");
    let d = dir.to_str().unwrap_or_default().to_string();
    let mut child = spawn_small_run(&sim.url, &d, "700ms");
    // Kill it (SIGKILL, no chance to clean up) once two rows are saved.
    wait_for_rows(&dir, 2);
    child.kill().expect("kill");
    let _ = child.wait();
    let before = cells(&dir);
    assert!(before.len() >= 2 && before.len() < 6, "{before:#?}");
    assert_eq!(run_json(&dir)["state"], "running");

    // A flag that would change the measurement is refused by name, before any cell runs; one
    // that only governs the run is applied and noted in run.json.
    let o = run_bin(&["run", "--resume", &d, "--url", &sim.url, "--duration", "5s"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--duration"),
        "{}",
        text(&o)
    );
    assert_eq!(cells(&dir).len(), before.len());

    let o = run_bin(&[
        "run",
        "--resume",
        &d,
        "--url",
        &sim.url,
        "--format",
        "none",
        "--idle-timeout",
        "5m",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let info = run_json(&dir);
    assert_eq!(info["plan"]["settings"]["idle_timeout_s"], 300.0);
    assert!(
        info["notes"].as_array().is_some_and(|n| n
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.contains("--idle-timeout")))),
        "{info:#}"
    );
    let after = cells(&dir);
    for c in [512u64, 1024] {
        assert_eq!(cell(&after, "prefill", c, 1)["status"], "valid");
        for n in [1u64, 2] {
            assert_eq!(
                cell(&after, "decode", c, n)["status"],
                "valid",
                "C={c} N={n}"
            );
        }
    }
    // What was measured before the kill was kept, not measured again.
    let keys = |rows: &[serde_json::Value]| -> Vec<String> {
        rows.iter()
            .map(|r| {
                format!(
                    "{}-{}-{}",
                    r["phase"], r["context_tokens"], r["concurrency"]
                )
            })
            .collect()
    };
    let all = keys(&after);
    for k in keys(&before) {
        assert_eq!(
            all.iter().filter(|x| **x == k).count(),
            1,
            "{k} measured twice"
        );
    }
    assert_eq!(run_json(&dir)["state"], "completed");
}

#[test]
fn ctrl_c_saves_what_is_done_and_exits_130() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    // SIGTERM (what kill, systemd and container runtimes send) stops the run like Ctrl-C.
    for signal in ["-INT", "-TERM"] {
        let dir = out_dir(&format!("run-sig{}", &signal[1..].to_lowercase()));
        let d = dir.to_str().unwrap_or_default().to_string();
        let child = spawn_small_run(&sim.url, &d, "2s");
        wait_for_rows(&dir, 1);
        let ok = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .map(|s| s.success());
        assert_eq!(ok.ok(), Some(true));
        let out = child.wait_with_output().expect("wait");
        assert_eq!(
            out.status.code(),
            Some(130),
            "{signal}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let rows = cells(&dir);
        assert_eq!(
            rows.len(),
            6,
            "{signal}: every planned cell has a row: {rows:#?}"
        );
        assert!(rows.iter().any(|r| r["status"] == "not_run"), "{rows:#?}");
        assert_eq!(run_json(&dir)["state"], "interrupted", "{signal}");
        // The terminal is told which signal came (a kill was told to press Ctrl-C).
        let err = String::from_utf8_lossy(&out.stderr);
        let says = if signal == "-TERM" {
            "SIGTERM"
        } else {
            "Ctrl-C"
        };
        assert!(err.contains(says), "{signal}: {err}");
    }
}

/// Two Ctrl-C in quick succession force the run out, and run.json says interrupted, not
/// running (the second signal used to exit before anything was written).
#[test]
fn a_second_ctrl_c_forces_quit_and_run_json_is_not_left_running() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-sigint-twice");
    let d = dir.to_str().unwrap_or_default().to_string();
    let child = spawn_small_run(&sim.url, &d, "2s");
    wait_for_rows(&dir, 1);
    for _ in 0..2 {
        let ok = std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .map(|s| s.success());
        assert_eq!(ok.ok(), Some(true));
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(run_json(&dir)["state"], "interrupted");
    assert!(!dir.join("run.json.tmp").exists());
}

#[test]
fn a_server_that_dies_mid_run_ends_it_with_code_3_and_keeps_the_results() {
    let _serial = timing_lock();
    let args = ["sim", "--profile", "tiny"].map(String::from);
    let (mut sim, url) = spawn_sim_process(&args);
    let dir = out_dir("run-server-dies");
    let d = dir.to_str().unwrap_or_default().to_string();
    let run = spawn_small_run(&url, &d, "1s");
    wait_for_rows(&dir, 2);
    sim.kill().expect("kill the server");
    let _ = sim.wait();
    let out = run.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(
        err.contains("stopped answering") && err.contains("--resume"),
        "{err}"
    );
    let rows = cells(&dir);
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert_eq!(
        rows[0]["status"], "valid",
        "measured before the server died: {rows:#?}"
    );
    assert!(rows.iter().any(|r| r["status"] == "not_run"), "{rows:#?}");
    assert_eq!(run_json(&dir)["state"], "aborted");

    // The server is back (on another port): --resume measures the cell the crash cut (the run
    // ends as server-gone only after a cell failed on the connection) and the Not run ones, and
    // leaves no failure behind; no --retry-failed needed for that.
    let back = Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let o = run_bin(&[
        "run", "--resume", &d, "--url", &back.url, "--format", "none",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let rows = latest_rows(&dir);
    assert_eq!(rows.len(), 6, "{rows:#?}");
    assert!(
        rows.iter().all(|r| r["status"] == "valid"),
        "every cell measured again: {rows:#?}"
    );
}

/// The last row of each cell (a resumed run appends rows that replace earlier ones).
fn latest_rows(dir: &std::path::Path) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for r in cells(dir) {
        let same = |o: &serde_json::Value| {
            o["phase"] == r["phase"]
                && o["context_tokens"] == r["context_tokens"]
                && o["concurrency"] == r["concurrency"]
        };
        match out.iter_mut().find(|o| same(o)) {
            Some(o) => *o = r,
            None => out.push(r),
        }
    }
    out
}

/// Skips the decode cell at N = 2 as soon as its window's streams start (the dashboard's `s`).
struct SkipAtTwo {
    skip: llmib_client::CellSkip,
    current: std::sync::Mutex<u32>,
}

impl llmib_client::Progress for SkipAtTwo {
    fn event(&self, e: llmib_client::ProgressEvent) {
        use llmib_client::ProgressEvent as E;
        let Ok(mut n) = self.current.lock() else {
            return;
        };
        match e {
            E::CellStarted { cell, .. } if cell.key.phase == llmib_core::Phase::Decode => {
                *n = cell.key.concurrency
            }
            E::WindowLive(_) if *n == 2 => {
                assert!(self.skip.skip(), "a cell is armed while it runs");
            }
            _ => {}
        }
    }
}

#[test]
fn a_skipped_cell_is_not_run_and_the_run_goes_on() {
    let _serial = timing_lock();
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = out_dir("skip-a-cell");
    let rows = rt.block_on(async {
        let sim = llmib_sim::spawn(exact_sim()).await.expect("sim");
        let probe = llmib_client::Engine::probe(&llmib_client::ProbeOptions::new(sim.base_url()))
            .await
            .expect("probe");
        let settings = llmib_core::Settings {
            contexts: vec![llmib_core::ContextSpec::Tokens(1024)],
            concurrency: vec![1, 2, 4],
            duration_s: 1.0,
            max_output: 32,
            skip_prefill: true,
            ..Default::default()
        };
        let plan = llmib_core::Plan::build(settings, Some(8192), Some(1 << 20));
        let store = llmib_core::RunDir::create(&dir).expect("store");
        let skip = llmib_client::CellSkip::default();
        let progress = SkipAtTwo {
            skip: skip.clone(),
            current: Default::default(),
        };
        let end = llmib_client::run_matrix(llmib_client::MatrixRun {
            model: probe.engine.model().served_model.clone(),
            engine: std::sync::Arc::new(probe.engine),
            plan: &plan,
            store: &store,
            done: Default::default(),
            progress: &progress,
            cancel: llmib_client::CancellationToken::new(),
            hardware: None,
            skip,
            shard: None,
        })
        .await
        .expect("run");
        assert_eq!(end, llmib_client::MatrixEnd::Completed);
        sim.shutdown().await;
        store.load_cells().expect("rows").0
    });
    let by_n = |n: u32| {
        rows.iter()
            .find(|r| r.concurrency == n)
            .unwrap_or_else(|| panic!("row N={n}"))
    };
    assert_eq!(by_n(2).status, llmib_core::CellStatus::NotRun);
    assert_eq!(
        by_n(2).status_reason.as_deref(),
        Some(llmib_client::SKIPPED)
    );
    assert!(by_n(2).total_tok_per_s.is_none());
    for n in [1, 4] {
        assert_eq!(by_n(n).status, llmib_core::CellStatus::Valid, "N={n}");
    }
}
