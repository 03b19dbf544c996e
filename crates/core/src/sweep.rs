//! Sweeps (`sweep`): a server command template with `{name}` placeholders, a grid of values
//! for them, and the combinations to start and measure one after the other. Everything here is
//! a pure decision with known answers: which combinations a grid gives (a product, with linked
//! parameters moving together), the command and URL of each, the directory it is measured in,
//! and what `sweep.json` keeps of each one. The sweep command only starts, waits and stops.

use crate::redact::redact_command;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The sweep's own file in its directory (its spec and every combination's record).
pub const SWEEP_FILE: &str = "sweep.json";

/// The sweep file's schema version.
pub const SWEEP_SCHEMA_VERSION: u32 = 1;

/// The placeholder the sweep fills with a free port of its own choosing.
pub const PORT_PLACEHOLDER: &str = "port";

/// The placeholder the sweep fills with the server's address: 127.0.0.1 for a local process,
/// the node's address for a Slurm job (known once the job runs, so only the URL may use it
/// there).
pub const HOST_PLACEHOLDER: &str = "host";

/// Whether a placeholder is the sweep's own (`{port}`, `{host}`), never a grid parameter.
fn sweeps_own(name: &str) -> bool {
    name == PORT_PLACEHOLDER || name == HOST_PLACEHOLDER
}

/// How a sweep starts each combination's server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Launcher {
    /// A local process group (`sh -c`).
    #[default]
    Local,
    /// A Slurm job (`sbatch --wrap`), reached at its node's address once it runs; the extra
    /// `sbatch` arguments are the user's (`--partition`, `--gres=gpu:8`, `--time`).
    Slurm {
        /// Extra `sbatch` arguments.
        sbatch_args: Vec<String>,
    },
}

/// A sweep that cannot be planned: every message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    /// `--grid` not of the form `name=v1,v2`.
    #[error("--grid {0:?}: write it as name=value1,value2 (e.g. --grid seqs=64,128)")]
    BadGrid(String),
    /// A parameter given twice.
    #[error("--grid {0} is given twice: give each parameter once, with all its values")]
    DuplicateParameter(String),
    /// `--link` names a parameter no `--grid` gives.
    #[error("--link names {0}, which no --grid gives")]
    LinkUnknown(String),
    /// Linked parameters with different numbers of values.
    #[error(
        "--link {names}: linked parameters move together, so each needs the same number of values ({counts})"
    )]
    LinkLengths {
        /// The linked names.
        names: String,
        /// Their value counts.
        counts: String,
    },
    /// A parameter in two links.
    #[error("--link: {0} is in two links; put linked parameters in one --link a,b,c")]
    LinkTwice(String),
    /// A placeholder in the template that no parameter fills.
    #[error("the server command uses {{{0}}}, which no --grid gives")]
    UnfilledPlaceholder(String),
    /// A parameter the template never uses: its combinations would measure the same server.
    #[error("--grid {0} is not used by the server command (no {{{0}}} in it)")]
    UnusedParameter(String),
    /// `{port}` or `{host}` given as a grid parameter.
    #[error("{{{0}}} is filled by the sweep; don't give it with --grid")]
    OwnInGrid(String),
    /// `{host}` in a Slurm job's command: the node is known only once the job runs.
    #[error(
        "a Slurm job's command cannot use {{host}} (its node is known once it runs): bind the server to 0.0.0.0 and use {{host}} in --url"
    )]
    HostInSlurmCommand,
    /// A `{` without its `}`.
    #[error("the template {0:?} has a {{ without its }}")]
    Unclosed(String),
    /// Nothing to sweep.
    #[error("nothing to sweep: give --serve with --grid, or --urls")]
    Empty,
}

/// One parameter of the grid and its values, in the order given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GridParam {
    /// The placeholder's name.
    pub name: String,
    /// Its values, as text (put into the command as written).
    pub values: Vec<String>,
}

/// Parses `name=v1,v2,v3`.
pub fn parse_grid(text: &str) -> Result<GridParam, SweepError> {
    let bad = || SweepError::BadGrid(text.to_string());
    let (name, values) = text.split_once('=').ok_or_else(bad)?;
    let name = name.trim();
    let ok_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if !ok_name || values.iter().any(String::is_empty) {
        return Err(bad());
    }
    if sweeps_own(name) {
        return Err(SweepError::OwnInGrid(name.to_string()));
    }
    Ok(GridParam {
        name: name.to_string(),
        values,
    })
}

/// One combination: a value for every parameter, in the grid's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Combination {
    /// The directory name under the sweep (`seqs-64_mbt-2048`), unique in the sweep.
    pub name: String,
    /// Parameter → value.
    pub params: BTreeMap<String, String>,
}

