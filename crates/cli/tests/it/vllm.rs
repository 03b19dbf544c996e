//! Sessions against real vLLM on CPU (issue 31): `scripts/vllm/start.sh` serves the tiny model
//! (installed by `scripts/vllm/install.sh`, which the test command runs), and a 4-session ×
//! 4-turn cell must report, turn by turn, the cached tokens vLLM served within one of its
//! blocks of the tool's prediction, and its prefix-cache counter's delta must equal their sum.
//!
//! Run by `vllm_suite`, which starts the one vLLM server the real-vLLM checks share.

use crate::common::*;
use serde_json::Value;
use std::process::{Command, Stdio};

/// A vLLM server started by `scripts/vllm/start.sh`, stopped on drop.
pub(crate) struct Vllm {
    /// The server's base URL (`http://127.0.0.1:PORT`).
    pub(crate) url: String,
    pidfile: String,
}

impl Vllm {
    /// Starts vLLM with `start.sh`'s arguments (`--api-key K`), or `None` (with the reason
    /// printed) where it is not installed and `CI` is unset.
    pub(crate) fn start_with(args: &[&str]) -> Option<Vllm> {
        assert_exclusive("a real vLLM server");
        let out = Command::new("bash")
            .arg(repo_root().join("scripts/vllm/start.sh"))
            .args(["--max-num-seqs", "4"])
            .args(args)
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/vllm/start.sh");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let get = |k: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{k}=")))
                .map(str::to_owned)
        };
        match (out.status.success(), get("VLLM_URL"), get("VLLM_PIDFILE")) {
            (true, Some(url), Some(pidfile)) => Some(Vllm { url, pidfile }),
            _ if std::env::var_os("CI").is_some() => {
                panic!("CI is set, so the vLLM e2e test must run, but start.sh failed: {text}")
            }
            _ => {
                eprintln!(
                    "skipping the vLLM e2e test: scripts/vllm/start.sh failed (run scripts/vllm/install.sh)"
                );
                None
            }
        }
    }
}

impl Drop for Vllm {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(repo_root().join("scripts/vllm/stop.sh"))
            .args(["--pidfile", &self.pidfile])
            .status();
    }
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// The session cell against vLLM at `url` (its API key `key`): every turn's cache within a
/// block of the prediction and vLLM's prefix-cache counter their sum. Run by
/// `vllm_suite`, which starts the one vLLM server every real-vLLM check shares.
pub(crate) fn sessions_cache_within_a_block(url: &str, key: &str) {
    let ran = crate::sessions::chat_sessions(url, "1K")
        .set("--api-key", key)
        .set("--sessions", "4")
        .set("--turns", "4")
        .set("--turn-input-len", "128")
        .set("--turn-output-len", "32")
        .set("--duration", "120s")
        .arg("--save-requests")
        .out("vllm-sessions")
        .ok();
    let (dir, row) = (&ran.dir, &ran.only("session"));
    assert!(
        matches!(row["status"].as_str(), Some("valid" | "requests_queued")),
        "{row}"
    );
    assert_eq!(row["turns_completed"], 16, "{row}");
    assert_eq!(
        row["prompt_check"]["mismatched"], 0,
        "every turn exact: {row}"
    );
    // vLLM's block size, read from its cache config.
    assert_eq!(row["session"]["cache_block_tokens"], 128, "{row}");
    // Turn by turn, request by request: within one block of the prediction (vLLM never
    // computes the last sampled token's KV, so where prompt + answer ends on a block boundary
    // it serves that block less).
    let reqs = requests(dir);
    let recs: Vec<&Value> = reqs.values().flatten().collect();
    let mut total_cached = 0u64;
    for t in row["per_turn"].as_array().into_iter().flatten() {
        let (cached, predicted, k) = (
            n(&t["cached_tokens"]),
            n(&t["predicted_cached_tokens"]),
            n(&t["requests"]),
        );
        if t["measured"] == true {
            assert!(cached <= predicted && predicted - cached <= 128 * k, "{t}");
            assert!(cached > 0, "{t}");
        }
        total_cached += cached;
    }
    assert!(!recs.is_empty());
    // vLLM's own counter (prefix_cache_hits) over the cell is the sum of what it reported.
    let server = row["session"]["server_cached_tokens"]
        .as_f64()
        .unwrap_or(-1.0);
    assert_eq!(server as u64, total_cached, "{row}");
}
