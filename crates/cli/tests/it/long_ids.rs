//! A server's strings can be any length: a model id of a megabyte must not fill the terminal.
//! The run is measured and saved as usual (run.json keeps the id whole); what the terminal
//! shows of it is cut (`llmib_core::terminal_line`).

use crate::common::*;
use crate::run::{exact_sim, run_small};

/// A megabyte of model id, behind an organisation as a hub id has one.
fn long_id() -> String {
    format!("org/{}", "m".repeat(1 << 20))
}

#[test]
fn a_megabyte_model_id_is_kept_in_run_json_and_cut_on_the_terminal() {
    let _heavy = exclusive();
    let mut cfg = exact_sim();
    cfg.model = long_id();
    // The version is the server's too, and shown in the tables' summary line.
    cfg.version = format!("0.1.{}", "v".repeat(200_000));
    let sim = Sim::start(cfg);
    let dir = out_dir("long-model-id");
    // The simulator's metrics page repeats the id in every series' labels (many megabytes a
    // read): the readiness limit keeps the window from waiting on its gauges.
    let extra = ["--display", "plain", "--readiness-timeout", "2s"];
    let o = run_small(&sim.url, &dir, "1K", "1", "1s", "16", &extra);
    let all = text(&o);
    assert!(o.status.success(), "{}", &all[..all.len().min(4000)]);
    let printed = o.stdout.len() + o.stderr.len();
    assert!(
        printed < 64 * 1024,
        "the run printed {printed} bytes; the start of it: {}",
        String::from_utf8_lossy(&o.stdout[..o.stdout.len().min(2000)])
    );
    let info = run_json(&dir);
    assert_eq!(
        info["model"]["served_model"].as_str(),
        Some(long_id().as_str())
    );
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("characters)"),
        "the cut says how long the string was: {}",
        &stdout[..stdout.len().min(2000)]
    );
}
