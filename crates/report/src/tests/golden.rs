//! The golden run (`testdata/seed-run`, the seed page transcribed) through every exporter: the
//! Markdown must carry the seed's figures line for line, and snapshots pin Markdown, CSV and JSON
//! so that any change to what a reader sees is reviewed.

use crate::{Format, Report, write_reports};
use llmib_core::{CellStatus, Phase};
use std::path::{Path, PathBuf};

fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run")
}

fn golden() -> Report {
    Report::load(&seed_dir()).expect("the golden run loads")
}

fn seed_page() -> String {
    std::fs::read_to_string(seed_dir().join("seed-page.txt")).expect("seed page text")
}

fn render(format: Format) -> String {
    format.exporter().render(&golden()).expect("renders")
}

#[test]
fn golden_run_is_complete_core_format() {
    let dir = llmib_core::RunDir::open(seed_dir()).expect("open");
    let loaded = dir.load().expect("load");
    assert_eq!(loaded.skipped_lines, 0, "every line of cells.jsonl parses");
    assert_eq!(loaded.cells.len(), 73);
    let prefill = loaded.cells.iter().filter(|c| c.phase == Phase::Prefill);
    assert_eq!(prefill.count(), 9);
    let count = |s| loaded.cells.iter().filter(|c| c.status == s).count();
    assert_eq!(count(CellStatus::RequestsQueued), 1);
    assert_eq!(count(CellStatus::NotRun), 3);
    assert_eq!(count(CellStatus::OverCapacity), 26);
    // Figures that do not apply are null, never 0.
    for c in loaded.cells.iter().filter(|c| !c.status.has_figures()) {
        assert_eq!(c.total_tok_per_s, None);
        assert_eq!(c.output_tokens, None);
    }
    // The plan and the rows agree: every planned cell has its row.
    assert_eq!(loaded.info.plan.cells.len(), 73);
    for p in &loaded.info.plan.cells {
        let c = loaded.cells.iter().find(|c| c.key() == p.key).expect("row");
        assert_eq!(p.over_capacity, c.status == CellStatus::OverCapacity);
    }
}

#[test]
fn markdown_has_every_seed_row_identically() {
    let md = render(Format::Markdown);
    let seed = seed_page();
    let seed_rows: Vec<&str> = seed
        .lines()
        .filter(|l| l.starts_with("| Prefill |") || l.starts_with("| Sustained decode |"))
        .collect();
    assert_eq!(seed_rows.len(), 73);
    let md_lines: Vec<&str> = md.lines().collect();
    for row in &seed_rows {
        assert!(
            md_lines.contains(row),
            "missing seed row:\n{row}\n\nin:\n{md}"
        );
    }
    // The rows appear in the seed's order.
    let positions: Vec<usize> = seed_rows
        .iter()
        .map(|r| md_lines.iter().position(|l| l == r).unwrap_or(usize::MAX))
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]));
    // The header names the seed's columns.
    let header = seed
        .lines()
        .find_map(|l| l.find("| Phase |").map(|i| &l[i..]))
        .expect("seed header");
    assert!(md_lines.contains(&header), "{header}");
}

#[test]
fn markdown_matrix_matches_the_seed_matrix() {
    let md = render(Format::Markdown);
    // The seed's text flattens each matrix cell's lines; ours joins them with `<br>`.
    let ours: Vec<String> = md.lines().map(|l| l.replace("<br>", "")).collect();
    let seed = seed_page();
    let matrix_rows: Vec<&str> = seed
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains(" ms TTFT") && !l.contains("| Sustained"))
        .collect();
    assert_eq!(matrix_rows.len(), 8);
    for r in matrix_rows {
        assert!(ours.iter().any(|l| l == r), "missing matrix row {r}");
    }
}

#[test]
fn markdown_has_the_seed_header_cards_and_footnotes() {
    let md = render(Format::Markdown);
    assert!(md.contains("## GLM-5.3-Flash on RTX PRO 6000 Blackwell Server Edition 96GB ×8"));
    assert!(md.contains(
        "sglang · 0.5.6.post3.dev11345+g028ac64f7 · FP8 · 8 contexts (8K–1019K) × 8 concurrency \
         levels (1–128) · prefill at 8K, 16K, 32K, 64K, 128K, 256K, 512K, 1019K, 1024K"
    ));
    for (label, value) in [
        ("Type", "Discrete GPU"),
        ("GPU", "RTX PRO 6000 Blackwell Server Edition"),
        ("GPU count", "8"),
        ("VRAM", "768 GB (8 × 96 GB)"),
        ("OS", "linux"),
        ("Engine", "sglang"),
        ("Version", "0.5.6.post3.dev11345+g028ac64f7"),
        ("Quantization", "FP8"),
        ("Backend", "cuda"),
        ("Repository", "github.com/sgl-project/sglang"),
        ("Build", "cuda-13.2"),
        ("Commit", "028ac64f797f"),
        ("Served model", "zai-org/GLM-5.3-Flash"),
        ("Revision", "main"),
        ("Benchmark tool", "llm-inference-bench v0.6.2"),
        ("Decode test", "Fixed duration"),
        ("Prefill mode", "Measured during decode warm-up"),
        ("Time per measurement", "30 s"),
        ("Max output", "4,096 tokens"),
    ] {
        let line = format!("- **{label}:** {value}");
        assert!(md.lines().any(|l| l == line), "card line {line}");
    }
    let seed = seed_page();
    let launch = seed
        .lines()
        .find(|l| l.starts_with("\"$HOME"))
        .expect("cmd");
    assert!(md.lines().any(|l| l == launch));
    for status in ["Requests queued", "Over capacity", "Not run"] {
        let sentence = seed
            .lines()
            .last()
            .and_then(|l| l.split(&format!("{status}: ")).nth(1))
            .and_then(|rest| rest.split(". ").next())
            .expect("legend sentence");
        assert!(md.contains(sentence), "legend for {status}: {sentence}");
    }
    assert!(md.contains(
        "TTFT is measured after the benchmark warms the server's prompt cache, so it mostly \
         excludes prefill."
    ));
    assert!(md.contains(
        "Latencies are medians. Total tok/s is output across all simultaneous requests."
    ));
    // The prefill figures as the seed's chart prints them, in the table's words.
    assert!(md.contains("| 16K | 10.6K | 1,527 ms |"));
    // A completed run with nothing dropped adds no notes of its own.
    assert!(!md.contains("### Notes"));
}

