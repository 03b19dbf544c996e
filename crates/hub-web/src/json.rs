//! The JSON twins' shapes: a run's summary, its files and cells, and the error body. One place,
//! so that the list, the run, the compare and the model answers spell a run the same way.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use llmib_hub::{CellRow, RunFile, RunSummary};
use serde_json::{Value, json};

/// `{"error": message}` with `status`.
pub(crate) fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

/// `value` as a 200 JSON answer.
pub(crate) fn ok(value: Value) -> Response {
    Json(value).into_response()
}

/// A run's list row, with its page's address.
pub(crate) fn summary(s: &RunSummary) -> Value {
    json!({
        "id": s.id,
        "url": format!("/runs/{}", s.id),
        "run_key": s.run_key,
        "uploaded_at": s.uploaded_at,
        "model": s.model,
        "engine": s.engine,
        "engine_version": s.engine_version,
        "quantization": s.quantization,
        "gpu_name": s.gpu_name,
        "gpu_count": s.gpu_count,
        "started_at": s.started_at,
        "tool_version": s.tool_version,
        "standard": s.standard,
        "state": s.state,
        "cell_count": s.cell_count,
        "best_decode_tok_per_s": s.best_decode_tok_per_s,
        "best_prefill_tok_per_s": s.best_prefill_tok_per_s,
        "sweep": s.sweep_key.as_ref().map(|k| json!({
            "key": k,
            "url": format!("/sweeps/{k}"),
            "combination": s.combination,
        })),
    })
}

/// A stored file's name, hash, size and download address (never its content).
pub(crate) fn file(run_id: i64, f: &RunFile) -> Value {
    json!({
        "name": f.name,
        "sha256": f.sha256,
        "bytes": f.content.len(),
        "url": format!("/runs/{run_id}/files/{}", f.name),
    })
}

/// A stored cell's figures.
pub(crate) fn cell(c: &CellRow) -> Value {
    json!({
        "phase": c.phase,
        "context_tokens": c.context_tokens,
        "context_label": c.context_label,
        "concurrency": c.concurrency,
        "request_rate": (c.rate_mrps > 0).then(|| c.rate_mrps as f64 / 1000.0),
        "status": c.status,
        "total_tok_per_s": c.total_tok_per_s,
        "per_request_tok_per_s": c.per_request_tok_per_s,
        "prompt_tok_per_s": c.prompt_tok_per_s,
        "ttft_ms_p50": c.ttft_ms_p50,
        "tbt_ms_p50": c.tbt_ms_p50,
        "capacity_request_rate": c.capacity_request_rate,
        "capacity_concurrency": c.capacity_concurrency,
    })
}
