//! `compare`: several runs side by side, each measurement with its ratio to the first run (the
//! baseline). Throughput is compared (prompt tok/s for prefill, total tok/s for decode); a ratio
//! above 1 means faster than the baseline. Measurements that cannot be compared (different
//! status, or a context or N one run does not have) are kept and marked "not comparable", never
//! dropped, so a reader sees the whole matrix of every run.

use crate::ReportError;
use crate::compare_load;
use crate::compare_sessions;
use crate::html::{self, render_template, ser};
use crate::model::Report;
use crate::number;
use crate::table::{self, status_key};
use llmib_core::{CellKey, CellResult, Phase};
use minijinja::Value;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt::Write;
use std::path::Path;

/// One run in a comparison.
#[derive(Debug, Clone)]
pub struct RunEntry {
    /// Short name shown in headers: `A`, `B`, …
    pub letter: String,
    /// Where it was read from (the folder name).
    pub source: String,
    /// The run.
    pub report: Report,
}

/// How one run's measurement relates to the baseline's.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Verdict {
    /// This is the baseline run.
    Baseline,
    /// Both have figures with the same status: `ratio` = this / baseline.
    Comparable {
        /// Throughput ratio to the baseline (None if the baseline's is 0 or missing).
        ratio: Option<f64>,
    },
    /// Same status, neither has figures (both Over capacity, say): nothing to compare.
    SameStatus,
    /// Different status, or missing in one of the two runs.
    NotComparable {
        /// Why, in words.
        reason: String,
    },
}

/// One measurement across the runs.
#[derive(Debug, Clone)]
pub struct CompareRow {
    /// Prefill or decode.
    pub phase: Phase,
    /// Exact tokens.
    pub context_tokens: u64,
    /// Label.
    pub context_label: String,
    /// N (0 for the open-loop rows).
    pub concurrency: u32,
    /// A rate cell's requested rate, requests per second (rate cells are paired by context
    /// and rate, capacity rows by context).
    pub request_rate: Option<f64>,
    /// One per run, in run order: the run's row (if any) and its verdict.
    pub entries: Vec<(Option<CellResult>, Verdict)>,
}

/// Several runs lined up measurement by measurement.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The runs; the first is the baseline.
    pub runs: Vec<RunEntry>,
    /// Every measurement that any run has, in table order.
    pub rows: Vec<CompareRow>,
}

fn letter(i: usize) -> String {
    // A … Z, then A1, B1 … : more than 26 runs is unusual but must not panic.
    let base = char::from(b'A' + (i % 26) as u8);
    if i < 26 {
        base.to_string()
    } else {
        format!("{base}{}", i / 26)
    }
}

