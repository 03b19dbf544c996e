//! `upload` and `run --upload`: send results directories to a hub (`llm-inference-bench hub
//! serve`) over its HTTP API, `POST /api/runs` with the token as a bearer header.
//!
//! Each directory is one request carrying its results files as text (run.json and cells.jsonl,
//! and requests.jsonl, schedules.jsonl, telemetry.jsonl when present); the hub checks, redacts
//! and stores it whole or refuses it with a one-line reason, which is printed as it came,
//! prefixed by the directory. A directory that is plainly not a results directory is refused
//! here, before anything is sent. The token never reaches the terminal: its type prints as
//! `<redacted>`, the header is marked sensitive, and every line from the hub is redacted of it.

use crate::commands::run::{self, Exit};
use crate::config::RunArgs;
use anyhow::{Result, bail};
use clap::Args;
use llmib_core::REQUESTS_FILE;
use llmib_core::{redact_text, strip_url_userinfo, terminal_line};
use llmib_hub::{UploadError, UploadFiles};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The environment variable that holds the upload token (`upload --token`, `run
/// --upload-token`).
pub const TOKEN_ENV: &str = "LLMIB_HUB_TOKEN";

/// How long one upload may take in all: a 64 MiB `requests.jsonl` over a slow link.
const UPLOAD_TIMEOUT: Duration = Duration::from_secs(600);

/// How long the start-up check of `run --upload` waits for the hub.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A hub token. Its `Debug` form never shows the secret, so the parsed arguments (which derive
/// `Debug`) can be printed without leaking it.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl std::str::FromStr for Token {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Token(s.trim().to_string()))
    }
}

/// Flags of `upload`.
#[derive(Debug, Clone, Args)]
pub struct UploadArgs {
    /// Results directories to upload (each written by `run`), one request each; a sweep
    /// directory (written by `sweep`) uploads its runs and its sweep.json as one group.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// The hub's base URL (`http://hub.example:8080`).
    #[arg(long, env = "LLMIB_HUB_URL", value_name = "URL")]
    pub hub: String,
    /// Upload token, made with `hub token create` (also read from LLMIB_HUB_TOKEN). Never
    /// printed.
    #[arg(long, env = TOKEN_ENV, hide_env_values = true)]
    pub token: Option<Token>,
    /// Replace a run the hub already holds (it keeps its id) instead of refusing it.
    #[arg(long)]
    pub replace: bool,
    /// Leave requests.jsonl out: a long run's per-request records can be over the hub's
    /// upload limit, and the run's figures are in cells.jsonl.
    #[arg(long)]
    pub skip_requests: bool,
}

/// The `run` flags that upload the results when the run ends (kept apart from
/// [`RunArgs`], which is also the `--config` file: a token does not belong in a file).
#[derive(Debug, Clone, Default, Args)]
pub struct RunUploadArgs {
    /// After the run, upload its results directory to the hub at URL (the token from
    /// --upload-token or LLMIB_HUB_TOKEN, checked before the run starts).
    #[arg(long, value_name = "URL")]
    pub upload: Option<String>,
    /// Token for --upload (also read from LLMIB_HUB_TOKEN). Never printed.
    #[arg(long, env = TOKEN_ENV, hide_env_values = true)]
    pub upload_token: Option<Token>,
}

/// The flags of `run`: the matrix's and the upload's.
#[derive(Debug, Clone, Args)]
pub struct RunCommandArgs {
    /// The run itself.
    #[command(flatten)]
    pub run: RunArgs,
    /// Where to upload it.
    #[command(flatten)]
    pub upload: RunUploadArgs,
    /// How many times to run it.
    #[command(flatten)]
    pub repeat: crate::commands::repeats::RepeatArgs,
}

impl std::ops::Deref for RunCommandArgs {
    type Target = RunArgs;
    fn deref(&self) -> &RunArgs {
        &self.run
    }
}

/// How a directory is uploaded.
#[derive(Debug, Clone, Copy, Default)]
pub struct How {
    /// Replace the run if the hub holds it.
    pub replace: bool,
    /// Leave requests.jsonl out.
    pub skip_requests: bool,
}