/// The combinations of `grid`: the product of the parameters' values, except that the
/// parameters of each link take their i-th values together. The first parameter varies
/// slowest, as nested loops in the order given would.
pub fn combinations(
    grid: &[GridParam],
    links: &[Vec<String>],
) -> Result<Vec<Combination>, SweepError> {
    for (i, p) in grid.iter().enumerate() {
        if grid[..i].iter().any(|q| q.name == p.name) {
            return Err(SweepError::DuplicateParameter(p.name.clone()));
        }
    }
    let axes = axes(grid, links)?;
    let mut out: Vec<Vec<(usize, usize)>> = vec![Vec::new()];
    for axis in &axes {
        let len = grid[axis[0]].values.len();
        out = out
            .into_iter()
            .flat_map(|prefix| {
                (0..len).map(move |k| {
                    let mut c = prefix.clone();
                    c.extend(axis.iter().map(|&p| (p, k)));
                    c
                })
            })
            .collect();
    }
    Ok(out
        .into_iter()
        .filter(|c| !c.is_empty())
        .map(|c| {
            let mut chosen: Vec<(usize, usize)> = c;
            chosen.sort_unstable();
            let params: BTreeMap<String, String> = chosen
                .iter()
                .map(|&(p, k)| (grid[p].name.clone(), grid[p].values[k].clone()))
                .collect();
            let name = chosen
                .iter()
                .map(|&(p, k)| format!("{}-{}", grid[p].name, dir_safe(&grid[p].values[k])))
                .collect::<Vec<_>>()
                .join("_");
            Combination { name, params }
        })
        .collect())
}

/// The grid's axes: each a group of parameter indices that move together (a link, or one
/// parameter alone), in the order of each group's first parameter.
fn axes(grid: &[GridParam], links: &[Vec<String>]) -> Result<Vec<Vec<usize>>, SweepError> {
    let index = |n: &str| {
        grid.iter()
            .position(|p| p.name == n)
            .ok_or_else(|| SweepError::LinkUnknown(n.to_string()))
    };
    let mut group_of: Vec<Option<usize>> = vec![None; grid.len()];
    for (g, link) in links.iter().enumerate() {
        let idx: Vec<usize> = link.iter().map(|n| index(n)).collect::<Result<_, _>>()?;
        for &i in &idx {
            if group_of[i].is_some() {
                return Err(SweepError::LinkTwice(grid[i].name.clone()));
            }
            group_of[i] = Some(g);
        }
        let counts: Vec<usize> = idx.iter().map(|&i| grid[i].values.len()).collect();
        if counts.windows(2).any(|w| w[0] != w[1]) {
            return Err(SweepError::LinkLengths {
                names: link.join(","),
                counts: counts
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join(" vs "),
            });
        }
    }
    let mut axes: Vec<Vec<usize>> = Vec::new();
    let mut seen_groups: Vec<usize> = Vec::new();
    for i in 0..grid.len() {
        match group_of[i] {
            None => axes.push(vec![i]),
            Some(g) if !seen_groups.contains(&g) => {
                seen_groups.push(g);
                axes.push(
                    (i..grid.len())
                        .filter(|&j| group_of[j] == Some(g))
                        .collect(),
                );
            }
            Some(_) => {}
        }
    }
    Ok(axes)
}

/// A value as a directory name's part: letters, digits, `.` and `-` kept, the rest `+`.
fn dir_safe(v: &str) -> String {
    let s: String = v
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '+'
            }
        })
        .take(40)
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("v{s}")
    } else {
        s
    }
}

/// The placeholders of `template`, in order of first use.
pub fn placeholders(template: &str) -> Result<Vec<String>, SweepError> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| SweepError::Unclosed(template.to_string()))?;
        let name = after[..close].to_string();
        if !out.contains(&name) {
            out.push(name);
        }
        rest = &after[close + 1..];
    }
    Ok(out)
}

/// `template` with every `{name}` replaced by its value in `params`, `{port}` by `port` and
/// `{host}` by `host`. A placeholder with no value is an error, never left in a command that
/// would then fail at the server's start.
pub fn render(
    template: &str,
    params: &BTreeMap<String, String>,
    port: Option<u16>,
    host: Option<&str>,
) -> Result<String, SweepError> {
    let mut out = template.to_string();
    for name in placeholders(template)? {
        let value = match (name.as_str(), port, host) {
            (PORT_PLACEHOLDER, Some(p), _) => p.to_string(),
            (HOST_PLACEHOLDER, _, Some(h)) => h.to_string(),
            _ => params
                .get(&name)
                .cloned()
                .ok_or_else(|| SweepError::UnfilledPlaceholder(name.clone()))?,
        };
        out = out.replace(&format!("{{{name}}}"), &value);
    }
    Ok(out)
}

