//! The Shards section on runs built by hand: the golden run's rows given the `merged` parts a
//! merge writes (two shards, one of them not ready and failed with a hostile reason; a rate
//! cell), through the Markdown, HTML and JSON exporters; a single shard's directory; a run of
//! many shards (a row per part); and the golden run itself, which gets no section.

use crate::{Format, Report};
use llmib_core::{
    CellResult, CellStatus, ClockSync, MergedShard, MergedShards, Phase, ShardSpec,
    TimetableSettings,
};
use std::path::Path;

const HOSTILE: &str = "<script>alert(1)</script>";

fn golden() -> Report {
    Report::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run"))
        .expect("golden run")
}

fn render(r: &Report, f: Format) -> String {
    f.exporter().render(r).expect("renders")
}

/// A valid, ready part with a synchronized clock.
fn part(index: u32, requests: u64, late_ms: f64, max_error_ms: f64) -> MergedShard {
    MergedShard {
        index,
        status: CellStatus::Valid,
        status_reason: None,
        requests,
        origin_late_ms: late_ms,
        ready_at_open: Some(true),
        clock: Some(ClockSync {
            synchronized: true,
            est_error_ms: max_error_ms / 2.0,
            max_error_ms,
        }),
        prep_ms: None,
        prep_budget_ms: None,
    }
}

fn merge(row: &mut CellResult, shards: Vec<MergedShard>) {
    let complete = shards
        .iter()
        .all(|s| s.status.has_figures() && s.ready_at_open != Some(false));
    row.merged = Some(Box::new(MergedShards { shards, complete }));
}

/// The golden run as a merge of two shards: its first decode cell whole, its second with shard
/// 1 not ready and failed, and a rate cell whose shard 1 clock is unknown.
fn merged() -> Report {
    let mut r = golden();
    r.info.notes.push("merged from 2 shards".into());
    r.info.plan.settings.timetable = Some(TimetableSettings {
        start_at: "2026-12-04T22:00:00Z".into(),
        start_unix_ns: 1_796_421_600_000_000_000,
        prep_s: 60.0,
        prefill_tok_per_s: 10_000.0,
        cached_prompt_block_tokens: None,
    });
    let decode: Vec<usize> = (0..r.cells.len())
        .filter(|i| r.cells[*i].phase == Phase::Decode)
        .take(2)
        .collect();
    let mut prepared = part(0, 9, 0.4, 1.7);
    (prepared.prep_ms, prepared.prep_budget_ms) = (Some(1_234.0), Some(3_000.0));
    merge(
        &mut r.cells[decode[0]],
        vec![prepared, part(1, 8, 1.3, 0.05)],
    );
    let mut broken = part(1, 8, 2.0, 1.5);
    broken.ready_at_open = Some(false);
    broken.status = CellStatus::Failed;
    broken.status_reason = Some(HOSTILE.into());
    merge(&mut r.cells[decode[1]], vec![part(0, 9, 0.3, 1.7), broken]);
    r.cells[decode[1]].status = CellStatus::Failed;
    let mut rate = super::load::rate_row((8192, "8K"), 2.5, 100, 10, 0);
    let mut unsynced = part(0, 5, 0.1, 3.0);
    unsynced.ready_at_open = None;
    unsynced.clock.as_mut().expect("clock").synchronized = false;
    let mut unknown = part(1, 5, 0.2, 0.0);
    (unknown.ready_at_open, unknown.clock) = (None, None);
    merge(&mut rate, vec![unsynced, unknown]);
    r.cells.push(rate);
    r
}

#[test]
fn the_markdown_has_each_shards_figures_and_marks_the_part_not_ready() {
    let md = render(&merged(), Format::Markdown);
    let section = &md[md.find("\n## Shards\n").expect("section")..];
    for text in [
        "This run was merged from 2 shards that followed one timetable from \
         2026-12-04T22:00:00Z, each cell's slot sized from the plan at 10,000 prompt tok/s \
         (the first cell's preparation at least 60 s).",
        "| Cell | Status | Complete | Shard 0 | Shard 1 |",
        "| 8K × 1 | Valid | yes | 9 streams · prep 1.2 of 3.0 s · +0.40 ms · ready · ±1.7 ms | \
         8 streams · +1.3 ms · ready · ±0.05 ms |",
        "| Failed | no | 9 streams · +0.30 ms · ready · ±1.7 ms | \
         **⚠ 8 streams · +2.0 ms · not ready · ±1.5 ms · Failed: \
         \\<script\\>alert(1)\\</script\\>** |",
        "| 8K at 2.5/s | Valid | yes | 5 req · +0.10 ms · ±3.0 ms not synchronized | \
         5 req · +0.20 ms · clock unknown |",
        "⚠ marks a shard's part",
        "a shard whose clock was off by d has its part shifted by d",
    ] {
        assert!(section.contains(text), "{text} missing from {section}");
    }
    assert!(!section.contains("<script>"), "unescaped");
}

