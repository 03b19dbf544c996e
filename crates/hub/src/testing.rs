//! Helpers for tests (this crate's and its users', such as the hub's web server): a fresh,
//! empty PostgreSQL database per test when the environment names a server, and whether its
//! absence must fail the test. Not for production use: it creates and drops databases.
//!
//! The server comes from `LLMIB_TEST_POSTGRES_URL`, a URL whose user may `CREATE DATABASE`
//! (`eval "$(scripts/postgres/start.sh)"` starts one and sets it). Without it, PostgreSQL
//! tests skip, except under CI (`CI` set), where they must fail: a CI that silently skipped
//! them would pass without ever testing PostgreSQL.

use crate::error::StoreError;
use std::sync::atomic::{AtomicU32, Ordering};

/// The environment variable naming the test server.
pub const POSTGRES_URL_ENV: &str = "LLMIB_TEST_POSTGRES_URL";

/// A URL to a PostgreSQL server where the user may create databases, from
/// `LLMIB_TEST_POSTGRES_URL` (unset or empty: `None`).
pub fn postgres_admin_url() -> Option<String> {
    std::env::var(POSTGRES_URL_ENV)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// Whether a test that finds no PostgreSQL must fail rather than skip: true under CI (env `CI`
/// set to anything but empty, `0` or `false`).
pub fn postgres_required() -> bool {
    std::env::var("CI")
        .map(|v| !matches!(v.trim(), "" | "0" | "false"))
        .unwrap_or(false)
}

/// The message for a test that found no PostgreSQL: under CI a failure's reason, elsewhere
/// the line a skipped test prints.
pub fn postgres_missing_message(test: &str) -> String {
    if postgres_required() {
        format!(
            "{test}: no PostgreSQL under CI: set {POSTGRES_URL_ENV} (eval \"$(scripts/postgres/start.sh)\")"
        )
    } else {
        format!("SKIPPED {test} on PostgreSQL: set {POSTGRES_URL_ENV} to run it")
    }
}

/// A database name from a test's tag: lower-case letters, digits and `_`, then the process id
/// and a counter, so parallel tests and processes never share one. At most 63 bytes
/// (PostgreSQL's identifier limit).
fn database_name(tag: &str) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let tag: String = tag
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    format!("llmib_t_{tag}_{}_{n}", std::process::id())
}

/// `url` with its path (the database name) replaced by `name`; its query string kept.
fn with_database(url: &str, name: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let after = &rest[auth_end..];
    let query = after.find('?').map_or("", |q| &after[q..]);
    format!("{}{}/{name}{query}", &url[..scheme_end], &rest[..auth_end])
}

/// Runs admin statements on the test server's admin database.
fn admin(sql: &[String]) -> Result<(), StoreError> {
    let Some(url) = postgres_admin_url() else {
        return Ok(());
    };
    let config: postgres::Config = url.parse()?;
    let mut client = config.connect(postgres::NoTls)?;
    for s in sql {
        client.batch_execute(s)?;
    }
    Ok(())
}

/// A fresh, empty database on the test server, named from `tag`, the process id and a counter
/// (dropped first if it exists), and its URL; `None` when `LLMIB_TEST_POSTGRES_URL` is unset.
/// Drop it with [`drop_postgres_database`] when done.
pub fn fresh_postgres_url(tag: &str) -> Result<Option<String>, StoreError> {
    let Some(url) = postgres_admin_url() else {
        return Ok(None);
    };
    let name = database_name(tag);
    admin(&[
        format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
        format!("CREATE DATABASE {name}"),
    ])?;
    Ok(Some(with_database(&url, &name)))
}

/// Drops a database [`fresh_postgres_url`] made (closing its connections); a URL not of the
/// helper's making (its name does not start `llmib_t_`) is left alone.
pub fn drop_postgres_database(url: &str) -> Result<(), StoreError> {
    let name = url
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .split('?')
        .next()
        .unwrap_or_default();
    let ours = name.starts_with("llmib_t_")
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if !ours {
        return Ok(());
    }
    admin(&[format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")])
}

#[cfg(test)]
mod tests {
    use super::{database_name, with_database};

    #[test]
    fn a_test_database_url_keeps_the_server_and_names_the_database() {
        assert_eq!(
            with_database("postgres://u:p@h:5432/postgres?sslmode=disable", "x"),
            "postgres://u:p@h:5432/x?sslmode=disable"
        );
        assert_eq!(with_database("postgres://h", "x"), "postgres://h/x");
        let name = database_name("Uploads: a/b");
        assert!(name.starts_with("llmib_t_uploads__a_b_"), "{name}");
        assert!(name.len() <= 63);
    }
}
