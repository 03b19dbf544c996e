//! GitHub-ready Markdown: the seed page's sections and tables as text, for issues and blog
//! posts. Strings that came from a server or a user are escaped so that they render as the text
//! they are (a `<script>` model name stays text, a `|` does not break a table).

use crate::model::Report;
use crate::table::{self, Column, Table};
use crate::{Exporter, Format, ReportError};
use std::fmt::Write;

/// The Markdown exporter.
#[derive(Debug, Clone, Copy, Default)]
pub struct MarkdownExporter;

/// Escapes text for inline Markdown: every ASCII punctuation that Markdown or inline HTML gives a
/// meaning to is backslash-escaped (CommonMark allows a backslash before any ASCII punctuation),
/// and line breaks become spaces so a value cannot start a new block.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' | '!' | '&' | '~' => {
                out.push('\\');
                out.push(ch);
            }
            '\r' | '\n' => out.push(' '),
            // An escape sequence in a model id would recolour or rewrite a terminal that shows
            // the file (`cat report.md`): control characters become `?`.
            c if c.is_control() => out.push('?'),
            _ => out.push(ch),
        }
    }
    out
}

/// A fenced code block whose fence is longer than any run of backticks inside.
fn code_block(out: &mut String, lang: &str, code: &str) {
    let mut longest = 0;
    let mut run = 0;
    for ch in code.chars() {
        run = if ch == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat((longest + 1).max(3));
    let _ = writeln!(out, "{fence}{lang}\n{code}\n{fence}");
}

/// Writes a pipe table; cells are already escaped or our own text.
fn pipe_table(out: &mut String, header: &[String], numeric: &[bool], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let align: Vec<&str> = numeric
        .iter()
        .map(|n| if *n { "---:" } else { "---" })
        .collect();
    let _ = writeln!(out, "|{}|", align.join("|"));
    for r in rows {
        let _ = writeln!(out, "| {} |", r.join(" | "));
    }
}

/// A table's cells as Markdown pipes them, each escaped.
fn table(out: &mut String, t: &Table) {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| r.cells.iter().map(|c| escape(&c.text)).collect())
        .collect();
    pipe_table(out, &t.columns, &t.numeric, &rows);
}

/// A `##` section: title, one paragraph, and the table.
fn text_section(out: &mut String, title: &str, caption: &str, t: &Table) {
    let _ = writeln!(out, "\n## {title}\n\n{caption}\n");
    table(out, t);
}

/// The All-measurements table as Markdown (the seed's table, row for row).
pub fn measurements_table(report: &Report) -> String {
    let t = Table::measurements(report, &Column::ALL);
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| r.cells.iter().map(|c| escape(&c.text)).collect())
        .collect();
    let mut out = String::new();
    pipe_table(&mut out, &t.columns, &t.numeric, &rows);
    out
}

impl Exporter for MarkdownExporter {
    fn format(&self) -> Format {
        Format::Markdown
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let mut out = String::new();
        header_section(&mut out, report);
        prefill_section(&mut out, report);
        decode_section(&mut out, report);
        measurements_section(&mut out, report);
        load_section(&mut out, report);
        sessions_section(&mut out, report);
        extra_sections(&mut out, report);
        shards_section(&mut out, report);
        diagnostics_section(&mut out, report);
        notes_section(&mut out, report);
        while out.ends_with("\n\n") {
            out.pop();
        }
        Ok(out)
    }
}

/// The title, the summary line, the run's cards and the launch command.
fn header_section(out: &mut String, report: &Report) {
    let _ = writeln!(out, "# Speed test matrix\n");
    let _ = writeln!(out, "## {}\n", escape(&report.title()));
    let _ = writeln!(out, "{}\n", escape(&report.summary_line()));
    for card in report.cards() {
        let _ = writeln!(out, "### {}\n", card.title);
        for f in card.fields {
            let _ = writeln!(out, "- **{}:** {}", f.label, escape(&f.value));
        }
        out.push('\n');
    }
    if let Some(cmd) = report.launch_command() {
        let _ = writeln!(out, "### Launch command\n");
        code_block(out, "sh", cmd);
        out.push('\n');
    }
}

/// The prefill table (nothing when no prefill was measured).
fn prefill_section(out: &mut String, report: &Report) {
    let prefill: Vec<Vec<String>> = report
        .prefill()
        .map(|c| table::prefill_row(c).iter().map(|s| escape(s)).collect())
        .collect();
    if !prefill.is_empty() {
        let _ = writeln!(out, "## Prefill\n");
        let _ = writeln!(out, "Prompt tok/s by context length.\n");
        let header = ["Context", "Prompt tok/s", "TTFT"].map(String::from);
        pipe_table(out, &header, &[false, true, true], &prefill);
        out.push('\n');
    }
}

