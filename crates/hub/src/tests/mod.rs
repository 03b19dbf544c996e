//! The store's tests: migrations, uploads and every refusal, redaction, queries and their
//! plans. Fixtures are the checked-in seed run (`testdata/seed-run`), varied through JSON.
//!
//! Each test body runs on every database the machine offers ([`databases`]): SQLite always,
//! PostgreSQL when `LLMIB_TEST_POSTGRES_URL` names a server (each store on a fresh database,
//! dropped afterwards). Without one the PostgreSQL half is skipped with a line saying so,
//! except under CI, where it fails.

mod pg;
mod queries;
mod sweeps;
mod uploads;

use crate::sql::SqlValue;
use crate::testing::{
    drop_postgres_database, fresh_postgres_url, postgres_admin_url, postgres_missing_message,
    postgres_required,
};
use crate::{Dialect, Settings, Store, UploadFiles};
use serde_json::Value;
use std::cell::RefCell;

const SEED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/seed-run");

/// The seed run's run.json as JSON, to vary.
fn seed_run() -> Value {
    let text = std::fs::read_to_string(format!("{SEED}/run.json")).expect("seed run.json");
    serde_json::from_str(&text).expect("seed run.json parses")
}

/// The seed run's cells.jsonl.
fn seed_cells() -> Vec<u8> {
    std::fs::read(format!("{SEED}/cells.jsonl")).expect("seed cells.jsonl")
}

/// An upload of `run` with the seed's cells.
fn files_of(run: &Value) -> UploadFiles {
    let mut f = UploadFiles::new();
    f.add("run.json", serde_json::to_vec_pretty(run).expect("json"));
    f.add("cells.jsonl", seed_cells());
    f
}

/// One database a test body runs on; it drops the PostgreSQL databases it made when dropped
/// (after the test's stores, which the body owns).
struct Db {
    dialect: Dialect,
    tag: String,
    made: RefCell<Vec<String>>,
    dirs: RefCell<Vec<tempfile::TempDir>>,
}

fn db_of(dialect: Dialect, tag: &str) -> Db {
    Db {
        dialect,
        tag: tag.to_owned(),
        made: RefCell::default(),
        dirs: RefCell::default(),
    }
}

/// SQLite alone (for SQLite-only checks: its plans, its FTS table).
fn sqlite_only(tag: &str) -> Db {
    db_of(Dialect::Sqlite, tag)
}

/// The databases a test named `tag` runs on: SQLite, and PostgreSQL when there is a server.
fn databases(tag: &str) -> Vec<Db> {
    let db = |dialect| db_of(dialect, tag);
    let mut out = vec![db(Dialect::Sqlite)];
    if postgres_admin_url().is_some() {
        out.push(db(Dialect::Postgres));
    } else if postgres_required() {
        panic!("{}", postgres_missing_message(tag));
    } else {
        eprintln!("{}", postgres_missing_message(tag));
    }
    out
}

/// The PostgreSQL database alone (for PostgreSQL-only tests): `None` means skip.
fn postgres_only(tag: &str) -> Option<Db> {
    databases(tag)
        .into_iter()
        .find(|d| d.dialect == Dialect::Postgres)
}

impl Db {
    /// Where a new database lives, as [`Store::open`] takes it: a fresh SQLite file or a fresh
    /// PostgreSQL database's URL. Opening it twice opens the same database.
    fn target(&self) -> String {
        match self.dialect {
            Dialect::Sqlite => {
                let dir = tempfile::tempdir().expect("tempdir");
                let path = dir.path().join("hub.db").display().to_string();
                self.dirs.borrow_mut().push(dir);
                path
            }
            Dialect::Postgres => {
                let url = fresh_postgres_url(&self.tag)
                    .expect("create a test database")
                    .expect("a PostgreSQL server");
                self.made.borrow_mut().push(url.clone());
                url
            }
        }
    }

    /// A fresh store.
    fn open(&self, settings: Settings) -> Store {
        match self.dialect {
            Dialect::Sqlite => Store::open_sqlite_in_memory(settings).expect("open"),
            Dialect::Postgres => Store::open(&self.target(), settings).expect("open"),
        }
    }

    /// A fresh store and a live token's secret.
    fn store_with(&self, settings: Settings) -> (Store, String) {
        let mut s = self.open(settings);
        let t = s.create_token("tests").expect("token");
        (s, t.secret)
    }

    fn store(&self) -> (Store, String) {
        self.store_with(Settings::default())
    }
}

