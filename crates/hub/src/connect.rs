//! Opening a database: a SQLite file with its connection settings, or a PostgreSQL server by
//! URL. A PostgreSQL failure is one line that says what to do and never shows a password: the
//! URL's userinfo password (and a `password=` setting) is redacted from the URL and from the
//! driver's message alike.

use crate::backend::Backend;
use crate::error::{StoreError, postgres_detail};
use rusqlite::Connection;
use std::sync::Mutex;

/// Whether `db` names a PostgreSQL database (`postgres://…` or `postgresql://…`) rather than a
/// SQLite file.
pub(crate) fn is_postgres_url(db: &str) -> bool {
    let lower = db.trim_start().to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// A SQLite connection with the hub's settings.
pub(crate) fn sqlite(conn: Connection) -> Result<Backend, StoreError> {
    // WAL: readers (the pages) do not wait for an upload's transaction. Foreign keys are
    // declared for PostgreSQL's sake; SQLite checks them only when asked.
    conn.pragma_update(None, "foreign_keys", "ON")?;
    conn.pragma_update(None, "busy_timeout", 5000)?;
    // An in-memory database answers "memory"; that is fine.
    let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    Ok(Backend::Sqlite(conn))
}

/// The secrets of a connection string: its URL password and a parsed `password` setting.
fn secrets_of(url: &str, config: Option<&postgres::Config>) -> Vec<String> {
    let mut out: Vec<String> = llmib_core::url_password(url)
        .map(str::to_owned)
        .into_iter()
        .collect();
    if let Some(p) = config
        .and_then(postgres::Config::get_password)
        .and_then(|p| std::str::from_utf8(p).ok())
    {
        out.push(p.to_owned());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Text with every secret removed, on one line.
fn redacted(text: &str, secrets: &[String]) -> String {
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    llmib_core::sanitize_terminal(&llmib_core::redact_text(text, &secrets))
}

/// Where the connection went, for the message: the URL without its password; a key=value
/// connection string is not shown at all.
fn shown_url(url: &str, secrets: &[String]) -> String {
    if is_postgres_url(url) {
        redacted(url, secrets)
    } else {
        "the PostgreSQL connection string".to_owned()
    }
}

/// Connects to a PostgreSQL server (no TLS).
pub(crate) fn postgres(url: &str) -> Result<Backend, StoreError> {
    let config: postgres::Config = url.parse().map_err(|e: postgres::Error| {
        let secrets = secrets_of(url, None);
        StoreError::Connect {
            url: shown_url(url, &secrets),
            detail: redacted(&postgres_detail(&e), &secrets),
        }
    })?;
    let secrets = secrets_of(url, Some(&config));
    let client = config
        .connect(postgres::NoTls)
        .map_err(|e| StoreError::Connect {
            url: shown_url(url, &secrets),
            detail: redacted(&postgres_detail(&e), &secrets),
        })?;
    Ok(Backend::Postgres(Mutex::new(client)))
}
