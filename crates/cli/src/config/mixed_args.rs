//! The mixed-prefill flags of `run` (`--mixed-prefill`, `--mixed-concurrency`,
//! `--mixed-context`, `--mixed-span`), flattened into `RunArgs` and its config file, and
//! checked into the run's `llmib_core::MixedPrefillSettings`: a prompt of P tokens sent into N
//! running decode streams, after the matrix (docs/method-notes.md, "Mixed prefill").

use super::de;
use super::parse::{self, ContextList, Levels};
use anyhow::{Result, bail};
use clap::Args;
use llmib_core::MixedPrefillSettings;
use llmib_core::{ContextSpec, DEFAULT_MIXED_SPAN_S, DEFAULT_STANDALONE_REPEATS};
use serde::Deserialize;
use std::time::Duration;

/// The mixed-prefill flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct MixedArgs {
    /// Mixed-prefill cells after the matrix: prompt lengths P, comma-separated (16K,64K). Each
    /// cell sends a fresh prompt of P tokens into N running decode streams and reports their
    /// tok/s before, during and after its prefill, each stream's longest gap, and the prompt's
    /// TTFT against its TTFT alone.
    #[arg(long, value_name = "LIST", value_parser = parse::contexts)]
    #[serde(deserialize_with = "de::contexts")]
    pub mixed_prefill: Option<ContextList>,
    /// The decode streams N of the mixed-prefill cells, comma-separated (default: --concurrency).
    #[arg(long, value_name = "LIST", value_parser = parse::levels)]
    #[serde(deserialize_with = "de::levels")]
    pub mixed_concurrency: Option<Levels>,
    /// The mixed-prefill streams' context C (default: the smallest decode context).
    #[arg(long, value_name = "TOKENS", value_parser = parse::tokens)]
    #[serde(deserialize_with = "de::tokens")]
    pub mixed_context: Option<u64>,
    /// How long a mixed-prefill cell measures its streams before the prompt is sent and after
    /// its first token (default 2s).
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub mixed_span: Option<Duration>,
}

impl MixedArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: MixedArgs) -> MixedArgs {
        MixedArgs {
            mixed_prefill: self.mixed_prefill.or(lower.mixed_prefill),
            mixed_concurrency: self.mixed_concurrency.or(lower.mixed_concurrency),
            mixed_context: self.mixed_context.or(lower.mixed_context),
            mixed_span: self.mixed_span.or(lower.mixed_span),
        }
    }

    /// The mixed-prefill settings of a run, refused on a shard (`sharded`): the stall is one
    /// client's streams against one injected prompt, which shards on several machines cannot
    /// time together.
    pub fn settings_for(&self, sharded: bool) -> Result<Option<MixedPrefillSettings>> {
        let s = self.settings()?;
        if s.is_some() && sharded {
            bail!("--mixed-prefill runs on one client, not with --shard: run it without --shard");
        }
        Ok(s)
    }

    /// Checks the flags into the run's settings: `None` without `--mixed-prefill` (the other
    /// flags alone are refused: they would measure nothing). P must be a size in tokens (not
    /// `max` or `full`), the span at least 100 ms.
    pub fn settings(&self) -> Result<Option<MixedPrefillSettings>> {
        let Some(list) = &self.mixed_prefill else {
            if self.mixed_concurrency.is_some()
                || self.mixed_context.is_some()
                || self.mixed_span.is_some()
            {
                bail!(
                    "--mixed-concurrency, --mixed-context and --mixed-span set up mixed-prefill cells: add --mixed-prefill with the prompt lengths (e.g. 16K)"
                );
            }
            return Ok(None);
        };
        let mut prompt_tokens = Vec::new();
        for spec in &list.0 {
            match spec {
                ContextSpec::Tokens(p) if *p > 0 => prompt_tokens.push(*p),
                other => bail!(
                    "--mixed-prefill takes prompt lengths in tokens (e.g. 16K,64K), not {other}"
                ),
            }
        }
        prompt_tokens.sort_unstable();
        prompt_tokens.dedup();
        let span_s = self
            .mixed_span
            .map_or(DEFAULT_MIXED_SPAN_S, |d| d.as_secs_f64());
        if span_s < 0.1 {
            bail!("--mixed-span takes at least 100ms (the streams' tok/s before and after)");
        }
        Ok(Some(MixedPrefillSettings {
            prompt_tokens,
            concurrency: self.mixed_concurrency.clone().map_or(Vec::new(), |l| l.0),
            stream_context: self.mixed_context,
            span_s,
            standalone_repeats: DEFAULT_STANDALONE_REPEATS,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: Option<Vec<ContextSpec>>) -> MixedArgs {
        MixedArgs {
            mixed_prefill: list.map(ContextList),
            ..Default::default()
        }
    }

    #[test]
    fn prompt_lengths_are_sorted_sizes_with_the_defaults() {
        let a = args(Some(vec![
            ContextSpec::Tokens(65536),
            ContextSpec::Tokens(16384),
        ]));
        let s = a.settings().expect("ok").expect("some");
        assert_eq!(s.prompt_tokens, [16384, 65536]);
        assert_eq!((s.span_s, s.standalone_repeats), (2.0, 3));
        assert!(s.concurrency.is_empty() && s.stream_context.is_none());
        assert_eq!(args(None).settings().expect("ok"), None);
    }

    #[test]
    fn what_would_measure_nothing_or_no_length_is_refused() {
        let e = args(Some(vec![ContextSpec::Max]))
            .settings()
            .expect_err("max");
        assert!(e.to_string().contains("prompt lengths in tokens"), "{e}");
        let mut a = args(None);
        a.mixed_span = Some(Duration::from_secs(1));
        let e = a.settings().expect_err("a span alone");
        assert!(e.to_string().contains("add --mixed-prefill"), "{e}");
        let mut a = args(Some(vec![ContextSpec::Tokens(1024)]));
        a.mixed_span = Some(Duration::from_millis(50));
        let e = a.settings().expect_err("a short span");
        assert!(e.to_string().contains("at least 100ms"), "{e}");
    }
}
