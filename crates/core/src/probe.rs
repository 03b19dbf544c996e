//! Probe requests (`--probe-rate`): light requests sent at a fixed low rate beside a cell's own
//! load (decode, burst, rate and session cells), each a fresh short prompt, so the latency a
//! new user meets under that load is a figure of the row, reported apart from the cell's own
//! (docs/method-notes.md, "Probe requests"). The cell's figures never include a probe.
//!
//! Pure: the figures of one cell's probes from their records ([`probe_figures`]); the probes
//! whose send falls inside the cell's measured span are judged, the rest are left out.

use crate::record::{Outcome, RequestRecord};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// The default prompt length of a probe, tokens (about: its count comes from the server).
pub const DEFAULT_PROBE_INPUT_TOKENS: u64 = 128;

/// The default `max_tokens` of a probe.
pub const DEFAULT_PROBE_OUTPUT_TOKENS: u32 = 16;

/// The probes' settings, as run.json keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProbeSettings {
    /// Probes per second, sent on a fixed interval (not Poisson: a probe is a measuring
    /// instrument, and its load must be the same in every cell).
    pub rate: f64,
    /// About how many prompt tokens each probe sends (the server's count is the figure).
    pub input_tokens: u64,
    /// `max_tokens` of each probe.
    pub output_tokens: u32,
}

/// What a cell's probes met (the row's `probe`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeFigures {
    /// The rate they were sent at, per second.
    pub rate: f64,
    /// Probes sent inside the cell's measured span.
    pub sent: u64,
    /// Of them, those that finished.
    pub completed: u64,
    /// Of them, those that failed (an error, or no token).
    pub failed: u64,
    /// Of them, those still open when the cell's probes were stopped (cancelled): only their
    /// TTFT, where they had a first token, is in the distributions below.
    pub unfinished: u64,
    /// Their TTFT, ms (every probe with a first token).
    pub ttft_ms: Option<Summary>,
    /// Their time per output token after the first, ms (finished probes of two tokens or more).
    pub tpot_ms: Option<Summary>,
    /// Send to end, ms (finished probes).
    pub e2e_ms: Option<Summary>,
    /// Prompt tokens as the server counted them (its usage).
    pub prompt_tokens: Option<Summary>,
    /// The first failed probe's error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// The figures of the probes among `records` sent inside `[start_ns, end_ns]` (the cell's
/// measured span, on the probes' clock); `None` when none was.
pub fn probe_figures(
    rate: f64,
    records: &[RequestRecord],
    (start_ns, end_ns): (u64, u64),
) -> Option<ProbeFigures> {
    let inside: Vec<&RequestRecord> = records
        .iter()
        .filter(|r| r.sent_ns >= start_ns && r.sent_ns <= end_ns)
        .collect();
    if inside.is_empty() {
        return None;
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let (mut ttft, mut tpot, mut e2e, mut prompt) = (vec![], vec![], vec![], vec![]);
    let mut f = ProbeFigures {
        rate,
        sent: inside.len() as u64,
        completed: 0,
        failed: 0,
        unfinished: 0,
        ttft_ms: None,
        tpot_ms: None,
        e2e_ms: None,
        prompt_tokens: None,
        first_error: None,
    };
    for r in inside {
        ttft.extend(r.ttft_ns().map(ms));
        prompt.extend(r.prompt_tokens_reported.map(|n| n as f64));
        match &r.outcome {
            Outcome::Finished { .. } if r.first_token_ns().is_some() => {
                f.completed += 1;
                let total = r.end_ns.saturating_sub(r.sent_ns);
                e2e.push(ms(total));
                let tokens = r.completion_tokens_reported.unwrap_or_else(|| r.tokens());
                if let (Some(t), true) = (r.ttft_ns(), tokens >= 2) {
                    tpot.push(ms(total.saturating_sub(t)) / (tokens - 1) as f64);
                }
            }
            Outcome::Finished { .. } => {
                f.failed += 1;
                f.first_error
                    .get_or_insert_with(|| "a probe finished without a token".into());
            }
            Outcome::Error { kind, message } => {
                f.failed += 1;
                f.first_error
                    .get_or_insert_with(|| format!("{kind}: {message}"));
            }
            Outcome::Cancelled => f.unfinished += 1,
        }
    }
    f.ttft_ms = Summary::of_vec(&mut ttft);
    f.tpot_ms = Summary::of_vec(&mut tpot);
    f.e2e_ms = Summary::of_vec(&mut e2e);
    f.prompt_tokens = Summary::of_vec(&mut prompt);
    Some(f)
}

#[cfg(test)]
#[path = "tests/probe.rs"]
mod tests;
