//! The Shards section: what a run spread over several client machines (`run --shard I/N`,
//! `merge`; docs/distributed.md) says of its shards. A merged run gets one line on the
//! timetable its shards followed and a table of each decode and rate cell's parts (the requests
//! or streams each shard ran, how late its origin was by its own clock, whether it was ready when
//! the window opened, its clock's error bound), with the parts that make the cell incomplete
//! marked; a single shard's own directory gets a note that its rows are a part only. Other runs
//! have no section.
//!
//! [`view`] builds the section once; the HTML template and [`markdown`] only print it, so the two
//! cannot disagree. Status reasons came from the shards' files: the HTML template escapes them
//! like any other string and the Markdown report passes them through its `escape`.

use crate::model::Report;
use crate::number::{self, NULL};
use llmib_core::{CellResult, CellStatus, ClockSync, MergedShard, Phase};
use serde::Serialize;
use std::collections::BTreeSet;

/// Above this many shards a row per shard of a cell replaces a column per shard, which would
/// make the table too wide to read.
const WIDE_MAX: usize = 8;

/// The mark before a part that makes its cell incomplete (besides the colour or bold), so that
/// it shows without colour and in plain text.
pub(crate) const MARK: &str = "⚠";

/// What the mark means, under the table.
pub(crate) const MARK_NOTE: &str = "⚠ marks a shard's part that makes its cell incomplete: the \
    shard was not ready when the window opened, failed, or is Not run after sending requests.";

/// How clock skew shows in a merged run (docs/distributed.md, "Clocks"), under the table.
pub(crate) const SKEW_NOTE: &str = "Each shard placed its records on the timetable by its own \
    wall clock: a shard whose clock was off by d has its part shifted by d (a rate cell's \
    arrivals, a decode cell's window edges); its TTFT, TBT and per-request figures come from its \
    monotonic clock and are unaffected. The origin lateness is measured by the shard's own \
    clock, so it shows a slow start, not a wrong clock; the ± figure is the kernel's maximum \
    error of that clock, and the sum of two shards' bounds bounds how far apart their clocks \
    were. See docs/distributed.md (Clocks).";

/// The section.
#[derive(Debug, Serialize)]
pub(crate) struct ShardsView {
    /// A merged run's table; `None` for a single shard.
    pub merged: Option<MergedView>,
    /// A single shard's note; `None` for a merged run.
    pub shard: Option<ShardNote>,
}

/// A merged run's parts.
#[derive(Debug, Serialize)]
pub(crate) struct MergedView {
    /// `This run was merged from 4 shards that followed …`.
    pub intro: String,
    /// Column titles.
    pub columns: Vec<String>,
    /// One row per cell (or per cell and shard, past [`WIDE_MAX`] shards).
    pub rows: Vec<Vec<PartCell>>,
    /// Some part is marked, so [`MARK_NOTE`] is printed.
    pub any_marked: bool,
    /// [`MARK_NOTE`].
    pub mark_note: &'static str,
    /// [`SKEW_NOTE`].
    pub skew_note: &'static str,
}

/// One table cell.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct PartCell {
    /// The text, [`MARK`] first when marked.
    pub text: String,
    /// The part makes its cell incomplete: highlighted.
    pub marked: bool,
}

/// A single shard's note, in three pieces so that each renderer sets the command as code.
#[derive(Debug, Serialize)]
pub(crate) struct ShardNote {
    /// `This is shard 1 of 4 … with `.
    pub lead: String,
    /// The command.
    pub command: &'static str,
    /// What follows it.
    pub tail: &'static str,
}

/// The section for `report`: `None` unless the run is merged (some row has `merged`) or is a
/// shard (`plan.settings.shard`).
pub(crate) fn view(report: &Report) -> Option<ShardsView> {
    let merged = merged_view(report);
    let shard = report.info.plan.settings.shard.map(|s| ShardNote {
        lead: format!(
            "This is shard {} of {} (--shard {}/{}) of a sharded run; merge every shard's \
             directory with ",
            s.index, s.count, s.index, s.count
        ),
        command: "llm-inference-bench merge",
        tail: " for the run's figures (this shard's rows hold its own part only).",
    });
    (merged.is_some() || shard.is_some()).then_some(ShardsView { merged, shard })
}

