//! The one table model. The All-measurements columns are a list of [`Column`]s; each column knows
//! its title, its CSV header (with units), how it prints a row for people and how it writes it
//! for machines. Markdown, HTML and CSV all iterate the same list, so they can never drift apart.

use crate::model::Report;
use crate::number;
use llmib_core::{CellResult, Phase};

/// What the Cost and energy table's figures are (docs/method-notes.md, "Cost and energy per
/// token"), under its title in Markdown and HTML.
pub const ECONOMICS_CAPTION: &str = "Per measured cell: output tok/s per GPU; the cost per \
     million tokens at the price given (--gpu-hour-usd × GPUs, or --node-hour-usd) and the \
     cell's tok/s; the energy of the server's GPUs over the measured window (the trapezoid of \
     their power samples) per output token. Power says why a cell has no energy figure.";

/// One column of the All-measurements table, in the seed's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Column {
    /// `Prefill` / `Sustained decode`.
    Phase,
    /// Context label (`8K`).
    Context,
    /// N.
    RequestsAtOnce,
    /// Status in words.
    Status,
    /// Prefill: prompt tok/s; decode: total output tok/s.
    TotalTokPerS,
    /// Median per-request tok/s.
    PerRequestTokPerS,
    /// Median TTFT.
    Ttft,
    /// Median time between tokens.
    Tbt,
    /// Time-weighted mean of active requests.
    AvgActive,
    /// Requests finished inside the window.
    Completed,
    /// Content tokens inside the window.
    OutputTokens,
    /// The window's length.
    MeasuredFor,
}

/// A figure as a machine reads it: a number, a string, or null.
#[derive(Debug, Clone, PartialEq)]
pub enum Raw {
    /// Does not apply.
    Null,
    /// A number (unrounded).
    Num(f64),
    /// Words.
    Text(String),
}

impl Raw {
    /// A figure that may be missing.
    pub fn num(v: Option<f64>) -> Raw {
        v.map_or(Raw::Null, Raw::Num)
    }

    /// A count that may be missing.
    pub fn int(v: Option<u64>) -> Raw {
        v.map_or(Raw::Null, |n| Raw::Num(n as f64))
    }
}

impl Column {
    /// The seed's columns, in order.
    pub const ALL: [Column; 12] = [
        Column::Phase,
        Column::Context,
        Column::RequestsAtOnce,
        Column::Status,
        Column::TotalTokPerS,
        Column::PerRequestTokPerS,
        Column::Ttft,
        Column::Tbt,
        Column::AvgActive,
        Column::Completed,
        Column::OutputTokens,
        Column::MeasuredFor,
    ];

    /// The measured figures: every column after the row's identity and status (a view of
    /// [`Column::ALL`], so the two lists cannot drift apart).
    pub const FIGURES: &'static [Column] = Column::ALL.split_at(4).1;

