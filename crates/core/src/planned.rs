//! The plan's steps and what it left out: the types the plan (`crate::plan`) and the planners
//! of its later sections (`crate::mixed_plan`) both build, in a file of their own so neither
//! imports the other for them.

use crate::cell::CellKey;
use crate::size::ContextSpec;
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