/// The decode, rate and session rows that were merged, in table order.
fn merged_rows(report: &Report) -> Vec<&CellResult> {
    report
        .cells
        .iter()
        .filter(|c| matches!(c.phase, Phase::Decode | Phase::Rate | Phase::Session))
        .filter(|c| c.merged.is_some())
        .collect()
}

/// The merged run's table, when it has merged rows.
fn merged_view(report: &Report) -> Option<MergedView> {
    let rows = merged_rows(report);
    if rows.is_empty() {
        return None;
    }
    let indices: BTreeSet<u32> = rows
        .iter()
        .filter_map(|c| c.merged.as_ref())
        .flat_map(|m| m.shards.iter().map(|s| s.index))
        .collect();
    let (columns, rows) = if indices.len() <= WIDE_MAX {
        wide(&rows, &indices)
    } else {
        long(&rows)
    };
    Some(MergedView {
        intro: intro(report, indices.len()),
        columns,
        any_marked: rows.iter().flatten().any(|c| c.marked),
        rows,
        mark_note: MARK_NOTE,
        skew_note: SKEW_NOTE,
    })
}

/// `This run was merged from 4 shards that followed one timetable from T, each cell's slot
/// sized from the plan at R prompt tok/s (the first cell's preparation at least S).`
fn intro(report: &Report, shards: usize) -> String {
    match &report.info.plan.settings.timetable {
        Some(t) => format!(
            "This run was merged from {shards} shards that followed one timetable from {}, each \
             cell's slot sized from the plan at {} prompt tok/s (the first cell's preparation \
             at least {}).",
            t.start_at,
            number::grouped(t.prefill_tok_per_s, 0),
            number::setting_seconds(t.prep_s)
        ),
        None => format!(
            "This run was merged from {shards} shards (run.json does not record their \
             timetable)."
        ),
    }
}

/// The cell's own columns: its name, the merged status, whether every part was measured.
fn cell_texts(c: &CellResult) -> Vec<PartCell> {
    let complete = c.merged.as_ref().is_some_and(|m| m.complete);
    [
        Report::cell_label(c),
        c.status.label().to_string(),
        if complete { "yes" } else { "no" }.to_string(),
    ]
    .into_iter()
    .map(|text| PartCell {
        text,
        marked: false,
    })
    .collect()
}

/// A column per shard: `Cell | Status | Complete | Shard 0 | Shard 1 | …`.
fn wide(rows: &[&CellResult], indices: &BTreeSet<u32>) -> (Vec<String>, Vec<Vec<PartCell>>) {
    let mut columns: Vec<String> = ["Cell", "Status", "Complete"].map(String::from).into();
    columns.extend(indices.iter().map(|i| format!("Shard {i}")));
    let rows = rows
        .iter()
        .map(|c| {
            let mut out = cell_texts(c);
            let parts = c.merged.as_ref().map_or(&[][..], |m| &m.shards[..]);
            out.extend(indices.iter().map(|i| {
                parts
                    .iter()
                    .find(|s| s.index == *i)
                    .map_or_else(|| plain(NULL), |s| compact(c.phase, s))
            }));
            out
        })
        .collect();
    (columns, rows)
}

/// A row per shard of each cell, for many shards.
fn long(rows: &[&CellResult]) -> (Vec<String>, Vec<Vec<PartCell>>) {
    let columns = [
        "Cell",
        "Status",
        "Complete",
        "Shard",
        "Requests",
        "Prep",
        "Origin late",
        "Ready at open",
        "Clock error",
        "Shard status",
    ]
    .map(String::from)
    .into();
    let mut out = Vec::new();
    for c in rows {
        for s in c.merged.iter().flat_map(|m| m.shards.iter()) {
            let marked = marked(s);
            let mut row = cell_texts(c);
            let first = if marked {
                format!("{MARK} {}", s.index)
            } else {
                s.index.to_string()
            };
            let prep = prep(s).unwrap_or_else(|| NULL.to_string());
            let texts = [first, requests(c.phase, s), prep, late(s)]
                .into_iter()
                .chain([
                    ready(s).unwrap_or(NULL).to_string(),
                    clock(s.clock.as_ref()),
                ])
                .chain([status(s).unwrap_or_else(|| s.status.label().to_string())]);
            row.extend(texts.map(|text| PartCell { text, marked }));
            out.push(row);
        }
    }
    (columns, out)
}

