//! The real-engine e2e suite: the real binary against a real llama.cpp `llama-server` serving
//! the tiny random model that `scripts/llama/` builds and generates (docs/real-engines.md).
//!
//! Each test starts its own server on a free loopback port and kills it when done. The binary
//! and model come from `LLAMA_SERVER_BIN` / `LLAMA_MODEL` (scripts/test-all.sh exports them),
//! else from `scripts/llama/paths.sh`. Without them the tests print why and pass, unless `CI`
//! is set: there a missing server is a failure, since CI must run this suite.
//!
//! Run only this suite with `cargo test -p llm-inference-bench --test it llamacpp`.

use crate::common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Max output of every decode request in this suite: small, so requests finish inside short
/// windows and the server's counter (which moves only when a request ends) moves too.
pub(crate) const M: u64 = 64;

/// Where the server binary and the model are.
#[derive(Debug)]
pub(crate) struct LlamaPaths {
    pub(crate) bin: PathBuf,
    pub(crate) model: PathBuf,
}

/// The binary and model, or `None` (with a printed reason) when they are unavailable and `CI`
/// is unset. Resolved once per test process: `paths.sh` may have to build (minutes, once).
pub(crate) fn llama() -> Option<&'static LlamaPaths> {
    static PATHS: OnceLock<Result<LlamaPaths, String>> = OnceLock::new();
    match PATHS.get_or_init(find_llama) {
        Ok(p) => Some(p),
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("CI is set, so the llama.cpp e2e suite must run, but: {why}")
        }
        Err(why) => {
            eprintln!("skipping the llama.cpp e2e test: {why}");
            None
        }
    }
}

fn find_llama() -> Result<LlamaPaths, String> {
    let from_env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let (bin, model) = match (from_env("LLAMA_SERVER_BIN"), from_env("LLAMA_MODEL")) {
        (Some(b), Some(m)) => (b, m),
        _ => {
            let script = repo_root().join("scripts/llama/paths.sh");
            let out = Command::new("bash")
                .arg(&script)
                .stderr(Stdio::inherit())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} failed ({}); set LLAMA_SERVER_BIN and LLAMA_MODEL or fix the build",
                    script.display(),
                    out.status
                ));
            }
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let get = |k: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}=")))
                    .map(PathBuf::from)
                    .ok_or_else(|| format!("{} printed no {k}=", script.display()))
            };
            (get("LLAMA_SERVER_BIN")?, get("LLAMA_MODEL")?)
        }
    };
    for p in [&bin, &model] {
        if !p.is_file() {
            return Err(format!("{} does not exist", p.display()));
        }
    }
    Ok(LlamaPaths { bin, model })
}

/// One HTTP/1.1 exchange on a fresh connection (`Connection: close`), for readiness probes and
/// metric reads: the test must not depend on the client it is testing. Returns status and body.
pub(crate) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    key: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let t = Duration::from_secs(10);
    let mut s = TcpStream::connect_timeout(&addr, t)?;
    s.set_read_timeout(Some(t))?;
    s.set_write_timeout(Some(t))?;
    let auth = key.map_or(String::new(), |k| format!("Authorization: Bearer {k}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let bad = || std::io::Error::other(format!("not an HTTP answer: {text:.200}"));
    let (head, rest) = text.split_once("\r\n\r\n").ok_or_else(bad)?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(bad)?;
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    Ok((status, if chunked { dechunk(rest) } else { rest.into() }))
}

/// The payload of a chunked body.
fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
}

/// A `llama-server` owned by one test: started on a free loopback port, ready (health 200 and
/// a 1-token completion answered), killed on drop.
pub(crate) struct LlamaServer {
    child: Child,
    addr: SocketAddr,
    pub(crate) url: String,
    log: PathBuf,
    key: Option<String>,
}