    /// Title as the seed's table prints it.
    pub fn title(self) -> &'static str {
        match self {
            Column::Phase => "Phase",
            Column::Context => "Context",
            Column::RequestsAtOnce => "Requests at once",
            Column::Status => "Status",
            Column::TotalTokPerS => "Total tok/s",
            Column::PerRequestTokPerS => "Per request tok/s",
            Column::Ttft => "TTFT",
            Column::Tbt => "Time between tokens",
            Column::AvgActive => "Average active requests",
            Column::Completed => "Completed requests",
            Column::OutputTokens => "Output tokens",
            Column::MeasuredFor => "Measured for",
        }
    }

    /// CSV header: the title with the unit of the raw value written under it.
    pub fn csv_header(self) -> &'static str {
        match self {
            Column::Context => "Context (tokens)",
            Column::Ttft => "TTFT (ms)",
            Column::Tbt => "Time between tokens (ms)",
            Column::MeasuredFor => "Measured for (s)",
            other => other.title(),
        }
    }

    /// Whether the column holds numbers (right-aligned, sorted numerically).
    pub fn numeric(self) -> bool {
        !matches!(self, Column::Phase | Column::Status)
    }

    /// The value for machines: unrounded, in the unit of [`Column::csv_header`].
    pub fn raw(self, c: &CellResult) -> Raw {
        let (num, int) = (Raw::num, Raw::int);
        match self {
            Column::Phase => Raw::Text(c.phase.label().to_string()),
            Column::Context => Raw::Num(c.context_tokens as f64),
            Column::RequestsAtOnce if crate::model::is_load(c) => Raw::Null,
            Column::RequestsAtOnce => Raw::Num(f64::from(c.concurrency)),
            Column::Status => Raw::Text(c.status.label().to_string()),
            Column::TotalTokPerS => num(total(c)),
            Column::PerRequestTokPerS => num(c.per_request_tok_per_s),
            Column::Ttft => num(c.ttft_ms_p50),
            Column::Tbt => num(c.tbt_ms_p50),
            Column::AvgActive => num(c.avg_active_requests),
            Column::Completed => int(c.completed_requests),
            Column::OutputTokens => int(c.output_tokens),
            Column::MeasuredFor => num(c.measured_s),
        }
    }

    /// The value for people, formatted as the seed prints it.
    pub fn text(self, c: &CellResult) -> String {
        match self {
            Column::Phase => c.phase.label().to_string(),
            Column::Context => Report::context_label(c),
            Column::RequestsAtOnce if crate::model::is_load(c) => number::NULL.to_string(),
            Column::RequestsAtOnce => c.concurrency.to_string(),
            Column::Status => c.status.label().to_string(),
            Column::TotalTokPerS => number::or_null(total(c), number::rate),
            Column::PerRequestTokPerS => number::or_null(c.per_request_tok_per_s, number::rate),
            Column::Ttft => number::or_null(c.ttft_ms_p50, number::ttft_ms),
            Column::Tbt => number::or_null(c.tbt_ms_p50, number::tbt_ms),
            Column::AvgActive => number::or_null(c.avg_active_requests, number::decimal1),
            Column::Completed => number::or_null(c.completed_requests, number::count),
            Column::OutputTokens => number::or_null(c.output_tokens, number::count),
            Column::MeasuredFor => number::or_null(c.measured_s, number::seconds),
        }
    }
}

/// The Total tok/s column: a prefill row shows its prompt tok/s there, as the seed does.
pub fn total(c: &CellResult) -> Option<f64> {
    match c.phase {
        Phase::Prefill => c.prompt_tok_per_s.or(c.total_tok_per_s),
        Phase::Decode
        | Phase::Burst
        | Phase::Rate
        | Phase::Capacity
        | Phase::Session
        | Phase::MixedPrefill => c.total_tok_per_s,
    }
}

/// One printed cell of a table.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TableCell {
    /// As people read it (`1,345.8`).
    pub text: String,
    /// Sort key for the HTML table: the raw number, or the words; empty for null so that
    /// nulls sort last.
    pub sort: String,
    /// Right-align (numbers).
    pub numeric: bool,
}

/// A table as data: column titles and rows of printed cells.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Table {
    /// Column titles.
    pub columns: Vec<String>,
    /// Whether each column is numeric.
    pub numeric: Vec<bool>,
    /// Rows.
    pub rows: Vec<TableRow>,
}

/// One row, with the status as a key for styling.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TableRow {
    /// Status in snake case (`over_capacity`), for CSS classes.
    pub status: String,
    /// The cells.
    pub cells: Vec<TableCell>,
}

