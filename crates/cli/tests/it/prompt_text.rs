//! `run --prompt-text FILE` (issue 45, "Real text in the matrix"), end to end: the docs'
//! simulator command run as written, its prompts exact by the server's count and made of the
//! file's words (read from the request bodies as they left the tool, through a relay in front
//! of the simulator, which logs no bodies of its own); the file recorded in run.json and the
//! report by name, size and sha256, never its text; and a bad file refused in one line before
//! the server is contacted.

use crate::common::*;
use crate::first_use::doc_commands;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Runs the binary with `args` in `cwd`, with no API key from the environment.
fn run_in(cwd: &Path, args: &[&str]) -> Output {
    crate::e2e::Bench::cmd(args).cwd(cwd).go().output
}

/// What one connection's client sent, kept as it went by.
type Sent = Arc<Mutex<Vec<u8>>>;

/// A TCP relay in front of a server that keeps every byte each client connection sent (also
/// the judge of the bodies of `prompts_workload`).
pub(crate) struct Relay {
    pub(crate) url: String,
    sent: Arc<Mutex<Vec<Sent>>>,
    rt: Option<tokio::runtime::Runtime>,
}

impl Relay {
    /// Listens on a free port and relays each connection to `upstream` (`http://HOST:PORT`).
    pub(crate) fn start(upstream: &str) -> Relay {
        let target = upstream.trim_start_matches("http://").trim_end_matches('/');
        let target = target.to_string();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = rt
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .expect("bind the relay");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let sent: Arc<Mutex<Vec<Sent>>> = Arc::default();
        let all = Arc::clone(&sent);
        rt.spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(&target).await else {
                    continue;
                };
                let kept = Sent::default();
                all.lock().expect("lock").push(Arc::clone(&kept));
                tokio::spawn(relay(client, server, kept));
            }
        });
        Relay {
            url,
            sent,
            rt: Some(rt),
        }
    }

    /// Every request with a JSON body the clients sent: its request line and its body.
    pub(crate) fn json_requests(&self) -> Vec<(String, Value)> {
        let conns = self.sent.lock().expect("lock");
        conns
            .iter()
            .flat_map(|c| json_requests(&c.lock().expect("lock")))
            .collect()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// Copies both ways between `client` and `server`, keeping what the client sent in `kept`.
async fn relay(client: TcpStream, server: TcpStream, kept: Sent) {
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let up = async move {
        let mut buf = vec![0u8; 64 * 1024];
        while let Ok(n @ 1..) = cr.read(&mut buf).await {
            kept.lock().expect("lock").extend_from_slice(&buf[..n]);
            if sw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = sw.shutdown().await;
    };
    let down = async move {
        let _ = tokio::io::copy(&mut sr, &mut cw).await;
        let _ = cw.shutdown().await;
    };
    tokio::join!(up, down);
}

/// The HTTP/1.1 requests in one connection's bytes that carry a JSON body (by
/// `Content-Length`): each request line with its body.
fn json_requests(bytes: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(end) = bytes[at..].windows(4).position(|w| w == b"\r\n\r\n") {
        let head = String::from_utf8_lossy(&bytes[at..at + end]).to_string();
        let len = head
            .lines()
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
            .and_then(|(_, v)| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let start = at + end + 4;
        let body = &bytes[start..(start + len).min(bytes.len())];
        if let Ok(v) = serde_json::from_slice::<Value>(body) {
            out.push((head.lines().next().unwrap_or_default().to_string(), v));
        }
        at = start + len;
        if at >= bytes.len() {
            break;
        }
    }
    out
}

/// A prompt split at its tag (`[… C1024 S3] `): the tag's context and stream (`None` for a
/// tag of another kind: a warm-up's), and the words after it.
pub(crate) fn split_prompt(prompt: &str) -> (Option<(u64, u32)>, &str) {
    let Some((tag, body)) = prompt.split_once("] ") else {
        return (None, "");
    };
    let mut parts = tag.trim_start_matches('[').split(' ');
    let plain = parts
        .next()
        .is_some_and(|s| s.len() == 16 && s.chars().all(|c| c.is_ascii_hexdigit()));
    let c = parts.next().and_then(|c| c.strip_prefix('C')?.parse().ok());
    let s = parts.next().and_then(|s| s.strip_prefix('S')?.parse().ok());
    let key = match (plain, c, s) {
        (true, Some(c), Some(s)) => Some((c, s)),
        _ => None,
    };
    (key, body)
}

/// Whether `passage` is a run of consecutive words of `words`, read round from its end to its
/// start.
pub(crate) fn runs_in(words: &[&str], passage: &[&str]) -> bool {
    let n = words.len();
    (0..n).any(|i| {
        passage
            .iter()
            .enumerate()
            .all(|(j, w)| words[(i + j) % n] == *w)
    })
}

/// docs/method-notes.md's `--prompt-text` example, as written (the simulator on a free port
/// behind the relay instead of 8000, the results in a test directory, run from the workspace's
/// root as the docs' `cargo run` is): every row valid with its prompts exactly C by the
/// server's usage; every prompt sent is its tag then the licence's words, stream 0 of the 1K
/// context from word 1024 mod W and the four streams of 1K × 4 from four different words; the
/// file in run.json and the reports by name, size and sha256, never its text; a resume without
/// the file, or with another, refused.
#[test]
fn the_docs_prompt_text_example_sends_the_files_words_exactly() {
    let _serial = timing_lock();
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/method-notes.md"
    ));
    let cmds = doc_commands(doc);
    assert_eq!(cmds.len(), 2, "docs/method-notes.md's commands: {cmds:?}");
    assert_eq!(cmds[0][0], "sim");
    assert!(cmds[1].iter().any(|a| a == "--prompt-text"), "{cmds:?}");
    let (mut sim, sim_url) = spawn_sim_process(&cmds[0]);
    let relay = Relay::start(&sim_url);
    let dir = out_dir("prompt-text-doc");
    let mut args: Vec<String> = cmds[1]
        .iter()
        .map(|a| a.replace("http://127.0.0.1:8000", &relay.url))
        .collect();
    args.extend(["--output".into(), dir.display().to_string()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = run_in(&repo_root(), &args);
    let _ = sim.kill();
    let _ = sim.wait();
    assert!(o.status.success(), "{}", text(&o));

    let bytes = std::fs::read(repo_root().join("LICENSE-MIT")).expect("LICENSE-MIT");
    let licence = String::from_utf8(bytes.clone()).expect("UTF-8");
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let run = run_json(&dir);
    assert_eq!(
        run["plan"]["settings"]["prompt_text"],
        serde_json::json!({"name": "LICENSE-MIT", "bytes": bytes.len(), "sha256": sha})
    );
    let saved = std::fs::read_to_string(dir.join("run.json")).expect("run.json");
    assert!(
        !saved.contains("Permission is hereby granted"),
        "no text in run.json"
    );
    for report in ["report.md", "report.html"] {
        let page = std::fs::read_to_string(dir.join(report)).expect(report);
        assert!(
            page.contains("Prompt text")
                && page.contains("LICENSE-MIT")
                && page.contains(&sha[..12]),
            "{report} names the text's source"
        );
    }
    let rows = cells(&dir);
    assert!(rows.len() >= 4, "{rows:#?}");
    for r in &rows {
        assert_eq!(r["status"], "valid", "{r:#}");
        assert!(
            r["prompt_check"]["checked"].as_u64().unwrap_or(0) >= 1,
            "{r:#}"
        );
        assert_eq!(r["prompt_check"]["mismatched"], 0, "{r:#}");
    }
    check_bodies(&relay, &licence);

    // Resumed, the run must be given its text again (it is not saved), and no other: both are
    // refused before the server is contacted.
    let d = dir.display().to_string();
    for (extra, says) in [
        (None, "pass --prompt-text with that file again"),
        (Some("README.md"), "is not the text the resumed run used"),
    ] {
        let mut args = vec!["run", "--url", &relay.url, "--resume", &d];
        args.extend(extra.map(|f| ["--prompt-text", f]).into_iter().flatten());
        let o = run_in(&repo_root(), &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{}", text(&o));
        assert!(
            err.trim().lines().count() == 1 && err.contains(says),
            "{err}"
        );
    }
}

/// Every completions prompt the tool sent is its tag, then words of `licence` (the first 40
/// consecutive in it); each measured 1K prompt's stream starts where its offset says.
fn check_bodies(relay: &Relay, licence: &str) {
    let words: Vec<&str> = licence.split_whitespace().collect();
    let prompts: Vec<String> = relay
        .json_requests()
        .into_iter()
        .filter(|(line, _)| line.starts_with("POST /v1/completions"))
        .filter_map(|(_, v)| v["prompt"].as_str().map(str::to_string))
        .collect();
    assert!(prompts.len() >= 10, "{} prompts seen", prompts.len());
    let mut starts_1k = std::collections::BTreeMap::new();
    for p in &prompts {
        let (key, body) = split_prompt(p);
        let said: Vec<&str> = body.split_whitespace().collect();
        // The last word may be cut inside.
        let whole = &said[..said.len().saturating_sub(1)];
        assert!(whole.len() >= 40, "a prompt of the file's words: {p:?}");
        assert!(runs_in(&words, &whole[..40]), "not the file's text: {p:?}");
        assert!(whole.iter().all(|w| words.contains(w)), "{p:?}");
        if let Some((1024, s)) = key {
            starts_1k.insert(s, whole[..8].join(" "));
        }
    }
    let w = words.len();
    let at = |i: usize| {
        (0..8)
            .map(|j| words[(i + j) % w])
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(
        starts_1k.get(&0),
        Some(&at(1024 % w)),
        "stream 0 at word 1024 mod {w}"
    );
    let distinct: std::collections::BTreeSet<&String> = starts_1k.values().collect();
    assert_eq!(
        (starts_1k.len(), distinct.len()),
        (4, 4),
        "streams 0..3 of 1K start at four words: {starts_1k:#?}"
    );
}

/// A file no prompt can be cut from (missing, a folder, empty, only white space, not UTF-8),
/// by flag or by config key (a relative path is from the working directory), is refused with
/// exit 1 in one line that names it, and before the server is contacted: nothing listens at
/// the URL, so a check made after the probe would report the server instead, and no run.json is
/// written.
#[test]
fn a_bad_prompt_text_file_is_refused_in_one_line_before_anything_is_sent() {
    let dir = out_dir("prompt-text-bad");
    std::fs::write(dir.join("empty.txt"), "").expect("write");
    std::fs::write(dir.join("blank.txt"), " \n\t\n").expect("write");
    std::fs::write(dir.join("latin1.txt"), b"caf\xe9 au lait\n").expect("write");
    std::fs::create_dir_all(dir.join("folder.txt")).expect("dir");
    std::fs::write(dir.join("bad.toml"), "prompt_text = \"latin1.txt\"\n").expect("write");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9);
    let url = format!("http://127.0.0.1:{port}");
    let out = dir.join("out");
    let out = out.to_str().unwrap_or_default();
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["--prompt-text", "missing.txt"],
            "missing.txt",
            "cannot read",
        ),
        (
            &["--prompt-text", "folder.txt"],
            "folder.txt",
            "cannot read",
        ),
        (&["--prompt-text", "empty.txt"], "empty.txt", "no text"),
        (&["--prompt-text", "blank.txt"], "blank.txt", "no text"),
        (&["--prompt-text", "latin1.txt"], "latin1.txt", "not UTF-8"),
        (&["--config", "bad.toml"], "latin1.txt", "not UTF-8"),
    ];
    for (flags, file, says) in cases {
        let mut args = vec!["run", "--url", &url, "--output", out, "--format", "none"];
        args.extend_from_slice(flags);
        let o = run_in(&dir, &args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{flags:?}: {}", text(&o));
        assert_eq!(err.trim().lines().count(), 1, "{flags:?}: one line: {err}");
        assert!(err.contains(file) && err.contains(says), "{flags:?}: {err}");
        assert!(
            err.contains("--prompt-text"),
            "{flags:?}: names the flag: {err}"
        );
        assert!(!err.contains(&port.to_string()), "not the server: {err}");
        assert!(!dir.join("out").join("run.json").exists(), "{flags:?}");
    }
}

/// A code file through chat completions, against both ways the builder counts a chat prompt
/// (the SGLang flavour: the template's tokens measured once and subtracted; the vLLM flavour:
/// each whole prompt rendered and counted): every prompt exactly C. A cut that ends in a line's
/// indentation must keep it: trimmed, as the filler's cut is, 12 spaces and a line break are 13
/// tokens no cut can reach (the first version built 2,034 tokens at best for 2,048 on a Rust
/// file, and 511 for 512).
#[test]
fn code_through_chat_is_exact_by_either_count() {
    let _serial = timing_lock();
    let dir = out_dir("prompt-text-chat-code");
    let code: String = (0..400)
        .map(|i| format!("            let value_{i} = compute(input_{i}, {i});\n"))
        .collect();
    let file = dir.join("code.rs");
    std::fs::write(&file, code).expect("write");
    let file = file.to_str().unwrap_or_default();
    for flavor in [llmib_sim::Flavor::Sglang, llmib_sim::Flavor::Vllm] {
        let mut cfg = crate::run::exact_sim();
        cfg.flavor = flavor;
        let sim = Sim::start(cfg);
        let out = dir.join(format!("{flavor:?}"));
        let extra = ["--api", "chat", "--prompt-text", file];
        let o = crate::run::run_small(&sim.url, &out, "512,1K,2K", "1,4", "1s", "16", &extra);
        assert!(o.status.success(), "{flavor:?}: {}", text(&o));
        let rows = cells(&out);
        assert_eq!(rows.len(), 9, "{flavor:?}: {rows:#?}");
        for r in &rows {
            assert_eq!(r["status"], "valid", "{flavor:?}: {r:#}");
            assert_eq!(r["prompt_check"]["mismatched"], 0, "{flavor:?}: {r:#}");
        }
    }
}
