//! The export formats: their names on the command line and their default file names.

use crate::error::ReportError;
use std::fmt;
use std::str::FromStr;

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
    /// Each rate cell as a `vllm bench serve` result file, in a folder (not among [`Format::ALL`]:
    /// asked for by name).
    Vllm,
}

impl Format {
    /// Every format, in the order they are written.
    pub const ALL: [Format; 4] = [Format::Html, Format::Markdown, Format::Csv, Format::Json];

    /// The file a format is written to inside a results directory (for [`Format::Vllm`], the
    /// folder its files go to).
    pub fn default_file_name(self) -> &'static str {
        match self {
            Format::Html => "report.html",
            Format::Markdown => "report.md",
            Format::Csv => "cells.csv",
            Format::Json => "results.json",
            Format::Vllm => "vllm",
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
            Format::Vllm => "vllm",
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
            "vllm" => Ok(Format::Vllm),
            _ => Err(ReportError::UnknownFormat(s.to_string())),
        }
    }
}
