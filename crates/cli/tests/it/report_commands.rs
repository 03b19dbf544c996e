//! `report` and `compare` on the golden run (split from report.rs, the browser checks).

use crate::common::{out_dir, run_bin, text};
use crate::report::seed_dir;
use std::path::PathBuf;

/// A copy of the golden run in a fresh folder, so commands may write into it.
fn golden_copy(name: &str) -> PathBuf {
    let dir = out_dir(name).join("run");
    std::fs::create_dir_all(&dir).expect("dir");
    for f in ["run.json", "cells.jsonl"] {
        std::fs::copy(seed_dir().join(f), dir.join(f)).expect("copy");
    }
    dir
}

#[test]
fn report_command_writes_every_format() {
    let dir = golden_copy("report-cmd");
    let o = run_bin(&["report", dir.to_str().expect("utf-8 path")]);
    assert!(o.status.success(), "{}", text(&o));
    for f in ["report.html", "report.md", "cells.csv", "results.json"] {
        assert!(dir.join(f).is_file(), "{f} missing\n{}", text(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains(f));
    }
    let md = std::fs::read_to_string(dir.join("report.md")).expect("md");
    assert!(md.contains("| Sustained decode | 1019K | 2 | Requests queued | 224.9 |"));

    let o = run_bin(&[
        "report",
        dir.to_str().unwrap_or(""),
        "--format",
        "csv",
        "--output",
        "-",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("Phase,Context (tokens),"));

    let o = run_bin(&["report", dir.to_str().unwrap_or(""), "--format", "pdf"]);
    assert!(!o.status.success(), "an unknown format fails");
    let missing = dir.join("nope");
    let o = run_bin(&["report", missing.to_str().unwrap_or("")]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("run.json"),
        "{}",
        text(&o)
    );
}

#[test]
fn compare_command_prints_ratios_and_writes_html() {
    let a = golden_copy("compare-cmd-a");
    let b = golden_copy("compare-cmd-b");
    let html = a.with_file_name("compare.html");
    let o = run_bin(&[
        "compare",
        a.to_str().unwrap_or(""),
        b.to_str().unwrap_or(""),
        "--output",
        html.to_str().unwrap_or(""),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("190.7 ×1.00"), "{out}");
    assert!(html.is_file());
    let o = run_bin(&["compare", a.to_str().unwrap_or("")]);
    assert!(!o.status.success(), "one run is not a comparison");
}
