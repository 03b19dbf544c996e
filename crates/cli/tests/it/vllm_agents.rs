//! The agents' routes against real vLLM on CPU (issue 35): `--api messages` (Anthropic
//! Messages, `/v1/messages`) and `--api responses` (OpenAI Responses, `/v1/responses`), on the
//! tiny model `scripts/vllm/start.sh` serves, with an API key (vLLM checks only
//! `Authorization: Bearer`, which `--api messages` sends beside `x-api-key` by default).
//!
//! Per route, a 2 × 2 matrix (contexts 256 and 512, concurrency 1 and 2) twice:
//! - sustained decode windows: every cell Valid, every finished request's prompt exactly its
//!   cell's context by the server's own count (Messages: `input_tokens` of `message_delta`
//!   plus its cache counts; Responses: `input_tokens`, where the route counts one BOS more than
//!   `/tokenize`), and each request's cached tokens the warmed prompt's whole blocks (the
//!   prompt was sent once before the window, so each request repeats it);
//! - burst cells (every request runs to its end): the client's output tokens over the run,
//!   plus the run's unrecorded requests (warm-ups, calibration probes), equal vLLM's
//!   `vllm:generation_tokens_total` delta exactly.
//!
//! Per route, a session cell too: every turn's prompt exact (on Responses, the route's extra
//! BOS added to the rendered conversation's count), each session's later turns read the cache
//! (Messages' `cache_read_input_tokens`, Responses' `cached_tokens`, > 0), and vLLM's
//! prefix-cache counter equals their sum.
//!
//! vLLM's Messages route ignores `ignore_eos`, so a model may stop early there; the tiny model
//! does not, but an early stop is printed, and named in the failure where it costs a cell its
//! Valid status. Run by `vllm_suite`, on the one vLLM server the real-vLLM checks share.

use crate::common::*;
use crate::e2e::Bench;
use crate::hub::http_get;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The server's API key: every request must carry it as a Bearer token.
pub(crate) const KEY: &str = "sk-vllm-agents-e2e";
/// `--max-output`: short, since vLLM on CPU is slow.
const MAX_OUTPUT: u64 = 16;
/// The matrix's contexts and concurrency levels.
const CONTEXTS: [u64; 2] = [256, 512];
const CONCURRENCY: [u64; 2] = [1, 2];
/// Requests of each burst cell.
const BURST_REQUESTS: u64 = 4;

/// The agents' routes against vLLM at `url` (started with [`KEY`]). Run by `vllm_suite`,
/// which starts the one vLLM server every real-vLLM check shares.
pub(crate) fn agents_routes(url: &str) {
    for api in ["messages", "responses"] {
        sustained_matrix(url, api);
        burst_matrix_counts_every_token(url, api);
        session_reads_the_cache(url, api);
    }
}

/// Runs `run` (its flags in `b`) on `api` into a fresh directory `name` with the key, no
/// prefill and the records kept, asserts it succeeded and wrote the key nowhere, and returns
/// the directory.
fn run_api(b: Bench, api: &str, name: &str) -> PathBuf {
    let started = std::time::Instant::now();
    let ran = b
        .set("--api-key", KEY)
        .set("--api", api)
        .args(["--skip-prefill", "--save-requests"])
        .out(name)
        .ok();
    eprintln!("{name}: {:.1} s", started.elapsed().as_secs_f64());
    let dir = ran.dir;
    for entry in std::fs::read_dir(&dir).expect("list the output dir") {
        let path = entry.expect("an output file").path();
        let bytes = std::fs::read(&path).expect("read an output file");
        let hit = bytes.windows(KEY.len()).any(|w| w == KEY.as_bytes());
        assert!(!hit, "the API key is in {}", path.display());
    }
    dir
}

/// The 2 × 2 matrix's flags.
fn matrix_args() -> Vec<&'static str> {
    vec![
        "--contexts",
        "256,512",
        "--concurrency",
        "1,2",
        "--max-output",
        "16",
    ]
}

/// vLLM's KV block size, as the run read it from `vllm:cache_config_info`.
fn block_size(dir: &Path) -> u64 {
    let run = run_json(dir);
    let b = &run["engine"]["extra"]["cache_config"]["block_size"];
    b.as_str()
        .and_then(|s| s.parse().ok())
        .or_else(|| b.as_u64())
        .unwrap_or_else(|| panic!("no block size in run.json: {}", run["engine"]))
}

fn count(v: &Value, what: &str) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("{what} is not a count: {v}"))
}

fn finished(r: &Value) -> bool {
    r["outcome"]["end"] == "finished"
}

