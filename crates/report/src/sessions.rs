//! The Sessions section (METHOD.md, "Sessions"): session cells, S concurrent conversations
//! from a history of C tokens, turn by turn. This module decides what each exporter prints of
//! them: the matrix (rows history depth C, columns concurrent sessions S), the per-turn table
//! and the notes; the page's charts and view are in `sessions_chart`.
//!
//! A session row reuses the contract's columns (total tok/s over the measured turns, TTFT over
//! them, per-request tok/s = 1 / TPOT p50) and carries its own (`turns_completed`,
//! `cache_hit_rate`, `per_turn`, …) flattened into the row. Null prints as `—`, never 0.

use crate::model::{Matrix, Report};
use crate::number::{self, NULL};
use crate::table::Table;
use llmib_core::{CellResult, PerTurn, Phase};

/// The caption of the Sessions section, shared by the page and the Markdown.
pub(crate) const SESSIONS_CAPTION: &str = "Sessions: S concurrent conversations, each from a \
    history of C tokens (turn 0, sent once and not measured, so that the server may cache it), \
    then turn after turn, each appending the model's answer and a new user message. Rows are \
    history depth, columns concurrent sessions. Each cell: total output tok/s over the measured \
    turns, their TTFT p50 / p99, the median per-request tok/s, the prefix-cache hit rate \
    measured (the server's cached prompt tokens ÷ prompt tokens) / predicted (what a perfect \
    prefix cache would serve), and the turns completed.";

/// One line of a matrix cell: its text and what it is (a CSS class on the page).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(crate) struct CellLine {
    /// `l1` (total tok/s), `badge` (a status with figures), `ttft`, `per-request`,
    /// `hit-rate`, `turns`.
    pub class: &'static str,
    /// As people read it.
    pub text: String,
}

impl Report {
    /// Session rows, by history depth then S.
    pub(crate) fn sessions(&self) -> impl Iterator<Item = &CellResult> {
        self.cells.iter().filter(|c| c.phase == Phase::Session)
    }

    /// Whether the run has session rows (the Sessions section is shown).
    pub(crate) fn has_sessions(&self) -> bool {
        self.sessions().next().is_some()
    }

    /// The session matrix: rows are history depths, columns concurrent sessions.
    pub(crate) fn session_matrix(&self) -> Matrix<'_> {
        self.phase_matrix(Phase::Session)
    }
}

/// A share as a percentage with one decimal (`92.1 %`).
pub(crate) fn share(v: f64) -> String {
    if v.is_finite() {
        format!("{} %", number::grouped(v * 100.0, 1))
    } else {
        NULL.to_string()
    }
}

/// The hit rate measured / predicted: `92.1 % / 93.0 %` (`—` for a rate the row lacks: the
/// server did not report cached tokens).
pub(crate) fn hit_rates(c: &CellResult) -> String {
    let s = &c.session;
    format!(
        "{} / {}",
        number::or_null(s.cache_hit_rate.flatten(), share),
        number::or_null(s.predicted_cache_hit_rate.flatten(), share)
    )
}

/// The TTFT p50 / p99 of the measured turns: `120 / 450 ms`; the p50 alone where the row has
/// no distribution.
pub(crate) fn ttft_p50_p99(c: &CellResult) -> String {
    match (&c.ttft_ms, c.ttft_ms_p50) {
        (Some(s), _) => format!(
            "{} / {}",
            number::grouped(s.p50, if s.p50 < 10.0 { 1 } else { 0 }),
            number::ttft_ms(s.p99)
        ),
        (None, p50) => number::or_null(p50, number::ttft_ms),
    }
}

/// The measured turns that finished (`—` where the row has none).
pub(crate) fn turns_completed(c: &CellResult) -> Option<u64> {
    c.session.turns_completed.flatten()
}

