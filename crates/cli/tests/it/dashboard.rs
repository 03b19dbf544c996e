//! The dashboard end to end, in a real pseudo-terminal: `demo` draws it, the matrix fills in,
//! `q` stops the run with exit 130 and the results kept, and the terminal is given back
//! (alternate screen left, cursor shown). Without a terminal (`| cat`) the same run prints
//! plain lines; `--display json` prints one parseable event per line, readiness, request
//! errors with their retry and over-capacity skips included. A session run's dashboard shows
//! the session cell in its own words, its cells counted as planned, the server's gauges and
//! its turns live.

use crate::common::*;
use expectrl::{Expect, Session};
use std::io::Read;
use std::time::{Duration, Instant};

/// Whether `needle` occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Reads the pty into `screen` (and `raw`) until `done` holds for the screen's text, the child
/// closes the pty, or 60 s pass; returns whether `done` held.
fn read_until(
    p: &mut expectrl::session::OsSession,
    screen: &mut vt100::Parser,
    raw: &mut Vec<u8>,
    done: impl Fn(&str) -> bool,
) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut buf = [0u8; 8192];
    while Instant::now() < deadline {
        match p.try_read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                screen.process(&buf[..n]);
                raw.extend_from_slice(&buf[..n]);
                if done(&screen.screen().contents()) {
                    return true;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // EIO: the child exited and the pty closed.
            Err(_) => return false,
        }
    }
    let _ = p.read(&mut buf);
    false
}

/// `demo` in a pseudo-terminal of 120×40. A machine without pseudo-terminals (a minimal
/// container) cannot run these tests: they say so and skip, as the llama.cpp suite does
/// without its server, except under CI (`CI` set), where the dashboard must be tested.
fn spawn_pty(args: &[&str], dir: &std::path::Path) -> Option<expectrl::session::OsSession> {
    spawn_pty_sized(args, dir, (120, 40))
}

/// [`spawn_pty`] in a pseudo-terminal of `cols`×`rows`.
fn spawn_pty_sized(
    args: &[&str],
    dir: &std::path::Path,
    (cols, rows): (u16, u16),
) -> Option<expectrl::session::OsSession> {
    let mut cmd = std::process::Command::new(bin());
    cmd.args(args)
        .arg("--output")
        .arg(dir)
        .env("TERM", "xterm-256color")
        .env_remove("OPENAI_API_KEY");
    let mut p = match Session::spawn(cmd) {
        Ok(p) => p,
        Err(e) if std::env::var_os("CI").is_some() => {
            panic!("CI must test the dashboard, but no pseudo-terminal opens here: {e}")
        }
        Err(e) => {
            eprintln!("skipped: no pseudo-terminal here ({e})");
            return None;
        }
    };
    p.get_process_mut()
        .set_window_size(cols, rows)
        .expect("window size");
    Some(p)
}

/// A screen as a terminal would show it: ratatui writes only what changed, with cursor moves
/// between, so the raw bytes cannot be searched for text.
fn screen() -> vt100::Parser {
    screen_sized(120, 40)
}

/// [`screen`] of `cols`×`rows`.
fn screen_sized(cols: u16, rows: u16) -> vt100::Parser {
    let size = |n: u16| std::num::NonZeroU16::new(n).expect("non-zero");
    vt100::Parser::new(size(rows), size(cols), 0)
}

/// Whether `bytes` hold a sequence only a dashboard frame writes: a cursor position
/// (`ESC [ row ; col H`) or hiding the cursor.
fn draws(bytes: &[u8]) -> bool {
    if find(bytes, b"\x1b[?25l") {
        return true;
    }
    bytes.windows(2).enumerate().any(|(i, w)| {
        w == b"\x1b[" && {
            let rest = &bytes[i + 2..];
            let digits = |s: &[u8]| s.iter().take_while(|c| c.is_ascii_digit()).count();
            let a = digits(rest);
            a > 0
                && rest.get(a) == Some(&b';')
                && digits(&rest[a + 1..]) > 0
                && rest.get(a + 1 + digits(&rest[a + 1..])) == Some(&b'H')
        }
    })
}

/// The exit code in an expectrl wait status (`Exited(Pid(..), code)`).
fn exit_code(status: &impl std::fmt::Debug) -> String {
    let s = format!("{status:?}");
    s.rsplit(", ")
        .next()
        .unwrap_or_default()
        .trim_end_matches(')')
        .to_string()
}

