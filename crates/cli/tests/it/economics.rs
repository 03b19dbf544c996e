//! Cost and energy per token, end to end: a run against the simulator with a GPU-hour price and
//! a GPU count gives every measured decode row its cost per million output tokens from its own
//! tok/s, and no energy (the simulator's machine has no GPU power to read), with the reason;
//! the Markdown report shows the figures.

use crate::common::*;
use crate::run::{exact_sim, run_small};

#[test]
fn a_priced_run_costs_every_decode_cell_and_says_why_it_has_no_energy() {
    let _t = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("economics");
    let o = run_small(
        &sim.url,
        &dir,
        "1K",
        "1,4",
        "1s",
        "64",
        &["--gpu-hour-usd", "2", "--gpus", "4"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let settings = &run_json(&dir)["plan"]["settings"]["economics"];
    assert_eq!(settings["gpu_hour_usd"], 2.0, "{settings:#}");
    assert_eq!(settings["gpus"], 4, "{settings:#}");
    let rows = cells(&dir);
    let decode: Vec<_> = rows.iter().filter(|r| r["phase"] == "decode").collect();
    assert_eq!(decode.len(), 2, "{rows:#?}");
    for r in decode {
        let tok_s = num(r, "total_tok_per_s");
        let e = &r["economics"];
        let usd = e["usd_per_m_output_tokens"].as_f64().expect("a cost");
        let expected = 2.0 * 4.0 / 3600.0 / tok_s * 1e6;
        assert!(
            ((usd - expected) / expected).abs() <= 1e-9,
            "{usd} vs {expected}: {e:#}"
        );
        assert_eq!(e["gpus"], 4);
        assert_eq!(e["gpus_source"], "given");
        assert_eq!(e["price_source"], "gpu_hour");
        let per_gpu = e["output_tok_per_s_per_gpu"].as_f64().expect("per GPU");
        assert!(((per_gpu - tok_s / 4.0) / per_gpu).abs() <= 1e-9, "{e:#}");
        assert_eq!(e["power_valid"], false, "{e:#}");
        assert_eq!(e["power_reason"], "no GPU power samples", "{e:#}");
        assert!(e["energy_j"].is_null() && e["joules_per_output_token"].is_null());
    }
    let o = run_bin(&[
        "report",
        dir.to_str().unwrap_or_default(),
        "--format",
        "md,json",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("## Cost and energy"), "{md}");
    assert!(md.contains("no GPU power samples"), "{md}");
}
