//! `sweep --file sweep.toml`: the sweep's flags as keys of a TOML file, for a sweep kept with
//! the project that runs it. A flag given on the command line wins over the file's key; an
//! unknown key is an error that names it.
//!
//! ```toml
//! serve = "vllm serve M --max-num-seqs {seqs} --max-num-batched-tokens {mbt} --port {port}"
//! grid = ["seqs=64,128,256", "mbt=2048,8192"]
//! run = ["--contexts", "8K", "--find-capacity", "--slo", "ttft_p99=2s"]
//! ```

use anyhow::{Context as _, Result};
use serde::Deserialize;
use std::path::Path;

/// The keys a sweep file may hold: the flags of the same names, `run` for the run flags.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepToml {
    /// `--serve`.
    pub serve: Option<String>,
    /// `--grid`, each `name=v1,v2`.
    pub grid: Option<Vec<String>>,
    /// `--link`, each `a,b`.
    pub link: Option<Vec<String>>,
    /// `--url`.
    pub url: Option<String>,
    /// `--launcher` (`local` or `slurm`).
    pub launcher: Option<String>,
    /// `--sbatch-args`.
    pub sbatch_args: Option<String>,
    /// `--urls`.
    pub urls: Option<Vec<String>>,
    /// The run flags (after `--` on the command line).
    pub run: Option<Vec<String>>,
}

/// Reads and parses a sweep file; an unknown key is an error that names it.
pub fn read(path: &Path) -> Result<SweepToml> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--file {}: cannot read it", path.display()))?;
    toml::from_str(&text).map_err(|e| anyhow::anyhow!("--file {}: {}", path.display(), e.message()))
}
