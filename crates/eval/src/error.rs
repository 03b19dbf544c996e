//! The errors of an eval run. Each is one line that says what to do; a cause (an I/O error, a
//! parser's complaint) is kept as the error's source, so the CLI joins it on the same line.

use crate::download::DownloadError;
use llmib_client::{EngineError, ProbeError};
use llmib_report::ReportError;
use std::path::PathBuf;

/// A boxed cause: the parsers of the dataset formats (JSON, CSV, parquet) each have their own.
type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why an eval run (or a rewrite or comparison of its results) failed.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// A setting is wrong or missing (a flag's value, two flags that exclude each other).
    #[error("{0}")]
    Settings(String),
    /// A file or folder could not be read, written or created.
    #[error("cannot {action} {}", path.display())]
    Io {
        /// `read`, `write`, `create`.
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A dataset is not what its profile reads (named by its file, and line or row), or it
    /// is not the pinned file.
    #[error("{message}")]
    Dataset {
        /// What is wrong, and where.
        message: String,
        /// The parser's complaint, if one had it.
        #[source]
        cause: Option<Cause>,
    },
    /// Downloading a dataset failed.
    #[error(transparent)]
    Download(#[from] DownloadError),
    /// The server could not be probed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// A request could not be built from the settings.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The requests could not be sent, or none of them gave something to score.
    #[error("{0}")]
    Requests(String),
    /// A line of a JSON-lines file, or a JSON file, is not what it should be.
    #[error("{}{}: not {what}", path.display(), line.map_or(String::new(), |n| format!(" line {n}")))]
    Json {
        /// The file.
        path: PathBuf,
        /// Its line (1-based), for a JSON-lines file.
        line: Option<usize>,
        /// What it should have been.
        what: &'static str,
        /// The parser's complaint.
        #[source]
        source: serde_json::Error,
    },
    /// A result could not be serialised as JSON.
    #[error("cannot serialise the results: {0}")]
    Serialise(#[from] serde_json::Error),
    /// A page (`eval.html`) could not be rendered.
    #[error(transparent)]
    Report(#[from] ReportError),
}

impl EvalError {
    /// An I/O error on `path`.
    pub(crate) fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> EvalError {
        let path = path.into();
        move |source| EvalError::Io {
            action,
            path,
            source,
        }
    }

    /// A dataset error without a cause.
    pub(crate) fn dataset(message: impl Into<String>) -> EvalError {
        EvalError::Dataset {
            message: message.into(),
            cause: None,
        }
    }

    /// A dataset error caused by a parser's complaint.
    pub(crate) fn dataset_by(
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> EvalError {
        EvalError::Dataset {
            message: message.into(),
            cause: Some(Box::new(cause)),
        }
    }
}
