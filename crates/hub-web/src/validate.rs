//! An upload's checks before the store sees it: the store's own first checks, in its order (size,
//! file names, schema version), so that each refusal is the store's one clear line, and then the
//! one the store leaves to its callers: the run's `results.json`, built as the report exports it,
//! against the published JSON schema.

use crate::error::WebError;
use llmib_core::{CELLS_FILE, RUN_FILE, SCHEMA_VERSION, TELEMETRY_FILE};
use llmib_hub::{ALLOWED_FILES, UploadError, UploadFiles};
use llmib_report::{Format, Report};
use serde_json::Value;

/// Size, names and schema version, as the store words them.
fn store_checks(files: &UploadFiles, limit: u64) -> Result<(), UploadError> {
    let bytes = files.total_bytes();
    if bytes > limit {
        return Err(UploadError::TooLarge { bytes, limit });
    }
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in files.files() {
        let Some(known) = ALLOWED_FILES.iter().find(|k| **k == name.as_str()) else {
            return Err(UploadError::UnknownFile(llmib_core::sanitize_terminal(
                name,
            )));
        };
        if seen.contains(known) {
            return Err(UploadError::DuplicateFile(name.clone()));
        }
        seen.push(known);
    }
    for required in [RUN_FILE, CELLS_FILE] {
        if !seen.contains(&required) {
            return Err(UploadError::Missing(required));
        }
    }
    let run: Value =
        serde_json::from_slice(file(files, RUN_FILE)).map_err(|e| UploadError::Malformed {
            file: RUN_FILE,
            detail: one_line(&e.to_string()),
        })?;
    // Before the typed parse, so a newer run is told "upgrade the hub", not a parse error.
    let found = run
        .get("schema_version")
        .and_then(Value::as_u64)
        .ok_or_else(|| UploadError::Malformed {
            file: RUN_FILE,
            detail: "no schema_version number".into(),
        })?;
    if found > u64::from(SCHEMA_VERSION) {
        return Err(UploadError::FutureSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

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
    store_checks(files, limit)?;
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
