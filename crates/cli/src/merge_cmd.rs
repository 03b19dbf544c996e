//! `merge`: one results directory from the shard directories of a run spread over several
//! client machines (`run --shard I/N`). The checks and the figures are `llmib_core`'s; this
//! module reads the shards, writes the merged run and its reports.

use clap::Args;
use std::path::PathBuf;

/// Merges shard results into one run.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shards' results directories (every shard of the run, each once).
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The merged results directory to write (it must not exist, unless --force).
    #[arg(long, short, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Merges `args.dirs` into `args.output`.
pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("merge is not built yet")
}
