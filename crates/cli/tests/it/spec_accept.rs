//! Speculative decoding's acceptance, end to end: the simulator drafts 3 tokens per step and
//! accepts 2 on average (`spec_tokens = 3`, `spec_accept_length = 2`), and exports it the way
//! each engine does: SGLang's `spec_accept_length` / `spec_accept_rate` gauges (rate = tokens
//! per step / 3, SGLang dividing by the step's whole width), vLLM's `spec_decode_*` counters
//! (rate = accepted / draft tokens = 1 / 2, length = 1 + accepted / drafts). Every decode row
//! of the run must carry those figures, the steps the requests really streamed (saved with
//! `--save-requests`) must be the ones the figures describe, and the report must show them.

use crate::common::*;
use crate::run::{exact_sim, run_small};
use serde_json::Value;

/// Output tokens per request: the first from prefill, then 15 steps of exactly 2 (an even
/// remainder, so no step is cut short by `max_tokens` and every step emits the mean). At most
/// 32, so that the client's hidden warm-up (`min(max output, 32)` tokens) is the same: SGLang's
/// gauges cover the last 40 decode batches, a warm-up's short last step included.
const MAX_OUTPUT: &str = "31";

fn spec_sim(flavor: llmib_sim::Flavor) -> llmib_sim::SimConfig {
    let mut c = exact_sim();
    c.flavor = flavor;
    c.spec_tokens = 3;
    c.spec_accept_length = Some(2.0);
    c.decode_step_ms = vec![(1, 6.0), (8, 6.0)];
    c
}

#[test]
fn sglang_acceptance_gauges_reach_every_decode_row_and_the_report() {
    check(
        llmib_sim::Flavor::Sglang,
        2.0 / 3.0,
        "server gauges",
        "66.7%",
    );
}

#[test]
fn vllm_acceptance_counters_reach_every_decode_row_and_the_report() {
    check(llmib_sim::Flavor::Vllm, 0.5, "server counters", "50.0%");
}

/// Runs a 512 × {1, 2} decode matrix against the simulator of `flavor` and checks the rows,
/// the streamed steps and the report.
fn check(flavor: llmib_sim::Flavor, rate: f64, source: &str, rate_text: &str) {
    let _serial = timing_lock();
    let sim = Sim::start(spec_sim(flavor));
    let name = format!("spec-accept-{}", flavor.as_str());
    let dir = out_dir(&name);
    let extra = ["--save-requests"];
    let o = run_small(&sim.url, &dir, "512", "1,2", "1s", MAX_OUTPUT, &extra);
    assert!(o.status.success(), "{}", text(&o));
    let rows = cells(&dir);
    let decode: Vec<&Value> = rows.iter().filter(|r| r["phase"] == "decode").collect();
    assert_eq!(decode.len(), 2, "{rows:#?}");
    for r in &decode {
        assert_eq!(r["status"], "valid", "{r:#}");
        let s = &r["speculative"];
        let length = s["accept_length"].as_f64();
        assert!(length.is_some_and(|l| (l - 2.0).abs() < 1e-9), "{r:#}");
        let got = s["accept_rate"].as_f64();
        assert!(got.is_some_and(|g| (g - rate).abs() < 1e-9), "{r:#}");
        assert!(
            s["source"].as_str().is_some_and(|t| t.starts_with(source)),
            "{r:#}"
        );
    }
    every_step_streamed_two_tokens(&dir);

    let d = dir.to_str().unwrap_or_default();
    let o = run_bin(&["report", d, "--format", "html,md"]);
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let section = md
        .split("## Speculative decoding")
        .nth(1)
        .unwrap_or_else(|| panic!("no speculative section in\n{md}"));
    for n in [1, 2] {
        let row = format!("| 512 | {n} | {rate_text} | 2.00 |");
        assert!(section.contains(&row), "{row} missing in\n{section}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    assert!(
        html.contains("Speculative decoding"),
        "no section in the HTML"
    );
    assert!(
        html.contains(rate_text) && html.contains(">2.00<"),
        "HTML figures"
    );
}

/// What the simulator emitted: every finished request streamed its first token alone, then
/// chunks of exactly 2 tokens (one per step), 31 in all.
fn every_step_streamed_two_tokens(dir: &std::path::Path) {
    let mut finished = 0;
    for reqs in requests(dir).values() {
        for v in reqs.iter().filter(|v| v["outcome"]["end"] == "finished") {
            finished += 1;
            let tokens: Vec<u64> = v["chunks"]
                .as_array()
                .expect("chunks")
                .iter()
                .map(|c| c["tokens"].as_u64().unwrap_or(0))
                .collect();
            assert_eq!(tokens.first(), Some(&1), "{tokens:?}");
            assert!(tokens[1..].iter().all(|&k| k == 2), "{tokens:?}");
            assert_eq!(tokens.iter().sum::<u64>(), 31, "{tokens:?}");
        }
    }
    assert!(finished > 0, "no finished request saved");
}
