//! The two databases behind the store, behind one small interface: run a statement, read rows,
//! run a batch of DDL, and open a transaction that does the same. Every query of the store is
//! written once against it, with `?` placeholders ([`crate::sql::numbered_placeholders`] turns
//! them into PostgreSQL's `$n`).
//!
//! PostgreSQL is reached with the sync `postgres` client, which runs its own small tokio runtime:
//! called from inside a tokio runtime's thread it panics, so async callers use the store from
//! `tokio::task::spawn_blocking`. Its client sits in a `Mutex` because reads take `&self` while
//! the client needs `&mut` to send a query; writes, which take `&mut self`, reach it with
//! `Mutex::get_mut` and never lock.

use crate::db::Dialect;
use crate::error::StoreError;
use crate::sql::{Row, SqlValue, numbered_placeholders, postgres_param, postgres_row, sqlite_row};
use rusqlite::Connection;
use std::sync::{Mutex, PoisonError};

/// The advisory lock key migrations take on PostgreSQL ("llmib" in ASCII), so two hubs starting
/// at once apply each step once.
const MIGRATION_LOCK: i64 = 0x6c_6c_6d_69_62;

/// A database connection of either kind.
pub(crate) enum Backend {
    /// A SQLite file (or `:memory:` in tests).
    Sqlite(Connection),
    /// A PostgreSQL server.
    Postgres(Mutex<postgres::Client>),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the connection's settings: they may hold a password.
        f.write_str(match self {
            Backend::Sqlite(_) => "Sqlite",
            Backend::Postgres(_) => "Postgres",
        })
    }
}

/// A SQLite statement's parameters.
fn sqlite_params(params: &[SqlValue]) -> impl rusqlite::Params + '_ {
    rusqlite::params_from_iter(params.iter())
}

fn sqlite_query(c: &Connection, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
    let mut st = c.prepare_cached(sql)?;
    let rows = st.query_map(sqlite_params(params), sqlite_row)?;
    Ok(rows.collect::<Result<_, _>>()?)
}

fn sqlite_execute(c: &Connection, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
    let n = c.prepare_cached(sql)?.execute(sqlite_params(params))?;
    Ok(u64::try_from(n).unwrap_or(u64::MAX))
}

/// What both a PostgreSQL client and a transaction on it can do (the `postgres` crate gives
/// them the same methods but no common trait).
trait PgRun {
    fn prepare(&mut self, sql: &str) -> Result<postgres::Statement, postgres::Error>;
    fn run_query(
        &mut self,
        st: &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, postgres::Error>;
    fn run_execute(
        &mut self,
        st: &postgres::Statement,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<u64, postgres::Error>;
}

macro_rules! pg_run {
    ($t:ty) => {
        impl PgRun for $t {
            fn prepare(&mut self, sql: &str) -> Result<postgres::Statement, postgres::Error> {
                Self::prepare(self, sql)
            }
            fn run_query(
                &mut self,
                st: &postgres::Statement,
                params: &[&(dyn postgres::types::ToSql + Sync)],
            ) -> Result<Vec<postgres::Row>, postgres::Error> {
                self.query(st, params)
            }
            fn run_execute(
                &mut self,
                st: &postgres::Statement,
                params: &[&(dyn postgres::types::ToSql + Sync)],
            ) -> Result<u64, postgres::Error> {
                self.execute(st, params)
            }
        }
    };
}
pg_run!(postgres::Client);
pg_run!(postgres::Transaction<'_>);

/// Runs a prepared PostgreSQL statement once per parameter set; returns the rows of each run
/// (`rows` false: none are read, only executed).
fn pg_run_each(
    c: &mut impl PgRun,
    sql: &str,
    sets: &[&[SqlValue]],
    rows: bool,
) -> Result<(u64, Vec<Row>), StoreError> {
    let st = c.prepare(&numbered_placeholders(sql))?;
    let (mut n, mut out) = (0u64, Vec::new());
    for params in sets {
        // Zipping below would drop a parameter too many without a word: say so instead.
        if params.len() != st.params().len() {
            return Err(StoreError::Column {
                column: params.len(),
                detail: format!(
                    "{} parameters given for {} placeholders",
                    params.len(),
                    st.params().len()
                ),
            });
        }
        let boxed = params
            .iter()
            .zip(st.params())
            .map(|(v, ty)| postgres_param(v, ty))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
            boxed.iter().map(|b| &**b as _).collect();
        if rows {
            for r in c.run_query(&st, &refs)? {
                out.push(postgres_row(&r)?);
            }
        } else {
            n += c.run_execute(&st, &refs)?;
        }
    }
    Ok((n, out))
}

impl Backend {
    /// Which SQL dialect this database speaks.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Backend::Sqlite(_) => Dialect::Sqlite,
            Backend::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The rows of a query.
    pub(crate) fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        match self {
            Backend::Sqlite(c) => sqlite_query(c, sql, params),
            Backend::Postgres(m) => {
                let mut c = m.lock().unwrap_or_else(PoisonError::into_inner);
                Ok(pg_run_each(&mut *c, sql, &[params], true)?.1)
            }
        }
    }

    /// Runs a statement; returns how many rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        match self {
            Backend::Sqlite(c) => sqlite_execute(c, sql, params),
            Backend::Postgres(m) => {
                let mut c = m.lock().unwrap_or_else(PoisonError::into_inner);
                Ok(pg_run_each(&mut *c, sql, &[params], false)?.0)
            }
        }
    }

