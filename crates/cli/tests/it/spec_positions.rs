//! Speculative acceptance per draft position, end to end: the simulator (vLLM flavour) drafts
//! 3 tokens per step (`spec_tokens = 4`) and emits 2, 3, 2, 3, … tokens a step
//! (`spec_accept_length = 2.5`), so it accepts positions 0 and 1, then 0 alone, and never
//! position 2; it counts each accepted token at its position in
//! `vllm:spec_decode_num_accepted_tokens_per_pos_total`. Every decode row must carry the
//! window's rates: position 0 at 100 %, position 2 at 0, position 1 about half, adding up to
//! the row's own tokens per step less one (their mean is its acceptance rate), and the report
//! must show them.

use crate::common::*;
use crate::e2e::Bench;
use crate::run::exact_sim;

/// 1 prefill token, then 6 × (2 + 3): no step is cut short by `max_tokens`.
const MAX_OUTPUT: &str = "31";

fn sim() -> llmib_sim::SimConfig {
    let mut c = exact_sim();
    c.flavor = llmib_sim::Flavor::Vllm;
    c.spec_tokens = 4;
    c.spec_accept_length = Some(2.5);
    c.decode_step_ms = vec![(1, 6.0), (8, 6.0)];
    c
}

#[test]
fn per_position_acceptance_reaches_every_decode_row_and_the_report() {
    let _serial = timing_lock();
    let sim = Sim::start(sim());
    let ran = Bench::run(&sim.url)
        .small("512", "1,2", "1s", MAX_OUTPUT)
        .set("--format", "md")
        .out("spec-positions")
        .ok();
    let decode = ran.rows_of("decode");
    assert_eq!(decode.len(), 2);
    for r in &decode {
        assert_eq!(r["status"], "valid", "{r:#}");
        let s = &r["speculative"];
        let rates: Vec<f64> = (s["per_position_accept_rate"].as_array())
            .map(|v| v.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default();
        assert_eq!(rates.len(), 3, "{s:#}");
        assert_eq!((rates[0], rates[2]), (1.0, 0.0), "{s:#}");
        assert!((0.3..=0.7).contains(&rates[1]), "{s:#}");
        let length = s["accept_length"].as_f64().unwrap_or(0.0);
        let rate = s["accept_rate"].as_f64().unwrap_or(0.0);
        let sum: f64 = rates.iter().sum();
        assert!((sum - (length - 1.0)).abs() < 1e-9, "{s:#}");
        assert!((sum / 3.0 - rate).abs() < 1e-9, "{s:#}");
    }
    let md = ran.file("report.md");
    let section = md
        .split("## Speculative decoding")
        .nth(1)
        .unwrap_or_default();
    assert!(section.contains("Accept rate by draft position"), "{md}");
    assert!(
        section.contains("| 100.0% / ") && section.contains(" / 0.0% |"),
        "{section}"
    );
}