/// The finished requests of a cell that ended before `max_tokens`, described.
fn early_stops(recs: &[Value]) -> Vec<String> {
    recs.iter()
        .filter(|r| finished(r) && r["outcome"]["reason"] != "length")
        .map(|r| {
            format!(
                "{} after {} tokens",
                r["outcome"], r["completion_tokens_reported"]
            )
        })
        .collect()
}

/// Asserts a cell Valid; where it is not and some of its requests stopped early, says so.
fn assert_valid(api: &str, row: &Value, recs: &[Value], queued_ok: bool) {
    let status = row["status"].as_str().unwrap_or_default();
    let ok = status == "valid" || (queued_ok && status == "requests_queued");
    let early = early_stops(recs);
    if !early.is_empty() {
        // vLLM's Messages route drops `ignore_eos`: reported, not hidden.
        eprintln!(
            "{api} {} C={} N={}: {} request(s) stopped before max_tokens: {early:?}",
            row["phase"],
            row["context_tokens"],
            row["concurrency"],
            early.len()
        );
    }
    assert!(
        ok,
        "{api}: a cell is {status} ({}); early stops (vLLM's Messages route ignores ignore_eos): {early:?}\n{row:#}",
        row["status_reason"]
    );
    assert_eq!(row["prompt_check"]["mismatched"], 0, "{api}: {row:#}");
    assert!(
        count(&row["prompt_check"]["checked"], "checked") > 0,
        "{api}: {row:#}"
    );
}

/// The sustained matrix: Valid cells, exact prompts, and each request's cache read.
fn sustained_matrix(url: &str, api: &str) {
    let mut args = matrix_args();
    args.extend(["--duration", "3s"]);
    let dir = run_api(
        Bench::run(url).args(args),
        api,
        &format!("vllm-{api}-decode"),
    );
    let rows = cells(&dir);
    let by_cell = requests(&dir);
    let block = block_size(&dir);
    for c in CONTEXTS {
        for n in CONCURRENCY {
            let row = cell(&rows, "decode", c, n);
            let recs = by_cell.get(&(c, n)).map(Vec::as_slice).unwrap_or_default();
            assert_valid(api, row, recs, true);
            let done: Vec<&Value> = recs.iter().filter(|r| finished(r)).collect();
            assert!(!done.is_empty(), "{api} C={c} N={n}: no request finished");
            for r in done {
                // The server's own count of the whole request (template, and on Responses
                // the route's extra BOS, included) is the cell's context.
                assert_eq!(r["prompt_tokens_reported"], c, "{api} C={c} N={n}: {r}");
                // The prompt was warmed before the window, so every request repeats it and
                // reads its whole blocks from the cache, all but the last token's block
                // (vLLM computes at least one prompt token).
                let cached = count(&r["cached_tokens_reported"], "cached_tokens_reported");
                assert_eq!(cached, (c - 1) / block * block, "{api} C={c} N={n}: {r}");
                if api == "responses" {
                    // The Responses route honours ignore_eos: every request runs to its limit.
                    assert_eq!(r["outcome"]["reason"], "length", "{r}");
                    assert_eq!(r["completion_tokens_reported"], MAX_OUTPUT, "{r}");
                }
            }
        }
    }
}

