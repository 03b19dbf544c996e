//! The decode figures' error against what the simulator emitted inside each window, at
//! N = 1, 16, 64 and 256 with 1- and 3-token chunks, in the simulator's vLLM-like mode (all N
//! admitted at once, prompts prefilled one after another). Prints a table for
//! `docs/benchmarks.md`; asserts nothing (the CI test `highconc` holds the 1% bound).
//!
//! `cargo bench -p llm-inference-bench --bench figures` (about 2 minutes).

#[allow(dead_code)]
#[path = "../tests/it/emission.rs"]
mod emission;

use emission::{Judged, error_pct, run_and_judge};
use llmib_core::ContextSpec;
use llmib_core::Settings;

fn sim(spec_tokens: u32) -> llmib_sim::SimConfig {
    let mut c = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    c.context_length = 8192;
    c.kv_capacity_tokens = 1 << 21;
    c.prefix_cache_tokens = 1 << 21;
    c.decode_step_ms = vec![(1, 8.0), (16, 10.0), (64, 16.0), (256, 40.0)];
    c.spec_tokens = spec_tokens;
    c
}

fn pct(tool: Option<f64>, truth: Option<f64>) -> String {
    match (tool, truth) {
        (Some(a), Some(b)) => format!("{:+.2}%", error_pct(a, b)),
        _ => "–".into(),
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let tmp = tempfile::tempdir().expect("tempdir");
    println!(
        "| N | tokens/chunk | readiness | ramp s | total tok/s (emitted) | total | per request | TBT p50 | gauges-only window |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for spec in [1u32, 3] {
        let settings = Settings {
            contexts: vec![ContextSpec::Tokens(1024)],
            concurrency: vec![1, 16, 64, 256],
            duration_s: 5.0,
            max_output: 256,
            readiness_timeout_s: 120.0,
            ..Settings::default()
        };
        let dir = tmp.path().join(format!("spec{spec}"));
        let judged: Vec<Judged> = match rt.block_on(run_and_judge(sim(spec), settings, &dir)) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("figures bench: {e}");
                std::process::exit(1);
            }
        };
        for j in judged {
            let (r, e) = (&j.row, &j.emitted);
            let q = r.queue.clone().unwrap_or_default();
            let ramp = q.readiness_s.zip(q.gauges_ready_s).map(|(o, g)| o - g);
            println!(
                "| {} | {spec} | {} | {} | {:.1} | {} | {} | {} | {} |",
                r.concurrency,
                q.readiness_by.as_deref().unwrap_or("?"),
                ramp.map_or("–".into(), |s| format!("{s:.2}")),
                e.total_tok_per_s,
                pct(r.total_tok_per_s, Some(e.total_tok_per_s)),
                pct(r.per_request_tok_per_s, e.per_request_tok_per_s_p50),
                pct(r.tbt_ms_p50, e.tbt_ms_p50),
                pct(
                    j.gauges_only.map(|g| g.total_tok_per_s),
                    Some(e.total_tok_per_s)
                ),
            );
        }
    }
}
