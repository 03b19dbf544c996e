//! The run's shard settings (`--shard`, `--shards`, `--start-at`, `--shard-prep-seconds`,
//! `--shard-prefill-rate`):
//! which shard this process is, the timetable every shard shares, and the settings a shard
//! cannot take (each would make the shards' plans drift apart while they run).

use crate::config::RunArgs;
use anyhow::{Context, bail};
use llmib_core::{RateSpec, ShardArg, ShardSpec, TimeScaleSpec, TimetableSettings};

/// A shard's identity and its timetable.
pub struct Sharded {
    /// This shard.
    pub spec: ShardSpec,
    /// The slots every shard follows.
    pub timetable: TimetableSettings,
    /// The prompts' seed every shard shares (from the start instant, so the N shards build
    /// exactly the prompts one process would).
    pub prompt_seed: u64,
}

impl RunArgs {
    /// The shard this run is, checked, with `env` looking the job engine's variables up;
    /// `None` without `--shard`.
    pub fn sharded(&self, env: &dyn Fn(&str) -> Option<String>) -> anyhow::Result<Option<Sharded>> {
        let Some(arg) = self.sharding.shard else {
            if self.sharding.start_at.is_some()
                || self.sharding.shards.is_some()
                || self.sharding.shard_prep_seconds.is_some()
                || self.sharding.shard_prefill_rate.is_some()
            {
                bail!(
                    "--start-at, --shards, --shard-prep-seconds and --shard-prefill-rate are for a sharded run: add --shard I/N (or auto)"
                );
            }
            return Ok(None);
        };
        let spec = match arg {
            ShardArg::Fixed(s) => {
                if self.sharding.shards.is_some_and(|n| n != s.count) {
                    bail!(
                        "--shard {s} and --shards {} disagree: give one count",
                        self.sharding.shards.unwrap_or(0)
                    );
                }
                s
            }
            ShardArg::Auto => llmib_core::resolve_auto(self.sharding.shards, env)?,
        };
        self.refuse_for_shards()?;
        let Some(start_at) = self.sharding.start_at.clone() else {
            bail!(
                "--shard needs --start-at TIME (RFC 3339), the same on every shard: e.g. --start-at $(date -u -d '+3 min' +%FT%TZ)"
            );
        };
        let start_unix_ns = llmib_core::parse_rfc3339_ns(&start_at)
            .with_context(|| format!("--start-at {start_at} is not an RFC 3339 instant"))?;
        let prep_s = self
            .sharding
            .shard_prep_seconds
            .unwrap_or(llmib_core::DEFAULT_PREP_S);
        if !(prep_s.is_finite() && (1.0..=3600.0).contains(&prep_s)) {
            bail!("--shard-prep-seconds takes 1 to 3600 seconds");
        }
        let prefill_tok_per_s = self
            .sharding
            .shard_prefill_rate
            .unwrap_or(llmib_core::DEFAULT_SHARD_PREFILL_TOK_PER_S);
        if !(prefill_tok_per_s.is_finite() && (100.0..=1e9).contains(&prefill_tok_per_s)) {
            bail!(
                "--shard-prefill-rate takes 100 to 1e9 prompt tokens per second (the server's prefill rate, e.g. the prefill row's)"
            );
        }
        Ok(Some(Sharded {
            spec,
            prompt_seed: llmib_core::fnv1a(start_at.as_bytes()).max(1),
            timetable: TimetableSettings {
                start_at,
                start_unix_ns,
                prep_s,
                prefill_tok_per_s,
                // What the server caches is known after the probe (`commands::run::prepare_new`).
                cached_prompt_block_tokens: None,
            },
        }))
    }

    /// Settings whose next step depends on what the last measured, or on a shared budget,
    /// which shards that cannot talk to each other cannot agree on.
    fn refuse_for_shards(&self) -> anyhow::Result<()> {
        let refuse = |what: &str, why: &str| -> anyhow::Result<()> {
            bail!("{what} cannot run on shards: {why}")
        };
        if matches!(self.request_rate, Some(RateSpec::Auto { .. })) {
            refuse(
                "--request-rate auto",
                "its rates come from what one machine measured; give the rates (--request-rate 5,10,20)",
            )?;
        }
        if self.find_capacity && self.sessions_mode() {
            // Each step of a session search is the merged verdict of the last cell, which no
            // shard sees: the others' sessions are in their own files until the merge.
            refuse(
                "--find-capacity with sessions",
                "the next session count or rate depends on the merged verdict of the last cell, which no shard sees; drop --find-capacity, give the counts (--sessions 1,2,4,8) or rates (--session-rate 0.5,1,2) and read the merged rows",
            )?;
        }
        if self.find_capacity || matches!(self.time_scale, Some(TimeScaleSpec::Auto)) {
            refuse(
                "a capacity search (--find-capacity, --time-scale auto)",
                "each step depends on the last; sweep fixed rates and read the merged rows",
            )?;
        }
        if self.until_stable.is_some() {
            refuse(
                "--until-stable",
                "each shard would stop on its own; give a fixed --duration",
            )?;
        }
        if self.max_concurrency.is_some() {
            refuse(
                "--max-concurrency",
                "a cap on requests in flight cannot be shared across machines",
            )?;
        }
        if self.run_burst {
            refuse("--run-burst", "burst cells run on one machine")?;
        }
        if self.decode_warmup_seconds.is_some_and(|s| s > 0.0) {
            refuse(
                "--decode-warmup-seconds",
                "run the warm-up once before the shards start",
            )?;
        }
        if self.max_time.is_some() {
            refuse(
                "--max-time",
                "the shards would stop at different cells; the timetable fixes how long the run takes",
            )?;
        }
        Ok(())
    }
}
