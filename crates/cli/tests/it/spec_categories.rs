//! `eval --profile mt-bench` (issue 45): a speculative-decoding dataset with categories,
//! downloaded once and pinned by sha256 like every eval dataset, and acceptance per category.
//!
//! A loopback file server serves a fixture in MT-Bench's layout (FastChat's `question.jsonl`:
//! `question_id`, `category`, `turns`); the official pin refuses it (nothing cached, the model
//! server never asked), as does a planted wrong `--dataset-sha256`; its own sha256 downloads it
//! once into the cache and reads it from there the next time. Each question's two turns are
//! sent in order, the second after the first and the model's answer. The simulator's acceptance
//! depends on the text (`spec_accept_by_text`): each category's questions carry a tag a rule
//! names, so every category's answer is known by hand and checked against `spec.json` and
//! `spec.md`.

use crate::common::*;
use crate::datasets::{Files, sha};
use crate::e2e::Bench;
use crate::prompt_text::Relay;
use crate::prompts_workload::served;
use crate::run::exact_sim;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::atomic::Ordering;

/// Draft width: each decode step drafts 3 tokens and emits 1 to 4.
const K: u32 = 4;
/// Output tokens per answer: the first from prefill, then 24, a multiple of every step size
/// used (2, 3, 4), so no step is cut short and each category's steps are exactly its length.
const MAX_OUTPUT: &str = "25";

/// The categories, their tag and the simulator's tokens per step for it: writing has no rule
/// (the engine's `spec_accept_length`, 2), math 3, coding every draft accepted (4).
const CATEGORIES: [(&str, &str, f64); 3] = [
    ("writing", "[w-tag]", 2.0),
    ("math", "[m-tag]", 3.0),
    ("coding", "[c-tag]", 4.0),
];

/// Three questions per category, in MT-Bench's layout (a second turn and a `reference`, which
/// the tool leaves alone), categories interleaved as a file may have them.
fn fixture() -> String {
    let mut out = String::new();
    for q in 0..3 {
        for (i, (cat, tag, _)) in CATEGORIES.iter().enumerate() {
            let id = 100 + q * 10 + i;
            let line = json!({
                "question_id": id,
                "category": cat,
                "turns": [format!("Question {id} about {cat} {tag}, answer at length."), "Now shorter."],
                "reference": ["none"],
            });
            out.push_str(&format!("{line}\n"));
        }
    }
    out
}

/// The simulator: vLLM's counters (exact over a window), `K` tokens drafted per step, and
/// acceptance by the category's tag.
fn spec_sim() -> Sim {
    let mut c = exact_sim();
    c.flavor = llmib_sim::Flavor::Vllm;
    c.spec_tokens = K;
    c.spec_accept_length = Some(2.0);
    c.stamp_chunks = true;
    c.spec_accept_by_text = CATEGORIES[1..]
        .iter()
        .map(|(_, tag, l)| llmib_sim::SpecAcceptRule {
            contains: tag.to_string(),
            length: *l,
        })
        .collect();
    Sim::start(c)
}

/// `eval --profile mt-bench` against `server`, downloading from `url` into `cache`.
fn mt_bench(
    server: &str,
    url: &str,
    cache: &Path,
    extra: &[&str],
    out: &Path,
) -> std::process::Output {
    Bench::cmd(&["eval", "--url", server])
        .set("--profile", "mt-bench")
        .set("--dataset-url", url)
        .set("--cache-dir", cache.display().to_string())
        .set("--concurrency", "2")
        .set("--max-output", MAX_OUTPUT)
        .out_at(out)
        .args(extra)
        .go()
        .output
}

#[test]
fn mt_bench_is_pinned_cached_and_reports_acceptance_per_category() {
    let _serial = timing_lock();
    let base = out_dir("spec-categories");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).expect("base");
    let cache = base.join("cache");
    let files = Files::start();
    let body = fixture();
    let own = sha(body.as_bytes());
    let url = files.put("/lm-sys/question.jsonl", body.clone().into_bytes());

    // The official pin against a file that is not it, and a planted wrong sha256: refused in
    // one line, nothing cached, before any request to the model server (none answers here).
    let wrong = sha(b"not the fixture");
    for (extra, pin) in [
        (
            vec![],
            "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7",
        ),
        (vec!["--dataset-sha256", wrong.as_str()], wrong.as_str()),
    ] {
        let o = mt_bench(
            "http://127.0.0.1:9",
            &url,
            &cache,
            &extra,
            &base.join("refused"),
        );
        assert!(!o.status.success(), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("has sha256 {own}, not the pinned {pin}")),
            "{err}"
        );
        assert!(!cache.join("datasets").exists(), "nothing cached");
    }
    assert_eq!(files.hits.load(Ordering::SeqCst), 2);

    // Its own sha256: downloaded once, cached by it, then read from the cache.
    let sim = spec_sim();
    let relay = Relay::start(&sim.url);
    let out = base.join("run-1");
    let o = mt_bench(&relay.url, &url, &cache, &["--dataset-sha256", &own], &out);
    assert!(o.status.success(), "{}", text(&o));
    let cached = cache
        .join("datasets")
        .join(&own)
        .join("mt_bench_question.jsonl");
    assert_eq!(std::fs::read_to_string(&cached).expect("cached"), body);
    let hits = files.hits.load(Ordering::SeqCst);
    assert_eq!(hits, 3, "one download");
    second_turns_carry_the_first(&relay);
    check_rows(&out, &own, &counted_by_category(&sim));
    let o = mt_bench(
        &sim.url,
        &url,
        &cache,
        &["--dataset-sha256", &own],
        &base.join("run-2"),
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        files.hits.load(Ordering::SeqCst),
        hits,
        "served from the cache"
    );
    check_rows(&base.join("run-2"), &own, &counted_by_category(&sim));
}