/// What the hub answered to a stored upload.
#[derive(Debug, Clone, Deserialize)]
pub struct Uploaded {
    /// The run's id in the hub.
    pub id: i64,
    /// The run's page, relative to the hub (`/runs/N`).
    pub url: String,
    /// Whether it replaced a run the hub held.
    #[serde(default)]
    pub replaced: bool,
}

/// Why one upload failed.
#[derive(Debug)]
pub enum Failure {
    /// The hub could not be reached: the next directories would fail the same way.
    Unreachable(String),
    /// This directory was refused (locally or by the hub).
    Refused(String),
    /// The hub holds this run already (HTTP 409; `--replace` overwrites it).
    AlreadyStored(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Unreachable(s) | Failure::Refused(s) | Failure::AlreadyStored(s) => {
                f.write_str(s)
            }
        }
    }
}

/// A hub to upload to: its base URL and a client that sends the token.
pub struct Hub {
    /// The base URL, without a trailing `/`.
    base: String,
    client: reqwest::Client,
    secret: String,
    /// The flag that named the hub, for "check --hub".
    flag: &'static str,
}

impl Hub {
    /// A hub client for `url`; `token_flag` names where the token comes from, for the error
    /// that says it is missing.
    pub fn new(
        url: &str,
        token: Option<Token>,
        flag: &'static str,
        token_flag: &str,
    ) -> Result<Hub> {
        let base = url.trim().trim_end_matches('/').to_string();
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            bail!(
                "{flag} {}: give the hub's http:// or https:// URL",
                terminal_line(url)
            );
        }
        let Some(Token(secret)) = token.filter(|t| !t.0.is_empty()) else {
            bail!(
                "no hub token (the hub's admin makes one with `llm-inference-bench hub token create NAME`): set {TOKEN_ENV} or pass {token_flag}"
            );
        };
        let client = llmib_client::build_client(&llmib_client::HttpOptions {
            api_key: Some(secret.clone()),
            connect_timeout: Duration::from_secs(10),
            max_idle_per_host: 1,
            ..llmib_client::HttpOptions::default()
        })
        // The client's message speaks of an API key; here it is the hub token.
        .map_err(|e| match e {
            llmib_client::HttpError::InvalidApiKey => anyhow::anyhow!(
                "the hub token contains characters that cannot be sent in an HTTP header: check {TOKEN_ENV} or {token_flag}"
            ),
            other => anyhow::anyhow!("{other}"),
        })?;
        Ok(Hub {
            base,
            client,
            secret,
            flag,
        })
    }

    /// The hub's URL as printed (no userinfo).
    pub fn shown(&self) -> String {
        strip_url_userinfo(&self.base)
    }

    /// A line from or about the hub, safe for the terminal: one line, cut, the token redacted.
    fn clean(&self, s: &str) -> String {
        terminal_line(&redact_text(s, &[self.secret.as_str()]))
    }

    /// The line for a request that got no answer.
    fn unreachable(&self, e: &reqwest::Error) -> Failure {
        let chain = error_chain(e);
        Failure::Unreachable(self.clean(&format!(
            "cannot reach the hub at {} ({chain}): check {} and that the hub is running",
            self.shown(),
            self.flag
        )))
    }

    /// Whether the hub answers at all (any HTTP status counts): `run --upload` checks this
    /// before it measures, so a mistyped URL is found in seconds, not after the run.
    pub async fn check_reachable(&self) -> Result<()> {
        let url = format!("{}/healthz", self.base);
        match self.client.get(url).timeout(PROBE_TIMEOUT).send().await {
            Ok(_) => Ok(()),
            Err(e) => bail!("{}", self.unreachable(&e)),
        }
    }

    /// Uploads one results directory.
    pub async fn upload(&self, dir: &Path, how: How) -> Result<Uploaded, Failure> {
        let body = read_results(dir, how.skip_requests)
            .map_err(|e| Failure::Refused(self.clean(&e.to_string())))?;
        let path = if how.replace {
            "/api/runs?replace=true"
        } else {
            "/api/runs"
        };
        self.post(path, &body).await
    }

    /// POSTs `body` to the hub's `path` and reads its JSON answer; a refusal is the hub's own
    /// line (a 409 apart: the run is stored already).
    pub async fn post<T: serde::de::DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<T, Failure> {
        let answer = self
            .client
            .post(format!("{}{path}", self.base))
            .timeout(UPLOAD_TIMEOUT)
            .json(body)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        let status = answer.status();
        let text = answer.text().await.map_err(|e| self.unreachable(&e))?;
        if status.is_success() {
            return serde_json::from_str::<T>(&text).map_err(|e| {
                Failure::Refused(self.clean(&format!(
                    "the hub answered HTTP {status} with an unexpected body ({e}): is {} a llm-inference-bench hub?",
                    self.shown()
                )))
            });
        }
        let line = self.clean(&self.refusal(status, &text));
        if status == reqwest::StatusCode::CONFLICT {
            return Err(Failure::AlreadyStored(line));
        }
        Err(Failure::Refused(line))
    }

    /// The line for an answer that is not a success: the hub's own `{"error": …}` line, with
    /// what to do where the hub's wording cannot know the flag.
    fn refusal(&self, status: reqwest::StatusCode, body: &str) -> String {
        #[derive(Deserialize)]
        struct HubError {
            error: String,
        }
        let Ok(HubError { error }) = serde_json::from_str::<HubError>(body) else {
            let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            return match status.as_u16() {
                404 | 405 => format!(
                    "{} has no upload API (POST /api/runs answered HTTP {status}): check {} (the hub's base URL)",
                    self.shown(),
                    self.flag
                ),
                413 => format!(
                    "the upload is larger than the hub accepts (HTTP {status}): upload without requests.jsonl (`upload --skip-requests`), or ask the hub's admin to raise --max-upload-mb"
                ),
                _ => format!("the hub answered HTTP {status}: {first}"),
            };
        };
        match status.as_u16() {
            // The hub says "pass replace"; the flag is ours.
            409 if !error.contains("--replace") => format!("{error} (with --replace)"),
            413 if error.contains("without requests.jsonl") => {
                format!("{error} (`upload --skip-requests`)")
            }
            _ => error,
        }
    }

    /// The full URL of an uploaded run's page.
    pub fn page(&self, u: &Uploaded) -> String {
        if u.url.starts_with('/') || u.url.starts_with("http://") || u.url.starts_with("https://") {
            return self.page_at(&u.url);
        }
        self.page_at(&format!("/runs/{}", u.id))
    }

    /// The full URL of a page the hub named (`/sweeps/KEY`, or a whole URL).
    pub fn page_at(&self, url: &str) -> String {
        if url.starts_with("http://") || url.starts_with("https://") {
            return self.clean(url);
        }
        self.clean(&format!("{}{url}", self.shown()))
    }
}

