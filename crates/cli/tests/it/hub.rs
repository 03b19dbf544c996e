//! The results hub through the binary, as a team meets it: `hub serve` on 127.0.0.1:0 (its
//! address read from the line it prints), tokens from `hub token create`, and `upload` / `run
//! --upload` sending results directories, each refusal one clear line and a non-zero exit.
//!
//! Results directories are copies of the checked-in seed run with run.json varied (a note
//! makes each a distinct run; engine and model where a test filters on them), which is much
//! faster than measuring; one test measures the simulator to cover `run --upload`. Each test
//! has its own hub process, killed when the test ends however it ends.

use crate::common::{bin, out_dir, text};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Every variable the hub commands read, removed so the tests see only what they pass.
const HUB_VARS: [&str; 6] = [
    "LLMIB_HUB_TOKEN",
    "LLMIB_HUB_URL",
    "LLMIB_HUB_DB",
    "LLMIB_HUB_LISTEN",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
];

/// The binary with `args`, none of the hub's variables set but `env`.
pub(crate) fn hub_bin(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(args);
    for v in HUB_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run the binary")
}

/// A `hub serve` process; killed on drop.
pub(crate) struct Hub {
    child: Option<Child>,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// The database: a SQLite file under `dir`, or a PostgreSQL URL.
    pub db: String,
    /// The test's own directory.
    pub dir: PathBuf,
    log: Arc<Mutex<String>>,
}

impl Hub {
    /// Serves a fresh SQLite database under `out_dir(name)` with `extra` flags.
    pub(crate) fn start(name: &str, extra: &[&str]) -> Hub {
        let dir = out_dir(name);
        let db = dir.join("hub.db").to_str().expect("utf-8 path").to_string();
        Hub::start_on(dir, db, extra)
    }

