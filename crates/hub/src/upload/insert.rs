//! Writing a checked upload: the run's row, its files and cells, and its free-text entry, in
//! one transaction (dropped, so rolled back, on any error before the commit).

use super::prepared::Prepared;
use crate::RunId;
use crate::error::UploadError;
use llmib_core::{CellResult, CellStatus, Phase, RunInfo};
use rusqlite::{Connection, OptionalExtension, Transaction};

/// A value as the tables store it: serde's name (`valid`, `decode`), the same text run.json and
/// cells.jsonl use, so a filter reads like the files.
fn serde_name<T: serde::Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The largest figure of Valid cells of one phase.
fn best(cells: &[CellResult], phase: Phase, figure: fn(&CellResult) -> Option<f64>) -> Option<f64> {
    cells
        .iter()
        .filter(|c| c.phase == phase && c.status == CellStatus::Valid)
        .filter_map(figure)
        .filter(|x| x.is_finite())
        .reduce(f64::max)
}

/// What free-text search reads of a run.
fn search_text(info: &RunInfo) -> String {
    let e = &info.engine;
    let parts = [
        Some(info.model.served_model.as_str()),
        info.model.model_path.as_deref(),
        e.name.as_deref(),
        e.version.as_deref(),
        e.quantization.as_deref(),
        e.kv_cache_dtype.as_deref(),
        e.speculative_algorithm.as_deref(),
        info.hardware.gpu_name.as_deref(),
        info.hardware.device_type.as_deref(),
        Some(info.tool.version.as_str()),
        info.launch_command.as_deref(),
    ];
    parts.into_iter().flatten().collect::<Vec<_>>().join(" ")
}

/// The date of an RFC 3339 time (`2026-05-01`), when it is one.
fn date_of(at: &str) -> Option<String> {
    llmib_core::parse_rfc3339_ns(at).map(|_| at.chars().take(10).collect())
}

/// Removes a stored run's rows (for replace), children first.
fn delete_run(tx: &Transaction<'_>, id: RunId) -> Result<(), UploadError> {
    tx.execute("DELETE FROM cells WHERE run_id = ?", [id])?;
    tx.execute("DELETE FROM files WHERE run_id = ?", [id])?;
    tx.execute("DELETE FROM runs_fts WHERE rowid = ?", [id])?;
    tx.execute("DELETE FROM runs WHERE id = ?", [id])?;
    Ok(())
}

/// Inserts the run's own row (with `id` when replacing, to keep links to it) and returns its id.
fn insert_run_row(
    tx: &Transaction<'_>,
    p: &Prepared,
    token_id: i64,
    id: Option<RunId>,
) -> Result<RunId, UploadError> {
    let info = &p.info;
    let started = Some(info.started_at.clone()).filter(|s| !s.is_empty());
    let engine = info
        .engine
        .name
        .clone()
        .or_else(|| info.engine.kind.map(|k| k.name().to_string()));
    let id: RunId = tx.query_row(
        "INSERT INTO runs (id, run_key, uploaded_at, uploaded_by, model, engine, engine_version,
            quantization, gpu_name, gpu_count, started_at, started_date, tool_version, standard, run_state,
            schema_version, cell_count, best_decode_tok_per_s, best_prefill_tok_per_s, search_text)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        rusqlite::params![
            id,
            p.run_key,
            llmib_core::now_rfc3339(),
            token_id,
            info.model.served_model,
            engine,
            info.engine.version,
            info.engine.quantization,
            info.hardware.gpu_name,
            info.hardware.gpu_count,
            started,
            started.as_deref().and_then(date_of),
            info.tool.version,
            info.plan.settings.standard,
            serde_name(&info.state),
            info.schema_version,
            p.cells.len() as i64,
            best(&p.cells, Phase::Decode, |c| c.total_tok_per_s),
            best(&p.cells, Phase::Prefill, |c| c.prompt_tok_per_s),
            search_text(info),
        ],
        |r| r.get(0),
    )?;
    Ok(id)
}

/// The run's cells, in file order.
fn insert_cells(tx: &Transaction<'_>, id: RunId, cells: &[CellResult]) -> Result<(), UploadError> {
    let mut st = tx.prepare(
        "INSERT INTO cells (run_id, ord, phase, context_tokens, context_label, concurrency,
            rate_mrps, status, total_tok_per_s, per_request_tok_per_s, prompt_tok_per_s,
            ttft_ms_p50, tbt_ms_p50, capacity_request_rate, capacity_concurrency)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    )?;
    for (ord, c) in cells.iter().enumerate() {
        st.execute(rusqlite::params![
            id,
            ord as i64,
            serde_name(&c.phase),
            i64::try_from(c.context_tokens).unwrap_or(i64::MAX),
            c.context_label,
            c.concurrency,
            i64::try_from(c.key().rate_mrps).unwrap_or(i64::MAX),
            serde_name(&c.status),
            c.total_tok_per_s,
            c.per_request_tok_per_s,
            c.prompt_tok_per_s,
            c.ttft_ms_p50,
            c.tbt_ms_p50,
            c.capacity_request_rate.flatten(),
            c.capacity_concurrency.flatten(),
        ])?;
    }
    Ok(())
}

/// Stores a checked upload in one transaction; a run with the same key is refused unless
/// `replace`.
pub(crate) fn insert_run(
    conn: &mut Connection,
    p: &Prepared,
    token_id: i64,
    replace: bool,
) -> Result<RunId, UploadError> {
    let tx = conn.transaction()?;
    let existing: Option<RunId> = tx
        .query_row("SELECT id FROM runs WHERE run_key = ?", [&p.run_key], |r| {
            r.get(0)
        })
        .optional()?;
    match existing {
        Some(id) if !replace => return Err(UploadError::Duplicate(id)),
        Some(id) => delete_run(&tx, id)?,
        None => {}
    }
    let id = insert_run_row(&tx, p, token_id, existing)?;
    {
        let mut st = tx.prepare(
            "INSERT INTO files (run_id, name, sha256, bytes, content) VALUES (?, ?, ?, ?, ?)",
        )?;
        for (name, bytes, sha) in &p.files {
            st.execute(rusqlite::params![id, name, sha, bytes.len() as i64, bytes])?;
        }
    }
    insert_cells(&tx, id, &p.cells)?;
    // SQLite's free-text index; PostgreSQL's is an expression index on runs.search_text.
    tx.execute(
        "INSERT INTO runs_fts (rowid, body) VALUES (?, ?)",
        rusqlite::params![id, search_text(&p.info)],
    )?;
    tx.commit()?;
    Ok(id)
}
