//! `hub`: serve the results hub (`hub serve`) and manage its upload tokens (`hub token create |
//! list | revoke`). The store is `llmib-hub`, the pages and the API `llmib-hub-web`; this file
//! only opens the one, binds the other, and waits for Ctrl-C or SIGTERM.
//!
//! The store is opened before the async runtime starts: the PostgreSQL backend uses the
//! synchronous `postgres` client, which panics when called on a runtime thread. The token
//! commands need no runtime at all. A database URL's password is never printed: the URL is
//! shown without its userinfo, and `main` redacts the password from every error line.

use crate::commands::run::Exit;
use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use llmib_core::{strip_url_userinfo, terminal_name};
use llmib_hub::{Settings, Store};

/// The environment variable that names the database (`--db`).
pub const DB_ENV: &str = "LLMIB_HUB_DB";

/// Flags of `hub`.
#[derive(Debug, Args)]
pub struct HubArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: HubCommand,
}

/// The `hub` subcommands.
#[derive(Debug, Subcommand)]
pub enum HubCommand {
    /// Serve the hub's pages and upload API until Ctrl-C or SIGTERM.
    Serve(ServeArgs),
    /// Create, list and revoke the tokens that uploads need.
    #[command(subcommand)]
    Token(TokenCommand),
}

/// The hub's database: a SQLite file path, or a PostgreSQL URL. Its `Debug` form hides the
/// URL's password.
#[derive(Clone, PartialEq, Eq)]
pub struct Db(String);

impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Db({:?})", self.shown())
    }
}

impl std::str::FromStr for Db {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim().is_empty() {
            return Err("--db needs a SQLite file path or a postgres:// URL".into());
        }
        Ok(Db(s.to_string()))
    }
}

impl Db {
    /// Whether this is a PostgreSQL URL.
    pub fn is_postgres(&self) -> bool {
        let lower = self.0.to_ascii_lowercase();
        lower.starts_with("postgres://") || lower.starts_with("postgresql://")
    }

    /// The database as printed: a path as given, a URL without its userinfo.
    pub fn shown(&self) -> String {
        if self.is_postgres() {
            strip_url_userinfo(&self.0)
        } else {
            self.0.clone()
        }
    }
}

/// The database flag every `hub` command takes.
#[derive(Debug, Clone, Args)]
pub struct DbArg {
    /// The hub's database: a SQLite file (created if missing) or a PostgreSQL URL
    /// (`postgres://user:password@host/db`). Schema migrations run when it is opened.
    #[arg(long, env = DB_ENV, hide_env_values = true, value_name = "PATH|URL")]
    pub db: Db,
}

/// Flags of `hub serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The database.
    #[command(flatten)]
    pub db: DbArg,
    /// Address to listen on (`0.0.0.0:8080` for every interface; port 0: any free port, the
    /// line printed at start names it).
    #[arg(long, env = "LLMIB_HUB_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Reading (pages and JSON) needs a token too, as uploading always does.
    #[arg(long)]
    pub read_needs_token: bool,
    /// The most one upload may carry, all files together, in MiB.
    #[arg(long, default_value_t = 64, value_name = "MB",
          value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub max_upload_mb: u64,
}

/// `hub token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; its secret is printed once, on stdout, and never again.
    Create {
        /// Who or what uses it (`ci`, `alice`): shown in the list, kept with each upload.
        name: String,
        /// The database.
        #[command(flatten)]
        db: DbArg,
    },
    /// List the tokens (id, name, created, revoked; never the secrets).
    List {
        /// The database.
        #[command(flatten)]
        db: DbArg,
    },
    /// Revoke a token: it no longer uploads (or reads). Runs it uploaded stay.
    Revoke {
        /// The token's id (from `hub token list`).
        id: i64,
        /// The database.
        #[command(flatten)]
        db: DbArg,
    },
}

/// `hub`: runs outside any async runtime (see the module's note); `serve` starts its own.
pub fn run(a: HubArgs) -> Result<Exit> {
    match a.command {
        HubCommand::Serve(s) => serve(s),
        HubCommand::Token(t) => token(t),
    }
}

/// Opens the store named by `--db` and brings its schema up to date.
fn open_store(db: &Db, settings: Settings) -> Result<Store> {
    let shown = db.shown();
    open_backend(db, settings).with_context(|| format!("cannot open the hub database {shown}"))
}

/// The backend `--db` names: PostgreSQL by URL, else a SQLite file.
fn open_backend(db: &Db, settings: Settings) -> Result<Store> {
    Ok(Store::open(&db.0, settings)?)
}

