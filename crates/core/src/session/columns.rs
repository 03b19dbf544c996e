//! A session row's columns of the results contract (`turns_completed`, `cached_tokens`,
//! `per_turn`, …), flattened into every row: a file of its own that imports nothing but the
//! row's parts, so that a bare row (`verdict`) can name them without importing the row's
//! verdict, which imports `verdict`.

use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// A session row's columns of the results contract, flattened into the row. Absent on other
/// rows; on a session row every one is written, null where it does not apply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionColumns {
    /// Measured turns that finished.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub turns_completed: Option<Option<u64>>,
    /// Prompt tokens of the measured turns.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub prompt_tokens: Option<Option<u64>>,
    /// Of them, tokens the server reported served from its cache (null: it does not say).
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_tokens: Option<Option<u64>>,
    /// Of them, tokens a perfect prefix cache would have served.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub predicted_cached_tokens: Option<Option<u64>>,
    /// `cached_tokens / prompt_tokens`.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_hit_rate: Option<Option<f64>>,
    /// `predicted_cached_tokens / prompt_tokens`.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub predicted_cache_hit_rate: Option<Option<f64>>,
    /// Per-turn TPOT distribution, ms.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub tpot_ms: Option<Option<Summary>>,
    /// By turn index.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub per_turn: Option<Option<Vec<PerTurn>>>,
    /// An open loop's session arrival rate, sessions per second (null: a closed loop of S).
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub session_rate: Option<Option<f64>>,
    /// A capacity row of a session search: the most concurrent sessions whose cell holds the
    /// SLO (null: none does).
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub capacity_sessions: Option<Option<u32>>,
    /// A capacity row of a search over session rates: the most sessions per second whose
    /// open-loop cell holds the SLO (null: none does).
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub capacity_session_rate: Option<Option<f64>>,
    /// The cell's own session figures beyond the contract.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Box<SessionFigures>>,
}

impl SessionColumns {
    /// A session row with no figures: every column written as null.
    pub fn bare() -> SessionColumns {
        SessionColumns {
            turns_completed: Some(None),
            prompt_tokens: Some(None),
            cached_tokens: Some(None),
            predicted_cached_tokens: Some(None),
            cache_hit_rate: Some(None),
            predicted_cache_hit_rate: Some(None),
            tpot_ms: Some(None),
            per_turn: Some(None),
            session_rate: Some(None),
            capacity_sessions: None,
            capacity_session_rate: None,
            session: None,
        }
    }
}

/// One turn index of a cell, over its sessions (METHOD.md's `per_turn`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerTurn {
    /// Turn index within the session (0: the warm-up of the history, cold where flushed).
    pub turn: u32,
    /// Whether the turn is measured (turn 0 is not: it is here so a cold prefill of the
    /// history can be told from the warm turns after it).
    pub measured: bool,
    /// Requests of this turn index.
    pub requests: u64,
    /// Their prompt tokens, summed.
    pub prompt_tokens: u64,
    /// Cached tokens the server reported, summed (null: it reported none).
    pub cached_tokens: Option<u64>,
    /// Predicted cached tokens, summed.
    pub predicted_cached_tokens: u64,
    /// Median TTFT, ms.
    pub ttft_ms_p50: Option<f64>,
    /// Median of the TTFT's prefill part (uncached tokens ÷ prefill rate), ms.
    pub ttft_prefill_ms_p50: Option<f64>,
    /// Median of the TTFT's rest (waiting), ms.
    pub ttft_wait_ms_p50: Option<f64>,
}

/// A session cell's figures beside the contract's columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionFigures {
    /// Sessions that ran.
    pub sessions: u32,
    /// Measured turns sent.
    pub turns_sent: u64,
    /// Per-turn E2E distribution, ms.
    pub e2e_ms: Option<Summary>,
    /// The TTFT's prefill part, ms (uncached tokens ÷ `prefill_tok_per_s`).
    pub ttft_prefill_ms: Option<Summary>,
    /// The TTFT's rest, ms (waiting for the batch, scheduling).
    pub ttft_wait_ms: Option<Summary>,
    /// The prefill rate the split used, tok/s (the context's prefill row).
    pub prefill_tok_per_s: Option<f64>,
    /// The cache's block size the prediction used, tokens.
    pub cache_block_tokens: u64,
    /// Whether the server's prefix cache was flushed before the cell (null: not asked).
    pub cache_flushed: Option<bool>,
    /// The server's prefix-cache counters over the cell (hit tokens Δ), where it exposes them.
    pub server_cached_tokens: Option<f64>,
    /// What the cache figures say (caching off, evictions), in words.
    pub cache_note: Option<String>,
    /// KV tokens every session's history and turns held at the end.
    pub working_set_tokens: u64,
    /// Output tokens of the measured turns.
    pub output_tokens: u64,
    /// A replay's file and time scale (`sessions:FILE at time scale 1`), where the cell is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
}
