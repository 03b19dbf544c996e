//! `--http-reader raw`: the raw HTTP/1.1 reader with kernel receive timestamps measures a run
//! as the reqwest client does and says so in run.json (https: `rawtls`'s unit tests); `auto`,
//! the default, takes it on an `http://` URL and keeps reqwest where a proxy is set. (Every suite that runs
//! `run` against a local server reads through it by default; `LLMIB_IT_HTTP_READER=reqwest`
//! runs the `run_small` family through reqwest instead.)

use crate::common::*;
use crate::run::{exact_sim, run_small};
use std::process::Output;

/// `run` on a small matrix with no `--http-reader` flag, with the proxy variables of
/// `proxy` set and every other proxy variable removed.
fn default_run(url: &str, dir: &std::path::Path, proxy: &[(&str, &str)]) -> Output {
    let mut cmd = crate::e2e::Bench::run(url)
        .unset("--http-reader")
        .small("512", "1,4", "1s", "64")
        .out_at(dir)
        .command();
    for v in [
        "HTTP_PROXY",
        "http_proxy",
        "ALL_PROXY",
        "all_proxy",
        "NO_PROXY",
        "no_proxy",
    ] {
        cmd.env_remove(v);
    }
    cmd.envs(proxy.iter().copied());
    cmd.output().expect("run the binary")
}

#[test]
fn by_default_an_http_run_reads_kernel_times_and_each_window_says_so() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-default-reader");
    let o = default_run(&sim.url, &dir, &[]);
    assert!(o.status.success(), "{}", text(&o));
    let reader = &run_json(&dir)["engine"]["extra"]["http_reader"];
    assert_eq!(reader["reader"], "raw", "{reader:#}");
    let chosen = reader["chosen"].as_str().unwrap_or_default();
    assert!(
        chosen.starts_with("auto: an endpoint reached directly"),
        "{reader:#}"
    );
    let decode: Vec<_> = cells(&dir)
        .into_iter()
        .filter(|r| r["phase"] == "decode")
        .collect();
    assert_eq!(decode.len(), 2, "{decode:#?}");
    for r in &decode {
        assert_eq!(r["status"], "valid", "{r:#}");
        let k = &r["client_lag"]["kernel"];
        let pieces = k["pieces"].as_u64().unwrap_or(0);
        let stamped = k["kernel_pieces"].as_u64().unwrap_or(0);
        // Every record of the window was read: at least one body read per output token's
        // chunk would be too strict (reads can hold several), but none can be missing.
        assert!(pieces > 0, "{r:#}");
        if cfg!(target_os = "linux") {
            assert!(stamped * 100 >= pieces * 99, "{stamped} of {pieces}: {r:#}");
            assert!(r["client_lag"]["warning"].is_null(), "{r:#}");
        } else {
            assert_eq!(stamped, 0, "{r:#}");
        }
    }
}

#[test]
fn a_proxy_in_the_environment_keeps_reqwest() {
    let _serial = timing_lock();
    let sim = Sim::start(exact_sim());
    let dir = out_dir("run-default-reader-proxy");
    // reqwest skips the (absent) proxy for the loopback address; the raw reader would not
    // know to, so `auto` keeps reqwest whenever a proxy variable is set.
    let o = default_run(
        &sim.url,
        &dir,
        &[
            ("HTTP_PROXY", "http://127.0.0.1:9"),
            ("NO_PROXY", "127.0.0.1"),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let reader = &run_json(&dir)["engine"]["extra"]["http_reader"];
    assert_eq!(reader["reader"], "reqwest", "{reader:#}");
    assert_eq!(reader["timestamps"], "user space", "{reader:#}");
    assert!(
        reader["chosen"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP_PROXY"),
        "{reader:#}"
    );
    for r in cells(&dir).iter().filter(|r| r["phase"] == "decode") {
        assert!(r["client_lag"]["kernel"].is_null(), "{r:#}");
    }
}

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