/// The token commands.
fn token(t: TokenCommand) -> Result<Exit> {
    match t {
        TokenCommand::Create { name, db } => {
            let name = name.trim();
            if name.is_empty() {
                bail!("a token needs a name (who or what uses it: `hub token create ci`)");
            }
            let mut store = open_store(&db.db, Settings::default())?;
            let t = store.create_token(name)?;
            // Only the secret on stdout, so `TOKEN=$(… hub token create ci)` captures it.
            outln!("{}", t.secret);
            errln!(
                "created token {} `{}`; its secret (above) is shown only now and is not stored: keep it (uploads read it from --token or LLMIB_HUB_TOKEN)",
                t.id,
                terminal_name(name)
            );
        }
        TokenCommand::List { db } => {
            let store = open_store(&db.db, Settings::default())?;
            let tokens = store.list_tokens()?;
            if tokens.is_empty() {
                errln!(
                    "no tokens yet: create one with `llm-inference-bench hub token create NAME`"
                );
            } else {
                out!("{}", token_table(&tokens));
            }
        }
        TokenCommand::Revoke { id, db } => {
            let mut store = open_store(&db.db, Settings::default())?;
            store.revoke_token(id)?;
            errln!("revoked token {id}: it no longer uploads; the runs it uploaded stay");
        }
    }
    Ok(Exit::Ok)
}

/// The token list as aligned columns: id, name, created, revoked (`-` when live).
fn token_table(tokens: &[llmib_hub::TokenInfo]) -> String {
    let rows: Vec<[String; 4]> = tokens
        .iter()
        .map(|t| {
            [
                t.id.to_string(),
                terminal_name(&t.name),
                t.created_at.clone(),
                t.revoked_at.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    let head = ["ID", "NAME", "CREATED", "REVOKED"].map(String::from);
    let width = |i: usize| {
        std::iter::once(&head)
            .chain(&rows)
            .map(|r| r[i].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths = [width(0), width(1), width(2)];
    let mut out = String::new();
    for r in std::iter::once(&head).chain(&rows) {
        out.push_str(&format!(
            "{:>w0$}  {:<w1$}  {:<w2$}  {}\n",
            r[0],
            r[1],
            r[2],
            r[3],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2]
        ));
    }
    out
}

/// `hub serve`: open the store (outside the runtime), bind, print the address, serve until
/// a signal, then let requests in flight finish.
fn serve(a: ServeArgs) -> Result<Exit> {
    let settings = Settings {
        max_upload_bytes: a.max_upload_mb << 20,
        read_needs_token: a.read_needs_token,
    };
    let store = open_store(&a.db.db, settings)?;
    // Said at start so an upgrade's log shows the migration it applied.
    let schema = store
        .schema_version()
        .context("cannot read the database's schema version")?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let shown = a.db.db.shown();
    let served = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&a.listen)
            .await
            .with_context(|| {
                format!(
                    "cannot listen on {} (is the port in use? pick another --listen, or port 0)",
                    terminal_name(&a.listen)
                )
            })?;
        let addr = listener.local_addr().context("the listener's address")?;
        // Installed before the line is printed: a SIGTERM sent right after it is caught.
        let stop = stop_signal()?;
        errln!(
            "hub: listening on http://{addr} (database: {}, schema version {schema})",
            terminal_name(&shown)
        );
        llmib_hub_web::serve(listener, store, stop).await?;
        anyhow::Ok(())
    });
    // The runtime goes down before the process ends, outside any async context: the store's
    // PostgreSQL connection closes itself with a blocking call when dropped.
    rt.shutdown_timeout(std::time::Duration::from_secs(5));
    served?;
    errln!("hub: stopped");
    Ok(Exit::Ok)
}

/// A future that ends at Ctrl-C (SIGINT) or SIGTERM (what `systemctl stop`, `docker stop` and
/// Kubernetes send), after saying so. The handlers are installed now, not at the first poll.
fn stop_signal() -> Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).context("cannot catch SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot catch Ctrl-C")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        errln!("hub: stopping (requests in flight finish first)");
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_shown_without_its_password() {
        let db: Db = "postgres://hub:s3cret@db:5432/hub".parse().expect("db");
        assert!(db.is_postgres());
        assert_eq!(db.shown(), "postgres://db:5432/hub");
        assert!(!format!("{db:?}").contains("s3cret"));
        let file: Db = "/var/lib/hub.db".parse().expect("path");
        assert!(!file.is_postgres());
        assert_eq!(file.shown(), "/var/lib/hub.db");
    }

    #[test]
    fn the_token_table_lines_up_and_has_no_secret_column() {
        let t = |id, name: &str, revoked: Option<&str>| llmib_hub::TokenInfo {
            id,
            name: name.into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            revoked_at: revoked.map(str::to_string),
        };
        let table = token_table(&[t(1, "ci", None), t(12, "alice", Some("2026-02-01"))]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "ID  NAME   CREATED               REVOKED");
        assert_eq!(lines[1], " 1  ci     2026-01-01T00:00:00Z  -");
        assert_eq!(lines[2], "12  alice  2026-01-01T00:00:00Z  2026-02-01");
    }
}