#[test]
fn snapshot_markdown() {
    insta::assert_snapshot!("golden_markdown", render(Format::Markdown));
}

#[test]
fn snapshot_csv() {
    insta::assert_snapshot!("golden_csv", render(Format::Csv));
}

#[test]
fn snapshot_json() {
    insta::assert_snapshot!("golden_json", render(Format::Json));
}

#[test]
fn csv_has_units_and_one_row_per_measurement() {
    let csv = render(Format::Csv);
    // The seed's twelve columns come first, as the seed prints them; the report's other
    // figures follow.
    let seed_part = |l: &str| l.split(',').take(12).collect::<Vec<_>>().join(",");
    let lines: Vec<String> = csv.lines().map(seed_part).collect();
    assert_eq!(
        lines[0],
        "Phase,Context (tokens),Requests at once,Status,Total tok/s,Per request tok/s,TTFT (ms),\
         Time between tokens (ms),Average active requests,Completed requests,Output tokens,\
         Measured for (s)"
    );
    let header = csv.lines().next().unwrap_or_default();
    for extra in [
        "Token count source",
        "Server prompt tokens min",
        "Server prompt tokens max",
        "Server prefill tok/s",
        "Burst requests/s",
        "Burst E2E p50 (ms)",
        "Burst TTST p50 (ms)",
        "Burst max-token hits",
    ] {
        assert!(header.contains(extra), "{extra}: {header}");
    }
    let width = header.split(',').count();
    assert!(csv.lines().all(|l| l.split(',').count() == width));
    assert_eq!(lines.len(), 1 + 73);
    assert_eq!(lines[1], "Prefill,8192,1,Valid,9232,,888,,,1,,");
    assert!(lines.contains(
        &"Sustained decode,1043456,2,Requests queued,224.9,133.7,4745,7.5,1.9,2,7152,31.8".into()
    ));
    assert!(lines.contains(&"Sustained decode,8192,64,Not run,,,,,,,,".into()));
}

#[test]
fn html_escapes_and_carries_the_seed_sections() {
    let html = render(Format::Html);
    for id in [
        "id=\"title\"",
        "id=\"card-hardware\"",
        "id=\"card-engine\"",
        "id=\"card-run\"",
        "id=\"launch\"",
        "id=\"prefill\"",
        "id=\"decode-matrix\"",
        "id=\"legend\"",
        "id=\"all-measurements\"",
        "id=\"footnotes\"",
    ] {
        assert!(html.contains(id), "{id}");
    }
    assert_eq!(html.matches("data-cell=\"decode\"").count(), 64);
    // No external resource of any kind.
    for bad in ["http://", "https://", "src=\"", "<link", "@import", "url("] {
        assert!(!html.contains(bad), "external reference {bad}");
    }
    // The launch command's `<redacted>` and quotes are escaped, not markup.
    assert!(html.contains("--api-key &lt;redacted&gt;"));
}

#[test]
fn write_reports_writes_defaults_into_a_folder() {
    let out = std::env::temp_dir().join(format!("llmib-report-golden-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("tmp");
    let written = write_reports(&seed_dir(), &[], Some(&out)).expect("write");
    let names: Vec<String> = written
        .iter()
        .map(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(
        names,
        ["report.html", "report.md", "cells.csv", "results.json"]
    );
    for p in &written {
        assert!(std::fs::metadata(p).map(|m| m.len() > 100).unwrap_or(false));
    }
    // One format to one file.
    let single = out.join("x.md");
    let w = write_reports(&seed_dir(), &[Format::Markdown], Some(&single)).expect("single");
    assert_eq!(w, vec![single.clone()]);
    // Several formats to something that is not a folder: a clear error.
    let err = write_reports(&seed_dir(), &[Format::Markdown, Format::Csv], Some(&single));
    assert!(err.is_err());
    let _ = std::fs::remove_dir_all(&out);
}
