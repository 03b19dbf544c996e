//! What an upload is once every check passed, and the one-line form of a parse error: shared
//! by the checks (`upload.rs`), the insert and the redaction, so neither child imports its
//! parent.

use llmib_core::{CellResult, RunInfo};

/// An upload that passed every check, ready to insert.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// run.json, parsed (after redaction).
    pub info: RunInfo,
    /// cells.jsonl's rows (the last per cell).
    pub cells: Vec<CellResult>,
    /// Each file as stored: name, bytes (redacted), sha256.
    pub files: Vec<(&'static str, Vec<u8>, String)>,
    /// sha256 of run.json as stored.
    pub run_key: String,
}

/// A parse error's text on one line, for [`UploadError::Malformed`].
pub(crate) fn one_line(e: impl std::fmt::Display) -> String {
    llmib_core::sanitize_terminal(&e.to_string())
}