impl Drop for Db {
    fn drop(&mut self) {
        for url in self.made.borrow().iter() {
            if let Err(e) = drop_postgres_database(url) {
                eprintln!("could not drop a test database: {e}");
            }
        }
    }
}

/// The single integer a query returns.
fn scalar(s: &Store, sql: &str) -> i64 {
    let rows = s.db().query(sql, &[]).expect("query");
    rows.first().expect("a row").i64(0).expect("an integer")
}

/// The tables an upload writes on this store's database.
fn tables(s: &Store) -> &'static [&'static str] {
    match s.dialect() {
        Dialect::Sqlite => &["runs", "files", "cells", "runs_fts"],
        Dialect::Postgres => &["runs", "files", "cells"],
    }
}

/// Rows of every table an upload writes.
fn counts(s: &Store) -> Vec<i64> {
    tables(s)
        .iter()
        .map(|t| scalar(s, &format!("SELECT COUNT(*) FROM {t}")))
        .collect()
}

/// [`counts`] of a store holding no run.
fn empty(s: &Store) -> Vec<i64> {
    vec![0; tables(s).len()]
}

#[test]
fn migrations_apply_on_a_fresh_database_and_reopen_idempotently() {
    for db in databases("migrations") {
        let target = db.target();
        let s = Store::open(&target, Settings::default()).expect("open fresh");
        assert_eq!(s.dialect(), db.dialect);
        assert_eq!(
            s.schema_version().expect("version"),
            crate::db::latest_version()
        );
        drop(s);
        let s = Store::open(&target, Settings::default()).expect("reopen");
        let applied = scalar(&s, "SELECT COUNT(*) FROM schema_migrations");
        assert_eq!(
            applied,
            i64::try_from(crate::MIGRATIONS.len()).expect("len")
        );
    }
}

#[test]
fn a_database_from_a_newer_binary_is_refused() {
    for db in databases("newer") {
        let target = db.target();
        let s = Store::open(&target, Settings::default()).expect("open");
        s.db()
            .execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                &[SqlValue::Int(999), "future".into(), "".into()],
            )
            .expect("insert");
        drop(s);
        let e = Store::open(&target, Settings::default()).expect_err("newer refused");
        assert!(
            matches!(e, crate::StoreError::NewerDatabase { found: 999, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("run a newer"), "{e}");
    }
}

#[test]
fn the_schema_is_written_for_postgres_too() {
    let sql = crate::Dialect::Postgres.sql(&crate::MIGRATIONS[0]);
    assert!(sql.contains("BYTEA") && sql.contains("GENERATED BY DEFAULT AS IDENTITY"));
    assert!(!sql.contains("{id_pk}") && !sql.contains("{blob}") && !sql.contains("fts5"));
}

#[test]
fn the_store_can_move_to_another_thread() {
    fn send<T: Send>() {}
    send::<Store>();
}

#[test]
fn tokens_are_created_listed_and_revoked() {
    for db in databases("tokens") {
        let (mut s, secret) = db.store();
        assert!(secret.starts_with("llmib_") && secret.len() == 6 + 64);
        let listed = s.list_tokens().expect("list");
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].name, "tests");
        let rows = s
            .db()
            .query("SELECT secret_sha256 FROM tokens", &[])
            .expect("hash");
        assert_eq!(
            rows[0].text(0).expect("text"),
            crate::hex_sha256(secret.as_bytes()),
            "only the hash is kept"
        );
        assert_eq!(s.check_token(Some(&secret)).expect("db"), Ok(listed[0].id));
        s.revoke_token(listed[0].id).expect("revoke");
        assert!(s.list_tokens().expect("list")[0].revoked_at.is_some());
        assert_eq!(
            s.check_token(Some(&secret)).expect("db"),
            Err(crate::TokenError::Revoked("tests".into()))
        );
        assert!(matches!(
            s.revoke_token(99),
            Err(crate::StoreError::NoSuchToken(99))
        ));
    }
}

#[test]
fn reading_needs_a_token_only_when_set() {
    for db in databases("reading") {
        let (s, secret) = db.store();
        s.authorize_read(None).expect("open reading");
        let (s, _) = db.store_with(Settings {
            read_needs_token: true,
            ..Settings::default()
        });
        assert!(s.authorize_read(None).is_err());
        assert!(
            s.authorize_read(Some(&secret)).is_err(),
            "another hub's token"
        );
    }
}