#[test]
fn the_dashboard_fills_in_and_q_stops_with_the_results_kept() {
    let _serial = timing_lock();
    let dir = out_dir("dashboard-pty");
    let _ = std::fs::remove_dir_all(&dir);
    let args = ["demo", "--contexts", "128,256", "--concurrency", "1,2"];
    let Some(mut p) = spawn_pty(
        &[&args[..], &["--duration", "2s", "--format", "none"]].concat(),
        &dir,
    ) else {
        return;
    };
    let mut screen = screen();
    let mut raw: Vec<u8> = Vec::new();
    let filled = read_until(&mut p, &mut screen, &mut raw, |s| {
        s.contains("Sustained decode") && s.contains("decode 128 × 1: Valid")
    });
    assert!(
        filled,
        "the matrix fills in on screen:\n{}",
        screen.screen().contents()
    );
    assert!(
        find(&raw, b"\x1b[?1049h"),
        "the dashboard takes the alternate screen"
    );
    let drawn = raw.len();
    p.send("q").expect("send q");
    read_until(&mut p, &mut screen, &mut raw, |_| false);
    let after = &raw[drawn..];
    assert!(find(after, b"\x1b[?1049l"), "the alternate screen is left");
    assert!(find(after, b"\x1b[?25h"), "the cursor is shown again");
    let status = p.get_process().wait().expect("exit status");
    assert!(
        format!("{status:?}").contains(", 130)"),
        "q exits 130: {status:?}"
    );
    let rows = cells(&dir);
    assert!(
        rows.iter().any(|r| r["status"] == "valid"),
        "what was measured is kept: {rows:?}"
    );
    assert_eq!(run_json(&dir)["state"], "interrupted");
}

#[test]
fn without_a_terminal_lines_and_json_events() {
    let _serial = timing_lock();
    for display in ["plain", "json"] {
        let dir = out_dir(&format!("dashboard-{display}"));
        let _ = std::fs::remove_dir_all(&dir);
        let d = dir.to_str().unwrap_or_default();
        let mut args = vec![
            "demo",
            "--contexts",
            "128",
            "--concurrency",
            "2",
            "--duration",
            "1s",
            "--format",
            "none",
            "--output",
            d,
        ];
        if display == "json" {
            args.extend(["--display", "json"]);
        }
        // No --display: stdout is a pipe, so lines.
        let o = run_bin(&args);
        assert!(o.status.success(), "{}", text(&o));
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(!out.contains("\u{1b}[?1049h"), "no dashboard on a pipe");
        if display == "plain" {
            assert!(out.contains("[2/2] decode 128 × 2"), "{out}");
            assert!(out.contains("  readiness: "), "{out}");
            assert!(out.contains("window closed after"), "{out}");
        } else {
            let events: Vec<serde_json::Value> = out
                .lines()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
                .collect();
            let kinds: Vec<&str> = events.iter().filter_map(|e| e["event"].as_str()).collect();
            for k in [
                "cell_started",
                "phase",
                "streams_started",
                "readiness",
                "window",
                "cell_done",
            ] {
                assert!(kinds.contains(&k), "{k} in {kinds:?}");
            }
            let done = events.iter().filter(|e| e["event"] == "cell_done").count();
            assert_eq!(done, 2, "one cell_done per cell");
        }
    }
}

/// A server that fails half its requests, and a cell over the KV capacity: `--display json`
/// reports each failed request (with the window's retry), how each window opened, and the
/// skipped cell with why, every event one parseable line; `plain` prints the same as lines.
#[test]
fn json_events_report_readiness_request_errors_and_skips() {
    let _serial = timing_lock();
    let dir = out_dir("dashboard-json-faults");
    // The seed at 1/64 holds 33,152 KV tokens: 256 × (128 + 64) does not fit.
    let profile = dir.join("faulty.toml");
    std::fs::write(
        &profile,
        "base = \"seed\"\n[faults]\nhttp_error_rate = 0.5\n",
    )
    .expect("write profile");
    for display in ["json", "plain"] {
        let out_dir = dir.join(display);
        let args = [
            "demo",
            "--profile",
            profile.to_str().unwrap_or_default(),
            "--contexts",
            "128",
            "--concurrency",
            "2,256",
            "--duration",
            "2s",
            "--format",
            "none",
            "--display",
            display,
            "--output",
            out_dir.to_str().unwrap_or_default(),
        ];
        let o = run_bin(&args);
        let out = String::from_utf8_lossy(&o.stdout).to_string();
        if display == "plain" {
            assert!(out.contains("request error, stream "), "{out}");
            assert!(
                out.contains("skipped: decode 128 × 256: over KV capacity"),
                "{out}"
            );
            continue;
        }
        let events: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let of = |k: &str| -> Vec<&serde_json::Value> {
            events.iter().filter(|e| e["event"] == k).collect()
        };
        let skipped = of("skipped");
        assert_eq!(skipped.len(), 1, "{out}");
        assert_eq!(skipped[0]["concurrency"], 256);
        assert_eq!(skipped[0]["context_tokens"], 128);
        let reason = skipped[0]["reason"].as_str().unwrap_or_default();
        assert!(
            reason.starts_with("over KV capacity (needs 49152 tokens, has 33152)"),
            "{reason}"
        );
        let readiness = of("readiness");
        assert_eq!(readiness.len(), 1, "one decode window ran: {out}");
        let r = readiness[0];
        assert!(
            r["readiness_by"].is_string() && r["reason"].is_string(),
            "{r}"
        );
        assert!(r["after_s"].as_f64().is_some_and(|s| s >= 0.0), "{r}");
        assert_eq!(r["concurrency"], 2);
        let errors = of("request_error");
        assert!(!errors.is_empty(), "half the requests fail: {out}");
        for e in &errors {
            assert!(
                ["warm-up", "window", "burst"].contains(&e["phase"].as_str().unwrap_or("")),
                "{e}"
            );
            assert!(e["stream"].is_u64() && e["kind"].is_string(), "{e}");
            assert!(
                e["message"].is_string() && e["retry_after"].is_boolean(),
                "{e}"
            );
            // The window's closed loop says when it sends again; a warm-up does not re-send.
            assert_eq!(e["phase"] == "window", e["retry_in_s"].is_f64(), "{e}");
        }
        assert!(
            errors.iter().any(|e| e["phase"] == "window"),
            "a window request failed and was retried: {out}"
        );
    }
}