/// Checks a launching sweep before anything starts: every placeholder of the server command
/// (and of the URL) is filled, and every grid parameter is used.
pub fn check_templates(
    serve: &str,
    url: &str,
    grid: &[GridParam],
    launcher: &Launcher,
) -> Result<(), SweepError> {
    let mut used = placeholders(serve)?;
    if matches!(launcher, Launcher::Slurm { .. }) && used.iter().any(|n| n == HOST_PLACEHOLDER) {
        return Err(SweepError::HostInSlurmCommand);
    }
    used.extend(placeholders(url)?);
    for name in &used {
        if !sweeps_own(name) && !grid.iter().any(|p| &p.name == name) {
            return Err(SweepError::UnfilledPlaceholder(name.clone()));
        }
    }
    if let Some(p) = grid.iter().find(|p| !used.contains(&p.name)) {
        return Err(SweepError::UnusedParameter(p.name.clone()));
    }
    Ok(())
}

/// Whether a URL or command template asks the sweep for a free port.
pub fn wants_port(template: &str) -> bool {
    template.contains(&format!("{{{PORT_PLACEHOLDER}}}"))
}

/// What became of one combination.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ComboState {
    /// Not started yet.
    Pending,
    /// Measured: its run ended and wrote its results directory.
    Measured,
    /// The server exited, or did not answer, before its start limit.
    FailedToStart,
    /// The server exited while it was measured.
    ServerDied,
    /// The run itself failed (bad input, nothing measured): its exit code and words.
    RunFailed,
    /// Stopped by Ctrl-C or a signal; `--resume` measures it again.
    Interrupted,
}

impl ComboState {
    /// Whether `--resume` skips it.
    pub fn finished(self) -> bool {
        matches!(
            self,
            ComboState::Measured
                | ComboState::FailedToStart
                | ComboState::ServerDied
                | ComboState::RunFailed
        )
    }
}

/// One combination's entry in `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComboRecord {
    /// Its name, which is also its results directory under the sweep.
    pub name: String,
    /// Parameter → value (empty for a URL of a list).
    pub params: BTreeMap<String, String>,
    /// The server command it started, secrets redacted (none for a URL of a list).
    pub command: Option<String>,
    /// The URL it was measured at.
    pub url: Option<String>,
    /// What became of it.
    pub state: ComboState,
    /// Why, where it was not measured (or was, but the server died).
    pub reason: Option<String>,
    /// The last lines of the server's log, where it failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log_tail: Vec<String>,
    /// The server's log, relative to the sweep directory.
    pub log: Option<String>,
    /// The run's exit code.
    pub run_exit_code: Option<i32>,
    /// Seconds from the start command to the server's first answer.
    pub start_s: Option<f64>,
    /// Seconds from the stop signal to the port being free.
    pub stop_s: Option<f64>,
    /// When the combination started and ended (RFC 3339).
    pub started_at: Option<String>,
    /// When it ended.
    pub finished_at: Option<String>,
}

impl ComboRecord {
    /// A combination not started yet.
    pub fn pending(c: &Combination) -> ComboRecord {
        ComboRecord {
            name: c.name.clone(),
            params: c.params.clone(),
            command: None,
            url: None,
            state: ComboState::Pending,
            reason: None,
            log_tail: Vec::new(),
            log: None,
            run_exit_code: None,
            start_s: None,
            stop_s: None,
            started_at: None,
            finished_at: None,
        }
    }
}

/// What a sweep was asked to do, as `sweep.json` keeps it (secrets redacted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// The server command template (`None`: a list of URLs, nothing launched).
    pub serve: Option<String>,
    /// The URL template of a launched server.
    pub url: Option<String>,
    /// The grid.
    pub grid: Vec<GridParam>,
    /// Parameters that move together.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Vec<String>>,
    /// The URLs of servers already running (no launching).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    /// The `run` flags every combination is measured with.
    pub run_args: Vec<String>,
    /// Seconds a server has to answer after its start.
    pub start_timeout_s: f64,
    /// Seconds between SIGTERM and SIGKILL.
    pub stop_grace_s: f64,
    /// How each server starts (a local process by default).
    #[serde(default)]
    pub launcher: Launcher,
}

/// `sweep.json`: the spec and every combination's record, written after each combination.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// [`SWEEP_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The sweep's identity ([`sweep_id`]), kept by `--resume` and named in each of its runs'
    /// `run.json`, so the hub keeps the runs of one sweep as one group. Empty in files written
    /// before it existed.
    #[serde(default)]
    pub id: String,
    /// What was asked.
    pub spec: SweepSpec,
    /// Every combination, in run order.
    pub combinations: Vec<ComboRecord>,
    /// When the sweep started (RFC 3339).
    pub started_at: String,
    /// When it ended (absent while it runs or after an interruption).
    pub finished_at: Option<String>,
}