/// An error and its sources on one line, repeats left out (reqwest's own text is "error
/// sending request"; the cause is in its sources).
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut cur = Some(e);
    while let Some(err) = cur {
        let s = err.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        cur = err.source();
    }
    parts.join(": ")
}

/// The request body for a results directory: `{"files": {name: text}}` with every results file
/// present (requests.jsonl left out on request, without reading it). Refused here: a missing
/// directory, one without run.json or cells.jsonl, a file that is not UTF-8 text. No size limit:
/// the hub sets it and names it in its refusal.
fn read_results(dir: &Path, skip_requests: bool) -> Result<serde_json::Value, UploadError> {
    let skip: &[&str] = if skip_requests { &[REQUESTS_FILE] } else { &[] };
    let files = UploadFiles::from_dir_except(dir, u64::MAX, skip)?;
    // The hub's own first checks (names, run.json and cells.jsonl present, the schema version),
    // so a directory it would refuse is refused here before anything is sent.
    llmib_hub::precheck(&files, u64::MAX)?;
    let mut text = serde_json::Map::new();
    for (name, bytes) in files.into_files() {
        let t = String::from_utf8(bytes).map_err(|_| UploadError::NotText(name.clone()))?;
        text.insert(name, serde_json::Value::String(t));
    }
    Ok(serde_json::json!({ "files": text }))
}