/// Every question's second turn was sent after its first, with the first turn and the model's
/// own answer before it.
fn second_turns_carry_the_first(relay: &Relay) {
    let bodies: Vec<Value> = relay
        .json_requests()
        .into_iter()
        .filter(|(line, _)| line.starts_with("POST /v1/chat/completions"))
        .map(|(_, v)| v)
        .filter(|v| {
            v["messages"][0]["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Question "))
        })
        .collect();
    assert_eq!(bodies.len(), 18, "9 questions of 2 turns");
    let second: Vec<&Value> = bodies
        .iter()
        .filter(|b| b["messages"].as_array().is_some_and(|m| m.len() == 3))
        .collect();
    assert_eq!(second.len(), 9, "{bodies:#?}");
    for b in second {
        let m = &b["messages"];
        assert_eq!(
            (&m[1]["role"], &m[2]["content"]),
            (&json!("assistant"), &json!("Now shorter."))
        );
        assert!(
            m[1]["content"].as_str().is_some_and(|a| !a.is_empty()),
            "{b:#}"
        );
    }
}

/// The prompt tokens the simulator counted for the last run's requests, by category: the
/// categories ran one after another, 6 requests each (its 3 questions' 2 turns), after
/// whatever the probe sent.
fn counted_by_category(sim: &Sim) -> Vec<u64> {
    let all = served(sim);
    assert!(all.len() >= 18, "{} served", all.len());
    all[all.len() - 18..]
        .chunks(6)
        .map(|c| c.iter().map(|r| r.prompt_tokens).sum())
        .collect()
}

/// Each category's row against the simulator's known answer: at `L` tokens per step of `K`,
/// vLLM's counters give accept rate (L − 1) / (K − 1) and accept length L exactly (every step
/// emits L: see `MAX_OUTPUT`), so the tolerance is only floating point's. Token counts are the
/// server's usage: 25 completion tokens per answer, 6 answers (3 questions of 2 turns), and the
/// prompt tokens the simulator counted for the category's requests (`counted`).
fn check_rows(out: &Path, own: &str, counted: &[u64]) {
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("spec.json")).expect("spec.json"))
            .expect("JSON");
    assert_eq!(s["profile"], "mt-bench");
    assert_eq!(s["dataset"]["sha256"], own);
    assert_eq!(s["dataset"]["items_in_set"], 9);
    let rows = s["categories"].as_array().expect("categories");
    let names: Vec<&str> = rows.iter().filter_map(|r| r["category"].as_str()).collect();
    assert_eq!(names, ["writing", "math", "coding"], "first appearance");
    let md = std::fs::read_to_string(out.join("spec.md")).expect("spec.md");
    for ((r, (cat, _, l)), prompts) in rows.iter().zip(CATEGORIES).zip(counted) {
        assert_eq!(
            (r["requests"].as_u64(), r["failed"].as_u64()),
            (Some(6), Some(0)),
            "{r:#}"
        );
        let rate = (l - 1.0) / f64::from(K - 1);
        let f = &r["speculative"];
        assert!((num(f, "accept_rate") - rate).abs() < 1e-9, "{cat}: {r:#}");
        assert!((num(f, "accept_length") - l).abs() < 1e-9, "{cat}: {r:#}");
        assert!(
            f["source"]
                .as_str()
                .is_some_and(|t| t.starts_with("server counters")),
            "{r:#}"
        );
        assert_eq!(r["completion_tokens"], 6 * 25, "{r:#}");
        assert_eq!(
            r["prompt_tokens"], *prompts,
            "{cat}: the server's counts: {r:#}"
        );
        assert!(
            r["token_count_source"]
                .as_str()
                .is_some_and(|t| t.starts_with("server usage")),
            "{r:#}"
        );
        let line = format!("| {cat} | 6 | 0 | {prompts} | 150 |");
        assert!(md.contains(&line), "{line} in\n{md}");
        let figures = format!("| {:.1}% | {l:.2} |", rate * 100.0);
        assert!(md.contains(&figures), "{figures} in\n{md}");
    }
}
