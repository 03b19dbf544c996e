//! The endpoints a run can drive (issue 10): chat completions beside completions, against the
//! simulator (its chat template adds tokens the prompt builder must measure).

use crate::common::*;
use crate::run::{exact_sim, run_small};

/// `--api chat` against the simulator: its chat template adds tokens around the message, the
/// builder measures and subtracts them, and every prompt is exactly C by the server's usage; the
/// figures match completions (the simulator decodes both alike).
#[test]
fn chat_completions_are_exact_and_measure_like_completions() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let mut rates = Vec::new();
    for api in ["chat", "completions"] {
        let dir = out_dir(&format!("run-api-{api}"));
        let o = run_small(&sim.url, &dir, "512,1K", "1,4", "1s", "64", &["--api", api]);
        assert!(o.status.success(), "{api}: {}", text(&o));
        assert_eq!(run_json(&dir)["plan"]["settings"]["api"], api);
        let rows = cells(&dir);
        for r in &rows {
            assert_eq!(r["status"], "valid", "{api}: {r:#}");
            assert!(
                r["prompt_check"]["checked"].as_u64().unwrap_or(0) >= 1,
                "{api}: {r:#}"
            );
            assert_eq!(r["prompt_check"]["mismatched"], 0, "{api}: {r:#}");
        }
        rates.push(num(cell(&rows, "decode", 1024, 4), "total_tok_per_s"));
    }
    assert_close("chat vs completions tok/s", rates[0], rates[1], 5.0);
}