/// The sustained-decode matrix and its legend (nothing when no decode was measured).
fn decode_section(out: &mut String, report: &Report) {
    let m = report.matrix();
    if !m.contexts.is_empty() {
        let _ = writeln!(out, "## Sustained decode\n");
        let _ = writeln!(
            out,
            "Total tok/s · rows are context length, columns are simultaneous requests.\n"
        );
        matrix_table(out, &m, "Context", "", table::matrix_cell_lines);
        out.push('\n');
        for line in report.legend() {
            let _ = writeln!(out, "- {}", escape(&line));
        }
        let _ = writeln!(
            out,
            "\nTTFT is measured after the benchmark warms the server's prompt cache, so it \
             mostly excludes prefill.\n"
        );
    }
}

/// A context × concurrency matrix as a pipe table: `corner` heads the row labels, `suffix`
/// follows each column's number, and each cell is its `lines`.
fn matrix_table(
    out: &mut String,
    m: &crate::model::Matrix<'_>,
    corner: &str,
    suffix: &str,
    lines: fn(&llmib_core::CellResult) -> Vec<String>,
) {
    let mut header = vec![corner.to_string()];
    header.extend(m.concurrency.iter().map(|n| format!("{n}{suffix}")));
    let mut numeric = vec![false];
    numeric.extend(m.concurrency.iter().map(|_| true));
    let rows: Vec<Vec<String>> = m
        .contexts
        .iter()
        .zip(&m.cells)
        .map(|((_, label), row)| {
            let mut r = vec![escape(label)];
            r.extend(row.iter().map(|c| {
                match c {
                    // `<br>` is the one HTML we emit: GitHub renders it as a line break in a
                    // table cell, and the values around it are escaped.
                    Some(c) => lines(c)
                        .iter()
                        .map(|l| escape(l))
                        .collect::<Vec<_>>()
                        .join("<br>"),
                    None => crate::number::NULL.to_string(),
                }
            }));
            r
        })
        .collect();
    pipe_table(out, &header, &numeric, &rows);
}

/// The Sessions section, where the run has session cells: the matrix (rows history depth,
/// columns concurrent sessions), the notes beside its cells and the per-turn table.
fn sessions_section(out: &mut String, report: &Report) {
    if !report.has_sessions() {
        return;
    }
    let _ = writeln!(
        out,
        "\n## Sessions\n\n{}\n",
        crate::sessions::SESSIONS_CAPTION
    );
    let texts = |c: &llmib_core::CellResult| {
        crate::sessions::cell_lines(c)
            .into_iter()
            .map(|l| l.text)
            .collect()
    };
    matrix_table(out, &report.session_matrix(), "History", " sessions", texts);
    let notes = crate::sessions::notes(report);
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            let _ = writeln!(out, "- {}", escape(&n));
        }
    }
    if let Some(t) = Table::session_turns(report) {
        let _ = writeln!(
            out,
            "\n### Turns\n\nPer cell and turn, over its sessions; turn 0 is the history's \
             warm-up, not measured. TTFT p50 splits into its prefill part (uncached tokens ÷ the \
             context's prefill rate) and the wait.\n"
        );
        table(out, &t);
    }
}

/// The All-measurements table and its legend.
fn measurements_section(out: &mut String, report: &Report) {
    let _ = writeln!(out, "## All measurements\n");
    let _ = writeln!(
        out,
        "Latencies are medians. Total tok/s is output across all simultaneous requests.\n"
    );
    out.push_str(&measurements_table(report));
    out.push('\n');
    for line in report.legend() {
        let _ = writeln!(out, "- {}", escape(&line));
    }
}

/// The Load section (open-loop rate cells and capacity rows), where the run has them: the
/// capacity table, the rate cells, the Pareto frontier of each context and the pacing warnings.
fn load_section(out: &mut String, report: &Report) {
    if !report.has_load() {
        return;
    }
    let _ = writeln!(out, "\n## Load\n\n{}", crate::load::LOAD_CAPTION);
    let sub = |out: &mut String, title: &str, t: &Table| {
        let _ = writeln!(out, "\n### {title}\n");
        table(out, t);
    };
    if let Some(t) = Table::capacity(report) {
        sub(out, "Capacity under the SLO", &t);
    }
    if let Some(t) = Table::rates(report) {
        sub(out, "Open-loop rate cells", &t);
    }
    if let Some(t) = Table::workloads(report) {
        sub(out, "Workloads: lengths asked and sent", &t);
    }
    let front = crate::pareto::frontier_rows(report);
    if !front.is_empty() {
        let _ = writeln!(
            out,
            "\n### Pareto frontier\n\nPer context, the cells (decode and rate alike) that no \
             other cell beats on both total output tok/s and per-user tok/s.\n"
        );
        let header = ["Context", "Cell", "Per-user tok/s", "Total tok/s"].map(String::from);
        let rows: Vec<Vec<String>> = front
            .iter()
            .map(|r| r.iter().map(|s| escape(s)).collect())
            .collect();
        pipe_table(out, &header, &[false, false, true, true], &rows);
    }
    let warnings = crate::load::pacing_warnings(report);
    if !warnings.is_empty() {
        out.push('\n');
        for w in warnings {
            let _ = writeln!(out, "- {}", escape(&w));
        }
    }
}

