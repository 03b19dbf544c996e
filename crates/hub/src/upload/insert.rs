//! Writing a checked upload: the run's row, its files and cells, and its free-text entry, in
//! one transaction (dropped, so rolled back, on any error before the commit), written once for
//! both databases; only SQLite has a separate free-text table to fill.

use super::prepared::Prepared;
use crate::RunId;
use crate::backend::{Backend, Tx};
use crate::db::Dialect;
use crate::error::{StoreError, UploadError};
use crate::sql::{SqlValue, int_of};
use llmib_core::{CellResult, CellStatus, Phase, RunInfo};

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

/// What free-text search reads of a run: model, engine, GPU, tool and launch command, as
/// words of letters and digits separated by single spaces. Both databases then index the same
/// words (PostgreSQL's parser would otherwise keep `org/model-7` or `llama.cpp` as one token
/// that a search for `model` or `cpp` does not find, where SQLite's FTS5 splits them).
pub(crate) fn search_text(info: &RunInfo) -> String {
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
    let text = parts.into_iter().flatten().collect::<Vec<_>>().join(" ");
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The date of an RFC 3339 time (`2026-05-01`), when it is one.
fn date_of(at: &str) -> Option<String> {
    llmib_core::parse_rfc3339_ns(at).map(|_| at.chars().take(10).collect())
}

/// Removes a stored run's rows (for replace), children first.
fn delete_run(tx: &mut Tx<'_>, id: RunId) -> Result<(), UploadError> {
    let id = [SqlValue::Int(id)];
    tx.execute("DELETE FROM cells WHERE run_id = ?", &id)?;
    tx.execute("DELETE FROM files WHERE run_id = ?", &id)?;
    if tx.dialect() == Dialect::Sqlite {
        tx.execute("DELETE FROM runs_fts WHERE rowid = ?", &id)?;
    }
    tx.execute("DELETE FROM runs WHERE id = ?", &id)?;
    Ok(())
}

/// The run's own row's values, in [`RUN_COLUMNS`]'s order.
fn run_values(p: &Prepared, token_id: i64) -> Vec<SqlValue> {
    let info = &p.info;
    let started = Some(info.started_at.clone()).filter(|s| !s.is_empty());
    let engine = info
        .engine
        .name
        .clone()
        .or_else(|| info.engine.kind.map(|k| k.name().to_string()));
    vec![
        p.run_key.as_str().into(),
        llmib_core::now_rfc3339().into(),
        SqlValue::Int(token_id),
        info.model.served_model.as_str().into(),
        engine.into(),
        info.engine.version.clone().into(),
        info.engine.quantization.clone().into(),
        info.hardware.gpu_name.clone().into(),
        info.hardware.gpu_count.into(),
        started.as_deref().and_then(date_of).into(),
        started.into(),
        info.tool.version.as_str().into(),
        info.plan.settings.standard.clone().into(),
        serde_name(&info.state).into(),
        info.schema_version.into(),
        int_of(p.cells.len()),
        best(&p.cells, Phase::Decode, |c| c.total_tok_per_s).into(),
        best(&p.cells, Phase::Prefill, |c| c.prompt_tok_per_s).into(),
        search_text(info).into(),
        info.sweep.as_ref().map(|m| m.id.clone()).into(),
        info.sweep.as_ref().map(|m| m.combination.clone()).into(),
    ]
}

/// The columns of [`run_values`].
const RUN_COLUMNS: &str = "run_key, uploaded_at, uploaded_by, model, engine, engine_version,
    quantization, gpu_name, gpu_count, started_date, started_at, tool_version, standard,
    run_state, schema_version, cell_count, best_decode_tok_per_s, best_prefill_tok_per_s,
    search_text, sweep_key, combination";

/// Inserts the run's own row (with `id` when replacing, to keep links to it) and returns its id.
fn insert_run_row(
    tx: &mut Tx<'_>,
    p: &Prepared,
    token_id: i64,
    id: Option<RunId>,
) -> Result<RunId, UploadError> {
    let mut values = run_values(p, token_id);
    let marks = vec!["?"; values.len()].join(", ");
    // A new run's id is left out, not NULL: PostgreSQL's identity column numbers only a row
    // that does not name its id.
    let sql = match id {
        Some(id) => {
            values.insert(0, SqlValue::Int(id));
            format!("INSERT INTO runs (id, {RUN_COLUMNS}) VALUES (?, {marks}) RETURNING id")
        }
        None => format!("INSERT INTO runs ({RUN_COLUMNS}) VALUES ({marks}) RETURNING id"),
    };
    let rows = tx.query(&sql, &values)?;
    let row = rows.first().ok_or_else(|| StoreError::Column {
        column: 0,
        detail: "INSERT … RETURNING id gave no row".into(),
    })?;
    Ok(row.i64(0)?)
}

/// The run's cells, in file order.
fn insert_cells(tx: &mut Tx<'_>, id: RunId, cells: &[CellResult]) -> Result<(), UploadError> {
    let rows: Vec<Vec<SqlValue>> = cells
        .iter()
        .enumerate()
        .map(|(ord, c)| {
            vec![
                SqlValue::Int(id),
                int_of(ord),
                serde_name(&c.phase).into(),
                int_of(c.context_tokens),
                c.context_label.as_str().into(),
                c.concurrency.into(),
                int_of(c.key().rate_mrps),
                serde_name(&c.status).into(),
                c.total_tok_per_s.into(),
                c.per_request_tok_per_s.into(),
                c.prompt_tok_per_s.into(),
                c.ttft_ms_p50.into(),
                c.tbt_ms_p50.into(),
                c.capacity_request_rate.flatten().into(),
                c.capacity_concurrency.flatten().into(),
            ]
        })
        .collect();
    tx.execute_each(
        "INSERT INTO cells (run_id, ord, phase, context_tokens, context_label, concurrency,
            rate_mrps, status, total_tok_per_s, per_request_tok_per_s, prompt_tok_per_s,
            ttft_ms_p50, tbt_ms_p50, capacity_request_rate, capacity_concurrency)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        &rows,
    )?;
    Ok(())
}

