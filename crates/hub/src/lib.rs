//! The storage layer of `llm-inference-bench hub`: uploaded results directories kept whole in a
//! database (a SQLite file or a PostgreSQL server, with the same SQL where the dialects agree), the columns the hub's pages filter, sort and rank on, and the upload tokens.
//!
//! What it guarantees: an upload is checked (token, size, file names, schema version, every
//! row parsed with `llmib_core`'s own loaders), redacted again, hashed, and stored in one
//! transaction, so a refusal stores nothing and the database never holds half a run; a second
//! upload of the same run is refused unless asked to replace it. Migrations run at open and
//! refuse a database written by a newer binary. See `docs/hub.md`.

mod backend;
mod connect;
mod db;
mod error;
mod migrate;
mod query;
mod sql;
mod sweeps;
pub mod testing;
mod tokens;
mod upload;

#[cfg(test)]
mod tests;

pub use db::{Dialect, MIGRATIONS, Migration};
pub use error::{StoreError, TokenError, UploadError};
pub use llmib_core::SWEEP_FILE;
pub use query::{
    CellRow, Headline, ListFilter, ListPage, Page, RunFile, RunSummary, SortKey, StoredRun,
};
pub use sweeps::{
    RankedConfiguration, StoredSweep, SweepSummary, SweepUploaded, rank_configurations,
};
pub use tokens::{NewToken, TokenInfo};
pub use upload::{ALLOWED_FILES, UploadFiles, precheck};

use backend::Backend;
use rusqlite::Connection;
use std::path::Path;

/// The identity of a stored run: its row id in `runs`.
pub type RunId = i64;

/// The hub's storage settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The most bytes one upload may carry, all files together.
    pub max_upload_bytes: u64,
    /// Whether reading (list, run, compare) needs a token too; uploading always does.
    pub read_needs_token: bool,
}

impl Default for Settings {
    /// 64 MiB (a long run's `requests.jsonl` fits), reading open.
    fn default() -> Self {
        Settings {
            max_upload_bytes: 64 << 20,
            read_needs_token: false,
        }
    }
}

/// The hub's store: runs, their files and cells, and the upload tokens, in SQLite or
/// PostgreSQL (the same queries on both; see `docs/hub.md`).
///
/// `Store` is `Send` (move it to the thread that uses it, or keep it in a `Mutex`). With
/// PostgreSQL, every method blocks on the network through the sync `postgres` client, which
/// runs its own tokio runtime and panics when called from a thread that is running a tokio
/// runtime: async code (a web server) must open, use and drop the store inside
/// `tokio::task::spawn_blocking`, never directly in an async task.
#[derive(Debug)]
pub struct Store {
    backend: Backend,
    settings: Settings,
}

impl Store {
    /// Opens the database `db` names: `postgres://…` or `postgresql://…` is a PostgreSQL
    /// server ([`Store::open_postgres`]); anything else is a SQLite file path
    /// ([`Store::open_sqlite`]). The schema is brought up to date either way.
    pub fn open(db: &str, settings: Settings) -> Result<Self, StoreError> {
        if connect::is_postgres_url(db) {
            Self::open_postgres(db, settings)
        } else {
            Self::open_sqlite(db, settings)
        }
    }

    /// Opens (creating it if needed) a SQLite database file and brings its schema up to date.
    /// A database written by a newer binary is refused ([`StoreError::NewerDatabase`]).
    pub fn open_sqlite(path: impl AsRef<Path>, settings: Settings) -> Result<Self, StoreError> {
        let conn = Connection::open(path.as_ref()).map_err(StoreError::Db)?;
        Self::with(connect::sqlite(conn)?, settings)
    }

    /// An in-memory SQLite store (tests, benches).
    pub fn open_sqlite_in_memory(settings: Settings) -> Result<Self, StoreError> {
        Self::with(connect::sqlite(Connection::open_in_memory()?)?, settings)
    }

    /// Connects to a PostgreSQL database by URL (`postgres://user:password@host:5432/hub`, no
    /// TLS) and brings its schema up to date; the database itself must exist. A failure to
    /// connect is [`StoreError::Connect`], whose message never shows the password. Two hubs
    /// opening the same database at once apply each migration once. Blocks: see [`Store`]
    /// about async callers.
    pub fn open_postgres(url: &str, settings: Settings) -> Result<Self, StoreError> {
        Self::with(connect::postgres(url)?, settings)
    }

    fn with(mut backend: Backend, settings: Settings) -> Result<Self, StoreError> {
        migrate::migrate(&mut backend)?;
        Ok(Store { backend, settings })
    }

    /// The settings this store was opened with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The schema version the database is at (the last applied migration).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        migrate::current_version(&self.backend)
    }

    /// Which database this store is on.
    pub fn dialect(&self) -> Dialect {
        self.backend.dialect()
    }

    /// The database, for the queries of the modules below.
    fn db(&self) -> &Backend {
        &self.backend
    }

    fn db_mut(&mut self) -> &mut Backend {
        &mut self.backend
    }
}

/// sha256 of bytes, lower-case hex: the form of every hash the hub stores (core's, so a run's
/// recorded hashes and the hub's are one function).
pub use llmib_core::hex_sha256;
