//! Any other OpenAI-compatible endpoint (hosted APIs, proxies): only `/v1/models` and
//! `/v1/completions` are assumed. Nothing engine-specific is sent (OpenAI itself rejects
//! unknown fields such as `ignore_eos`), only `stream_options.include_usage`; every capability
//! stays unknown, and there are no gauges, counters or tokenizer.

use llmib_core::{EngineInfo, ModelInfo};
use serde_json::Value;

use super::dialect::{Dialect, MetricsKind, TokenizerKind};
use super::discovery::Discovery;

pub(crate) const DIALECT: Dialect = Dialect {
    ignore_eos: false,
    min_tokens: false,
    include_usage: true,
    continuous_usage: false,
    metrics: MetricsKind::None,
    tokenizer: TokenizerKind::None,
    abort_by_rid: false,
};

pub(crate) fn fill(d: &Discovery, info: &mut EngineInfo, model: &mut ModelInfo) -> Option<String> {
    if let Some(owner) = d
        .models
        .as_ref()
        .and_then(|m| m.get("data")?.as_array())
        .and_then(|a| {
            a.iter()
                .find(|e| e.get("id").and_then(Value::as_str) == Some(model.served_model.as_str()))
        })
        .and_then(|e| e.get("owned_by").cloned())
    {
        info.extra.insert("owned_by".to_owned(), owner);
    }
    None
}