/// Prometheus counters of vLLM summed over their labels: (generated tokens, finished
/// requests, requests finished by a stop (EOS or a stop string)).
fn counters(url: &str) -> (u64, u64, u64) {
    let (status, _, body) = http_get(url, "/metrics");
    assert_eq!(status, 200, "GET /metrics: {body}");
    let sum = |name: &str, label: &str| -> u64 {
        body.lines()
            .filter(|l| l.starts_with(name) && l[name.len()..].starts_with(['{', ' ']))
            .filter(|l| l.contains(label))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    (
        sum("vllm:generation_tokens_total", ""),
        sum("vllm:request_success_total", ""),
        sum("vllm:request_success_total", "finished_reason=\"stop\""),
    )
}

/// The burst matrix: every request runs to its end, so every token vLLM generated over the
/// run is one the client counted, or one of the run's few unrecorded requests'.
fn burst_matrix_counts_every_token(url: &str, api: &str) {
    let (gen0, done0, stop0) = counters(url);
    let mut args = matrix_args();
    let n = BURST_REQUESTS.to_string();
    args.extend(["--request-count", &n, "--burst-warmup-request-count", "0"]);
    let dir = run_api(
        Bench::run(url).args(args),
        api,
        &format!("vllm-{api}-burst"),
    );
    let (gen1, done1, stop1) = counters(url);
    let rows = cells(&dir);
    let by_cell = requests(&dir);
    let mut client = 0;
    for c in CONTEXTS {
        for k in CONCURRENCY {
            let row = cell(&rows, "burst", c, k);
            let recs = by_cell.get(&(c, k)).map(Vec::as_slice).unwrap_or_default();
            assert_valid(api, row, recs, false);
            assert_eq!(row["prompt_check"]["checked"], BURST_REQUESTS, "{row:#}");
            assert_eq!(recs.len() as u64, BURST_REQUESTS, "{api} C={c} N={k}");
            let output = count(&row["output_tokens"], "output_tokens");
            // The cell's count is its requests' chunks, and the server's usage agrees.
            let chunks: u64 = recs
                .iter()
                .flat_map(|r| r["chunks"].as_array().into_iter().flatten())
                .map(|ch| count(&ch["tokens"], "a chunk's tokens"))
                .sum();
            let reported: u64 = recs
                .iter()
                .map(|r| count(&r["completion_tokens_reported"], "completion"))
                .sum();
            assert_eq!((chunks, reported), (output, output), "{api} C={c} N={k}");
            for r in recs {
                assert!(finished(r), "{api} C={c} N={k}: {r}");
                assert_eq!(r["prompt_tokens_reported"], c, "{api} C={c} N={k}: {r}");
            }
            client += output;
        }
    }
    let recorded = (CONTEXTS.len() * CONCURRENCY.len()) as u64 * BURST_REQUESTS;
    // The requests the run sends and does not record: the hidden warm-up (min(max_output,
    // 32) tokens), and one-token requests: each prompt's warm-up before its cell and the
    // calibration's probes of the route's count. vLLM counts them all as finished requests.
    let unrecorded = (done1 - done0)
        .checked_sub(recorded)
        .unwrap_or_else(|| panic!("{api}: vLLM finished fewer requests than recorded"));
    assert!(unrecorded >= 1, "{api}: no hidden warm-up reached vLLM");
    let hidden = MAX_OUTPUT.min(32);
    assert_eq!(
        gen1 - gen0,
        client + hidden + (unrecorded - 1),
        "{api}: vLLM's generation_tokens_total delta against the client's {client} tokens \
         and {unrecorded} unrecorded requests (requests stopped by EOS or a stop string: {})",
        stop1 - stop0
    );
    eprintln!(
        "{api}: burst: client {client} tokens + {unrecorded} unrecorded requests = vLLM's {}",
        gen1 - gen0
    );
}

/// A session cell on `api`: 2 sessions × 3 turns of a 1K history with a shared 256-token
/// system prompt (sent as Messages' `system`, Responses' `instructions`); each later turn
/// repeats its session's prompt so far, and must read it from the cache.
fn session_reads_the_cache(url: &str, api: &str) {
    let b = crate::sessions::chat_sessions(url, "1K")
        .set("--sessions", "2")
        .set("--turns", "3")
        .set("--turn-input-len", "128")
        .set("--duration", "60s");
    let dir = run_api(b, api, &format!("vllm-{api}-session"));
    let rows = cells(&dir);
    let row = rows
        .iter()
        .find(|r| r["phase"] == "session")
        .unwrap_or_else(|| panic!("no session row: {rows:?}"));
    let mut recs: Vec<Value> = requests(&dir).into_values().flatten().collect();
    assert_valid(api, row, &recs, true);
    assert_eq!(row["turns_completed"], 6, "{row:#}");
    recs.sort_by_key(|r| {
        (
            count(&r["stream"], "stream"),
            count(&r["sent_ns"], "sent_ns"),
        )
    });
    let block = block_size(&dir);
    let pairs: Vec<&[Value]> = recs
        .windows(2)
        .filter(|p| p[0]["stream"] == p[1]["stream"])
        .collect();
    // Of each session's 3 measured turns, at least the last 2 follow one of its requests.
    assert!(pairs.len() >= 4, "{} requests: {recs:?}", recs.len());
    for pair in pairs {
        let (prev, next) = (&pair[0], &pair[1]);
        let cached = count(&next["cached_tokens_reported"], "cached_tokens_reported");
        // The earlier prompt is a prefix of the later one: at least its whole blocks are
        // read back (Messages' `cache_read_input_tokens`, Responses' `cached_tokens`).
        let prev_prompt = count(&prev["prompt_tokens_reported"], "prompt_tokens_reported");
        assert!(
            cached > 0,
            "a later turn read nothing from the cache: {next}"
        );
        assert!(cached >= prev_prompt / block * block, "{prev}\n{next}");
        assert!(
            cached < count(&next["prompt_tokens_reported"], "prompt"),
            "{next}"
        );
    }
    // vLLM's own prefix-cache counter over the cell is the sum of what the client read.
    let total: u64 = row["per_turn"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| count(&t["cached_tokens"], "cached_tokens"))
        .sum();
    let server = row["session"]["server_cached_tokens"]
        .as_f64()
        .unwrap_or_else(|| panic!("no server_cached_tokens: {row:#}"));
    assert_eq!(server as u64, total, "{row:#}");
}