/// The `run` flags a sweep sets itself for each combination, refused among the user's.
pub const SWEEP_OWN_RUN_FLAGS: [&str; 5] = [
    "--url",
    "--output",
    "--resume",
    "--launch-command",
    "--sweep-member",
];

/// What a run measured by a sweep records of it (`run.json`'s `sweep`): which sweep, which
/// combination, and that combination's parameters. The hub groups runs by `id`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepMember {
    /// The sweep's [`SweepFile::id`].
    pub id: String,
    /// The combination's name (its directory under the sweep).
    pub combination: String,
    /// Parameter → value (empty for a URL of a list).
    #[serde(default)]
    pub params: BTreeMap<String, String>,
}

/// A new sweep's identity: its start instant (`20261206T195146Z`, so identities sort by time)
/// and 32 bits that differ between processes started in the same second (std's per-process
/// random hash keys over the process id and the clock's nanoseconds).
pub fn sweep_id(started_unix_ns: u64) -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(started_unix_ns);
    h.write_u32(std::process::id());
    let stamp: String = crate::time::rfc3339(
        std::time::UNIX_EPOCH + std::time::Duration::from_nanos(started_unix_ns),
    )
    .chars()
    .take(19)
    .filter(|c| c.is_ascii_digit() || *c == 'T')
    .collect();
    format!("{stamp}Z-{:08x}", h.finish() as u32)
}

/// The first of the user's `run` flags that the sweep sets itself, if any.
pub fn own_run_flag(args: &[String]) -> Option<&'static str> {
    SWEEP_OWN_RUN_FLAGS.iter().copied().find(|f| {
        args.iter()
            .any(|a| a == f || a.starts_with(&format!("{f}=")))
    })
}

/// A server command as stored: secrets replaced by `<redacted>` (the launch command's rule).
pub fn stored_command(cmd: &str) -> String {
    redact_command(cmd)
}

/// The user's `run` flags as `sweep.json` keeps them: the value of every secret-named flag
/// (`--api-key X`, `--api-key=X`) replaced by `<redacted>`, and every argument through the
/// launch command's redaction (a `Bearer` credential, a URL's password).
pub fn redact_args(args: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::with_capacity(args.len());
    let mut secret_next = false;
    for a in args {
        if secret_next && !a.starts_with("--") {
            out.push(crate::redact::REDACTED.to_string());
            secret_next = false;
            continue;
        }
        secret_next = false;
        match a.split_once('=') {
            Some((name, _)) if name.starts_with("--") && crate::redact::is_secret_name(name) => {
                out.push(format!("{name}={}", crate::redact::REDACTED));
            }
            _ => {
                secret_next = a.starts_with("--") && crate::redact::is_secret_name(a);
                out.push(redact_command(a));
            }
        }
    }
    out
}

/// Whether a stored text lost a secret to redaction (a resumed sweep must be given it again).
pub fn holds_redacted(text: &str) -> bool {
    text.contains(crate::redact::REDACTED)
}

/// The values of the secret-named flags among `args` (`--api-key X`, `--api-key=X`): what a
/// server's log may print again (SGLang logs its whole `server_args`), to redact there.
pub fn secret_values(args: &[String]) -> Vec<String> {
    // A shell command's word may carry its quotes or a `;` after it.
    let bare = |v: &str| {
        v.trim_matches(|c| matches!(c, ';' | '&' | '|' | '\'' | '"'))
            .to_string()
    };
    let mut out = Vec::new();
    let mut next = false;
    for a in args {
        if next && !a.starts_with("--") && !bare(a).is_empty() {
            out.push(bare(a));
        }
        next = false;
        match a.split_once('=') {
            Some((name, v)) if name.starts_with("--") && crate::redact::is_secret_name(name) => {
                if !bare(v).is_empty() {
                    out.push(bare(v));
                }
            }
            _ => next = a.starts_with("--") && crate::redact::is_secret_name(a),
        }
    }
    out
}

/// The last `n` lines of a server's log, each cut to 300 characters, with every known secret
/// (and every form the launch command's redaction knows) replaced by `<redacted>`: the tail
/// goes into `sweep.json` and the report.
pub fn log_tail(text: &str, n: usize, secrets: &[&str]) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| crate::redact::redact_text(l, secrets))
        .map(|l| crate::terminal::cut_text(&l, 300).into_owned())
        .collect()
}

#[cfg(test)]
#[path = "tests/sweep.rs"]
mod tests;
