//! One way to write an end-to-end test: [`Bench`] builds one invocation of the binary (`run`
//! against a server by default, or any other command), so a test states only the flags that
//! differ from the suite's small run; [`Ran`] holds what it printed and reads back what it
//! wrote (rows as JSON for field-by-field assertions, or typed through `llmib_core::RunDir`).
//!
//! ```ignore
//! let ran = Bench::run(&sim.url).small("1K", "1", "1s", "16").arg("--save-requests").out("x").ok();
//! let row = ran.row("decode", 1024, 1);
//! ```

use crate::common::{bin, cell, cells, out_dir, requests, run_json, text};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// One invocation of the binary, built up flag by flag.
#[derive(Debug, Clone)]
pub struct Bench {
    args: Vec<String>,
    /// Flags given unless the words name them (`--format none`, the reader of
    /// `LLMIB_IT_HTTP_READER`), so a test's own `--format md` never repeats a flag.
    defaults: Vec<(String, String)>,
    dir: Option<PathBuf>,
    cwd: Option<PathBuf>,
}

impl Bench {
    /// `run --url URL --format none`: no report unless the test sets `--format`. With
    /// `LLMIB_IT_HTTP_READER=raw|reqwest` every such run goes through that reader
    /// (`--http-reader`; a test that sets the flag keeps its own).
    pub fn run(url: &str) -> Bench {
        let mut b = Bench::cmd(&["run", "--url", url]);
        b.defaults.push(("--format".into(), "none".into()));
        if let Ok(r) = std::env::var("LLMIB_IT_HTTP_READER") {
            b.defaults.push(("--http-reader".into(), r));
        }
        b
    }

    /// Any command and its first words, e.g. `Bench::cmd(&["sweep"])` or `&["report", dir]`.
    pub fn cmd(words: &[&str]) -> Bench {
        Bench {
            args: words.iter().map(|w| w.to_string()).collect(),
            defaults: Vec::new(),
            dir: None,
            cwd: None,
        }
    }

    /// `eval --url URL --profile PROFILE` (a profile's dataset, the long-answer task).
    pub fn eval(url: &str, profile: &str) -> Bench {
        Bench::cmd(&["eval", "--url", url, "--profile", profile])
    }

    /// The suite's small matrix: `--contexts`, `--concurrency`, `--duration`, `--max-output`.
    pub fn small(
        self,
        contexts: &str,
        concurrency: &str,
        duration: &str,
        max_output: &str,
    ) -> Self {
        self.set("--contexts", contexts)
            .set("--concurrency", concurrency)
            .set("--duration", duration)
            .set("--max-output", max_output)
    }

    /// One more word on the command line.
    pub fn arg(mut self, word: impl AsRef<str>) -> Self {
        self.args.push(word.as_ref().to_string());
        self
    }

    /// More words on the command line, in order.
    pub fn args<S: AsRef<str>>(mut self, words: impl IntoIterator<Item = S>) -> Self {
        self.args
            .extend(words.into_iter().map(|w| w.as_ref().to_string()));
        self
    }

    /// `FLAG VALUE`, replacing the value of an earlier `FLAG` (so a default can be changed).
    pub fn set(mut self, flag: &str, value: impl AsRef<str>) -> Self {
        let value = value.as_ref().to_string();
        match self.args.iter().position(|a| a == flag) {
            Some(i) if i + 1 < self.args.len() => self.args[i + 1] = value,
            _ => self.args.extend([flag.to_string(), value]),
        }
        self
    }

    /// Drops `FLAG` and its value (a default the test must not pass).
    pub fn unset(mut self, flag: &str) -> Self {
        self.defaults.retain(|(f, _)| f != flag);
        if let Some(i) = self.args.iter().position(|a| a == flag) {
            let end = (i + 2).min(self.args.len());
            self.args.drain(i..end);
        }
        self
    }

    /// `--output` into a fresh directory named `name` under the target dir.
    pub fn out(self, name: &str) -> Self {
        let dir = out_dir(name);
        self.out_at(&dir)
    }

