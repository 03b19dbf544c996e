//! The plan's steps and what it left out: the types the plan (`crate::plan`) and the planners
//! of its later sections (`crate::mixed_plan`) both build, in a file of their own so neither
//! imports the other for them; and the rule of how an explicit context fits the server
//! ([`tokens_fit`]), which both the plan and [`decode_drops`] apply.

use crate::cell::CellKey;
use crate::size::{ContextSpec, format_tokens};
use serde::{Deserialize, Serialize};

/// One step of the plan, in run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedCell {
    /// Which measurement.
    pub key: CellKey,
    /// Context label.
    pub label: String,
    /// Predicted Over capacity: N × (C + M) > KV capacity. Never sent.
    pub over_capacity: bool,
}

/// A requested context that was dropped, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedContext {
    /// What was asked.
    pub spec: ContextSpec,
    /// Why it does not run.
    pub reason: String,
}

/// How an explicit context of C tokens fits a server whose context length (prompt + output) is
/// L, with a max output of M.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fit {
    /// C + M < L: prefill and decode (strictly less: some engines reject prompt + max_tokens
    /// equal to the limit).
    Decode,
    /// C < L ≤ C + M: the prompt fits, a decode request does not: prefill only.
    PrefillOnly,
    /// C ≥ L: nothing fits; the context is dropped.
    TooLong,
}

/// [`Fit`] of C tokens with a max output of `m` against the context length `l`.
pub(crate) fn tokens_fit(c: u64, m: u64, l: u64) -> Fit {
    if c.saturating_add(m) < l {
        Fit::Decode
    } else if c < l {
        Fit::PrefillOnly
    } else {
        Fit::TooLong
    }
}

/// The contexts of `specs` whose decode cells do not run because a decode request would not
/// fit: C < L ≤ C + M, which the plan measures by prefill only (`crate::plan::resolve_contexts`,
/// by the same rule). Said where the run prints and in every report, so that no decode cell
/// goes silently; `skip_prefill`: the prefill is skipped too, and nothing at all runs at such a
/// context.
pub fn decode_drops(
    specs: &[ContextSpec],
    limit: Option<u64>,
    max_output: u32,
    skip_prefill: bool,
) -> Vec<DroppedContext> {
    let (Some(l), m) = (limit, u64::from(max_output)) else {
        return Vec::new();
    };
    let mut out: Vec<DroppedContext> = Vec::new();
    for &spec in specs {
        let ContextSpec::Tokens(c) = spec else {
            continue;
        };
        if tokens_fit(c, m, l) != Fit::PrefillOnly || out.iter().any(|d| d.spec == spec) {
            continue;
        }
        let then = if skip_prefill {
            "so it would be prefill only, and --skip-prefill skips that: nothing is measured at it"
        } else {
            "so it is measured by prefill only"
        };
        out.push(DroppedContext {
            spec,
            reason: format!(
                "no decode cells: {} tokens and a max output of {m} do not fit the server's context length of {}, {then}; pass a smaller --max-output",
                format_tokens(c),
                format_tokens(l)
            ),
        });
    }
    out
}