    /// Runs several statements without parameters (DDL, settings), as the database's own
    /// batch: no placeholder rewriting. Tests set up failures and planner settings with it.
    #[cfg(test)]
    pub(crate) fn batch(&self, sql: &str) -> Result<(), StoreError> {
        match self {
            Backend::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Backend::Postgres(m) => Ok(m
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .batch_execute(sql)?),
        }
    }

    /// A transaction: committed by [`Tx::commit`], rolled back when dropped before it.
    pub(crate) fn transaction(&mut self) -> Result<Tx<'_>, StoreError> {
        Ok(match self {
            Backend::Sqlite(c) => Tx::Sqlite(c.transaction()?),
            Backend::Postgres(m) => Tx::Postgres(
                m.get_mut()
                    .unwrap_or_else(PoisonError::into_inner)
                    .transaction()?,
            ),
        })
    }

    /// A transaction that holds the database's migration lock until it ends, so two processes
    /// opening the same database at once take turns: SQLite's write lock taken at `BEGIN
    /// IMMEDIATE`, PostgreSQL's transaction-scoped advisory lock.
    pub(crate) fn migration_transaction(&mut self) -> Result<Tx<'_>, StoreError> {
        match self {
            Backend::Sqlite(c) => Ok(Tx::Sqlite(
                c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?,
            )),
            Backend::Postgres(_) => {
                let mut tx = self.transaction()?;
                tx.query(
                    "SELECT pg_advisory_xact_lock(?)::text",
                    &[SqlValue::Int(MIGRATION_LOCK)],
                )?;
                Ok(tx)
            }
        }
    }
}

/// A transaction on either database.
pub(crate) enum Tx<'a> {
    /// SQLite's.
    Sqlite(rusqlite::Transaction<'a>),
    /// PostgreSQL's.
    Postgres(postgres::Transaction<'a>),
}

impl Tx<'_> {
    /// Which SQL dialect this database speaks.
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Tx::Sqlite(_) => Dialect::Sqlite,
            Tx::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The rows of a query.
    pub(crate) fn query(&mut self, sql: &str, params: &[SqlValue]) -> Result<Vec<Row>, StoreError> {
        match self {
            Tx::Sqlite(t) => sqlite_query(t, sql, params),
            Tx::Postgres(t) => Ok(pg_run_each(t, sql, &[params], true)?.1),
        }
    }

    /// Runs a statement; returns how many rows it changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &[SqlValue]) -> Result<u64, StoreError> {
        match self {
            Tx::Sqlite(t) => sqlite_execute(t, sql, params),
            Tx::Postgres(t) => Ok(pg_run_each(t, sql, &[params], false)?.0),
        }
    }

    /// Runs one statement once per parameter set, prepared once (a run's files and cells).
    pub(crate) fn execute_each(
        &mut self,
        sql: &str,
        sets: &[Vec<SqlValue>],
    ) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(t) => {
                let mut st = t.prepare_cached(sql)?;
                for params in sets {
                    st.execute(sqlite_params(params))?;
                }
            }
            Tx::Postgres(t) => {
                let sets: Vec<&[SqlValue]> = sets.iter().map(Vec::as_slice).collect();
                pg_run_each(t, sql, &sets, false)?;
            }
        }
        Ok(())
    }

    /// Runs several statements without parameters (a migration step).
    pub(crate) fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(t) => Ok(t.execute_batch(sql)?),
            Tx::Postgres(t) => Ok(t.batch_execute(sql)?),
        }
    }

    /// Commits.
    pub(crate) fn commit(self) -> Result<(), StoreError> {
        match self {
            Tx::Sqlite(t) => Ok(t.commit()?),
            Tx::Postgres(t) => Ok(t.commit()?),
        }
    }
}
