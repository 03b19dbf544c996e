//! The plan's steps and what it left out: the types the plan (`crate::plan`) and the planners
//! of its later sections (`crate::mixed_plan`) both build, in a file of their own so neither
//! imports the other for them.

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

/// The contexts of `specs` whose decode cells do not run because a decode request would not
/// fit: C + the max output M reaches the server's context length L (with C < L, the context is
/// measured by prefill only: `crate::plan::resolve_contexts`). Said where the run prints and in
/// every report, so that no decode cell goes silently; `skip_prefill`: the prefill is skipped
/// too, and nothing at all runs at such a context.
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
        if c >= l || c + m < l || out.iter().any(|d| d.spec == spec) {
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
