//! Exporters of a results directory: the HTML page (like the seed's published speed test
//! matrix), Markdown, CSV, JSON, and `compare` for several runs side by side.
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
mod csv;
mod diagnostics;
mod html;
mod json;
mod load;
mod load_chart;
mod markdown;
mod model;
mod notes;
pub mod number;
mod pareto;
mod shards;
mod table;
mod workload_view;

#[cfg(test)]
mod tests;

pub use accuracy::AccuracyView;
pub use compare::{CompareRow, Comparison, RunEntry, Verdict};
pub use markdown::escape as escape_markdown;
pub use model::Report;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Errors of the report; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results directory could not be read.
    #[error(transparent)]
    Store(#[from] llmib_core::StoreError),
    /// A report file could not be written.
    #[error("{path}: {source} (check that the output folder exists and is writable)")]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A template failed to render (a bug: please report it with the results directory).
    #[error("rendering the {template} template failed: {detail}")]
    Template {
        /// Which template.
        template: String,
        /// The engine's message.
        detail: String,
    },
    /// JSON encoding failed.
    #[error("encoding JSON failed: {0}")]
    Json(#[from] serde_json::Error),
    /// A format name that is not one of ours.
    #[error("unknown report format `{0}`: use html, md, csv or json")]
    UnknownFormat(String),
    /// Output given as one file while several formats are asked for.
    #[error(
        "{0}: several formats go to a folder; pass an existing folder (or one ending in `/`), \
         or ask for one format"
    )]
    OutputNotAFolder(PathBuf),
    /// `compare` needs something to compare.
    #[error("compare needs at least two results directories")]
    NothingToCompare,
}

/// An export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// One self-contained HTML page.
    Html,
    /// GitHub-ready Markdown.
    Markdown,
    /// One row per measurement.
    Csv,
    /// The versioned results document (`schemas/results.schema.json`).
    Json,
}

impl Format {
    /// Every format, in the order they are written.
    pub const ALL: [Format; 4] = [Format::Html, Format::Markdown, Format::Csv, Format::Json];

    /// The file a format is written to inside a results directory.
    pub fn default_file_name(self) -> &'static str {
        match self {
            Format::Html => "report.html",
            Format::Markdown => "report.md",
            Format::Csv => "cells.csv",
            Format::Json => "results.json",
        }
    }

    /// The exporter for this format.
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Html => Box::new(html::HtmlExporter),
            Format::Markdown => Box::new(markdown::MarkdownExporter),
            Format::Csv => Box::new(csv::CsvExporter),
            Format::Json => Box::new(json::JsonExporter),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Html => "html",
            Format::Markdown => "md",
            Format::Csv => "csv",
            Format::Json => "json",
        })
    }
}

impl FromStr for Format {
    type Err = ReportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "html" | "htm" => Ok(Format::Html),
            "md" | "markdown" => Ok(Format::Markdown),
            "csv" => Ok(Format::Csv),
            "json" => Ok(Format::Json),
            _ => Err(ReportError::UnknownFormat(s.to_string())),
        }
    }
}

/// Turns a [`Report`] into the text of one format. Exporters hold no state; all they show comes
/// from the report.
pub trait Exporter {
    /// Which format this is.
    fn format(&self) -> Format;
    /// Renders the whole document.
    fn render(&self, report: &Report) -> Result<String, ReportError>;
}

/// Renders one format of the run in `run_dir`.
pub fn render(run_dir: &Path, format: Format) -> Result<String, ReportError> {
    let report = Report::load(run_dir)?;
    format.exporter().render(&report)
}

/// Writes the reports of the run in `run_dir` and returns the files written.
///
/// - `output` `None`: each format goes to its default file inside `run_dir` (`report.html`,
///   `report.md`, `cells.csv`, `results.json`).
/// - `output` an existing folder, or a path ending in `/`: the default file names there (the
///   folder is created).
/// - otherwise, with exactly one format: that file.
///
/// An empty `formats` means every format. Each file is written to a temporary name and renamed,
/// so a reader never sees half a report.
pub fn write_reports(
    run_dir: &Path,
    formats: &[Format],
    output: Option<&Path>,
) -> Result<Vec<PathBuf>, ReportError> {
    let report = Report::load(run_dir)?;
    let formats: Vec<Format> = if formats.is_empty() {
        Format::ALL.to_vec()
    } else {
        let mut v = Vec::new();
        for f in formats {
            if !v.contains(f) {
                v.push(*f);
            }
        }
        v
    };
    let targets: Vec<(Format, PathBuf)> = match output {
        None => formats
            .iter()
            .map(|f| (*f, run_dir.join(f.default_file_name())))
            .collect(),
        Some(out) if out.is_dir() || out.as_os_str().to_string_lossy().ends_with('/') => {
            std::fs::create_dir_all(out).map_err(|source| ReportError::Write {
                path: out.to_path_buf(),
                source,
            })?;
            formats
                .iter()
                .map(|f| (*f, out.join(f.default_file_name())))
                .collect()
        }
        Some(out) if formats.len() == 1 => vec![(formats[0], out.to_path_buf())],
        Some(out) => return Err(ReportError::OutputNotAFolder(out.to_path_buf())),
    };
    let mut written = Vec::new();
    for (format, path) in targets {
        let text = format.exporter().render(&report)?;
        write_file(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// Writes `text` to `path` through a temporary file and a rename.
pub fn write_file(path: &Path, text: &str) -> Result<(), ReportError> {
    let err = |source| ReportError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)
}