/// The burst and hardware tables, where the run has them.
fn extra_sections(out: &mut String, report: &Report) {
    if let Some(t) = Table::bursts(report) {
        text_section(
            out,
            "Burst / E2E",
            "A finite batch of requests per cell, at most N in flight, timed from the first \
             send to the last end: what a client sending a batch experiences (not sustained \
             decode). Throughput is the sum of completion tokens over that wall time.",
            &t,
        );
    }
    if let Some(t) = Table::mixed_prefill(report) {
        text_section(out, "Mixed prefill", crate::mixed::MIXED_CAPTION, &t);
    }
    if let Some(t) = Table::probes(report) {
        text_section(out, "Probe requests", crate::probe::PROBE_CAPTION, &t);
    }
    if let Some(t) = Table::percentiles(report) {
        let caption = crate::percentiles::PERCENTILES_CAPTION;
        text_section(out, "Latency percentiles", caption, &t);
    }
    if let Some(t) = Table::lora(report) {
        text_section(out, "LoRA adapters", crate::lora::LORA_CAPTION, &t);
    }
    if let Some(t) = Table::images(report) {
        text_section(out, "Images", crate::images::IMAGES_CAPTION, &t);
    }
    if let Some(t) = Table::structured(report) {
        text_section(
            out,
            "Structured output",
            crate::structured::STRUCTURED_CAPTION,
            &t,
        );
    }
    if let Some(t) = Table::speculative(report) {
        text_section(
            out,
            "Speculative decoding",
            "Per decode cell, over its window: the server's draft acceptance rate and tokens per \
             decoding step (its gauges' mean, or its counters' delta), and the client's own \
             tokens per streamed chunk.",
            &t,
        );
    }
    if let Some(t) = Table::hardware(report) {
        text_section(
            out,
            "Hardware during each cell",
            "This machine's GPUs and CPU while each cell ran (the server runs here). GPU \
             utilisation is the mean over GPUs; power, VRAM and PCIe are summed over GPUs.",
            &t,
        );
    }
    if let Some(t) = Table::economics(report) {
        text_section(out, "Cost and energy", crate::table::ECONOMICS_CAPTION, &t);
    }
}

/// The startup diagnostics, where the run recorded them (a server on the measuring machine).
fn diagnostics_section(out: &mut String, report: &Report) {
    let Some(v) = crate::diagnostics::view(report) else {
        return;
    };
    let _ = writeln!(
        out,
        "\n## Startup diagnostics\n\n{}\n",
        crate::diagnostics::CAPTION
    );
    table(out, &v.facts);
    if let Some(env) = &v.env {
        let _ = writeln!(out, "\n### Environment\n");
        table(out, env);
    }
    if let Some(note) = &v.env_note {
        let _ = writeln!(out, "\n{}", escape(note));
    }
    if let Some(topology) = &v.topology {
        let _ = writeln!(out, "\n### GPU topology (nvidia-smi topo -m)\n");
        code_block(out, "text", topology);
        if v.topology_truncated {
            let _ = writeln!(out, "\nCut at its size bound.");
        }
    }
}

/// The notes (nothing when there are none).
fn notes_section(out: &mut String, report: &Report) {
    let notes = report.notes();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n### Notes\n");
        for n in notes {
            let _ = writeln!(out, "- {}", escape(&n));
        }
    }
}

/// The Markdown section, where the run has one: marked parts in bold, every text escaped.
fn shards_section(out: &mut String, report: &Report) {
    let Some(v) = crate::shards::view(report) else {
        return;
    };
    let _ = writeln!(out, "\n## Shards\n");
    if let Some(n) = &v.shard {
        let _ = writeln!(out, "{}`{}`{}", escape(&n.lead), n.command, escape(n.tail));
    }
    if let Some(m) = &v.merged {
        let _ = writeln!(out, "{}\n", escape(&m.intro));
        let rows: Vec<Vec<String>> = m
            .rows
            .iter()
            .map(|r| r.iter().map(markdown_cell).collect())
            .collect();
        pipe_table(out, &m.columns, &vec![false; m.columns.len()], &rows);
        if m.any_marked {
            let _ = writeln!(out, "\n{}", escape(m.mark_note));
        }
        let _ = writeln!(out, "\n{}", escape(m.skew_note));
    }
}

/// A cell escaped, and bold when marked.
fn markdown_cell(c: &crate::shards::PartCell) -> String {
    if c.marked {
        format!("**{}**", escape(&c.text))
    } else {
        escape(&c.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_file() {
        assert_eq!(escape("m\u{1b}[31mred\u{7}"), "m?\\[31mred?");
    }

    #[test]
    fn escapes_html_and_table_breakers() {
        assert_eq!(
            escape("<script>alert(1)</script>"),
            "\\<script\\>alert(1)\\</script\\>"
        );
        assert_eq!(escape("a|b\nc"), "a\\|b c");
        assert_eq!(escape("GLM-5.3-Flash"), "GLM-5.3-Flash");
    }

    #[test]
    fn code_fence_outgrows_backticks() {
        let mut s = String::new();
        code_block(&mut s, "sh", "echo ````x");
        assert!(s.starts_with("`````sh\n"), "{s}");
    }
}