/// The status as a stable snake-case key, as `cells.jsonl` spells it.
pub fn status_key(c: &CellResult) -> String {
    serde_json::to_value(c.status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Table {
    /// The All-measurements table of a report, with `columns`: every row but the open-loop
    /// ones, which have their own tables in the Load section (the CSV keeps them all).
    pub fn measurements(report: &Report, columns: &[Column]) -> Table {
        let rows = report
            .cells
            .iter()
            .filter(|c| !crate::model::is_load(c))
            .map(|c| TableRow {
                status: status_key(c),
                cells: columns
                    .iter()
                    .map(|col| TableCell {
                        text: col.text(c),
                        sort: match col.raw(c) {
                            Raw::Null => String::new(),
                            Raw::Num(v) => v.to_string(),
                            // Order statuses and phases as the table does, not alphabetically.
                            Raw::Text(t) => t,
                        },
                        numeric: col.numeric(),
                    })
                    .collect(),
            })
            .collect();
        Table {
            columns: columns.iter().map(|c| c.title().to_string()).collect(),
            numeric: columns.iter().map(|c| c.numeric()).collect(),
            rows,
        }
    }
}

impl Table {
    /// A table of printed texts, one row per cell (styled by its status), with `cols` as
    /// (title, numeric); `None` when there are no rows (the section is left out).
    pub(crate) fn of_texts(
        cols: &[(&str, bool)],
        rows: Vec<(&CellResult, Vec<String>)>,
    ) -> Option<Table> {
        let rows: Vec<TableRow> = rows
            .into_iter()
            .map(|(c, texts)| TableRow {
                status: status_key(c),
                cells: texts
                    .into_iter()
                    .zip(cols)
                    .map(|(text, (_, numeric))| TableCell {
                        sort: text.clone(),
                        text,
                        numeric: *numeric,
                    })
                    .collect(),
            })
            .collect();
        (!rows.is_empty()).then(|| Table {
            columns: cols.iter().map(|(t, _)| t.to_string()).collect(),
            numeric: cols.iter().map(|(_, n)| *n).collect(),
            rows,
        })
    }

    /// The Burst / E2E cells (a finite batch of requests, at most N in flight, timed from the
    /// first send to the last end), with the steady-state sub-window's output tok/s and
    /// length (`llmib_core::steady_figures`); `None` when the run had none.
    pub fn bursts(report: &Report) -> Option<Table> {
        let cols = [
            ("Context", false),
            ("Requests at once", true),
            ("Requests", true),
            ("Status", false),
            ("Throughput tok/s", true),
            ("Requests/s", true),
            ("E2E p50", true),
            ("E2E p90", true),
            ("TTFT p50", true),
            ("TTST p50", true),
            ("TBT p50", true),
            ("Max-token hits", true),
            ("Wall time", true),
            ("Steady tok/s", true),
            ("Steady window", true),
        ];
        let null = || number::NULL.to_string();
        let ms = |s: Option<&llmib_core::Summary>, p90: bool| {
            s.map_or_else(null, |s| number::ttft_ms(if p90 { s.p90 } else { s.p50 }))
        };
        let rows: Vec<(&CellResult, Vec<String>)> = report
            .cells
            .iter()
            .filter(|c| c.phase == Phase::Burst)
            .map(|c| {
                let b = c.burst.as_ref();
                let steady = b.and_then(|b| b.steady.as_ref());
                let texts = [
                    Report::context_label(c),
                    c.concurrency.to_string(),
                    c.requests_sent.map_or_else(null, number::count),
                    c.status.label().to_string(),
                    b.map_or_else(null, |b| number::rate(b.tok_per_s)),
                    b.map_or_else(null, |b| number::decimal1(b.requests_per_s)),
                    ms(b.and_then(|b| b.e2e_ms.as_ref()), false),
                    ms(b.and_then(|b| b.e2e_ms.as_ref()), true),
                    ms(b.and_then(|b| b.ttft_ms.as_ref()), false),
                    ms(b.and_then(|b| b.ttst_ms.as_ref()), false),
                    b.and_then(|b| b.tbt_ms.as_ref())
                        .map_or_else(null, |s| number::tbt_ms(s.p50)),
                    b.map_or_else(null, |b| number::count(b.max_token_hits)),
                    b.map_or_else(null, |b| number::seconds(b.wall_s)),
                    steady.map_or_else(null, |s| number::rate(s.output_tok_per_s)),
                    steady.map_or_else(null, |s| number::seconds(s.duration_s)),
                ];
                (c, texts.to_vec())
            })
            .collect();
        Table::of_texts(&cols, rows)
    }

    /// Speculative decoding per decode cell: the server's acceptance rate and tokens per step
    /// over the window, and the client's own tokens per chunk; `None` when no row shows
    /// speculative decoding (no server figure and about one token per chunk everywhere).
    pub fn speculative(report: &Report) -> Option<Table> {
        let shows = |c: &CellResult| {
            c.speculative.is_some() || c.tokens_per_chunk.is_some_and(|t| t > 1.05)
        };
        if !report.cells.iter().any(shows) {
            return None;
        }
        // The column by draft position only where a row has it (vLLM's per-position counter),
        // so a run without it renders as before.
        let by_pos = report.cells.iter().any(|c| {
            (c.speculative.as_ref()).is_some_and(|s| !s.per_position_accept_rate.is_empty())
        });
        let mut cols = vec![
            ("Context", false),
            ("Requests at once", true),
            ("Accept rate", true),
            ("Tokens per step", true),
            ("Tokens per chunk", true),
        ];
        if by_pos {
            cols.push(("Accept rate by draft position", false));
        }
        cols.push(("Source", false));
        let null = || number::NULL.to_string();
        let pct = |r: &f64| format!("{:.1}%", r * 100.0);
        let rows: Vec<(&CellResult, Vec<String>)> = report
            .cells
            .iter()
            .filter(|c| c.phase == Phase::Decode && c.status.has_figures())
            .map(|c| {
                let s = c.speculative.as_ref();
                let mut texts = vec![
                    Report::context_label(c),
                    c.concurrency.to_string(),
                    s.and_then(|s| s.accept_rate)
                        .as_ref()
                        .map_or_else(null, pct),
                    s.and_then(|s| s.accept_length)
                        .map_or_else(null, |l| format!("{l:.2}")),
                    c.tokens_per_chunk.map_or_else(null, |t| format!("{t:.2}")),
                ];
                if by_pos {
                    let rates = s.map(|s| &s.per_position_accept_rate);
                    let list = rates
                        .filter(|r| !r.is_empty())
                        .map(|r| r.iter().map(pct).collect::<Vec<_>>().join(" / "));
                    texts.push(list.unwrap_or_else(null));
                }
                texts.push(s.map_or_else(null, |s| s.source.clone()));
                (c, texts)
            })
            .collect();
        Table::of_texts(&cols, rows)
    }

    /// What this machine's GPUs and CPU did during each cell (rows whose hardware summary saw
    /// a GPU); `None` when no row has one (a remote server, the monitor off, no GPU).
    pub fn hardware(report: &Report) -> Option<Table> {
        let cols = [
            ("Phase", false),
            ("Context", false),
            ("Requests at once", true),
            ("GPU util mean", true),
            ("GPU util max", true),
            ("Power mean", true),
            ("Power max", true),
            ("VRAM max", true),
            ("PCIe rx", true),
            ("PCIe tx", true),
            ("CPU util mean", true),
            ("Samples", true),
            ("Source", false),
        ];
        let pct = |v: Option<f64>| v.map_or(number::NULL.to_string(), |x| format!("{x:.0}%"));
        let watts = |v: Option<f64>| v.map_or(number::NULL.to_string(), |x| format!("{x:.0} W"));
        let mbs = |v: Option<f64>| {
            v.map_or(number::NULL.to_string(), |x| {
                format!("{} MB/s", number::decimal1(x / 1e6))
            })
        };
        let rows: Vec<(&CellResult, Vec<String>)> = report
            .cells
            .iter()
            // Without a GPU (a CPU-only or simulated server) the table would be dashes and
            // this machine's CPU load: the rows keep it, the report leaves it out.
            .filter_map(|c| c.hardware.as_ref().filter(|h| h.gpus > 0).map(|h| (c, h)))
            .map(|(c, h)| {
                let texts = [
                    c.phase.label().to_string(),
                    Report::context_label(c),
                    c.concurrency.to_string(),
                    pct(h.gpu_util_pct_mean),
                    pct(h.gpu_util_pct_max),
                    watts(h.power_w_mean),
                    watts(h.power_w_max),
                    h.vram_used_bytes_max.map_or(number::NULL.to_string(), |b| {
                        format!("{} GiB", number::decimal1(b as f64 / f64::from(1u32 << 30)))
                    }),
                    mbs(h.pcie_rx_bytes_per_s_mean),
                    mbs(h.pcie_tx_bytes_per_s_mean),
                    pct(h.cpu_util_pct_mean),
                    h.samples.to_string(),
                    h.source.clone(),
                ];
                (c, texts.to_vec())
            })
            .collect();
        Table::of_texts(&cols, rows)
    }

    /// Cost and energy per token of each measured cell (`economics` in its row,
    /// `llmib_core::cell_economics`); `None` when no row has any of those figures (no price, no
    /// GPU count, no valid power), so a run without them shows no table of dashes.
    pub fn economics(report: &Report) -> Option<Table> {
        let cols = [
            ("Phase", false),
            ("Context", false),
            ("Requests at once", true),
            ("GPUs", true),
            ("Output tok/s per GPU", true),
            ("$ per M output tokens", true),
            ("$ per M input tokens", true),
            ("Energy", true),
            ("J per output token", true),
            ("Output tokens per kWh", true),
            ("Power", false),
        ];
        let cells: Vec<(&CellResult, &llmib_core::CellEconomics)> = report
            .cells
            .iter()
            .filter_map(|c| c.economics.as_deref().map(|e| (c, e)))
            .collect();
        let any = cells.iter().any(|(_, e)| {
            e.output_tok_per_s_per_gpu.is_some() || e.usd_per_hour.is_some() || e.energy_j.is_some()
        });
        if !any {
            return None;
        }
        let or = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or(number::NULL.to_string(), f);
        let usd = |x: f64| format!("${x:.4}");
        let rows = cells
            .into_iter()
            .map(|(c, e)| {
                let texts = vec![
                    c.phase.label().to_string(),
                    Report::context_label(c),
                    c.concurrency.to_string(),
                    e.gpus.map_or(number::NULL.to_string(), |g| g.to_string()),
                    or(e.output_tok_per_s_per_gpu, &number::rate),
                    or(e.usd_per_m_output_tokens, &usd),
                    or(e.usd_per_m_input_tokens, &usd),
                    or(e.energy_j, &|j| format!("{} J", number::rate(j))),
                    or(e.joules_per_output_token, &|j| format!("{j:.3}")),
                    or(
                        e.output_tokens_per_kwh,
                        &|t| number::count(t.round() as u64),
                    ),
                    match (&e.power_reason, e.power_valid) {
                        (_, true) => "measured".to_string(),
                        (Some(why), false) => why.clone(),
                        (None, false) => number::NULL.to_string(),
                    },
                ];
                (c, texts)
            })
            .collect();
        Table::of_texts(&cols, rows)
    }
}

/// The text of one decode matrix cell, as lines: `190.7` / `122 ms TTFT`; a queued cell adds
/// `Requests queued` between them; a cell without figures is its status in words.
pub fn matrix_cell_lines(c: &CellResult) -> Vec<String> {
    if !c.status.has_figures() {
        return vec![c.status.label().to_string()];
    }
    let mut lines = vec![number::or_null(c.total_tok_per_s, number::rate)];
    if c.status != llmib_core::CellStatus::Valid {
        lines.push(c.status.label().to_string());
    }
    if let Some(t) = c.ttft_ms_p50 {
        lines.push(format!("{} TTFT", number::ttft_ms(t)));
    }
    lines
}

/// The prefill table's columns: context, prompt tok/s, TTFT.
pub fn prefill_row(c: &CellResult) -> [String; 3] {
    let rate = if c.status.has_figures() {
        let client = number::or_null(total(c), number::rate);
        // The server's own rate, from its counters, beside the client's figure.
        match c.server_prompt_tok_per_s {
            Some(s) => format!("{client} (server {})", number::rate(s)),
            None => client,
        }
    } else {
        c.status.label().to_string()
    };
    // A standalone prefill (several cold prefills) shows its spread beside the median.
    let spread = c
        .ttft_ms
        .as_ref()
        .filter(|s| c.phase == Phase::Prefill && s.n > 1)
        .map(|s| format!(" ({}–{})", number::ttft_ms(s.min), number::ttft_ms(s.max)))
        .unwrap_or_default();
    [
        Report::context_label(c),
        rate,
        format!(
            "{}{spread}",
            number::or_null(c.ttft_ms_p50, number::ttft_ms)
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures start right after the identity and status columns.
    #[test]
    fn figures_are_the_measured_columns() {
        assert_eq!(Column::FIGURES.len(), 8);
        assert_eq!(Column::FIGURES[0].title(), Column::TotalTokPerS.title());
        assert!(
            Column::FIGURES
                .iter()
                .all(|c| c.title() != Column::Status.title())
        );
    }
}
