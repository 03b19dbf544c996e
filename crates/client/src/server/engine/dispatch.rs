//! The per-kind choice of an engine adapter: its request dialect and its gauge reader. Apart
//! from the dispatcher (`mod.rs`) and the probe, which both use it, so that neither imports
//! the other for it and no adapter imports what imports it.

use super::dialect::{Dialect, Gauges};
use super::{generic, llamacpp, ollama, sglang, tgi, trtllm, vllm};
use crate::server::metrics::Metrics;
use llmib_core::EngineKind;

/// The request dialect of an engine kind.
pub(crate) fn dialect_of(kind: EngineKind) -> Dialect {
    match kind {
        EngineKind::Sglang => sglang::DIALECT,
        EngineKind::Vllm => vllm::DIALECT,
        EngineKind::LlamaCpp => llamacpp::DIALECT,
        EngineKind::Tgi => tgi::DIALECT,
        EngineKind::TrtLlm => trtllm::DIALECT,
        EngineKind::Ollama => ollama::DIALECT,
        EngineKind::Generic => generic::DIALECT,
    }
}

/// The gauges of a Prometheus page, in the engine's metric names.
pub(crate) fn gauges_from(kind: EngineKind, m: &Metrics<'_>) -> Gauges {
    match kind {
        EngineKind::Sglang => sglang::gauges(m),
        EngineKind::Vllm => vllm::gauges(m),
        EngineKind::LlamaCpp => llamacpp::gauges(m),
        EngineKind::Tgi => tgi::gauges(m),
        EngineKind::TrtLlm | EngineKind::Ollama | EngineKind::Generic => Gauges::default(),
    }
}
