//! Applying the migrations at open, on either database: each step newer than the database's
//! last applied one runs in its own transaction together with its row in `schema_migrations`,
//! so a step is applied and recorded wholly or not at all. Each transaction first takes the
//! database's migration lock and then reads the version again, so two processes opening the
//! same fresh database at once apply each step once: the second finds it done.

use crate::backend::{Backend, Tx};
use crate::db::{MIGRATIONS, latest_version};
use crate::error::StoreError;
use crate::sql::SqlValue;

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version BIGINT PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
)";

const LAST_VERSION: &str = "SELECT MAX(version) FROM schema_migrations";

/// A version from the ledger (a negative or huge one reads as the largest: never "older").
fn version_of(v: Option<i64>) -> u32 {
    v.map_or(0, |v| u32::try_from(v).unwrap_or(u32::MAX))
}

/// The last applied step's version (0 for a fresh database).
pub(crate) fn current_version(db: &Backend) -> Result<u32, StoreError> {
    let rows = db.query(LAST_VERSION, &[])?;
    Ok(version_of(match rows.first() {
        Some(r) => r.opt_i64(0)?,
        None => None,
    }))
}

fn version_in(tx: &mut Tx<'_>) -> Result<u32, StoreError> {
    let rows = tx.query(LAST_VERSION, &[])?;
    Ok(version_of(match rows.first() {
        Some(r) => r.opt_i64(0)?,
        None => None,
    }))
}

/// A failed step's error, naming the step.
fn in_step(version: u32, e: StoreError) -> StoreError {
    match e {
        StoreError::Db(source) => StoreError::Migration { version, source },
        StoreError::Postgres(source) => StoreError::PostgresMigration { version, source },
        other => other,
    }
}

/// Brings the database up to [`latest_version`], or refuses one that is newer (untouched).
pub(crate) fn migrate(db: &mut Backend) -> Result<(), StoreError> {
    loop {
        let mut tx = db.migration_transaction()?;
        tx.batch(CREATE_LEDGER)?;
        let found = version_in(&mut tx)?;
        let known = latest_version();
        if found > known {
            // Dropped, so rolled back: the database is left as it was.
            return Err(StoreError::NewerDatabase { found, known });
        }
        let Some(m) = MIGRATIONS.iter().find(|m| m.version > found) else {
            return tx.commit();
        };
        let sql = tx.dialect().sql(m);
        tx.batch(&sql).map_err(|e| in_step(m.version, e))?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            &[
                SqlValue::Int(i64::from(m.version)),
                m.name.into(),
                llmib_core::now_rfc3339().into(),
            ],
        )?;
        tx.commit()?;
    }
}
