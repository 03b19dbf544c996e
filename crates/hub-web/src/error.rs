//! The server's errors: each is one line that says what to do, answered with the HTTP status it
//! means, as a JSON `{"error": …}` or an HTML page depending on what the client asked for.
//! Database failures are answered with a fixed line (the detail goes to the server's log), so
//! nothing of the database's configuration reaches a client.

use crate::want::Want;
use axum::http::StatusCode;
use axum::response::Response;
use llmib_hub::{StoreError, UploadError};
use llmib_report::{ReportError, SchemaViolation};
use std::io::Write as _;

/// Errors of serving the hub and of answering one request.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The listener failed while serving.
    #[error("serving the hub failed: {0} (check the listen address and the process's limits)")]
    Serve(#[source] std::io::Error),
    /// The request's query or path is not one the hub understands.
    #[error("{0}")]
    BadRequest(String),
    /// Nothing is at this address.
    #[error("{0}")]
    NotFound(String),
    /// Reading needs a token, and none (or a bad one) came with the request.
    #[error("{0}")]
    Unauthorized(String),
    /// The upload's body is larger than the hub accepts.
    #[error(
        "the upload is over this hub's limit of {limit} bytes of files: upload without requests.jsonl, or ask the hub's admin to raise its upload limit"
    )]
    BodyTooLarge {
        /// The store's limit (all files together).
        limit: u64,
    },
    /// The upload's body is not the upload JSON.
    #[error(
        "the upload body is not {{\"files\": {{\"run.json\": \"…\", \"cells.jsonl\": \"…\"}}}}: {0} (use `llm-inference-bench upload`)"
    )]
    BadBody(String),
    /// The store refused an upload (its status follows the refusal).
    #[error("{0}")]
    Upload(#[from] UploadError),
    /// The uploaded run's `results.json` breaks the published schema.
    #[error("{0} (upload a directory written by `llm-inference-bench run`)")]
    Schema(#[from] SchemaViolation),
    /// The store failed or refused a read.
    #[error("{0}")]
    Store(#[from] StoreError),
    /// A stored run could not be rendered.
    #[error("rendering the page failed: {0}")]
    Report(#[from] ReportError),
    /// A blocking task died (a bug).
    #[error("the hub's worker failed: {0} (retry; report it if it persists)")]
    Worker(String),
}

/// The line a client sees for a database failure.
const DB_FAILED: &str =
    "the hub's database failed (the server's log has the detail): retry, or tell the hub's admin";

impl WebError {
    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        match self {
            WebError::BadRequest(_) => StatusCode::BAD_REQUEST,
            WebError::NotFound(_) => StatusCode::NOT_FOUND,
            WebError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            WebError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            WebError::BadBody(_) | WebError::Schema(_) => StatusCode::UNPROCESSABLE_ENTITY,
            WebError::Upload(e) => upload_status(e),
            WebError::Store(StoreError::NoSuchRun(_) | StoreError::NoSuchSweep(_)) => {
                StatusCode::NOT_FOUND
            }
            WebError::Store(StoreError::Unauthorized(_)) => StatusCode::UNAUTHORIZED,
            WebError::Store(_) | WebError::Report(_) | WebError::Worker(_) | WebError::Serve(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The one line a client is told.
    fn client_message(&self) -> String {
        match self {
            WebError::Store(
                StoreError::NoSuchRun(_) | StoreError::NoSuchSweep(_) | StoreError::Unauthorized(_),
            ) => {
                self.to_string()
            }
            WebError::Store(_) | WebError::Upload(UploadError::Store(_) | UploadError::Io { .. }) => {
                DB_FAILED.to_string()
            }
            WebError::Upload(UploadError::Duplicate(id)) => format!(
                "this run is already stored as run {id}: pass --replace to overwrite it (?replace=true)"
            ),
            _ => self.to_string(),
        }
        .replace(['\n', '\r'], " ")
    }

    /// The answer: JSON `{"error": …}` or an HTML page, with the error's status.
    pub(crate) fn respond(self, want: Want) -> Response {
        let status = self.status();
        if status.is_server_error() {
            // The full error (a database's own message) stays in the server's log.
            let _ = writeln!(
                std::io::stderr(),
                "llm-inference-bench hub: {status}: {self}"
            );
        }
        let message = self.client_message();
        match want {
            Want::Json => crate::json::error(status, &message),
            Want::Html => crate::pages::layout::error_page(status, &message),
        }
    }
}

/// An upload refusal's status: 401 token, 413 size, 409 already stored, 422 not a results
/// directory, 500 database.
fn upload_status(e: &UploadError) -> StatusCode {
    match e {
        UploadError::Token(_) => StatusCode::UNAUTHORIZED,
        UploadError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        UploadError::Duplicate(_) => StatusCode::CONFLICT,
        UploadError::Missing(_)
        | UploadError::UnknownFile(_)
        | UploadError::DuplicateFile(_)
        | UploadError::FutureSchema { .. }
        | UploadError::Malformed { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