/// A run that completes on the dashboard exits 0 and gives the terminal back before the final
/// tables are printed on the main screen.
#[test]
fn a_completed_run_exits_0_with_the_terminal_restored() {
    let _serial = timing_lock();
    let dir = out_dir("dashboard-pty-done");
    let args = ["demo", "--contexts", "128", "--concurrency", "1"];
    let Some(mut p) = spawn_pty(
        &[&args[..], &["--duration", "1s", "--format", "none"]].concat(),
        &dir,
    ) else {
        return;
    };
    let (mut screen, mut raw) = (screen(), Vec::new());
    read_until(&mut p, &mut screen, &mut raw, |_| false);
    let status = p.get_process().wait().expect("exit status");
    assert_eq!(exit_code(&status), "0", "{status:?}");
    assert!(
        find(&raw, b"\x1b[?1049h"),
        "the dashboard took the alternate screen"
    );
    let left = raw
        .windows(8)
        .rposition(|w| w == b"\x1b[?1049l")
        .expect("the alternate screen is left");
    let after = &raw[left..];
    assert!(find(after, b"\x1b[?25h"), "the cursor is shown again");
    assert!(
        find(after, b"Speed test matrix"),
        "the final tables come after, on the main screen"
    );
    assert!(
        !draws(&after[8..]),
        "no frame is drawn after the terminal is given back"
    );
    assert_eq!(run_json(&dir)["state"], "completed");
}

/// SIGTERM while the dashboard draws: the drawing stops before the terminal is restored (no
/// frame lands on the main screen), the run saves what it has and exits 130.
#[test]
fn sigterm_stops_the_drawing_then_restores_the_terminal() {
    let _serial = timing_lock();
    let dir = out_dir("dashboard-pty-term");
    let args = ["demo", "--contexts", "128,256", "--concurrency", "1,2"];
    let Some(mut p) = spawn_pty(
        &[&args[..], &["--duration", "3s", "--format", "none"]].concat(),
        &dir,
    ) else {
        return;
    };
    let (mut screen, mut raw) = (screen(), Vec::new());
    let drawn = read_until(&mut p, &mut screen, &mut raw, |s| {
        s.contains("Sustained decode") && s.contains("decode 128 × 1")
    });
    assert!(
        drawn,
        "the dashboard draws:\n{}",
        screen.screen().contents()
    );
    let pid = p.get_process().pid().to_string();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("run kill");
    assert!(kill.success());
    read_until(&mut p, &mut screen, &mut raw, |_| false);
    let status = p.get_process().wait().expect("exit status");
    assert_eq!(exit_code(&status), "130", "{status:?}");
    let left = raw
        .windows(8)
        .rposition(|w| w == b"\x1b[?1049l")
        .expect("the alternate screen is left");
    assert!(
        find(&raw[left..], b"\x1b[?25h"),
        "the cursor is shown again"
    );
    assert!(
        !draws(&raw[left + 8..]),
        "no frame is drawn after the terminal is given back: {:?}",
        String::from_utf8_lossy(&raw[left..])
    );
    assert_eq!(run_json(&dir)["state"], "interrupted");
}

