//! Helpers shared by the suites: the binary, temp dirs, the simulator, reading results.

#![allow(dead_code)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Path of the `llm-inference-bench` binary built for these tests.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_llm-inference-bench"))
}

/// The workspace's root (the docs, scripts and testdata are read from there).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A fresh directory under the target dir (kept after the test for inspection).
///
/// Panics when another test already took `name`: the test command runs tests side by side, and
/// two tests writing one directory would read each other's results.
pub fn out_dir(name: &str) -> PathBuf {
    claim_out_dir(name);
    let base = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("it")
        .join(name);
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("create test output dir");
    base
}

/// Records which test took each output directory's name; panics on a second test's claim.
fn claim_out_dir(name: &str) {
    static TAKEN: std::sync::Mutex<BTreeMap<String, String>> =
        std::sync::Mutex::new(BTreeMap::new());
    let test = std::thread::current()
        .name()
        .unwrap_or("a thread without a name")
        .to_string();
    let mut taken = TAKEN.lock().unwrap_or_else(|p| p.into_inner());
    let owner = taken
        .entry(name.to_string())
        .or_insert_with(|| test.clone());
    assert!(
        *owner == test,
        "the output directory {name:?} is taken by {owner} and asked for by {test}: give each test \
         its own (tests run side by side)"
    );
}

/// Runs the binary with `args`, with no API key from the environment.
pub fn run_bin(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .output()
        .expect("run the binary")
}

/// Stdout and stderr of an output, for assertion messages.
pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The rows of `cells.jsonl` in `dir`.
pub fn cells(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("cells.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `run.json` in `dir`.
pub fn run_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("run.json")).expect("run.json");
    serde_json::from_str(&text).expect("run.json is JSON")
}

/// The row for (phase, context, concurrency).
pub fn cell<'a>(rows: &'a [Value], phase: &str, context: u64, n: u64) -> &'a Value {
    rows.iter()
        .rev()
        .find(|r| r["phase"] == phase && r["context_tokens"] == context && r["concurrency"] == n)
        .unwrap_or_else(|| panic!("no {phase} row for C={context} N={n} in {rows:#?}"))
}

/// A number field of a row.
pub fn num(row: &Value, field: &str) -> f64 {
    row[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} is not a number in {row:#}"))
}

/// Starts the simulator in-process on 127.0.0.1:0 on a runtime of its own, so tests that run the
/// binary as a child process can use it from synchronous code.
pub struct Sim {
    pub url: String,
    rt: Option<tokio::runtime::Runtime>,
    handle: Option<llmib_sim::SimHandle>,
}

impl Sim {
    pub fn start(cfg: llmib_sim::SimConfig) -> Sim {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let handle = rt
            .block_on(llmib_sim::spawn(cfg))
            .expect("start the simulator");
        Sim {
            url: handle.base_url(),
            rt: Some(rt),
            handle: Some(handle),
        }
    }
}

impl Sim {
    /// The running simulator (its stamps, when started with `stamp_chunks`).
    pub fn handle(&self) -> &llmib_sim::SimHandle {
        self.handle
            .as_ref()
            .expect("the simulator runs until dropped")
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        if let (Some(rt), Some(h)) = (self.rt.as_ref(), self.handle.take()) {
            rt.block_on(h.shutdown());
        }
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Asserts `a` is within `pct` percent of `b`.
pub fn assert_close(what: &str, a: f64, b: f64, pct: f64) {
    let err = (a - b).abs() / b.abs().max(1e-12) * 100.0;
    assert!(
        err <= pct,
        "{what}: measured {a:.4}, expected {b:.4} (off by {err:.2}%, allowed {pct}%)"
    );
}

/// The slots that let tests run side by side (`timing_lock` for a timed test, `exclusive` for
/// one that keeps the cores busy): see `slots`.
pub use crate::slots::{assert_exclusive, exclusive, timing_lock};

/// The records of `requests.jsonl` in `dir`, by (context, concurrency) of their decode cell.
pub fn requests(dir: &Path) -> BTreeMap<(u64, u64), Vec<Value>> {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).expect("requests.jsonl");
    let mut by_cell: BTreeMap<(u64, u64), Vec<Value>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let r: Value = serde_json::from_str(line).expect("a requests.jsonl line is JSON");
        let key = (
            r["cell"]["context_tokens"].as_u64().expect("context"),
            r["cell"]["concurrency"].as_u64().expect("concurrency"),
        );
        by_cell.entry(key).or_default().push(r);
    }
    by_cell
}

/// The simulator as its own process (`sim ARGS --port 0`), as a user starts it: the child and
/// the URL it prints on its first line.
pub fn spawn_sim_process(args: &[String]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(bin())
        .args(args)
        .args(["--port", "0"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn the simulator");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("sim prints its URL");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("a URL")
        .trim_end_matches([';', ','])
        .to_string();
    (child, url)
}

/// The quantile function of `|(a[i] - a[0]) - (b[i] - b[0]) - median|` in ms over the pairs:
/// how far the instants `a` kept to `b` once a constant offset is taken out.
pub fn spread(a: &[f64], b: &[f64]) -> impl Fn(f64) -> f64 {
    let diffs: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - a[0]) - (y - b[0]))
        .collect();
    let mut sorted = diffs.clone();
    sorted.sort_by(f64::total_cmp);
    let median = sorted[sorted.len() / 2];
    let mut errs: Vec<f64> = diffs.iter().map(|d| (d - median).abs()).collect();
    errs.sort_by(f64::total_cmp);
    move |p: f64| errs[((errs.len() as f64 * p).ceil() as usize).clamp(1, errs.len()) - 1]
}

#[cfg(test)]
mod tests {
    /// Two tests asking for one output directory: the second is refused, naming both.
    #[test]
    fn a_second_test_asking_for_a_taken_output_directory_is_refused() {
        let claim = |test: &str| {
            std::thread::Builder::new()
                .name(test.to_string())
                .spawn(|| super::claim_out_dir("planted-shared-dir"))
                .expect("spawn")
                .join()
        };
        claim("planted::first").expect("the first claim is taken");
        claim("planted::first").expect("the same test may ask again");
        let err = claim("planted::second").expect_err("a second test is refused");
        let msg = err.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("taken by planted::first and asked for by planted::second"),
            "{msg}"
        );
    }
}