/// Writes `lines` as columns, each padded to its widest cell plus two spaces (the last cell
/// unpadded, trailing blanks trimmed).
fn write_aligned(out: &mut String, lines: &[Vec<String>]) {
    let cols = lines.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|i| {
            lines
                .iter()
                .map(|l| l.get(i).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for l in lines {
        let mut s = String::new();
        for (i, cell) in l.iter().enumerate() {
            let pad = widths
                .get(i)
                .copied()
                .unwrap_or(0)
                .saturating_sub(cell.chars().count());
            s.push_str(cell);
            if i + 1 < l.len() {
                s.push_str(&" ".repeat(pad + 2));
            }
        }
        let _ = writeln!(out, "{}", s.trim_end());
    }
}

fn verdict(base: Option<&CellResult>, this: Option<&CellResult>, base_name: &str) -> Verdict {
    match (base, this) {
        (_, None) => Verdict::NotComparable {
            reason: "not measured in this run".to_string(),
        },
        (None, Some(_)) => Verdict::NotComparable {
            reason: format!("not measured in {base_name}"),
        },
        (Some(b), Some(t)) if b.status != t.status => Verdict::NotComparable {
            reason: format!(
                "{} in {base_name}, {} here",
                b.status.label(),
                t.status.label()
            ),
        },
        (Some(b), Some(t)) if t.status.has_figures() => Verdict::Comparable {
            ratio: match (table::total(b), table::total(t)) {
                (Some(b), Some(t)) if b > 0.0 && b.is_finite() && t.is_finite() => Some(t / b),
                _ => None,
            },
        },
        _ => Verdict::SameStatus,
    }
}

impl Comparison {
    /// Lines up `reports` (named by where they came from); the first is the baseline.
    pub fn new(reports: Vec<(String, Report)>) -> Result<Comparison, ReportError> {
        if reports.len() < 2 {
            return Err(ReportError::NothingToCompare);
        }
        let runs: Vec<RunEntry> = reports
            .into_iter()
            .enumerate()
            .map(|(i, (source, report))| RunEntry {
                letter: letter(i),
                source,
                report,
            })
            .collect();
        // The key pairs rate cells by context and rate, capacity rows by context.
        let mut keys: BTreeSet<CellKey> = BTreeSet::new();
        for r in &runs {
            keys.extend(r.report.cells.iter().map(CellResult::key));
        }
        let find =
            |r: &RunEntry, k: &CellKey| r.report.cells.iter().find(|c| c.key() == *k).cloned();
        let rows = keys
            .iter()
            .map(|k| {
                let cells: Vec<Option<CellResult>> = runs.iter().map(|r| find(r, k)).collect();
                let label = cells
                    .iter()
                    .flatten()
                    .map(Report::context_label)
                    .next()
                    .unwrap_or_default();
                let entries = cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        let v = if i == 0 {
                            Verdict::Baseline
                        } else {
                            verdict(cells[0].as_ref(), c.as_ref(), &runs[0].letter)
                        };
                        (c.clone(), v)
                    })
                    .collect();
                CompareRow {
                    phase: k.phase,
                    context_tokens: k.context_tokens,
                    context_label: label,
                    concurrency: k.concurrency,
                    request_rate: k.request_rate(),
                    entries,
                }
            })
            .collect();
        Ok(Comparison { runs, rows })
    }

    /// Reads each results directory and lines them up.
    pub fn load(dirs: &[&Path]) -> Result<Comparison, ReportError> {
        let mut reports = Vec::new();
        for d in dirs {
            let name = d
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| d.display().to_string());
            reports.push((name, Report::load(d)?));
        }
        Comparison::new(reports)
    }

    /// The baseline's letter (`A`).
    pub(crate) fn baseline(&self) -> String {
        self.runs
            .first()
            .map_or_else(|| "A".to_string(), |r| r.letter.clone())
    }

    /// The words for one entry: `190.7`, `201.3 ×1.06`, `Over capacity`,
    /// `Valid 201.3 (not comparable: …)`; an open-loop row shows its own figures with their
    /// differences from `base`, the baseline's row (`compare_load`).
    pub(crate) fn entry_text(
        base: Option<&CellResult>,
        cell: Option<&CellResult>,
        v: &Verdict,
    ) -> String {
        let value = |c: &CellResult| {
            let own = compare_sessions::entry_value(c, base);
            if let Some(text) = own.or_else(|| compare_load::entry_value(c, base)) {
                text
            } else if c.status.has_figures() {
                let rate = number::or_null(table::total(c), number::rate);
                if c.status == llmib_core::CellStatus::Valid {
                    rate
                } else {
                    format!("{rate} ({})", c.status.label())
                }
            } else {
                c.status.label().to_string()
            }
        };
        match (cell, v) {
            (None, Verdict::NotComparable { reason }) => format!("— (not comparable: {reason})"),
            (None, _) => number::NULL.to_string(),
            // Open-loop and session rows print their own ratios.
            (Some(c), Verdict::Comparable { ratio: Some(r) })
                if !crate::model::is_load(c) && c.phase != Phase::Session =>
            {
                format!("{} {}", value(c), number::ratio(*r))
            }
            (Some(c), Verdict::NotComparable { reason }) => {
                format!("{} (not comparable: {reason})", value(c))
            }
            (Some(c), _) => value(c),
        }
    }

    /// The plain-text table for the terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "Throughput compared to {} (prefill: prompt tok/s; decode: total tok/s; ×ratio to {}).",
            self.baseline(),
            self.baseline()
        );
        for r in &self.runs {
            // The title holds the server's model id: no escape sequence reaches the terminal.
            let title = llmib_core::sanitize_terminal(&r.report.title());
            let source = llmib_core::sanitize_terminal(&r.source);
            let _ = writeln!(out, "  {}  {title}  ({source})", r.letter);
        }
        out.push('\n');
        let mut header = vec![
            "Phase".to_string(),
            "Context".to_string(),
            "Requests at once".to_string(),
        ];
        header.extend(self.runs.iter().map(|r| r.letter.clone()));
        let mut lines = vec![header];
        for row in &self.rows {
            let mut l = vec![
                row.phase.label().to_string(),
                row.context_label.clone(),
                compare_load::load_column(row.phase, row.concurrency, row.request_rate),
            ];
            let base = row.entries.first().and_then(|e| e.0.as_ref());
            l.extend(
                row.entries
                    .iter()
                    .map(|(c, v)| Self::entry_text(base, c.as_ref(), v)),
            );
            lines.push(l);
        }
        write_aligned(&mut out, &lines);
        let nc = self
            .rows
            .iter()
            .flat_map(|r| &r.entries)
            .filter(|(_, v)| matches!(v, Verdict::NotComparable { .. }))
            .count();
        if nc > 0 {
            let _ = writeln!(
                out,
                "\n{nc} measurement(s) not comparable: a different status, or missing in one run."
            );
        }
        out
    }

    /// The HTML page.
    pub fn to_html(&self) -> Result<String, ReportError> {
        let (concurrency, matrix) = self.phase_matrix(Phase::Decode);
        let (sessions, session_matrix) = self.phase_matrix(Phase::Session);
        let ctx = minijinja::context! {
            baseline => ser(self.baseline()),
            runs => ser(self.run_views()),
            concurrency => ser(concurrency),
            matrix => ser(matrix),
            sessions => ser(sessions),
            session_matrix => ser(session_matrix),
            rows => ser(self.row_views()),
            generator => ser(html::generator()),
            css => Value::from_safe_string(html::CSS.to_string()),
            js => Value::from_safe_string(html::JS.to_string()),
        };
        render_template("compare.html", ctx)
    }

    /// The page's header of each run.
    fn run_views(&self) -> Vec<RunView> {
        self.runs
            .iter()
            .map(|r| RunView {
                letter: r.letter.clone(),
                source: r.source.clone(),
                title: r.report.title(),
                summary: r.report.summary_line(),
            })
            .collect()
    }

    /// Every measurement as a row of the long table.
    fn row_views(&self) -> Vec<RowView> {
        self.rows
            .iter()
            .map(|r| RowView {
                phase: r.phase.label(),
                context: r.context_label.clone(),
                tokens: r.context_tokens,
                n: compare_load::load_column(r.phase, r.concurrency, r.request_rate),
                n_sort: r.request_rate.unwrap_or(f64::from(r.concurrency)),
                entries: self.entry_views(&r.entries),
            })
            .collect()
    }

    /// The matrix of one phase (decode: N at once; sessions: S concurrent sessions): its
    /// concurrency columns (ascending) and one row per context (in table order), each cell
    /// every run's entry (empty where no run measured it).
    fn phase_matrix(&self, phase: Phase) -> (Vec<u32>, Vec<MatrixRow>) {
        let decode: Vec<&CompareRow> = self.rows.iter().filter(|r| r.phase == phase).collect();
        let mut contexts: Vec<(u64, String)> = Vec::new();
        let mut conc: BTreeSet<u32> = BTreeSet::new();
        for r in &decode {
            if !contexts.iter().any(|(t, _)| *t == r.context_tokens) {
                contexts.push((r.context_tokens, r.context_label.clone()));
            }
            conc.insert(r.concurrency);
        }
        let conc: Vec<u32> = conc.into_iter().collect();
        let matrix = contexts
            .iter()
            .map(|(t, label)| MatrixRow {
                label: label.clone(),
                cells: conc
                    .iter()
                    .map(|n| {
                        decode
                            .iter()
                            .find(|r| r.context_tokens == *t && r.concurrency == *n)
                            .map(|r| self.entry_views(&r.entries))
                            .unwrap_or_default()
                    })
                    .collect(),
            })
            .collect();
        (conc, matrix)
    }

    /// One measurement's entries, one per run.
    fn entry_views(&self, entries: &[(Option<CellResult>, Verdict)]) -> Vec<EntryView> {
        let base = entries.first().and_then(|e| e.0.as_ref());
        entries
            .iter()
            .enumerate()
            .map(|(i, (c, v))| self.entry_view(base, i, c, v))
            .collect()
    }

    /// Run `i`'s entry of one measurement, as the page shows it.
    fn entry_view(
        &self,
        base: Option<&CellResult>,
        i: usize,
        c: &Option<CellResult>,
        v: &Verdict,
    ) -> EntryView {
        EntryView {
            letter: self
                .runs
                .get(i)
                .map(|r| r.letter.clone())
                .unwrap_or_default(),
            status: c
                .as_ref()
                .map(status_key)
                .unwrap_or_else(|| "missing".into()),
            text: Self::entry_text(base, c.as_ref(), v),
            short: match v {
                Verdict::NotComparable { .. } => {
                    let value = match c {
                        Some(c) => Self::entry_text(base, Some(c), &Verdict::SameStatus),
                        None => number::NULL.to_string(),
                    };
                    format!("{value} · not comparable")
                }
                _ => Self::entry_text(base, c.as_ref(), v),
            },
            class: match v {
                Verdict::Baseline => "base",
                Verdict::Comparable { ratio: Some(r) } if *r >= 1.02 => "up",
                Verdict::Comparable { ratio: Some(r) } if *r <= 0.98 => "down",
                Verdict::Comparable { .. } | Verdict::SameStatus => "flat",
                Verdict::NotComparable { .. } => "nc",
            },
        }
    }
}

/// A run's header on the compare page.
#[derive(Serialize)]
struct RunView {
    letter: String,
    source: String,
    title: String,
    summary: String,
}

/// One run's entry of one measurement on the compare page.
#[derive(Serialize)]
struct EntryView {
    letter: String,
    status: String,
    text: String,
    /// Matrix cells are narrow: the value and "not comparable", the reason on hover.
    short: String,
    class: &'static str,
}

/// A measurement of the long table on the compare page.
#[derive(Serialize)]
struct RowView {
    phase: &'static str,
    context: String,
    tokens: u64,
    /// N, or a rate cell's requested rate.
    n: String,
    n_sort: f64,
    entries: Vec<EntryView>,
}

/// A context's row of the decode matrix on the compare page.
#[derive(Serialize)]
struct MatrixRow {
    label: String,
    cells: Vec<Vec<EntryView>>,
}