/// The lines of one matrix cell: total tok/s, the status where it is not Valid, TTFT p50 /
/// p99, per-request tok/s, hit rate measured / predicted and turns completed; a cell without
/// figures is its status in words.
pub(crate) fn cell_lines(c: &CellResult) -> Vec<CellLine> {
    let line = |class, text| CellLine { class, text };
    if !c.status.has_figures() {
        return vec![line("l1", c.status.label().to_string())];
    }
    let mut v = vec![line(
        "l1",
        format!("{} tok/s", number::or_null(c.total_tok_per_s, number::rate)),
    )];
    if c.status != llmib_core::CellStatus::Valid {
        v.push(line("badge", c.status.label().to_string()));
    }
    v.push(line("ttft", format!("TTFT {}", ttft_p50_p99(c))));
    v.push(line(
        "per-request",
        format!(
            "{} tok/s per request",
            number::or_null(c.per_request_tok_per_s, number::rate)
        ),
    ));
    v.push(line("hit-rate", format!("hit {}", hit_rates(c))));
    v.push(line(
        "turns",
        format!(
            "{} turns",
            number::or_null(turns_completed(c), number::count)
        ),
    ));
    v
}

/// What a reader should know beside a cell: its status reason (which carries the cache note:
/// caching looks off, evictions) or, where only the figures have one, the cache note.
pub(crate) fn cell_note(c: &CellResult) -> Option<String> {
    let cache = c
        .session
        .session
        .as_ref()
        .and_then(|f| f.cache_note.clone());
    match (c.status_reason.clone(), cache) {
        (Some(r), Some(n)) if !r.contains(&n) => Some(format!("{r}; {n}")),
        (Some(r), _) => Some(r),
        (None, n) => n,
    }
}

/// The notes under the matrix: `8K × 4: <reason>` and each failed cell's first error.
pub(crate) fn notes(report: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for c in report.sessions() {
        let name = Report::cell_label(c);
        if let Some(n) = cell_note(c) {
            out.push(format!("{name}: {n}"));
        }
        if let Some(e) = &c.first_error {
            out.push(format!("{name}: first error: {e}"));
        }
    }
    out
}

/// The per-turn table's columns.
const TURN_COLS: [(&str, bool); 11] = [
    ("Context", false),
    ("Sessions", true),
    ("Turn", true),
    ("Requests", true),
    ("Prompt tokens", true),
    ("Cached", true),
    ("Predicted", true),
    ("TTFT p50", true),
    ("Prefill part", true),
    ("Wait part", true),
    ("Status", false),
];

/// What the Turn column says of turn 0: it is there to tell a cold history from the warm
/// turns after it, and is not measured.
pub(crate) const WARMUP_TURN: &str = "0 (warm-up, not measured)";

/// The texts of one turn of a cell, in [`TURN_COLS`] order.
fn turn_texts(c: &CellResult, t: &PerTurn) -> Vec<String> {
    let ms = |v: Option<f64>| number::or_null(v, number::ttft_ms);
    vec![
        Report::context_label(c),
        c.concurrency.to_string(),
        if t.measured {
            t.turn.to_string()
        } else {
            WARMUP_TURN.to_string()
        },
        number::count(t.requests),
        number::count(t.prompt_tokens),
        number::or_null(t.cached_tokens, number::count),
        number::count(t.predicted_cached_tokens),
        ms(t.ttft_ms_p50),
        ms(t.ttft_prefill_ms_p50),
        ms(t.ttft_wait_ms_p50),
        c.status.label().to_string(),
    ]
}

/// Every turn of every session cell with a `per_turn` list, in matrix order, each with
/// whether it is the warm-up.
pub(crate) fn turn_rows(report: &Report) -> Vec<(&CellResult, &PerTurn)> {
    report
        .sessions()
        .flat_map(|c| {
            c.session
                .per_turn
                .as_ref()
                .and_then(Option::as_ref)
                .into_iter()
                .flatten()
                .map(move |t| (c, t))
        })
        .collect()
}

impl Table {
    /// The per-turn table of the session cells; `None` when no cell has one.
    pub(crate) fn session_turns(report: &Report) -> Option<Table> {
        let rows = turn_rows(report)
            .into_iter()
            .map(|(c, t)| (c, turn_texts(c, t)))
            .collect();
        Table::of_texts(&TURN_COLS, rows)
    }
}