/// The output viewer on a real run: `o` opens it on the window's first stream, `n` moves to
/// the second, whose text arrives through the stream's ring (the title counts its request);
/// Esc closes it and the run goes on to complete (Esc stops the run only with the viewer shut).
#[test]
fn the_output_viewer_shows_a_streams_text_and_esc_only_closes_it() {
    let _serial = timing_lock();
    let dir = out_dir("dashboard-pty-viewer");
    let args = ["demo", "--contexts", "128", "--concurrency", "2"];
    let Some(mut p) = spawn_pty(
        &[&args[..], &["--duration", "6s", "--format", "none"]].concat(),
        &dir,
    ) else {
        return;
    };
    let (mut screen, mut raw) = (screen(), Vec::new());
    let windowed = read_until(&mut p, &mut screen, &mut raw, |s| {
        s.contains("decode 128 × 2 · window")
    });
    assert!(windowed, "the window runs:\n{}", screen.screen().contents());
    p.send("o").expect("send o");
    p.send("n").expect("send n");
    let shown = read_until(&mut p, &mut screen, &mut raw, |s| {
        s.contains("Output · decode 128 × 2 · stream 2/2 · request")
            && !s.contains("waiting for text")
    });
    assert!(shown, "stream 2's text:\n{}", screen.screen().contents());
    p.send("\x1b").expect("send Esc");
    let closed = read_until(&mut p, &mut screen, &mut raw, |s| !s.contains("Output ·"));
    assert!(
        closed,
        "Esc closes the viewer:\n{}",
        screen.screen().contents()
    );
    read_until(&mut p, &mut screen, &mut raw, |_| false);
    let status = p.get_process().wait().expect("exit status");
    assert_eq!(exit_code(&status), "0", "the run went on: {status:?}");
    assert_eq!(run_json(&dir)["state"], "completed");
}

/// The footer's `cells X/Y`, where the screen shows it.
fn cells_counted(screen: &str) -> Option<(u32, u32)> {
    // The header's "3 cells planned" has no figure after it: the footer's is the one that
    // parses.
    screen.split(" cells ").skip(1).find_map(|rest| {
        let (done, rest) = rest.split_once('/')?;
        let planned: String = rest.chars().take_while(char::is_ascii_digit).collect();
        Some((done.trim().parse().ok()?, planned.parse().ok()?))
    })
}

/// A session run on the dashboard (issue 42), in a 160×48 pseudo-terminal against the tiny
/// vLLM simulator: the current cell says its own words (a closed loop of S sessions, never
/// "open loop"), the cells are counted as planned (a prefill cell and two session cells: never
/// more done than planned), the server's gauges are read once a session cell runs, and a live
/// per-turn figure (the latest turns' TTFTs) shows while it runs.
#[test]
fn a_session_run_shows_its_own_words_planned_cells_gauges_and_turns() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile"));
    let dir = out_dir("dashboard-pty-sessions");
    let args = [
        "run",
        "--url",
        &sim.url,
        "--api",
        "chat",
        "--contexts",
        "1K",
        "--sessions",
        "1,2",
        "--turns",
        "2",
        "--turn-input-len",
        "128",
        "--turn-output-len",
        "32",
        "--system-prompt-len",
        "256",
        "--max-output",
        "64",
        "--think-time",
        "1s",
        "--format",
        "none",
    ];
    let Some(mut p) = spawn_pty_sized(&args, &dir, (160, 48)) else {
        return;
    };
    let (mut screen, mut raw) = (screen_sized(160, 48), Vec::new());
    let seen = std::cell::RefCell::new(Vec::<String>::new());
    let counts = std::cell::RefCell::new(Vec::<(u32, u32)>::new());
    let all = |s: &str| {
        counts.borrow_mut().extend(cells_counted(s));
        let mut seen = seen.borrow_mut();
        let mut note = |what: &str, holds: bool| {
            if holds && !seen.iter().any(|w| w == what) {
                seen.push(what.to_string());
            }
        };
        let running = s.contains("sessions 1K × 2 · closed loop");
        note("words", running && !s.contains("open loop"));
        note("planned", s.contains("3 cells planned"));
        note(
            "gauges",
            running && s.contains("running ") && !s.contains("no gauges read yet"),
        );
        // A latest turn's TTFT, in figures.
        let ttft = s
            .split("TTFT latest turns ")
            .nth(1)
            .and_then(|t| t.chars().next());
        note("turns", running && ttft.is_some_and(|c| c.is_ascii_digit()));
        seen.len() == 4
    };
    let shown = read_until(&mut p, &mut screen, &mut raw, all);
    let last = screen.screen().contents();
    assert!(shown, "seen only {:?}:\n{last}", seen.borrow());
    read_until(&mut p, &mut screen, &mut raw, |_| false);
    let status = p.get_process().wait().expect("exit status");
    assert_eq!(exit_code(&status), "0", "{status:?}");
    let counts = counts.into_inner();
    assert!(
        counts
            .iter()
            .all(|&(done, planned)| planned == 3 && done <= planned),
        "cells counted as planned: {counts:?}"
    );
    let rows = cells(&dir);
    assert_eq!(
        rows.iter().filter(|r| r["phase"] == "session").count(),
        2,
        "{rows:?}"
    );
}
