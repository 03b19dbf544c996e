//! `run --metrics-listen`: the run's live figures scraped over HTTP while it goes, as
//! Prometheus would: the cell in progress and its tok/s and TTFT move, cells done climbs to the
//! plan's count, and the endpoint is gone once the run has ended. The Grafana dashboard in
//! `deploy/` queries only metrics the endpoint serves (or the engines' own).

use crate::common::*;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One scrape of `/metrics` at `addr`: the body, or `None` when nothing answers.
fn scrape(addr: &str) -> Option<String> {
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    raw.split_once("\r\n\r\n").map(|(_, b)| b.to_string())
}

/// The value of the sample line `name` (no labels) in `text`.
fn value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = l.local_addr().expect("address").to_string();
    drop(l);
    addr
}

#[test]
fn live_metrics_move_while_the_run_goes_and_the_endpoint_closes_with_it() {
    let _serial = timing_lock();
    let sim = Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let addr = free_addr();
    let dir = out_dir("live-metrics");
    let d = dir.display().to_string();
    let mut child = Command::new(bin())
        .args([
            "run",
            "--url",
            &sim.url,
            "--contexts",
            "1K",
            "--concurrency",
            "1,2",
        ])
        .args([
            "--duration",
            "2s",
            "--max-output",
            "32",
            "--prefill-contexts",
            "none",
        ])
        .args(["--display", "plain", "--no-hw-monitor"])
        .args(["--output", &d, "--metrics-listen", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the run");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut scrapes = Vec::new();
    while child.try_wait().expect("wait").is_none() && Instant::now() < deadline {
        scrapes.extend(scrape(&addr));
        std::thread::sleep(Duration::from_millis(25));
    }
    let out = child.wait_with_output().expect("the run ends");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(scrape(&addr).is_none(), "the endpoint outlived the run");
    assert!(scrapes.len() > 10, "{} scrapes", scrapes.len());
    // The plan's cells: as many as the run's rows (its prefill and the two decode cells).
    let rows = std::fs::read_to_string(dir.join("cells.jsonl")).expect("cells.jsonl");
    let cells = rows.lines().count() as f64;
    assert_eq!(cells, 3.0, "{rows}");
    // Known from the first cell's start on (0 before it).
    let planned: Vec<f64> = scrapes
        .iter()
        .filter_map(|s| value(s, "llmib_cells_planned"))
        .filter(|p| *p > 0.0)
        .collect();
    assert!(
        !planned.is_empty() && planned.iter().all(|p| *p == cells),
        "{planned:?}"
    );
    let done: Vec<f64> = scrapes
        .iter()
        .filter_map(|s| value(s, "llmib_cells_done"))
        .collect();
    assert!(
        done.windows(2).all(|w| w[0] <= w[1]),
        "done only climbs: {done:?}"
    );
    // The endpoint stays up while the reports are written after the last row, so the last
    // scrapes read every cell done.
    assert_eq!(done.last().copied(), Some(cells), "{done:?}");
    let moving = scrapes
        .iter()
        .filter_map(|s| value(s, "llmib_cell_output_tokens_per_second"))
        .any(|r| r > 0.0);
    assert!(moving, "tok/s never moved");
    let ttft = scrapes
        .iter()
        .filter_map(|s| value(s, "llmib_cell_ttft_seconds_count"))
        .fold(0.0, f64::max);
    assert!(ttft >= 1.0, "no TTFT observed");
    assert!(
        scrapes
            .iter()
            .any(|s| s.contains(r#"llmib_cell_info{phase="decode",context="1K",concurrency="2""#)),
        "the N = 2 cell was never named"
    );
    drop(sim);
}

#[test]
fn an_address_in_use_stops_the_run_before_the_probe() {
    let held = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = held.local_addr().expect("address").to_string();
    let o = run_bin(&[
        "run",
        "--url",
        "http://127.0.0.1:9",
        "--metrics-listen",
        &addr,
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--metrics-listen") && err.contains("cannot listen"),
        "{err}"
    );
    assert!(!err.contains("127.0.0.1:9"), "the probe never ran: {err}");
}

/// Every metric the Grafana dashboard queries is one the endpoint serves, or an engine's own.
#[test]
fn the_grafana_dashboard_queries_only_served_metrics() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../deploy/grafana/llm-inference-bench.json");
    let d: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("dashboard")).expect("JSON");
    let served = [
        "llmib_cells_planned",
        "llmib_cells_done",
        "llmib_request_errors",
        "llmib_cell_info",
        "llmib_cell_requests_ended",
        "llmib_cell_output_tokens",
        "llmib_cell_output_tokens_per_second",
        "llmib_cell_ttft_seconds_bucket",
        "llmib_cell_tpot_seconds_bucket",
    ];
    let problems = dashboard_problems(&d, &served);
    assert!(problems.is_empty(), "{problems:#?}");
    // A planted query of a metric nobody serves is found.
    let mut planted = d.clone();
    planted["panels"][0]["targets"][0]["expr"] = "llmib_cell_tok_per_s".into();
    assert_eq!(dashboard_problems(&planted, &served).len(), 1);
}

/// The `llmib_` metrics a dashboard's queries name that are not `served`.
fn dashboard_problems(d: &serde_json::Value, served: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for p in d["panels"].as_array().into_iter().flatten() {
        for t in p["targets"].as_array().into_iter().flatten() {
            let expr = t["expr"].as_str().unwrap_or("");
            for word in expr.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':')) {
                if word.starts_with("llmib_") && !served.contains(&word) {
                    out.push(format!("panel {}: {word}", p["title"]));
                }
            }
        }
    }
    out
}