/// An unmarked cell.
fn plain(text: &str) -> PartCell {
    PartCell {
        text: text.to_string(),
        marked: false,
    }
}

/// One shard's part in one table cell: `9 streams · prep 1.2 of 3.0 s · +0.4 ms · ready ·
/// ±1.7 ms`, then its status and reason when it is not Valid.
fn compact(phase: Phase, s: &MergedShard) -> PartCell {
    let mut parts = vec![requests(phase, s)];
    parts.extend(prep(s));
    parts.push(late(s));
    parts.extend(ready(s).map(str::to_string));
    parts.push(clock(s.clock.as_ref()));
    parts.extend(status(s));
    let text = parts.join(" · ");
    let marked = marked(s);
    PartCell {
        text: if marked {
            format!("{MARK} {text}")
        } else {
            text
        },
        marked,
    }
}

/// Whether a part makes its cell incomplete in a way the reader must see: not ready at the
/// window's open, failed, or Not run although it sent requests (it stopped part way).
pub(crate) fn marked(s: &MergedShard) -> bool {
    s.ready_at_open == Some(false)
        || s.status == CellStatus::Failed
        || (s.status == CellStatus::NotRun && s.requests > 0)
}

/// `9 streams` (decode), `9 sessions` (session) or `9 req` (rate).
fn requests(phase: Phase, s: &MergedShard) -> String {
    let unit = match phase {
        Phase::Decode => "streams",
        Phase::Session => "sessions",
        _ => "req",
    };
    format!("{} {unit}", number::count(s.requests))
}

/// Milliseconds, with two decimals below 1 ms (chrony keeps LAN clocks well under one).
fn ms(v: f64) -> String {
    if !v.is_finite() {
        NULL.to_string()
    } else if v.abs() < 1.0 {
        format!("{v:.2} ms")
    } else {
        format!("{} ms", number::grouped(v, 1))
    }
}

/// `prep 1.2 of 3.0 s`: how long the shard's preparation took of its slot's, where recorded.
fn prep(s: &MergedShard) -> Option<String> {
    let (used, budget) = (s.prep_ms?, s.prep_budget_ms?);
    Some(format!(
        "prep {} of {} s",
        number::grouped(used / 1e3, 1),
        number::grouped(budget / 1e3, 1)
    ))
}

/// The origin's lateness, signed: `+0.40 ms` (a negative one was early).
fn late(s: &MergedShard) -> String {
    let v = s.origin_late_ms;
    if v.is_finite() && v >= 0.0 {
        format!("+{}", ms(v))
    } else {
        ms(v)
    }
}

/// `ready` / `not ready` (decode); `None` for a rate cell.
fn ready(s: &MergedShard) -> Option<&'static str> {
    s.ready_at_open
        .map(|r| if r { "ready" } else { "not ready" })
}

/// `±1.7 ms`, `±1.7 ms not synchronized`, or `clock unknown`.
fn clock(c: Option<&ClockSync>) -> String {
    match c {
        None => format!("clock {}", crate::model::UNKNOWN),
        Some(c) if c.synchronized => format!("±{}", ms(c.max_error_ms)),
        Some(c) => format!("±{} not synchronized", ms(c.max_error_ms)),
    }
}

/// The part's status and reason when it is not Valid: `Failed: 3 of 9 streams broke`.
fn status(s: &MergedShard) -> Option<String> {
    if s.status == CellStatus::Valid {
        return None;
    }
    Some(match &s.status_reason {
        Some(r) => format!("{}: {r}", s.status.label()),
        None => s.status.label().to_string(),
    })
}