/// `run`, and with `--upload` the upload of its results directory once it has ended well. The
/// token and the hub are checked before the run starts (a missing token found after an hour of
/// measuring would waste the hour); a failed upload keeps the results and says how to upload
/// them later, with exit code 6.
pub async fn run(a: RunCommandArgs) -> Result<Exit> {
    let RunCommandArgs {
        run,
        upload,
        repeat,
    } = a;
    if let Some(k) = repeat.num_runs.filter(|k| *k != 1) {
        let uploading = upload.upload.is_some();
        return crate::commands::repeats::run_repeated(run, k, uploading).await;
    }
    let Some(url) = upload.upload else {
        return run::run(run).await;
    };
    let hub = Hub::new(&url, upload.upload_token, "--upload", "--upload-token")?;
    hub.check_reachable().await?;
    // The directory is fixed here so that it is known after the run: the one resumed, the one
    // given (flag or config file), or the default, passed on as if given.
    let mut run = run.merge_file()?;
    let dir = match (&run.resume, &run.output) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => {
            let d = run::default_output("run");
            run.output = Some(d.clone());
            d
        }
    };
    let exit = run::run(run).await?;
    let later = format!(
        "llm-inference-bench upload {} --hub {}",
        dir.display(),
        hub.shown()
    );
    if exit != Exit::Ok {
        errln!(
            "not uploaded: the run did not end well; its results are in {} (upload them anyway with `{later}`)",
            dir.display()
        );
        return Ok(exit);
    }
    match hub.upload(&dir, How::default()).await {
        Ok(u) => {
            errln!("uploaded {} → {}", dir.display(), hub.page(&u));
            Ok(exit)
        }
        Err(e) => {
            errln!("error: the upload failed: {e}");
            errln!(
                "the results are kept in {}: upload them later with `{later}`",
                dir.display()
            );
            Ok(Exit::UploadFailed)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_token_never_shows_in_debug_output() {
        let t: Token = "llmib_secret".parse().expect("token");
        let args = RunUploadArgs {
            upload: Some("http://hub".into()),
            upload_token: Some(t),
        };
        assert!(!format!("{args:?}").contains("llmib_secret"));
    }

    #[test]
    fn a_hub_needs_a_url_and_a_token() {
        let t = || Some(Token("x".into()));
        let e = Hub::new("hub:8080", t(), "--hub", "--token")
            .err()
            .expect("no scheme");
        assert!(e.to_string().contains("http://"), "{e}");
        let e = Hub::new("http://hub", None, "--hub", "--token")
            .err()
            .expect("no token");
        assert!(e.to_string().contains("LLMIB_HUB_TOKEN"), "{e}");
        let e = Hub::new(
            "http://hub",
            Some(Token(String::new())),
            "--hub",
            "--upload-token",
        )
        .err()
        .expect("empty token");
        assert!(e.to_string().contains("--upload-token"), "{e}");
        assert!(Hub::new("http://hub/", t(), "--hub", "--token").is_ok());
    }

    #[test]
    fn the_hubs_lines_lose_the_token() {
        let hub = Hub::new(
            "http://u:p@hub/",
            Some(Token("sekrit".into())),
            "--hub",
            "--token",
        )
        .expect("hub");
        assert_eq!(hub.shown(), "http://hub");
        assert!(!hub.clean("bad token sekrit\nnext").contains("sekrit"));
        let u = Uploaded {
            id: 3,
            url: "/runs/3".into(),
            replaced: false,
        };
        assert_eq!(hub.page(&u), "http://hub/runs/3");
    }

    #[test]
    fn a_directory_without_the_results_files_is_refused_before_sending() {
        let dir = std::env::temp_dir().join(format!("llmib-upload-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let e = read_results(&dir, false)
            .expect_err("empty dir")
            .to_string();
        assert!(e.contains("not a results directory: no run.json"), "{e}");
        let e = read_results(&dir.join("nope"), false)
            .expect_err("no dir")
            .to_string();
        assert!(e.contains("no such directory"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