/// Stores a checked upload in one transaction; a run with the same key is refused unless
/// `replace`.
pub(crate) fn insert_run(
    db: &mut Backend,
    p: &Prepared,
    token_id: i64,
    replace: bool,
) -> Result<RunId, UploadError> {
    let mut tx = db.transaction()?;
    let existing = tx.query(
        "SELECT id FROM runs WHERE run_key = ?",
        &[p.run_key.as_str().into()],
    )?;
    let existing = existing.first().map(|r| r.i64(0)).transpose()?;
    match existing {
        Some(id) if !replace => return Err(UploadError::Duplicate(id)),
        Some(id) => delete_run(&mut tx, id)?,
        None => {}
    }
    let id = insert_run_row(&mut tx, p, token_id, existing)?;
    let files: Vec<Vec<SqlValue>> = p
        .files
        .iter()
        .map(|(name, bytes, sha)| {
            vec![
                SqlValue::Int(id),
                (*name).into(),
                sha.as_str().into(),
                int_of(bytes.len()),
                SqlValue::Blob(bytes.clone()),
            ]
        })
        .collect();
    tx.execute_each(
        "INSERT INTO files (run_id, name, sha256, bytes, content) VALUES (?, ?, ?, ?, ?)",
        &files,
    )?;
    insert_cells(&mut tx, id, &p.cells)?;
    // SQLite's free-text index; PostgreSQL's is an expression index on runs.search_text.
    if tx.dialect() == Dialect::Sqlite {
        tx.execute(
            "INSERT INTO runs_fts (rowid, body) VALUES (?, ?)",
            &[SqlValue::Int(id), search_text(&p.info).into()],
        )?;
    }
    tx.commit()?;
    Ok(id)
}
