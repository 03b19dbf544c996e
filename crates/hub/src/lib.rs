//! The storage layer of `llm-inference-bench hub`: uploaded results directories kept whole in a
//! database (SQLite in one file now; PostgreSQL later, with the same SQL where the dialects
//! agree), the columns the hub's pages filter, sort and rank on, and the upload tokens.
//!
//! What it guarantees: an upload is checked (token, size, file names, schema version, every
//! row parsed with `llmib_core`'s own loaders), redacted again, hashed, and stored in one
//! transaction, so a refusal stores nothing and the database never holds half a run; a second
//! upload of the same run is refused unless asked to replace it. Migrations run at open and
//! refuse a database written by a newer binary. See `docs/hub.md`.

mod db;
mod error;
mod query;
mod tokens;
mod upload;

#[cfg(test)]
mod tests;

pub use db::{Dialect, MIGRATIONS, Migration};
pub use error::{StoreError, TokenError, UploadError};
pub use query::{
    CellRow, Headline, ListFilter, ListPage, Page, RunFile, RunSummary, SortKey, StoredRun,
};
pub use tokens::{NewToken, TokenInfo};
pub use upload::{ALLOWED_FILES, UploadFiles};

use rusqlite::Connection;
use sha2::{Digest, Sha256};
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

/// The database behind a [`Store`]. One variant now; PostgreSQL becomes a second one that runs
/// the same SQL text (see [`Dialect`]).
#[derive(Debug)]
enum Backend {
    /// A SQLite file (or `:memory:` in tests).
    Sqlite(Connection),
}

/// The hub's store: runs, their files and cells, and the upload tokens.
#[derive(Debug)]
pub struct Store {
    backend: Backend,
    settings: Settings,
}

impl Store {
    /// Opens (creating it if needed) a SQLite database file and brings its schema up to date.
    /// A database written by a newer binary is refused ([`StoreError::NewerDatabase`]).
    pub fn open_sqlite(path: impl AsRef<Path>, settings: Settings) -> Result<Self, StoreError> {
        let conn = Connection::open(path.as_ref()).map_err(StoreError::Db)?;
        Self::from_sqlite(conn, settings)
    }

    /// An in-memory SQLite store (tests, benches).
    pub fn open_sqlite_in_memory(settings: Settings) -> Result<Self, StoreError> {
        Self::from_sqlite(Connection::open_in_memory()?, settings)
    }

    fn from_sqlite(mut conn: Connection, settings: Settings) -> Result<Self, StoreError> {
        // WAL: readers (the pages) do not wait for an upload's transaction. Foreign keys are
        // declared for PostgreSQL's sake; SQLite checks them only when asked.
        conn.pragma_update(None, "foreign_keys", "ON")?;
        conn.pragma_update(None, "busy_timeout", 5000)?;
        // An in-memory database answers "memory"; that is fine.
        let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        db::migrate_sqlite(&mut conn)?;
        Ok(Store {
            backend: Backend::Sqlite(conn),
            settings,
        })
    }

    /// The settings this store was opened with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The schema version the database is at (the last applied migration).
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        match &self.backend {
            Backend::Sqlite(c) => db::current_version(c),
        }
    }

    /// The SQLite connection (every method matches on the backend; one variant today).
    fn sqlite(&self) -> &Connection {
        match &self.backend {
            Backend::Sqlite(c) => c,
        }
    }

    fn sqlite_mut(&mut self) -> &mut Connection {
        match &mut self.backend {
            Backend::Sqlite(c) => c,
        }
    }
}

/// sha256 of bytes, lower-case hex: the form of every hash the hub stores.
pub fn hex_sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
