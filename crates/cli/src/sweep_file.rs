//! `sweep --file sweep.toml`: the sweep's flags as keys of a TOML file, for a sweep kept with
//! the project that runs it. A flag given on the command line wins over the file's key; an
//! unknown key is an error that names it.
//!
//! ```toml
//! serve = "vllm serve M --max-num-seqs {seqs} --max-num-batched-tokens {mbt} --port {port}"
//! grid = ["seqs=64,128,256", "mbt=2048,8192"]
//! run = ["--contexts", "8K", "--find-capacity", "--slo", "ttft_p99=2s"]
//! ```

use crate::sweep_cmd::{LauncherArg, SweepArgs};
use anyhow::{Context as _, Result, bail};
use serde::Deserialize;
use std::path::Path;

/// The keys a sweep file may hold: the flags of the same names, `run` for the run flags.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SweepToml {
    serve: Option<String>,
    grid: Option<Vec<String>>,
    link: Option<Vec<String>>,
    url: Option<String>,
    launcher: Option<String>,
    sbatch_args: Option<String>,
    urls: Option<Vec<String>>,
    run: Option<Vec<String>>,
}

/// `args` with the file's keys filled in where the command line left them unset (or at their
/// defaults: `--url`, `--launcher`).
pub fn with_file(mut args: SweepArgs, path: &Path, default_url: &str) -> Result<SweepArgs> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--file {}: cannot read it", path.display()))?;
    let f: SweepToml = toml::from_str(&text)
        .map_err(|e| anyhow::anyhow!("--file {}: {}", path.display(), e.message()))?;
    if args.serve.is_none() {
        args.serve = f.serve;
    }
    if args.grid.is_empty() {
        args.grid = f.grid.unwrap_or_default();
    }
    if args.link.is_empty() {
        args.link = f.link.unwrap_or_default();
    }
    if args.url == default_url
        && let Some(u) = f.url
    {
        args.url = u;
    }
    if args.launcher == LauncherArg::Local
        && let Some(l) = f.launcher
    {
        args.launcher = match l.as_str() {
            "local" => LauncherArg::Local,
            "slurm" => LauncherArg::Slurm,
            other => bail!(
                "--file {}: launcher {other:?} is local or slurm",
                path.display()
            ),
        };
    }
    if args.sbatch_args.is_none() {
        args.sbatch_args = f.sbatch_args;
    }
    if args.urls.is_empty() {
        args.urls = f.urls.unwrap_or_default();
    }
    if args.run_args.is_empty() {
        args.run_args = f.run.unwrap_or_default();
    }
    Ok(args)
}
