//! Exporters of a results directory: the HTML page (like the seed's published speed test
//! matrix), Markdown, CSV, JSON, `vllm bench serve` result files, and `compare` for several runs side by side.
//!
//! The flow is `results dir → Report (model) → Exporter → text`. Every exporter reads the same
//! [`Report`]; the All-measurements table is one list of `table::Column`s shared by the
//! Markdown, HTML and CSV exporters; numbers are formatted in one place, [`number`] (public, so
//! that the live display prints the same figures as the reports).
//!
//! The modules are private; what a caller needs is re-exported here: [`Report`], [`Format`] and
//! [`write_reports`] / [`render`] for one run, [`Comparison`] for several, [`AccuracyView`] for
//! an eval's pages, [`escape_markdown`] for text that goes into Markdown.
//!
//! ```no_run
//! use llmib_report::{Format, write_reports};
//! let written = write_reports(std::path::Path::new("results/run-1"), &Format::ALL, None)?;
//! # Ok::<(), llmib_report::ReportError>(())
//! ```

#![warn(unnameable_types)]

mod accuracy;
mod chart_frame;
mod compare;
mod compare_load;
mod compare_sessions;
mod csv;
mod diagnostics;
mod error;
mod export;
mod exporter;
mod format;
mod html;
mod images;
mod json;
mod legend;
mod load;
mod load_chart;
mod lora;
mod markdown;
mod mixed;
mod model;
mod notes;
pub mod number;
mod pareto;
mod percentiles;
mod probe;
mod repeats;
mod schema_check;
mod sessions;
mod sessions_chart;
mod shards;
mod structured;
mod sweep;
mod table;
mod telemetry_chart;
mod telemetry_strips;
mod vllm_export;
mod workload_view;

#[cfg(test)]
mod tests;

pub use accuracy::AccuracyView;
pub use compare::{CompareRow, Comparison, RunEntry, Verdict};
pub use error::ReportError;
pub use export::{render, write_file, write_reports};
pub use exporter::Exporter;
pub use format::Format;
pub use markdown::escape as escape_markdown;
pub use model::Report;
pub use repeats::repeats_markdown;
pub use schema_check::{RESULTS_SCHEMA, SchemaViolation, check_results_schema};
pub use sweep::{
    ComboLine, SweepReport, combo_rows, sweep_html, sweep_markdown, sweep_report, sweep_report_of,
    sweep_runs, write_sweep_report,
};
pub use vllm_export::{VllmBenchResult, VllmDetail, VllmExporter, vllm_file_name, vllm_result};
