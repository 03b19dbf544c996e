//! Known answers of the LoRA decisions: the assignment (round-robin, and seeded random against
//! SplitMix64 computed apart, in Python), the check against `/v1/models`, and the figures per
//! adapter over a decode window and over a whole cell.

use super::*;
use crate::record::{Chunk, Outcome};

const MS: u64 = 1_000_000;

fn settings(assign: LoraAssign, seed: u64) -> LoraSettings {
    LoraSettings::new(vec!["a".into(), "b".into(), "c".into()], assign, seed).expect("valid")
}

#[test]
fn round_robin_gives_key_k_adapter_k_mod_k() {
    let s = settings(LoraAssign::RoundRobin, 0);
    let picks: Vec<&str> = (0..7).map(|k| s.adapter(k)).collect();
    assert_eq!(picks, ["a", "b", "c", "a", "b", "c", "a"]);
}

/// SplitMix64 seeded with `seed ^ key × 0xA24BAED4963EE407`, an unbiased draw below 3
/// (the values computed apart, in Python).
#[test]
fn random_is_seeded_per_key() {
    let s = settings(LoraAssign::Random, 42);
    let picks: Vec<usize> = (0..12).map(|k| s.adapter_index(k)).collect();
    assert_eq!(picks, [1, 2, 2, 0, 1, 1, 1, 0, 2, 0, 1, 1]);
    let other = settings(LoraAssign::Random, 7);
    let picks: Vec<usize> = (0..12).map(|k| other.adapter_index(k)).collect();
    assert_eq!(picks, [0, 1, 0, 1, 0, 0, 1, 2, 2, 1, 0, 0]);
    // A key's draw does not depend on the keys before it.
    assert_eq!(s.adapter_index(11), 1);
    let mut counts = [0u32; 3];
    for k in 0..3000 {
        counts[s.adapter_index(k)] += 1;
    }
    assert_eq!(counts, [994, 994, 1012]);
}

#[test]
fn each_engine_names_an_adapter_its_own_way() {
    assert_eq!(
        lora_request_model(Some(EngineKind::Sglang), "base/m", "sql"),
        "base/m:sql"
    );
    assert_eq!(
        lora_request_model(Some(EngineKind::Vllm), "base/m", "sql"),
        "sql"
    );
    assert_eq!(lora_request_model(None, "base/m", "sql"), "sql");
}

#[test]
fn names_are_checked_and_unserved_adapters_refused_in_one_line() {
    let rr = LoraAssign::RoundRobin;
    assert_eq!(LoraSettings::new(vec![], rr, 0), Err(LoraError::Empty));
    for bad in [vec!["a", "a"], vec![""], vec!["a b"]] {
        let names = bad.iter().map(|s| s.to_string()).collect();
        assert!(matches!(
            LoraSettings::new(names, rr, 0),
            Err(LoraError::BadName(_))
        ));
    }
    let s = settings(rr, 0);
    let served: Vec<String> = ["base", "a", "b"].map(String::from).to_vec();
    let e = s.check_served(&served).expect_err("c is not served");
    assert_eq!(
        e.to_string(),
        "LoRA adapter `c` is not served: the server's /v1/models lists base, a, b"
    );
    let all: Vec<String> = ["base", "a", "b", "c"].map(String::from).to_vec();
    assert_eq!(s.check_served(&all), Ok(()));
    assert_eq!(s.check_served(&[]), Ok(()), "nothing listed: trusted");
}

/// A request of stream `stream` sent at `sent` ms whose chunks (ms, tokens) arrive as given.
fn rec(stream: u32, sent: u64, chunks: &[(u64, u32)]) -> RequestRecord {
    RequestRecord {
        stream,
        sent_ns: sent * MS,
        headers_ns: None,
        chunks: chunks
            .iter()
            .map(|&(t, tokens)| Chunk {
                t_ns: t * MS,
                tokens,
            })
            .collect(),
        end_ns: chunks.last().map_or(sent, |c| c.0) * MS,
        outcome: Outcome::Finished {
            reason: "length".into(),
        },
        prompt_tokens_reported: None,
        completion_tokens_reported: None,
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    }
}

/// Streams 0 and 2 on `a`, 1 and 3 on `b` (round-robin over two adapters).
fn records() -> Vec<RequestRecord> {
    vec![
        rec(0, 0, &[(50, 1), (200, 1), (300, 1), (400, 1)]),
        rec(1, 10, &[(110, 1), (600, 2)]),
        rec(2, 500, &[(530, 1), (1050, 1), (1150, 1)]),
        rec(3, 1200, &[(1300, 1)]),
        RequestRecord::never_sent(5, 1400 * MS),
    ]
}

fn two() -> LoraSettings {
    LoraSettings::new(vec!["a".into(), "b".into()], LoraAssign::RoundRobin, 0).expect("valid")
}

fn row(f: &LoraAdapterFigures) -> (&str, u64, u64, Option<f64>, Option<f64>) {
    let r = |x: f64| (x * 1e6).round() / 1e6;
    (
        f.adapter.as_str(),
        f.requests,
        f.output_tokens,
        f.output_tok_per_s.map(r),
        f.ttft_ms_p50.map(r),
    )
}

/// A decode window of 1 s (100 to 1100 ms): `a` has streams 0 and 2 (3 + 2 tokens inside,
/// TTFT 50 and 30 ms), `b` stream 1 (3 tokens, TTFT 100 ms; stream 3 was sent after the
/// window closed). The shares add up to the total.
#[test]
fn a_decode_windows_shares_per_adapter() {
    let w = Window {
        start_ns: 100 * MS,
        end_ns: 1100 * MS,
    };
    let f = lora_figures(&records(), |r| Some(r.stream), &two(), LoraSpan::Window(w));
    assert_eq!(f.assign, LoraAssign::RoundRobin);
    let rows: Vec<_> = f.adapters.iter().map(row).collect();
    assert_eq!(
        rows,
        [
            ("a", 2, 5, Some(5.0), Some(40.0)),
            ("b", 1, 3, Some(3.0), Some(100.0)),
        ]
    );
    assert_eq!(row(&f.total), ("total", 3, 8, Some(8.0), Some(50.0)));
}

/// The whole cell (a rate or burst row): every sent request over last end − first send =
/// 1.4 s (the never-sent request's instant included, as the rate row's span does); `a` 7
/// tokens, `b` 4 (stream 3's too), TTFT medians 40 and 100 ms.
#[test]
fn a_whole_cells_shares_per_adapter() {
    let f = lora_figures(&records(), |r| Some(r.stream), &two(), LoraSpan::Cell);
    let rows: Vec<_> = f.adapters.iter().map(row).collect();
    assert_eq!(
        rows,
        [
            ("a", 2, 7, Some(5.0), Some(40.0)),
            ("b", 2, 4, Some(2.857143), Some(100.0)),
        ]
    );
    assert_eq!(row(&f.total), ("total", 4, 11, Some(7.857143), Some(75.0)));
    // A record of no adapter counts only in the total; an adapter nobody took is all zeros.
    let only_a = lora_figures(
        &records(),
        |r| (r.stream == 0).then_some(0),
        &two(),
        LoraSpan::Cell,
    );
    assert_eq!(row(&only_a.adapters[1]), ("b", 0, 0, Some(0.0), None));
    assert_eq!(only_a.total.requests, 4);
}
