//! The hub store's errors. Each message is one line that says what went wrong and what to do;
//! an upload's refusal is one [`UploadError`] and stores nothing.

use std::path::PathBuf;

/// Errors of opening, migrating and reading the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database itself failed (locked, full, corrupt).
    #[error("hub database: {0} (check the database file's disk space and permissions)")]
    Db(#[from] rusqlite::Error),
    /// A migration step failed; nothing of it was applied.
    #[error(
        "hub database: schema migration {version} failed: {source} (nothing of it was applied; report this with the database's version)"
    )]
    Migration {
        /// The step.
        version: u32,
        /// The cause.
        source: rusqlite::Error,
    },
    /// The database was written by a newer binary.
    #[error(
        "hub database is at schema version {found}, newer than this binary's {known}: run a newer llm-inference-bench hub"
    )]
    NewerDatabase {
        /// The database's version.
        found: u32,
        /// The newest this binary knows.
        known: u32,
    },
    /// No run has this id.
    #[error("no run {0} in this hub: list the runs to find its id")]
    NoSuchRun(i64),
    /// No sweep has this key.
    #[error(
        "no sweep `{0}` in this hub: upload the sweep's directory with `llm-inference-bench upload`"
    )]
    NoSuchSweep(String),
    /// No token has this id.
    #[error("no token {0} in this hub: list the tokens to find its id")]
    NoSuchToken(i64),
    /// The system gave no random bytes for a new token's secret.
    #[error("no randomness for a new token: {0} (check the system's random source)")]
    Randomness(String),
    /// Reading needs a token here, and none (or a bad one) was given.
    #[error("{0}")]
    Unauthorized(TokenError),
    /// The PostgreSQL database failed (the server went away, a permission, a constraint).
    #[error(
        "hub database (PostgreSQL): {} (check that the server is up and the hub's user may read and write its tables)",
        postgres_detail(.0)
    )]
    Postgres(#[from] postgres::Error),
    /// A PostgreSQL migration step failed; nothing of it was applied.
    #[error(
        "hub database (PostgreSQL): schema migration {version} failed: {} (nothing of it was applied; report this with the database's version)",
        postgres_detail(source)
    )]
    PostgresMigration {
        /// The step.
        version: u32,
        /// The cause.
        source: postgres::Error,
    },
    /// The PostgreSQL server could not be reached or refused the connection. Neither field
    /// holds the password.
    #[error(
        "cannot open the hub's PostgreSQL database at {url}: {detail} (check that the server is running and the URL's host, port, user, password and database name)"
    )]
    Connect {
        /// The URL, its password redacted.
        url: String,
        /// The driver's reason, redacted, on one line.
        detail: String,
    },
    /// A column read back held a value of another type or out of range (a schema the store did
    /// not write, or a bug).
    #[error(
        "hub database: column {column} of a result: {detail} (the database's schema is not this binary's: check its schema version)"
    )]
    Column {
        /// The column's index in the query.
        column: usize,
        /// What was wrong.
        detail: String,
    },
}

/// A PostgreSQL error's reason on one line: the server's own message for a database error (the
/// driver's `Display` says only "db error"), else the driver's text with its cause.
pub(crate) fn postgres_detail(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut text = e.to_string();
            if let Some(cause) = std::error::Error::source(e).map(ToString::to_string)
                && !text.contains(&cause)
            {
                text = format!("{text}: {cause}");
            }
            text
        }
    };
    llmib_core::sanitize_terminal(&text)
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// No token was given.
    #[error("this needs a hub token: pass one created with `llm-inference-bench hub token create`")]
    Missing,
    /// The token is not one of this hub's.
    #[error(
        "the token is not known to this hub: check it, or create one with `llm-inference-bench hub token create`"
    )]
    Unknown,
    /// The token was revoked.
    #[error(
        "the token `{0}` was revoked: create a new one with `llm-inference-bench hub token create`"
    )]
    Revoked(String),
}

/// Why an upload was refused. Nothing of a refused upload is stored.
#[derive(Debug, thiserror::Error)]
pub enum UploadError {
    /// The token was missing, unknown or revoked.
    #[error("{0}")]
    Token(#[from] TokenError),
    /// The files together are larger than the hub accepts.
    #[error(
        "the upload is {bytes} bytes, over this hub's limit of {limit} bytes: upload without requests.jsonl, or ask the hub's admin to raise its upload limit"
    )]
    TooLarge {
        /// The upload's size (at least; reading stops at the limit).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// A file the results directory must hold is missing.
    #[error(
        "not a results directory: no {0} (upload a directory written by `llm-inference-bench run`)"
    )]
    Missing(&'static str),
    /// A file that is not part of a results directory.
    #[error(
        "`{0}` is not a results file (a results directory holds run.json, cells.jsonl, requests.jsonl, schedules.jsonl, telemetry.jsonl)"
    )]
    UnknownFile(String),
    /// A file appears twice in one upload.
    #[error("`{0}` is in the upload twice: send each file once")]
    DuplicateFile(String),
    /// The results directory is not there (or is not a directory).
    #[error(
        "{}: no such directory: give a results directory written by `llm-inference-bench run`",
        .0.display()
    )]
    NoDirectory(PathBuf),
    /// A results file that is not UTF-8 text (the upload's JSON carries each file as a string).
    #[error("{0} is not UTF-8 text: upload a directory written by `llm-inference-bench run`")]
    NotText(String),
    /// A file could not be read from the directory.
    #[error("{path}: {source} (check the results directory's path and permissions)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// `run.json` says a results schema newer than this hub knows.
    #[error(
        "run.json has results schema_version {found}, newer than this hub's {supported}: upgrade the hub to store it"
    )]
    FutureSchema {
        /// The run's version.
        found: u64,
        /// The newest this hub reads.
        supported: u32,
    },
    /// A file does not match the results schema.
    #[error(
        "{file} does not match the results schema ({detail}): upload a directory written by `llm-inference-bench run`"
    )]
    Malformed {
        /// The file.
        file: &'static str,
        /// What was wrong (one line).
        detail: String,
    },
    /// The same run is already stored.
    #[error("this run is already stored as run {0}: pass replace to overwrite it")]
    Duplicate(i64),
    /// The database failed; the upload's transaction was rolled back.
    #[error("{0} (the upload was rolled back; nothing was stored)")]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for UploadError {
    fn from(e: rusqlite::Error) -> Self {
        UploadError::Store(StoreError::Db(e))
    }
}

impl From<postgres::Error> for UploadError {
    fn from(e: postgres::Error) -> Self {
        UploadError::Store(StoreError::Postgres(e))
    }
}