impl LlamaServer {
    /// Starts a server with `slots` slots of `ctx` tokens each (`-c slots×ctx -np slots`), the
    /// flags of scripts/llama/start.sh but two threads (the client shares the two cores).
    pub(crate) fn start(
        p: &LlamaPaths,
        name: &str,
        slots: u32,
        ctx: u32,
        key: Option<&str>,
    ) -> Self {
        assert_exclusive("a real llama-server");
        let dir = out_dir(&format!("llamacpp-server-{name}"));
        let log = dir.join("llama-server.log");
        // A free port is only free until someone else binds it: retry a lost race.
        for attempt in 1..=3 {
            let port = {
                let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
                l.local_addr().expect("local addr").port()
            };
            let addr = SocketAddr::from(([127, 0, 0, 1], port));
            let out = std::fs::File::create(&log).expect("server log");
            let err = out.try_clone().expect("server log");
            let mut cmd = Command::new(&p.bin);
            cmd.arg("-m")
                .arg(&p.model)
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(["-c", &(slots * ctx).to_string(), "-np", &slots.to_string()])
                .args(["-t", "2", "--metrics", "--alias", "tiny-llama"])
                .args(["--offline", "--no-ui", "--cache-ram", "0"])
                .stdin(Stdio::null())
                .stdout(Stdio::from(out))
                .stderr(Stdio::from(err))
                // The key goes in through the environment, as start.sh does, so it is not in
                // argv; an inherited one must not protect a server meant to be open.
                .env_remove("LLAMA_API_KEY");
            if let Some(k) = key {
                cmd.env("LLAMA_API_KEY", k);
            }
            let child = cmd.spawn().expect("spawn llama-server");
            let mut s = LlamaServer {
                child,
                addr,
                url: format!("http://{addr}"),
                log: log.clone(),
                key: key.map(str::to_owned),
            };
            match s.wait_ready(Duration::from_secs(60)) {
                Ok(()) => return s,
                Err(why) => {
                    let tail = s.log_tail();
                    let lost_port = tail.contains("bind") || tail.contains("in use");
                    drop(s);
                    if attempt < 3 && lost_port {
                        continue;
                    }
                    panic!("llama-server did not start: {why}\n--- log tail\n{tail}");
                }
            }
        }
        unreachable!("the loop returns or panics")
    }

    fn wait_ready(&mut self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        let probe = r#"{"prompt":"Hello","max_tokens":1,"ignore_eos":true,"temperature":0}"#;
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Err(format!("it exited with {st}"));
            }
            let health = http(self.addr, "GET", "/health", "", None).map(|r| r.0);
            if health.is_ok_and(|c| c == 200) {
                let one = http(
                    self.addr,
                    "POST",
                    "/v1/completions",
                    probe,
                    self.key.as_deref(),
                );
                if let Ok((200, body)) = &one
                    && body.contains("\"choices\"")
                {
                    // Still alive a moment later: a server that lost the port exits within
                    // milliseconds, and someone else may have answered on it.
                    std::thread::sleep(Duration::from_millis(200));
                    if let Ok(Some(st)) = self.child.try_wait() {
                        return Err(format!("it exited with {st} right after answering"));
                    }
                    return Ok(());
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("not ready within {limit:?}"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// A metric of `/metrics` (`llamacpp:` prefix included), read on its own connection.
    pub(crate) fn metric(&self, name: &str) -> f64 {
        let (code, body) = http(self.addr, "GET", "/metrics", "", self.key.as_deref())
            .unwrap_or_else(|e| panic!("GET /metrics: {e}"));
        assert_eq!(code, 200, "GET /metrics: {body}");
        body.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == name).then(|| v.trim().parse::<f64>().ok()).flatten()
            })
            .unwrap_or_else(|| panic!("no {name} in /metrics:\n{body}"))
    }

