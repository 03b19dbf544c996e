//! Multi-turn conversations through the simulator over HTTP: each turn resends the history,
//! the previous answer included, and is served from the prefix cache what the engine kept of
//! the previous turn, prompt and answer, in whole 16-token blocks. Each turn's
//! `usage.prompt_tokens_details.cached_tokens` and the oracle's `ServedRequest::cached_tokens`
//! are checked against known answers.

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::config::Flavor;
use crate::wire::{Kind, Writer};
use crate::{SimConfig, builtin_profile, served_requests};

/// Output tokens of every turn (EOS ignored, so exactly this many).
const ANSWER: u64 = 37;

/// One turn's result: its prompt tokens, the answer's text and the usage's cached tokens.
struct Turn {
    prompt: u64,
    answer: String,
    cached: u64,
}

/// POSTs `body` to `path` over raw HTTP/1.1 and returns the response body.
async fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connects");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).await.expect("writes");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("reads");
    out.split_once("\r\n\r\n")
        .map(|x| x.1.to_string())
        .unwrap_or(out)
}

/// The JSON events of an SSE body (`[DONE]` left out).
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("event JSON"))
        .collect()
}

/// Streams one chat turn of `messages` and reads its answer and final usage.
async fn turn(addr: std::net::SocketAddr, messages: &[Value]) -> Turn {
    let body = json!({
        "messages": messages, "max_tokens": ANSWER, "ignore_eos": true, "stream": true,
        "stream_options": {"include_usage": true},
    });
    let evs = events(&post(addr, "/v1/chat/completions", &body.to_string()).await);
    let answer: String = evs
        .iter()
        .filter_map(|e| e["choices"][0]["delta"]["content"].as_str())
        .collect();
    let usage = &evs.last().expect("a usage chunk")["usage"];
    assert_eq!(usage["completion_tokens"], ANSWER, "{usage}");
    Turn {
        prompt: usage["prompt_tokens"].as_u64().expect("prompt_tokens"),
        answer,
        cached: usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .expect("cached_tokens"),
    }
}

/// Whole 16-token blocks of prompt + answer: what the next turn is served.
fn blocks_of(t: &Turn) -> u64 {
    (t.prompt + ANSWER) / 16 * 16
}

fn msg(role: &str, content: &str) -> Value {
    json!({"role": role, "content": content})
}

/// The next turn of a conversation: a user message about `topic` appended to `history`, then
/// the answer, which is returned.
async fn converse(addr: std::net::SocketAddr, history: &mut Vec<Value>, topic: &str) -> Turn {
    let n = history.len() / 2;
    history.push(msg(
        "user",
        &format!("{topic} question {n}: tell me more, please."),
    ));
    let t = turn(addr, history).await;
    history.push(msg("assistant", &t.answer));
    t
}

fn config(prefix_cache_tokens: u64) -> SimConfig {
    SimConfig {
        stamp_chunks: true,
        prefix_cache_tokens,
        ..builtin_profile("tiny").expect("tiny profile")
    }
}

#[tokio::test]
async fn each_turn_is_served_the_previous_prompt_and_answer_in_whole_blocks() {
    let sim = crate::spawn(config(16_384)).await.expect("starts");
    let mut h = vec![msg("system", "You are a terse assistant.")];
    let t1 = converse(sim.addr(), &mut h, "Rust").await;
    let t2 = converse(sim.addr(), &mut h, "Rust").await;
    let t3 = converse(sim.addr(), &mut h, "Rust").await;
    let served = served_requests(&sim.take_arrival_stamps(), &sim.take_chunk_stamps());
    sim.shutdown().await;
    assert_eq!(t1.cached, 0, "a fresh cache");
    assert_eq!(t2.cached, blocks_of(&t1), "P1 {} + A1", t1.prompt);
    assert_eq!(t3.cached, blocks_of(&t2), "P2 {} + A2", t2.prompt);
    // More than the prompt's own whole blocks: the answer was cached too.
    assert!(t2.cached > t1.prompt / 16 * 16 && t2.cached < t2.prompt);
    let oracle: Vec<u64> = served.iter().map(|r| r.cached_tokens).collect();
    assert_eq!(oracle, vec![t1.cached, t2.cached, t3.cached]);
}

