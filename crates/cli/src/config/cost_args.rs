//! The cost flags of `run` (`--gpu-hour-usd`, `--node-hour-usd`, `--gpus`), flattened into
//! `RunArgs` and its config file, and checked into the run's `llmib_core::CostSettings`: each
//! measured cell's cost per million tokens and per-GPU throughput (docs/method-notes.md, "Cost
//! and energy per token").

use anyhow::{Result, bail};
use clap::Args;
use llmib_core::CostSettings;
use serde::Deserialize;

/// The cost flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct CostArgs {
    /// Price of one of the server's GPUs for an hour, USD (e.g. 2.5): each measured cell gets
    /// its cost per million tokens, at the price × --gpus (or the GPUs detected). Excludes
    /// --node-hour-usd.
    #[arg(long, value_name = "USD", conflicts_with = "node_hour_usd")]
    pub gpu_hour_usd: Option<f64>,
    /// Price of the server's whole machine (node) for an hour, USD: each measured cell gets its
    /// cost per million tokens. Excludes --gpu-hour-usd.
    #[arg(long, value_name = "USD")]
    pub node_hour_usd: Option<f64>,
    /// GPUs the server uses (default: those detected on this machine when the server runs
    /// here): the GPU-hour price's multiplier, the per-GPU throughput's divisor, and the GPUs
    /// whose power each cell's energy must cover.
    #[arg(long, value_name = "N")]
    pub gpus: Option<u32>,
}

impl CostArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: CostArgs) -> CostArgs {
        CostArgs {
            gpu_hour_usd: self.gpu_hour_usd.or(lower.gpu_hour_usd),
            node_hour_usd: self.node_hour_usd.or(lower.node_hour_usd),
            gpus: self.gpus.or(lower.gpus),
        }
    }

    /// Checks the flags into the run's cost settings: prices positive and finite, at least one
    /// GPU, and one price at most (clap refuses both flags at once; a config file and a flag
    /// may still bring one each).
    pub fn settings(&self) -> Result<CostSettings> {
        if self.gpu_hour_usd.is_some() && self.node_hour_usd.is_some() {
            bail!("--gpu-hour-usd and --node-hour-usd exclude each other: keep one");
        }
        for (flag, v) in [
            ("--gpu-hour-usd", self.gpu_hour_usd),
            ("--node-hour-usd", self.node_hour_usd),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                bail!("{flag} takes a price above 0 in USD per hour (e.g. 2.5), not {v}");
            }
        }
        if self.gpus == Some(0) {
            bail!("--gpus takes at least 1");
        }
        Ok(CostSettings {
            gpu_hour_usd: self.gpu_hour_usd,
            node_hour_usd: self.node_hour_usd,
            gpus: self.gpus,
            gpus_detected: None,
        })
    }
}