    /// `--output DIR`, a directory the test made.
    pub fn out_at(mut self, dir: &Path) -> Self {
        self = self.set("--output", dir.display().to_string());
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// `--resume DIR`: the run in `dir` carried on (its rows read back from there).
    pub fn resume_at(mut self, dir: &Path) -> Self {
        self = self.set("--resume", dir.display().to_string());
        self.dir = Some(dir.to_path_buf());
        self
    }

    /// Runs in `cwd` (relative paths in the flags are read from there).
    pub fn cwd(mut self, cwd: &Path) -> Self {
        self.cwd = Some(cwd.to_path_buf());
        self
    }

    /// The words after the binary's name, as the child gets them: the test's, then each
    /// default whose flag they do not name.
    pub fn words(&self) -> Vec<String> {
        let mut words = self.args.clone();
        for (flag, value) in &self.defaults {
            if !self.args.contains(flag) {
                words.extend([flag.clone(), value.clone()]);
            }
        }
        words
    }

    /// The child's command, for a test that spawns it itself (a signal, a pty).
    pub fn command(&self) -> Command {
        let mut c = Command::new(bin());
        c.args(self.words())
            .env_remove("OPENAI_API_KEY")
            .env_remove("OPENAI_BASE_URL");
        if let Some(cwd) = &self.cwd {
            c.current_dir(cwd);
        }
        c
    }

    /// Starts the binary with its stdout and stderr piped (shards started side by side, read
    /// with `wait_with_output`).
    pub fn spawn(&self) -> std::process::Child {
        self.command()
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the binary")
    }

    /// `merge DIR… -o OUT` of shard directories into a fresh directory named `name`.
    pub fn merge(dirs: &[PathBuf], name: &str) -> Bench {
        let mut b = Bench::cmd(&["merge"]).args(dirs.iter().map(|d| d.display().to_string()));
        let out = out_dir(name);
        b = b.set("-o", out.display().to_string());
        b.dir = Some(out);
        b
    }

    /// The words of a shard's `run`: `--shard I/N` (N = `of`) at `start_at`, its output in
    /// `dir`, plain lines and no hardware monitor, as each machine of a sharded run is started.
    pub fn shard(url: &str, dir: &Path, (i, of): (usize, usize), start_at: &str) -> Bench {
        Bench::run(url)
            .out_at(dir)
            .set("--shard", format!("{i}/{of}"))
            .set("--start-at", start_at)
            .set("--display", "plain")
            .arg("--no-hw-monitor")
    }

    /// Runs the binary to its end, whatever its exit code.
    pub fn go(self) -> Ran {
        let output = self.command().output().expect("run the binary");
        Ran {
            output,
            dir: self.dir.unwrap_or_default(),
        }
    }

    /// Runs the binary and asserts it exited 0 (its output in the message when not).
    pub fn ok(self) -> Ran {
        let ran = self.go();
        assert!(ran.output.status.success(), "{}", ran.text());
        ran
    }

    /// Runs the binary and asserts its exit code (its output in the message when not).
    pub fn exits(self, code: i32) -> Ran {
        let ran = self.go();
        assert_eq!(ran.output.status.code(), Some(code), "{}", ran.text());
        ran
    }
}

/// Waits for processes started side by side (shards) and asserts each exited 0.
pub fn wait_all(children: Vec<std::process::Child>) -> Vec<Output> {
    let outs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("a process ends"))
        .collect();
    for (i, o) in outs.iter().enumerate() {
        assert!(o.status.success(), "process {i}: {}", text(o));
    }
    outs
}

/// What one invocation printed and the directory it wrote.
#[derive(Debug)]
pub struct Ran {
    /// Its exit status, stdout and stderr.
    pub output: Output,
    /// Its `--output` directory (empty where the test set none).
    pub dir: PathBuf,
}

impl Ran {
    /// Its exit status, stdout and stderr, for an assertion's message.
    pub fn text(&self) -> String {
        text(&self.output)
    }

    /// Its stdout.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.output.stdout).into_owned()
    }

    /// Its stderr.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Every row of `cells.jsonl`, in the order written.
    pub fn rows(&self) -> Vec<Value> {
        cells(&self.dir)
    }

    /// The rows of one phase, in the order written.
    pub fn rows_of(&self, phase: &str) -> Vec<Value> {
        self.rows()
            .into_iter()
            .filter(|r| r["phase"] == phase)
            .collect()
    }

    /// The row of `phase` where the run wrote exactly one (the test fails otherwise).
    pub fn one(&self, phase: &str) -> Value {
        let rows = self.rows_of(phase);
        assert_eq!(rows.len(), 1, "one {phase} row: {rows:#?}");
        rows.into_iter().next().unwrap_or_default()
    }

    /// A refusal: exit 1 with exactly one line on stderr, which it returns.
    pub fn refusal(&self) -> String {
        assert_eq!(self.output.status.code(), Some(1), "{}", self.text());
        let err = self.stderr();
        let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "one line: {}", self.text());
        lines[0].to_string()
    }

    /// The one row of `phase` (a session, a replay): the test fails when there is none.
    pub fn only(&self, phase: &str) -> Value {
        let rows = self.rows();
        rows.iter()
            .find(|r| r["phase"] == phase)
            .cloned()
            .unwrap_or_else(|| panic!("no {phase} row in {rows:#?}\n{}", self.text()))
    }

    /// The row for (phase, context, concurrency).
    pub fn row(&self, phase: &str, context: u64, n: u64) -> Value {
        cell(&self.rows(), phase, context, n).clone()
    }

    /// `run.json`.
    pub fn run_json(&self) -> Value {
        run_json(&self.dir)
    }

    /// `requests.jsonl` by (context, concurrency) of the records' cell.
    pub fn requests(&self) -> BTreeMap<(u64, u64), Vec<Value>> {
        requests(&self.dir)
    }

    /// The run read back typed, as `report` and `merge` read it.
    pub fn typed(&self) -> llmib_core::LoadedRun {
        llmib_core::RunDir::create(&self.dir)
            .and_then(|d| d.load())
            .unwrap_or_else(|e| panic!("read {}: {e}", self.dir.display()))
    }

    /// A file the run wrote, as text.
    pub fn file(&self, name: &str) -> String {
        let p = self.dir.join(name);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }
}
