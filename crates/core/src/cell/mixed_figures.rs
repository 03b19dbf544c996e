//! A mixed-prefill row's figures (`crate::mixed` computes them; the row holds them, so the type
//! lives with the row and `cell` imports nothing of the module that fills it).

use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// What one mixed-prefill cell measured (the row's `mixed`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MixedFigures {
    /// The decode streams' context C, tokens.
    pub stream_context_tokens: u64,
    /// The injected prompt's tokens P (built).
    pub prompt_tokens: u64,
    /// Seconds from the window's open to the injected send.
    pub before_s: f64,
    /// Seconds from the injected send to its first token.
    pub during_s: f64,
    /// Seconds from its first token to the window's close.
    pub after_s: f64,
    /// The streams' output tok/s before the injection.
    pub before_tok_per_s: Option<f64>,
    /// The streams' output tok/s from the send to the injected first token.
    pub during_tok_per_s: Option<f64>,
    /// The streams' output tok/s after the injected first token.
    pub after_tok_per_s: Option<f64>,
    /// Each stream's longest chunk-to-chunk gap overlapping the during interval, ms,
    /// across streams.
    pub longest_gap_ms: Option<Summary>,
    /// Chunk-to-chunk gaps inside the before interval, ms (what a stream sees unstalled).
    pub baseline_gap_ms: Option<Summary>,
    /// The injected prompt's TTFT, ms.
    pub injected_ttft_ms: f64,
    /// The same length's TTFT alone on the idle server, ms (median of the standalone sends).
    pub standalone_ttft_ms: Option<Summary>,
    /// Injected TTFT ÷ standalone TTFT p50.
    pub ttft_slowdown: Option<f64>,
}
