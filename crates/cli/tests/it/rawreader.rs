//! `--http-reader raw`: the raw HTTP/1.1 reader with kernel receive timestamps measures a run
//! as the reqwest client does, says so in run.json, and refuses https. (The whole `run_small`
//! family runs through it with `LLMIB_IT_HTTP_READER=raw`.)

use crate::common::*;
use crate::run::{exact_sim, run_small};

#[test]
fn a_run_through_the_raw_reader_is_valid_and_recorded() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-raw-reader");
    let o = run_small(
        &sim.url,
        &dir,
        "512",
        "1,4",
        "1s",
        "64",
        &["--http-reader", "raw"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let reader = &run_json(&dir)["engine"]["extra"]["http_reader"];
    assert_eq!(reader["reader"], "raw", "{reader:#}");
    let want = if cfg!(target_os = "linux") {
        "kernel"
    } else {
        "user space"
    };
    assert_eq!(reader["timestamps"], want, "{reader:#}");
    let notes = run_json(&dir)["notes"].to_string();
    assert!(
        notes.contains("carried the kernel's receive time"),
        "{notes}"
    );
    for r in &cells(&dir) {
        assert_eq!(r["status"], "valid", "{r:#}");
    }
}

#[test]
fn the_raw_reader_refuses_https_in_one_line() {
    let dir = out_dir("run-raw-https");
    let o = run_small(
        "https://127.0.0.1:9/v1",
        &dir,
        "512",
        "1",
        "1s",
        "8",
        &["--http-reader", "raw"],
    );
    assert!(!o.status.success());
    let t = text(&o);
    assert!(t.contains("http:// endpoints only"), "{t}");
}
