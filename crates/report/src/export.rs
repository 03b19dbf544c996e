//! Exporting a run: each format's exporter, one format rendered, or every report written to
//! disk. This is the one file that names every exporter; the exporters import the format, the
//! [`Exporter`] trait and the model from their own files, never this one, so imports run one
//! way.

use crate::error::ReportError;
use crate::exporter::Exporter;
use crate::format::Format;
use crate::model::Report;
use crate::vllm_export::VllmExporter;
use crate::{csv, html, json, markdown};
use std::path::{Path, PathBuf};

impl Format {
    /// The exporter for this format (the vLLM one without the run's per-request records:
    /// [`render`] and [`write_reports`] read them).
    pub fn exporter(self) -> Box<dyn Exporter> {
        match self {
            Format::Html => Box::new(html::HtmlExporter),
            Format::Markdown => Box::new(markdown::MarkdownExporter),
            Format::Csv => Box::new(csv::CsvExporter),
            Format::Json => Box::new(json::JsonExporter),
            Format::Vllm => Box::new(VllmExporter::default()),
        }
    }
}

/// Renders one format of the run in `run_dir`.
pub fn render(run_dir: &Path, format: Format) -> Result<String, ReportError> {
    let report = Report::load(run_dir)?;
    match format {
        Format::Vllm => VllmExporter::load(run_dir)?.render(&report),
        f => f.exporter().render(&report),
    }
}

/// Writes the reports of the run in `run_dir` and returns the files written.
///
/// - `output` `None`: each format goes to its default file inside `run_dir` (`report.html`,
///   `report.md`, `cells.csv`, `results.json`).
/// - `output` an existing folder, or a path ending in `/`: the default file names there (the
///   folder is created).
/// - otherwise, with exactly one format: that file.
///
/// The vLLM export is a folder of files (`vllm` by default); asked for alone, `output` is that
/// folder, existing or not.
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
        Some(out) if formats == [Format::Vllm] => vec![(Format::Vllm, out.to_path_buf())],
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
        if format == Format::Vllm {
            written.extend(write_vllm(run_dir, &report, &path)?);
            continue;
        }
        let text = format.exporter().render(&report)?;
        write_file(&path, &text)?;
        written.push(path);
    }
    Ok(written)
}

/// Writes the vLLM export's files into the folder `dir` (created) and returns them.
fn write_vllm(run_dir: &Path, report: &Report, dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut written = Vec::new();
    for (name, text) in VllmExporter::load(run_dir)?.files(report)? {
        let path = dir.join(name);
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