    /// Serves `db` (a SQLite path or a PostgreSQL URL) with `extra` flags.
    pub(crate) fn start_on(dir: PathBuf, db: String, extra: &[&str]) -> Hub {
        let mut cmd = Command::new(bin());
        cmd.args(["hub", "serve", "--listen", "127.0.0.1:0", "--db", &db])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for v in HUB_VARS {
            cmd.env_remove(v);
        }
        let mut child = cmd.spawn().expect("start hub serve");
        let stderr = child.stderr.take().expect("stderr piped");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = mpsc::channel();
        let sink = Arc::clone(&log);
        // Keeps reading after the first line, so the hub never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Ok(mut l) = sink.lock() {
                    l.push_str(&line);
                    l.push('\n');
                }
                let _ = tx.send(line);
            }
        });
        let mut hub = Hub {
            child: Some(child),
            url: String::new(),
            db,
            dir,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while hub.url.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    if let Some(rest) = line.strip_prefix("hub: listening on ") {
                        let url = rest.split_whitespace().next().unwrap_or_default();
                        hub.url = url.to_string();
                    }
                }
                Err(_) => panic!("hub serve printed no address:\n{}", hub.log()),
            }
        }
        hub
    }

    /// What the hub printed so far.
    pub(crate) fn log(&self) -> String {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }

    /// A new token's secret (`hub token create NAME`).
    pub(crate) fn token(&self, name: &str) -> String {
        let o = self.cli(&["hub", "token", "create", name]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    }

    /// A `hub …` command on this hub's database (`--db` appended).
    pub(crate) fn cli(&self, args: &[&str]) -> Output {
        let mut all = args.to_vec();
        all.extend(["--db", &self.db]);
        hub_bin(&all, &[])
    }

    /// `upload DIRS --hub URL` with the token (if any) in the environment, plus `extra`.
    pub(crate) fn upload(&self, dirs: &[&Path], token: Option<&str>, extra: &[&str]) -> Output {
        let mut args = vec!["upload".to_string()];
        args.extend(dirs.iter().map(|d| d.display().to_string()));
        args.extend(["--hub".into(), self.url.clone()]);
        args.extend(extra.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let env: Vec<(&str, &str)> = token.map(|t| ("LLMIB_HUB_TOKEN", t)).into_iter().collect();
        hub_bin(&args, &env)
    }

    /// Stops the hub with SIGTERM and returns how it exited and what it printed.
    pub(crate) fn stop(mut self) -> (ExitStatus, String) {
        let mut child = self.child.take().expect("running");
        let pid = child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status();
        assert!(sent.is_ok_and(|s| s.success()), "kill -TERM {pid}");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait().expect("wait for the hub") {
                // The reader thread ends with the pipe; give it a moment to store the last line.
                std::thread::sleep(Duration::from_millis(100));
                return (status, self.log());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!(
                    "the hub did not stop within 20 s of SIGTERM:\n{}",
                    self.log()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An HTTP/1.0 GET (the server closes the connection, so the body is what follows the head):
/// (status, lower-cased head, body).
pub(crate) fn http_get(base: &str, path: &str) -> (u16, String, String) {
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the hub");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("send the request");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read the answer");
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, head.to_ascii_lowercase(), body.to_string())
}

/// `GET /api/runs`: the stored runs' list, as JSON.
pub(crate) fn api_runs(hub: &Hub) -> Value {
    let (status, _, body) = http_get(&hub.url, "/api/runs");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("the list is JSON")
}

fn seed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run")
}

/// A results directory `base/name`: the seed run with run.json varied by `vary` after a note
/// that makes it a run of its own.
pub(crate) fn results_dir(base: &Path, name: &str, vary: impl FnOnce(&mut Value)) -> PathBuf {
    let dir = base.join(name);
    std::fs::create_dir_all(&dir).expect("results dir");
    let text = std::fs::read_to_string(seed().join("run.json")).expect("seed run.json");
    let mut run: Value = serde_json::from_str(&text).expect("seed run.json parses");
    run["notes"] = serde_json::json!([format!("hub test run `{name}`")]);
    vary(&mut run);
    let json = serde_json::to_vec_pretty(&run).expect("json");
    std::fs::write(dir.join("run.json"), json).expect("write run.json");
    std::fs::copy(seed().join("cells.jsonl"), dir.join("cells.jsonl")).expect("copy cells");
    dir
}

/// stderr of an output.
fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts a refused upload: exit 6, the directory named, `expect` said, nothing else stored.
fn assert_refused(o: &Output, dir: &Path, expect: &str) {
    assert_eq!(o.status.code(), Some(6), "{}", text(o));
    let e = err(o);
    let line = format!("error: {}: ", dir.display());
    assert!(e.contains(&line), "the directory is named: {}", text(o));
    assert!(e.contains(expect), "`{expect}` is said: {}", text(o));
    assert!(o.stdout.is_empty(), "{}", text(o));
}

#[test]
fn refusals_are_one_clear_line_each_and_the_same_run_twice_needs_replace() {
    let hub = Hub::start("hub-refusals", &[]);
    let token = hub.token("ci");
    let ok = results_dir(&hub.dir, "ok", |_| {});

    // No token: refused here, before anything is sent.
    let o = hub.upload(&[&ok], None, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err(&o).contains("no hub token"), "{}", text(&o));
    assert!(err(&o).contains("LLMIB_HUB_TOKEN"), "{}", text(&o));

    // A token the hub does not know.
    let o = hub.upload(&[&ok], Some("llmib_not-a-token"), &[]);
    assert_refused(&o, &ok, "not known to this hub");
    assert!(
        !err(&o).contains("llmib_not-a-token"),
        "the token is never printed"
    );

    // Not a results directory: refused locally, named.
    let empty = hub.dir.join("empty");
    std::fs::create_dir_all(&empty).expect("dir");
    let o = hub.upload(&[&empty], Some(&token), &[]);
    assert_refused(&o, &empty, "not a results directory: no run.json");

    // A results schema from the future: the hub says to upgrade it.
    let future = results_dir(&hub.dir, "future", |r| r["schema_version"] = 999_999.into());
    let o = hub.upload(&[&future], Some(&token), &[]);
    assert_refused(&o, &future, "newer than this hub");
    assert!(err(&o).contains("upgrade the hub"), "{}", text(&o));

    // Stored once; the same run again is refused; --replace replaces it and keeps its id.
    let o = hub.upload(&[&ok], Some(&token), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let first = String::from_utf8_lossy(&o.stdout).trim().to_string();
    let expected = format!("uploaded {} → {}/runs/", ok.display(), hub.url);
    assert!(first.starts_with(&expected), "{first}");
    let o = hub.upload(&[&ok], Some(&token), &[]);
    assert_refused(&o, &ok, "already stored as run");
    assert!(err(&o).contains("--replace"), "{}", text(&o));
    let o = hub.upload(&[&ok], Some(&token), &["--replace"]);
    assert!(o.status.success(), "{}", text(&o));
    let again = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert_eq!(again, format!("{first} (replaced)"), "the id is kept");
    assert_eq!(api_runs(&hub)["total"], 1, "nothing else was stored");

    // A refusal is one line (and the count line after it).
    let o = hub.upload(&[&future], Some(&token), &[]);
    assert_eq!(err(&o).lines().count(), 2, "{}", text(&o));
}

#[test]
fn a_revoked_token_and_an_oversize_upload_are_refused_and_the_rest_still_uploads() {
    let hub = Hub::start("hub-revoked", &["--max-upload-mb", "1"]);
    let token = hub.token("laptop");
    let revoked = hub.token("old");
    let o = hub.cli(&["hub", "token", "list"]);
    assert!(o.status.success(), "{}", text(&o));
    let list = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(list.contains("laptop") && list.contains("old"), "{list}");
    assert!(
        !list.contains(&token) && !list.contains(&revoked),
        "no secrets listed"
    );
    let o = hub.cli(&["hub", "token", "revoke", "2"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = hub.cli(&["hub", "token", "list"]);
    let old_row = String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.contains("old"))
        .map(str::to_string)
        .expect("the revoked token is listed");
    assert!(
        !old_row.trim_end().ends_with('-'),
        "revoked shows a time: {old_row}"
    );
    let o = hub.cli(&["hub", "token", "revoke", "99"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err(&o).contains("no token 99"), "{}", text(&o));

    let small = results_dir(&hub.dir, "small", |_| {});
    let o = hub.upload(&[&small], Some(&revoked), &[]);
    assert_refused(&o, &small, "was revoked");

    // Over the 1 MiB limit: a 2 MiB requests.jsonl (its content is never parsed).
    let big = results_dir(&hub.dir, "big", |_| {});
    let line = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1000));
    std::fs::write(big.join("requests.jsonl"), line.repeat(2100)).expect("big file");
    // The big one is refused; the next directory is still uploaded; the exit says one failed.
    let o = hub.upload(&[&big, &small], Some(&token), &[]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    assert!(
        err(&o).contains(&format!("error: {}: ", big.display())),
        "{}",
        text(&o)
    );
    assert!(
        err(&o).contains("limit"),
        "the limit is named: {}",
        text(&o)
    );
    assert!(
        err(&o).contains("1 of 2 directories not uploaded"),
        "{}",
        text(&o)
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        out.contains(&format!("uploaded {}", small.display())),
        "{}",
        text(&o)
    );
    assert_eq!(api_runs(&hub)["total"], 1);
    // The line names the way out, and it works: the run without its requests fits.
    assert!(err(&o).contains("--skip-requests"), "{}", text(&o));
    let o = hub.upload(&[&big], Some(&token), &["--skip-requests"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(api_runs(&hub)["total"], 2);
}

#[test]
fn an_unreachable_hub_says_to_check_the_url_and_tries_no_more() {
    let dir = out_dir("hub-unreachable");
    let a = results_dir(&dir, "a", |_| {});
    let b = results_dir(&dir, "b", |_| {});
    let (a_s, b_s) = (a.display().to_string(), b.display().to_string());
    let o = hub_bin(
        &[
            "upload",
            &a_s,
            &b_s,
            "--hub",
            "http://127.0.0.1:1",
            "--token",
            "llmib_sekrit",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let e = err(&o);
    assert!(
        e.contains("cannot reach the hub at http://127.0.0.1:1"),
        "{e}"
    );
    assert!(e.contains("check --hub"), "{e}");
    assert!(e.contains("1 more directory not tried"), "{e}");
    assert!(
        !e.contains("llmib_sekrit"),
        "the token is never printed: {e}"
    );
    let o = hub_bin(
        &["upload", &a_s, "--hub", "hub:8080"],
        &[("LLMIB_HUB_TOKEN", "llmib_test")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err(&o).contains("http://"), "{}", text(&o));
}

#[test]
fn serve_stops_on_sigterm_and_refuses_a_bad_database_in_one_line() {
    let hub = Hub::start("hub-serve", &[]);
    let (status, _, body) = http_get(&hub.url, "/healthz");
    assert_eq!(status, 200, "{body}");
    let (status, log) = hub.stop();
    assert!(
        status.success(),
        "a graceful stop exits 0: {status:?}\n{log}"
    );
    assert!(log.contains("hub: stopped"), "{log}");

    // A database the binary cannot use: one line, exit 1, the password never shown.
    let o = hub_bin(
        &[
            "hub",
            "serve",
            "--db",
            "postgres://hub:pw-s3cret@127.0.0.1:1/hub",
            "--listen",
            "127.0.0.1:0",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", text(&o));
    assert!(err(&o).starts_with("error: "), "{}", text(&o));
    assert!(!err(&o).contains("pw-s3cret"), "{}", text(&o));
    let o = hub_bin(
        &["hub", "token", "list"],
        &[("LLMIB_HUB_DB", "postgres://u:pw-s3cret@127.0.0.1:1/x")],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(!err(&o).contains("pw-s3cret"), "{}", text(&o));

    // A port in use: one line that says to pick another.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").to_string();
    let db = out_dir("hub-serve-port").join("hub.db");
    let db = db.to_str().expect("utf-8");
    let o = hub_bin(&["hub", "serve", "--db", db, "--listen", &port], &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err(&o).contains("--listen"), "{}", text(&o));
}

#[test]
fn token_create_prints_only_the_secret() {
    let dir = out_dir("hub-token");
    let db = dir.join("hub.db");
    let db = db.to_str().expect("utf-8");
    let o = hub_bin(&["hub", "token", "create", "ci"], &[("LLMIB_HUB_DB", db)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.trim().starts_with("llmib_"), "{out}");
    assert!(err(&o).contains("shown only now"), "{}", text(&o));
    let o = hub_bin(&["hub", "token", "create", " "], &[("LLMIB_HUB_DB", db)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}

#[test]
fn run_with_upload_sends_the_run_and_keeps_it_when_the_upload_fails() {
    let hub = Hub::start("hub-run-upload", &[]);
    let token = hub.token("bench");
    let sim = crate::common::Sim::start(crate::run::exact_sim());
    let small = |dir: &Path, extra: &[&str]| {
        let mut args = vec!["--no-hw-monitor", "--skip-prefill", "--upload", &hub.url];
        args.extend_from_slice(extra);
        crate::run::run_small(&sim.url, dir, "1K", "1", "1s", "32", &args)
    };

    // No token: refused before anything is measured (no results directory appears).
    let never = hub.dir.join("never");
    let o = small(&never, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(err(&o).contains("--upload-token"), "{}", text(&o));
    assert!(!never.exists(), "nothing was measured");

    let dir = hub.dir.join("measured");
    let o = small(&dir, &["--upload-token", &token]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        err(&o).contains(&format!("uploaded {} → {}/runs/1", dir.display(), hub.url)),
        "{}",
        text(&o)
    );
    let runs = api_runs(&hub);
    assert_eq!(runs["total"], 1, "{runs}");
    assert_eq!(
        runs["runs"][0]["model"],
        crate::common::run_json(&dir)["model"]["served_model"]
    );

    // A revoked token: the run is measured and kept, the exit is 6 and says how to upload later.
    let o = hub.cli(&["hub", "token", "revoke", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    let kept = hub.dir.join("kept");
    let o = small(&kept, &["--upload-token", &token]);
    assert_eq!(o.status.code(), Some(6), "{}", text(&o));
    let e = err(&o);
    assert!(e.contains("was revoked"), "{e}");
    let later = format!(
        "llm-inference-bench upload {} --hub {}",
        kept.display(),
        hub.url
    );
    assert!(e.contains(&later), "{e}");
    assert!(kept.join("cells.jsonl").is_file(), "the results are kept");
    assert!(!e.contains(&token) && !String::from_utf8_lossy(&o.stdout).contains(&token));
}

#[test]
fn serve_on_postgresql_uploads_and_stops_cleanly() {
    const TEST: &str = "serve_on_postgresql_uploads_and_stops_cleanly";
    let Some(url) = llmib_hub::testing::fresh_postgres_url("cli_serve").expect("a fresh database")
    else {
        let why = llmib_hub::testing::postgres_missing_message(TEST);
        assert!(!llmib_hub::testing::postgres_required(), "{why}");
        eprintln!("{why}");
        return;
    };
    let hub = Hub::start_on(out_dir("hub-postgres"), url.clone(), &[]);
    // The store is called outside the runtime's threads: a call on one would panic the hub.
    let token = hub.token("pg");
    let run = results_dir(&hub.dir, "run", |_| {});
    let o = hub.upload(&[&run], Some(&token), &[]);
    assert!(o.status.success(), "{}\n{}", text(&o), hub.log());
    assert_eq!(api_runs(&hub)["total"], 1);
    let (status, _, _) = http_get(&hub.url, "/runs/1");
    assert_eq!(status, 200);
    let (status, log) = hub.stop();
    assert!(status.success(), "{status:?}\n{log}");
    assert!(
        log.contains("hub: stopped") && !log.contains("panicked"),
        "{log}"
    );
    llmib_hub::testing::drop_postgres_database(&url).expect("drop the test database");
}

#[test]
fn a_database_from_a_newer_version_is_refused_in_one_line() {
    let dir = out_dir("hub-newer");
    let db = dir.join("hub.db");
    let db_s = db.to_str().expect("utf-8");
    let o = hub_bin(&["hub", "token", "list", "--db", db_s], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let conn = rusqlite::Connection::open(&db).expect("open the hub's file");
    conn.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', '')",
        [],
    )
    .expect("mark it newer");
    drop(conn);
    let o = hub_bin(
        &["hub", "serve", "--db", db_s, "--listen", "127.0.0.1:0"],
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert_eq!(err(&o).lines().count(), 1, "{}", text(&o));
    assert!(
        err(&o).contains("run a newer llm-inference-bench hub"),
        "{}",
        text(&o)
    );
}