    /// `/props`, read on its own connection.
    fn props(&self) -> Value {
        let (code, body) = http(self.addr, "GET", "/props", "", self.key.as_deref())
            .unwrap_or_else(|e| panic!("GET /props: {e}"));
        assert_eq!(code, 200, "GET /props: {body}");
        serde_json::from_str(&body).expect("/props is JSON")
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn end(r: &Value) -> &str {
    r["outcome"]["end"].as_str().unwrap_or("?")
}

pub(crate) fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// Tokens the client counted in a record (after deferred counting).
fn record_tokens(r: &Value) -> u64 {
    r["chunks"]
        .as_array()
        .map_or(0, |c| c.iter().map(|c| u(&c["tokens"])).sum())
}

/// The `run` arguments every test shares: short windows, small outputs, quick readiness.
pub(crate) fn run_args<'a>(url: &'a str, dir: &'a Path) -> Vec<&'a str> {
    vec![
        "run",
        "--url",
        url,
        "--max-output",
        "64",
        "--output",
        dir.to_str().expect("utf-8 path"),
    ]
}

#[test]
fn llamacpp_matrix_statuses_prompts_and_token_counts() {
    let Some(paths) = llama() else { return };
    let _serial = exclusive();
    let slots = 4u64;
    let server = LlamaServer::start(paths, "matrix", slots as u32, 4096, None);
    let dir = out_dir("llamacpp-matrix");
    let t0 = Instant::now();
    let mut args = run_args(&server.url, &dir);
    args.extend([
        "--contexts",
        "256,1K,3K",
        "--concurrency",
        "1,2,4,8",
        "--duration",
        "2s",
        // N = 8 > 4 slots is never all running: don't wait the default 120 s for it.
        "--readiness-timeout",
        "3s",
        "--save-requests",
        "--format",
        "none",
    ]);
    let o = run_bin(&args);
    eprintln!("llama.cpp matrix run: {:.1} s", t0.elapsed().as_secs_f64());
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&dir);
    let rows = cells(&dir);
    let reqs = requests(&dir);

    // Capacity from /props: n_ctx per slot × slots, and its source.
    let kv = &run["engine"]["kv_capacity_tokens"];
    assert_eq!(kv["value"], 4 * 4096, "{run:#}");
    assert!(
        kv["source"].as_str().unwrap_or("").contains("/props"),
        "{kv}"
    );
    let kv = u(&kv["value"]);

    // Statuses, exactly. The KV rule N × (C + M) > KV is checked first and only hits 3K × 8
    // (8 × 3136 = 25,088 > 16,384; 4 × 3136 = 12,544 fits). The slot rule hits N = 8 at the
    // other contexts: llama.cpp queues the 4 requests it has no slot for (FIFO, shown by the
    // requests_deferred gauge), so all 8 are never running and the cell is Requests queued.
    let expected: [(u64, [&str; 4]); 3] = [
        (256, ["valid", "valid", "valid", "requests_queued"]),
        (1024, ["valid", "valid", "valid", "requests_queued"]),
        (3072, ["valid", "valid", "valid", "over_capacity"]),
    ];
    for (c, statuses) in expected {
        let p = cell(&rows, "prefill", c, 1);
        assert_eq!(p["status"], "valid", "{p:#}");
        for (n, want) in [1u64, 2, 4, 8].into_iter().zip(statuses) {
            let by_rule = if n * (c + M) > kv {
                "over_capacity"
            } else if n > slots {
                "requests_queued"
            } else {
                "valid"
            };
            assert_eq!(by_rule, want, "the table above disagrees with the rules");
            let r = cell(&rows, "decode", c, n);
            assert_eq!(r["status"], want, "C={c} N={n}: {r:#}");
        }
    }
    let over = cell(&rows, "decode", 3072, 8);
    assert!(over["output_tokens"].is_null() && over["total_tok_per_s"].is_null());
    assert!(
        !reqs.contains_key(&(3072, 8)),
        "an Over capacity cell sent requests"
    );
    for c in [256, 1024] {
        let q = cell(&rows, "decode", c, 8);
        let obs = &q["queue"];
        assert_eq!(obs["ready"], false, "{q:#}");
        let waiting = num(obs, "max_waiting");
        assert!((1.0..=4.0).contains(&waiting), "requests_deferred: {q:#}");
        assert!(num(obs, "min_running") <= 4.0, "{q:#}");
        assert!(
            q["total_tok_per_s"].as_f64().is_some(),
            "figures kept: {q:#}"
        );
    }

    // Prompt lengths: every request the server reported usage for had exactly C tokens.
    for r in &rows {
        let pc = &r["prompt_check"];
        if r["status"] == "over_capacity" {
            continue;
        }
        assert_eq!(pc["mismatched"], 0, "{r:#}");
        assert_eq!(pc["expected"], r["context_tokens"], "{r:#}");
        if r["phase"] == "prefill" {
            assert_eq!(pc["checked"], 1, "{r:#}");
        } else if u(&r["completed_requests"]) > 0 {
            assert!(u(&pc["checked"]) > 0, "{r:#}");
        }
    }

    // Per request: no errors (llama-server closes the connection after every stream, which a
    // pooled client must survive), usage on the finish chunk, exact counts.
    let mut finished = 0;
    for ((c, n), recs) in &reqs {
        for r in recs {
            match end(r) {
                "finished" => {
                    finished += 1;
                    assert_eq!(r["outcome"]["reason"], "length", "{r}");
                    assert_eq!(u(&r["prompt_tokens_reported"]), *c, "C={c} N={n}: {r}");
                    assert_eq!(u(&r["completion_tokens_reported"]), M, "{r}");
                    // The client's count (usage split over chunks) is the server's, exactly;
                    // a chunk may carry two tokens (a UTF-8 character split over tokens).
                    assert_eq!(record_tokens(r), M, "{r}");
                    assert!(r["chunks"].as_array().map_or(0, Vec::len) as u64 <= M);
                    // The warm-up worked: with a slot per stream, each stream's prompt stays
                    // in its slot, and only the last prompt token is evaluated again. (At
                    // N = 8 the 4 slots evict each other's prompts.)
                    if *n <= slots {
                        assert_eq!(u(&r["cached_tokens_reported"]), c - 1, "{r}");
                    }
                }
                "cancelled" => {}
                other => panic!("C={c} N={n}: a request ended with {other}: {r}"),
            }
        }
    }
    assert!(finished > 0, "no request finished in the whole matrix");

    // Token counting: llama.cpp streams no per-chunk usage (continuous_usage_stats is
    // ignored); usage rides on the finish chunk, and requests cut at window end have none.
    assert_eq!(
        run["engine"]["capabilities"]["continuous_usage_stats"], false,
        "{run:#}"
    );
    for r in rows.iter().filter(|r| r["phase"] == "decode") {
        if r["status"] == "over_capacity" {
            continue;
        }
        let key = (u(&r["context_tokens"]), u(&r["concurrency"]));
        let recs = &reqs[&key];
        let src = r["token_count_source"].as_str().unwrap_or("");
        let cut_with_tokens = recs
            .iter()
            .any(|x| end(x) == "cancelled" && record_tokens(x) > 0);
        let want = if cut_with_tokens {
            "tokenizer"
        } else {
            "server_usage_final_tokenizer_chunks"
        };
        assert_eq!(src, want, "{r:#}");

        // The cell's output tokens are the records' tokens inside the window.
        let obs = &r["queue"];
        let w_start = (num(obs, "readiness_s") * 1e9).round() as u64;
        let w_end = w_start + (num(r, "measured_s") * 1e9).round() as u64;
        let inside: u64 = recs
            .iter()
            .flat_map(|x| x["chunks"].as_array().cloned().unwrap_or_default())
            .filter(|ch| (w_start..=w_end).contains(&u(&ch["t_ns"])))
            .map(|ch| u(&ch["tokens"]))
            .sum();
        let out = u(&r["output_tokens"]);
        assert!(
            inside.abs_diff(out) <= 1,
            "C={} N={}: {out} output tokens, records say {inside}",
            key.0,
            key.1
        );
    }

    // The server's counter against the client. llama.cpp adds a request's tokens to
    // tokens_predicted_total only when it releases the request's slot, so the delta between the
    // two reads is a whole number of finished requests, M tokens each (the counter is read before
    // the open requests are cancelled, so none of them is in it). The release comes after the
    // client sees the stream end, by a lag that grows with the machine's load, so a request
    // that ended before a read may still be counted after it. The check: whole requests; at
    // least those that ended well inside the two reads; at most those the client saw end in
    // this cell (which starts from an idle server) before the second read. That bound allows
    // more: the recorded read instant is when the read was sent, and the server takes its
    // snapshot when it answers, which on a loaded 2-core CI machine came over 50 ms later (a
    // request the server counted was seen ending 50+ ms after the instant); the client's own
    // end instants can run late there too.
    const EDGE_NS: u64 = 50_000_000;
    const LATE_NS: u64 = 250_000_000;
    eprintln!(
        "C N: server_generation_tokens / finished between the reads (+ at an edge) / client output_tokens"
    );
    for r in rows.iter().filter(|r| r["phase"] == "decode") {
        if r["status"] == "over_capacity" {
            continue;
        }
        let key = (u(&r["context_tokens"]), u(&r["concurrency"]));
        let recs = &reqs[&key];
        let server = r["server_generation_tokens"]
            .as_f64()
            .unwrap_or_else(|| panic!("no server counter: {r:#}"));
        let reads = r["queue"]["counter_reads_s"]
            .as_array()
            .unwrap_or_else(|| panic!("counter read instants are recorded: {r:#}"));
        let (read1, read2) = (
            (reads[0].as_f64().unwrap_or(0.0) * 1e9) as u64,
            (reads[1].as_f64().unwrap_or(0.0) * 1e9) as u64,
        );
        let ends: Vec<u64> = recs
            .iter()
            .filter(|x| end(x) == "finished")
            .map(|x| u(&x["end_ns"]))
            .collect();
        let near = |t: u64, read: u64| t.abs_diff(read) <= EDGE_NS;
        let surely = ends
            .iter()
            .filter(|&&t| t > read1 && t < read2 && !near(t, read1) && !near(t, read2))
            .count() as u64;
        let at_most = ends.iter().filter(|&&t| t <= read2 + LATE_NS).count() as u64;
        eprintln!(
            "{} {}: {server} / {surely}..={at_most} x {M} / {}",
            key.0, key.1, r["output_tokens"]
        );
        assert_eq!(
            server % M as f64,
            0.0,
            "C={} N={}: {server} is not whole requests of {M}",
            key.0,
            key.1
        );
        let whole = (server / M as f64) as u64;
        assert!(
            whole >= surely && whole <= at_most,
            "C={} N={}: server counted {whole} requests of {M}; the client saw {surely} end well between the reads, {at_most} before the second",
            key.0,
            key.1
        );
    }
    drop(server);
}

#[test]
fn llamacpp_requests_queued_when_the_capacity_is_overridden() {
    let Some(paths) = llama() else { return };
    let _serial = exclusive();
    // 4 slots of 512: by /props the KV holds 2,048 tokens, less than 8 × (256 + 64) = 2,560.
    let server = LlamaServer::start(paths, "override", 4, 512, None);
    let props = server.props();
    let per_slot = u(&props["default_generation_settings"]["n_ctx"]);
    let slots = u(&props["total_slots"]);
    assert_eq!((per_slot, slots), (512, 4), "{props:#}");
    assert!(8 * (256 + M) > per_slot * slots);

    let dir = out_dir("llamacpp-override");
    let mut args = run_args(&server.url, &dir);
    args.extend([
        "--contexts",
        "256",
        "--concurrency",
        "8",
        "--duration",
        "2s",
        "--readiness-timeout",
        "2s",
        "--kv-capacity",
        "100000",
        "--format",
        "none",
    ]);
    let o = run_bin(&args);
    assert!(o.status.success(), "{}", text(&o));
    let run = run_json(&dir);
    let kv = &run["engine"]["kv_capacity_tokens"];
    assert_eq!(kv["value"], 100_000, "{run:#}");
    assert!(
        kv["source"]
            .as_str()
            .unwrap_or("")
            .contains("--kv-capacity"),
        "{kv}"
    );
    let rows = cells(&dir);
    let r = cell(&rows, "decode", 256, 8);
    // Sent, because the override says it fits; queued, because only 4 run at once.
    assert_eq!(r["status"], "requests_queued", "{r:#}");
    assert!(num(&r["queue"], "max_waiting") >= 1.0, "{r:#}");
    assert!(u(&r["output_tokens"]) > 0, "{r:#}");
    assert_eq!(r["prompt_check"]["mismatched"], 0, "{r:#}");
}
