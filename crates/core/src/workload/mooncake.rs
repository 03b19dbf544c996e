//! Mooncake's JSONL trace: one request a line, `timestamp` in ms, lengths in tokens, the
//! prompt's prefix blocks as `hash_ids`.

use super::error::{WorkloadError, bad_row, relative_s};
use super::request::WorkloadRequest;
use serde::Deserialize;

#[derive(Deserialize)]
struct Row {
    timestamp: f64,
    input_length: u64,
    output_length: u64,
    #[serde(default)]
    hash_ids: Vec<u64>,
}

/// The requests of a Mooncake trace (blank lines ignored).
pub(super) fn parse(file: &str, text: &str) -> Result<Vec<WorkloadRequest>, WorkloadError> {
    let mut out: Vec<WorkloadRequest> = Vec::new();
    let mut first_s = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        if raw.trim().is_empty() {
            continue;
        }
        let row: Row = serde_json::from_str(raw).map_err(|e| {
            bad_row(
                file,
                line,
                format!("not a Mooncake row ({{\"timestamp\", \"input_length\", \"output_length\", \"hash_ids\"}}): {e}"),
            )
        })?;
        if !(row.timestamp.is_finite() && row.timestamp >= 0.0) {
            return Err(bad_row(file, line, "timestamp must be a number of ms ≥ 0"));
        }
        if row.input_length == 0 || row.output_length == 0 {
            return Err(bad_row(
                file,
                line,
                "input_length and output_length must be at least 1 token",
            ));
        }
        let at_s = row.timestamp / 1000.0;
        let first = *first_s.get_or_insert(at_s);
        let prev = out.last().and_then(|r| r.arrival_s);
        out.push(WorkloadRequest {
            line,
            arrival_s: Some(relative_s(file, line, at_s, first, prev)?),
            input_tokens: row.input_length,
            output_tokens: row.output_length,
            prefix_blocks: row.hash_ids,
        });
    }
    Ok(out)
}