#[test]
fn the_page_escapes_a_hostile_reason_and_flags_the_part() {
    let html = render(&merged(), Format::Html);
    let section = &html[html
        .find(r#"<section class="panel" id="shards">"#)
        .expect("section")..];
    let section = &section[..section.find("</section>").expect("end")];
    assert!(section.contains("<h2>Shards</h2>"));
    assert!(section.contains("<th scope=\"col\">Shard 1</th>"));
    assert!(
        section.contains(
            "<td class=\"flag\">⚠ 8 streams · +2.0 ms · not ready · ±1.5 ms · Failed: \
             &lt;script&gt;alert(1)&lt;&#x2f;script&gt;</td>"
        ),
        "{section}"
    );
    assert!(!section.contains("<script>alert"), "unescaped");
    assert_eq!(section.matches("class=\"flag\"").count(), 1, "{section}");
}

#[test]
fn results_json_carries_the_parts_and_validates() {
    let text = render(&merged(), Format::Json);
    let doc: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let parts: Vec<&serde_json::Value> = doc["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| !c["merged"].is_null())
        .collect();
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[1]["merged"]["complete"], false);
    assert_eq!(parts[1]["merged"]["shards"][1]["status_reason"], HOSTILE);
    let errs = super::schema::errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn a_single_shard_says_to_merge() {
    let mut r = golden();
    r.info.plan.settings.shard = Some(ShardSpec { index: 1, count: 4 });
    let md = render(&r, Format::Markdown);
    assert!(
        md.contains(
            "\n## Shards\n\nThis is shard 1 of 4 (--shard 1/4) of a sharded run; merge every \
             shard's directory with `llm-inference-bench merge` for the run's figures (this \
             shard's rows hold its own part only).\n"
        ),
        "{md}"
    );
    assert!(!md.contains("| Cell | Status | Complete |"));
    let html = render(&r, Format::Html);
    assert!(html.contains("<code>llm-inference-bench merge</code>"));
    assert!(!html.contains("id=\"shards-table\""));
}

#[test]
fn many_shards_get_a_row_per_part() {
    let mut r = golden();
    let i = r
        .cells
        .iter()
        .position(|c| c.phase == Phase::Decode)
        .expect("decode");
    let mut parts: Vec<MergedShard> = (0..10).map(|k| part(k, 3, 0.5, 1.0)).collect();
    parts[7].status = CellStatus::NotRun;
    merge(&mut r.cells[i], parts);
    let md = render(&r, Format::Markdown);
    assert!(md.contains(
        "| Cell | Status | Complete | Shard | Requests | Prep | Origin late | Ready at open | \
         Clock error | Shard status |"
    ));
    assert!(md.contains(
        "| 8K × 1 | Valid | no | 9 | 3 streams | — | +0.50 ms | ready | ±1.0 ms | Valid |"
    ));
    assert!(
        md.contains("| 8K × 1 | Valid | no | **⚠ 7** | **3 streams** | **—** | **+0.50 ms** |"),
        "{md}"
    );
    assert_eq!(md.matches("| 8K × 1 | Valid | no |").count(), 10);
}

#[test]
fn a_run_without_shards_has_no_section() {
    let r = golden();
    assert!(crate::shards::view(&r).is_none());
    assert!(!render(&r, Format::Markdown).contains("## Shards"));
    assert!(!render(&r, Format::Html).contains("id=\"shards\""));
}

#[test]
fn a_merged_session_cell_lists_each_shards_sessions() {
    let mut r = golden();
    let mut row = super::sessions::measured(8192, 4, 900.0, 40.0, Some(0.9));
    merge(&mut row, vec![part(0, 2, 0.0, 1.0), part(1, 2, 0.0, 1.0)]);
    r.cells.push(row);
    let md = render(&r, Format::Markdown);
    let section = &md[md.find("\n## Shards\n").expect("a Shards section")..];
    assert!(
        section.contains("| Valid | yes | 2 sessions · +0.00 ms · ready · ±1.0 ms | 2 sessions"),
        "{section}"
    );
}
