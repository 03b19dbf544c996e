//! The shard flags of `run` (`--shard`, `--shards`, `--start-at`, `--shard-prep-seconds`,
//! `--shard-prefill-rate`), flattened into `RunArgs` and its config file; `config/shard_args.rs` checks
//! them into the shard's identity and timetable.

use super::de;
use super::parse;
use clap::Args;
use serde::Deserialize;

/// The shard flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct ShardFlags {
    /// Run shard I of N of this plan from one of several client machines (`0/4`), or `auto`:
    /// from a Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, with --shards) or a Slurm array
    /// (`SLURM_ARRAY_TASK_ID`/`_COUNT`). Every shard gets the same flags and --start-at;
    /// `merge` makes one run of their results (docs/distributed.md).
    #[arg(long, value_name = "I/N|auto", value_parser = parse::shard)]
    #[serde(deserialize_with = "de::shard")]
    pub shard: Option<llmib_core::ShardArg>,
    /// The number of shards, for `--shard auto` under a Kubernetes Indexed Job (its
    /// completions).
    #[arg(long, value_name = "N")]
    pub shards: Option<u32>,
    /// With --shard: the instant (RFC 3339, e.g. 2026-12-04T22:00:00Z) every shard's
    /// timetable starts from; each cell then starts at the same wall-clock instant on every
    /// shard. Give it far enough ahead for every shard to have started and probed the server.
    #[arg(long, value_name = "TIME", value_parser = parse::start_at)]
    #[serde(deserialize_with = "de::start_at")]
    pub start_at: Option<String>,
    /// With --shard: the first cell's preparation after --start-at (its prompts built and
    /// warmed), seconds (default 10; longer where the plan's prompts need it). A shard that
    /// needs longer is late, and its part of the cell is marked.
    #[arg(long, value_name = "SECONDS")]
    pub shard_prep_seconds: Option<f64>,
    /// With --shard: the server's prefill rate the timetable sizes each cell's preparation and
    /// decode ramp for, prompt tokens per second (default 10000): the prefill row's rate, or
    /// less. Too high, and a shard is late for a cell; too low, and slots wait longer.
    #[arg(long, value_name = "TOK/S")]
    pub shard_prefill_rate: Option<f64>,
}

impl ShardFlags {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: ShardFlags) -> ShardFlags {
        ShardFlags {
            shard: self.shard.or(lower.shard),
            shards: self.shards.or(lower.shards),
            start_at: self.start_at.or(lower.start_at),
            shard_prep_seconds: self.shard_prep_seconds.or(lower.shard_prep_seconds),
            shard_prefill_rate: self.shard_prefill_rate.or(lower.shard_prefill_rate),
        }
    }
}
