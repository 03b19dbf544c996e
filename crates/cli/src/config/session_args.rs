//! The session flags of `run` (`--sessions`, `--turns`, `--turn-input-len`, …), flattened
//! into `RunArgs` and its config file; `config/sessions.rs` turns them into the run's settings.

use super::de;
use super::parse::{self, Levels};
use clap::Args;
use llmib_core::LengthSpec;
use serde::Deserialize;

/// The session flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct SessionArgs {
    /// Sessions: concurrent conversations per session cell, comma-separated (1,8,32): each
    /// context is a history depth, and S sessions send turn after turn of one growing
    /// conversation (docs/sessions.md). Without --concurrency the decode matrix is skipped.
    #[arg(long, value_name = "S,…", value_parser = parse::levels)]
    #[serde(deserialize_with = "de::levels")]
    pub sessions: Option<Levels>,
    /// Sessions, open loop: sessions start at these rates (per second, comma-separated) on a
    /// Poisson schedule over --duration; each warms its history and runs --turns turns.
    #[arg(long, value_name = "R,…", value_parser = parse::rates)]
    #[serde(deserialize_with = "de::rates")]
    pub session_rate: Option<parse::Rates>,
    /// Sessions: measured turns per session (default 4; 0: turns until the window closes).
    #[arg(long, value_name = "N")]
    pub turns: Option<u32>,
    /// Sessions: tokens of each turn's new user message: `1K` (the default), `512..2K` or
    /// `1K:normal:256`.
    #[arg(long, value_name = "LENGTH", value_parser = parse::length)]
    #[serde(deserialize_with = "de::length")]
    pub turn_input_len: Option<LengthSpec>,
    /// Sessions: output tokens each turn asks for (EOS ignored; default 256).
    #[arg(long, value_name = "TOKENS", value_parser = parse::max_output)]
    #[serde(deserialize_with = "de::max_output")]
    pub turn_output_len: Option<u32>,
    /// Sessions: tokens of the system prompt every history starts with (default 2K).
    #[arg(long, value_name = "TOKENS", value_parser = parse::tokens)]
    #[serde(deserialize_with = "de::tokens")]
    pub system_prompt_len: Option<u64>,
    /// Sessions: how many groups of sessions share a system prompt (1, the default: all of
    /// them, as one agent's; 0: none).
    #[arg(long, value_name = "G")]
    pub system_prompt_groups: Option<u32>,
    /// Sessions: the pause between a turn's end and the session's next turn: `0` (the
    /// default), `2s`, or `exp:2s` (exponential with that mean).
    #[arg(long, value_name = "TIME", value_parser = parse::think_time)]
    #[serde(deserialize_with = "de::think_time")]
    pub think_time: Option<llmib_core::ThinkTime>,
    /// Sessions: flush the server's prefix cache before each session cell (SGLang
    /// /flush_cache, vLLM /reset_prefix_cache); the row records it.
    #[arg(long)]
    pub flush_cache: bool,
    /// Sessions: the server's prefix-cache block size in tokens, where the engine does not say
    /// (the prediction of cached tokens counts whole blocks).
    #[arg(long, value_name = "TOKENS")]
    pub cache_block_tokens: Option<u64>,
}

impl SessionArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: SessionArgs) -> SessionArgs {
        SessionArgs {
            sessions: self.sessions.or(lower.sessions),
            session_rate: self.session_rate.or(lower.session_rate),
            turns: self.turns.or(lower.turns),
            turn_input_len: self.turn_input_len.or(lower.turn_input_len),
            turn_output_len: self.turn_output_len.or(lower.turn_output_len),
            system_prompt_len: self.system_prompt_len.or(lower.system_prompt_len),
            system_prompt_groups: self.system_prompt_groups.or(lower.system_prompt_groups),
            think_time: self.think_time.or(lower.think_time),
            flush_cache: self.flush_cache || lower.flush_cache,
            cache_block_tokens: self.cache_block_tokens.or(lower.cache_block_tokens),
        }
    }
}
