//! The report's errors; each says what to do next.

use std::path::PathBuf;

/// Errors of the report; each says what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The results directory could not be read.
    #[error(transparent)]
    Store(#[from] llmib_core::StoreError),
    /// A file the report needs could not be read.
    #[error("{path}: {source} (is it a results or sweep directory?)")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
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
    #[error("unknown report format `{0}`: use html, md, csv, json or vllm")]
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
