//! An upload's checks before the store sees it: the store's own first checks, in its order (size,
//! file names, schema version), so that each refusal is the store's one clear line, and then the
//! one the store leaves to its callers: the run's `results.json`, built as the report exports it,
//! against the published JSON schema.

use crate::error::WebError;
use llmib_core::{CELLS_FILE, RUN_FILE, TELEMETRY_FILE};
use llmib_hub::{UploadError, UploadFiles};
use llmib_report::{Format, Report};
use serde_json::Value;

fn file<'a>(files: &'a UploadFiles, name: &str) -> &'a [u8] {
    files
        .files()
        .iter()
        .find(|(n, _)| n == name)
        .map_or(&[][..], |(_, b)| b.as_slice())
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// Every check the web layer makes before the store: the store's first ones, then the run's
/// `results.json` against the published schema.
pub(crate) fn check(files: &UploadFiles, limit: u64) -> Result<(), WebError> {
    // The store's own first checks, so each refusal is its one clear line.
    llmib_hub::precheck(files, limit)?;
    let telemetry = files
        .files()
        .iter()
        .find(|(n, _)| n == TELEMETRY_FILE)
        .map(|(_, b)| b.as_slice());
    let report = Report::from_files(file(files, RUN_FILE), file(files, CELLS_FILE), telemetry)
        .map_err(|e| UploadError::Malformed {
            file: RUN_FILE,
            detail: one_line(&e.to_string()),
        })?;
    let text = Format::Json.exporter().render(&report)?;
    let doc: Value = serde_json::from_str(&text).map_err(llmib_report::ReportError::from)?;
    llmib_report::check_results_schema(&doc)?;
    Ok(())
}