/// Session A's first turn, then B's, then A's second, in a cache of `capacity` tokens:
/// `(A1, B1, A2)`.
async fn two_sessions(capacity: u64) -> (Turn, Turn, Turn) {
    let sim = crate::spawn(config(capacity)).await.expect("starts");
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let a1 = converse(sim.addr(), &mut a, "Alpha").await;
    let b1 = converse(sim.addr(), &mut b, "Beta").await;
    let a2 = converse(sim.addr(), &mut a, "Alpha").await;
    sim.shutdown().await;
    (a1, b1, a2)
}

/// Two sessions in a 128-token cache. A's first turn leaves 31 + 37 = 68 tokens: prompt
/// blocks of 16 and 15, then its answer's blocks 16, 16, 16, 4 (chained on after the first
/// 16), 83 tokens. B's first turn adds 30 at admission (113) and 51 at its end (164): 36 over,
/// so A's least recently used blocks go, its answer's tail first (4, 16, 16). A's second turn
/// is then served 32 tokens (its first two blocks of prompt + answer), not the 64 a larger
/// cache serves.
#[tokio::test]
async fn the_older_session_is_evicted_first_and_served_less() {
    let (a1, b1, a2) = two_sessions(16_384).await;
    assert_eq!(
        (a1.prompt, b1.prompt),
        (31, 30),
        "the sums above assume these"
    );
    assert_eq!((blocks_of(&a1), a2.cached), (64, 64), "nothing evicted");
    let (_, _, a2) = two_sessions(128).await;
    assert_eq!(a2.cached, 32, "A's answer tail evicted by B");
}

#[tokio::test]
async fn with_the_cache_off_no_turn_is_served_from_cache() {
    let sim = crate::spawn(config(0)).await.expect("starts");
    let mut h = Vec::new();
    let t1 = converse(sim.addr(), &mut h, "Rust").await;
    let t2 = converse(sim.addr(), &mut h, "Rust").await;
    let served = served_requests(&sim.take_arrival_stamps(), &sim.take_chunk_stamps());
    sim.shutdown().await;
    assert_eq!((t1.cached, t2.cached), (0, 0));
    assert!(served.iter().all(|r| r.cached_tokens == 0), "{served:?}");
}

fn writer(flavor: Flavor, kind: Kind) -> Writer {
    Writer {
        flavor,
        kind,
        id: "cmpl-1".into(),
        created: 7,
        model: "m".into(),
        prompt_tokens: 50,
        cached_tokens: 32,
        reasoning_tokens: 0,
    }
}

#[test]
fn every_usage_object_carries_the_cached_tokens() {
    let details = "\"prompt_tokens_details\":{\"cached_tokens\":32}";
    for flavor in [Flavor::Sglang, Flavor::Vllm] {
        for kind in [Kind::Completion, Kind::Chat] {
            let w = writer(flavor, kind);
            let last = w.usage_chunk(3);
            let full = w.full_response(" a b c", 3, "length");
            let step = w.token_events(" a", 1, None, true, false).remove(0);
            let role = w.role_chunk(true);
            for j in [&last, &full, &step] {
                assert!(j.contains(details), "{flavor:?} {kind:?}: {j}");
            }
            if kind == Kind::Chat {
                assert!(role.contains(details), "{role}");
            }
        }
    }
    // The vLLM final usage chunk, whole.
    let u = writer(Flavor::Vllm, Kind::Completion).usage_chunk(3);
    assert!(u.ends_with("\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"total_tokens\":53,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":32}}}\n\n"), "{u}");
}

/// A non-streamed request reports the same cached tokens as a streamed one.
#[tokio::test]
async fn a_non_streamed_turn_reports_its_cached_tokens() {
    let sim = crate::spawn(config(16_384)).await.expect("starts");
    let mut h = Vec::new();
    let t1 = converse(sim.addr(), &mut h, "Rust").await;
    h.push(msg("user", "And then?"));
    let body = json!({"messages": h, "max_tokens": 4, "ignore_eos": true});
    let r: Value =
        serde_json::from_str(&post(sim.addr(), "/v1/chat/completions", &body.to_string()).await)
            .expect("JSON body");
    sim.shutdown().await;
    assert_eq!(
        r["usage"]["prompt_tokens_details"]["cached_tokens"],
        blocks_of(&t1),
        "{r}"
    );
}
