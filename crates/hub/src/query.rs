//! What the hub's pages read: the run list (filters, free-text search, sort, pages), one run
//! with its files, the cells of runs to compare, and a model's headline figures per run.
//!
//! Every filter and sort reads an indexed column of `runs`; the list's plan is checked by a
//! test (`EXPLAIN QUERY PLAN`), so a new filter without its index fails there.

use crate::error::StoreError;
use crate::{RunId, Store};
use rusqlite::types::Value as Sql;
use rusqlite::{OptionalExtension, Row};

mod headline;

pub use headline::Headline;

/// The list's filters; `None` is "any". Text filters match exactly (the pages offer the values
/// stored); `text` is free-text search over model, engine, GPU, quantization and launch command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListFilter {
    /// Served model name.
    pub model: Option<String>,
    /// Engine name (`sglang`).
    pub engine: Option<String>,
    /// Engine version.
    pub engine_version: Option<String>,
    /// Weight quantization (`FP8`).
    pub quantization: Option<String>,
    /// GPU model name.
    pub gpu_name: Option<String>,
    /// Number of GPUs.
    pub gpu_count: Option<u32>,
    /// Started on or after this date (`YYYY-MM-DD`).
    pub started_from: Option<String>,
    /// Started on or before this date (`YYYY-MM-DD`).
    pub started_to: Option<String>,
    /// The tool's version that measured.
    pub tool_version: Option<String>,
    /// The standard matrix version (`v1`).
    pub standard: Option<String>,
    /// Free-text search: every word must appear (as a word's start).
    pub text: Option<String>,
}

/// What the list sorts by (then by id, so equal values keep a stable order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortKey {
    /// When uploaded (the default, newest first).
    #[default]
    UploadedAt,
    /// When the run started.
    StartedAt,
    /// Model name.
    Model,
    /// Engine and version.
    Engine,
    /// GPU name and count.
    Gpu,
    /// Tool version.
    ToolVersion,
    /// Best Valid decode throughput.
    BestDecode,
    /// Best Valid prefill throughput.
    BestPrefill,
}

impl SortKey {
    /// The ORDER BY columns (fixed text, never from the request).
    fn columns(self) -> &'static [&'static str] {
        match self {
            SortKey::UploadedAt => &["uploaded_at"],
            SortKey::StartedAt => &["started_date", "started_at"],
            SortKey::Model => &["model"],
            SortKey::Engine => &["engine", "engine_version"],
            SortKey::Gpu => &["gpu_name", "gpu_count"],
            SortKey::ToolVersion => &["tool_version"],
            SortKey::BestDecode => &["best_decode_tok_per_s"],
            SortKey::BestPrefill => &["best_prefill_tok_per_s"],
        }
    }
}

/// Which page of the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Sort key.
    pub sort: SortKey,
    /// Largest first.
    pub descending: bool,
    /// Rows to skip.
    pub offset: u32,
    /// Rows to return (at most [`Page::MAX_LIMIT`]).
    pub limit: u32,
}

impl Page {
    /// The most rows one page returns.
    pub const MAX_LIMIT: u32 = 500;
}

impl Default for Page {
    /// Newest uploads first, 50 a page.
    fn default() -> Self {
        Page {
            sort: SortKey::UploadedAt,
            descending: true,
            offset: 0,
            limit: 50,
        }
    }
}

/// One run in the list.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Its id.
    pub id: RunId,
    /// sha256 of its run.json.
    pub run_key: String,
    /// When it was uploaded (RFC 3339).
    pub uploaded_at: String,
    /// Served model name, verbatim (escaping is the page's job).
    pub model: String,
    /// Engine name.
    pub engine: Option<String>,
    /// Engine version.
    pub engine_version: Option<String>,
    /// Weight quantization.
    pub quantization: Option<String>,
    /// GPU model name.
    pub gpu_name: Option<String>,
    /// Number of GPUs.
    pub gpu_count: Option<u32>,
    /// When the run started (RFC 3339), if known.
    pub started_at: Option<String>,
    /// The tool's version that measured.
    pub tool_version: String,
    /// The standard matrix version the run follows, if any.
    pub standard: Option<String>,
    /// `completed`, `interrupted`, ….
    pub state: String,
    /// Rows in cells.jsonl.
    pub cell_count: u64,
    /// Best Valid decode throughput, tok/s.
    pub best_decode_tok_per_s: Option<f64>,
    /// Best Valid prefill throughput, tok/s.
    pub best_prefill_tok_per_s: Option<f64>,
}

/// A page of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct ListPage {
    /// Runs matching the filter, all pages.
    pub total: u64,
    /// This page's runs.
    pub runs: Vec<RunSummary>,
}

/// A stored file of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFile {
    /// Its name (`run.json`).
    pub name: String,
    /// sha256 of its content, hex.
    pub sha256: String,
    /// Its content, as stored (redacted).
    pub content: Vec<u8>,
}

/// A run with its files.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredRun {
    /// The list's row.
    pub summary: RunSummary,
    /// Its files, by name.
    pub files: Vec<RunFile>,
}

/// A cell of a stored run, the figures compare and model pages show.
#[derive(Debug, Clone, PartialEq)]
pub struct CellRow {
    /// The run.
    pub run_id: RunId,
    /// `prefill`, `decode`, … (as in cells.jsonl).
    pub phase: String,
    /// C.
    pub context_tokens: u64,
    /// `8K`.
    pub context_label: String,
    /// N.
    pub concurrency: u32,
    /// Rate cells' request rate, milli-requests/s (0 otherwise).
    pub rate_mrps: u64,
    /// `valid`, `requests_queued`, … (as in cells.jsonl).
    pub status: String,
    /// Decode throughput, tok/s.
    pub total_tok_per_s: Option<f64>,
    /// Median per-request decode rate, tok/s.
    pub per_request_tok_per_s: Option<f64>,
    /// Prefill throughput, tok/s.
    pub prompt_tok_per_s: Option<f64>,
    /// Median TTFT, ms.
    pub ttft_ms_p50: Option<f64>,
    /// Median time between tokens, ms.
    pub tbt_ms_p50: Option<f64>,
    /// Capacity rows: the largest request rate that holds the SLO.
    pub capacity_request_rate: Option<f64>,
    /// Capacity rows: the largest concurrency that holds the SLO.
    pub capacity_concurrency: Option<u32>,
}

/// A non-negative count column (both databases store BIGINT, a signed integer).
pub(crate) fn u64_at(r: &Row<'_>, i: usize) -> rusqlite::Result<u64> {
    r.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0))
}

const SUMMARY_COLUMNS: &str = "id, run_key, uploaded_at, model, engine, engine_version, \
     quantization, gpu_name, gpu_count, started_at, tool_version, standard, run_state, \
     cell_count, best_decode_tok_per_s, best_prefill_tok_per_s";

fn summary(r: &Row<'_>) -> rusqlite::Result<RunSummary> {
    Ok(RunSummary {
        id: r.get(0)?,
        run_key: r.get(1)?,
        uploaded_at: r.get(2)?,
        model: r.get(3)?,
        engine: r.get(4)?,
        engine_version: r.get(5)?,
        quantization: r.get(6)?,
        gpu_name: r.get(7)?,
        gpu_count: r.get(8)?,
        started_at: r.get(9)?,
        tool_version: r.get(10)?,
        standard: r.get(11)?,
        state: r.get(12)?,
        cell_count: u64_at(r, 13)?,
        best_decode_tok_per_s: r.get(14)?,
        best_prefill_tok_per_s: r.get(15)?,
    })
}

/// Free-text words as an FTS5 query: each word quoted (so no user text is query syntax) and
/// matched as a prefix, all words required. `None` when no word is left.
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split_whitespace()
        .map(|w| w.replace('"', ""))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .map(|w| format!("\"{w}\"*"))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// The list's WHERE clause and its parameters.
pub(crate) fn where_clause(f: &ListFilter) -> (String, Vec<Sql>) {
    let mut conds: Vec<&str> = Vec::new();
    let mut params: Vec<Sql> = Vec::new();
    let text_filters = [
        ("model = ?", &f.model),
        ("engine = ?", &f.engine),
        ("engine_version = ?", &f.engine_version),
        ("quantization = ?", &f.quantization),
        ("gpu_name = ?", &f.gpu_name),
        ("started_date >= ?", &f.started_from),
        ("started_date <= ?", &f.started_to),
        ("tool_version = ?", &f.tool_version),
        ("standard = ?", &f.standard),
    ];
    for (cond, value) in text_filters {
        if let Some(v) = value {
            conds.push(cond);
            params.push(Sql::Text(v.clone()));
        }
    }
    if let Some(n) = f.gpu_count {
        conds.push("gpu_count = ?");
        params.push(Sql::Integer(i64::from(n)));
    }
    if let Some(q) = f.text.as_deref().and_then(fts_query) {
        conds.push("id IN (SELECT rowid FROM runs_fts WHERE runs_fts MATCH ?)");
        params.push(Sql::Text(q));
    }
    if conds.is_empty() {
        (String::new(), params)
    } else {
        (format!(" WHERE {}", conds.join(" AND ")), params)
    }
}

/// The list's query (SELECT, WHERE, ORDER BY, LIMIT) and its parameters.
pub(crate) fn list_sql(f: &ListFilter, page: &Page) -> (String, Vec<Sql>) {
    let (where_sql, mut params) = where_clause(f);
    let dir = if page.descending { "DESC" } else { "ASC" };
    let order: Vec<String> = page
        .sort
        .columns()
        .iter()
        .chain(&["id"])
        .map(|c| format!("{c} {dir}"))
        .collect();
    params.push(Sql::Integer(i64::from(page.limit.min(Page::MAX_LIMIT))));
    params.push(Sql::Integer(i64::from(page.offset)));
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM runs{where_sql} ORDER BY {} LIMIT ? OFFSET ?",
        order.join(", ")
    );
    (sql, params)
}

impl Store {
    /// A page of the runs that match `filter`, sorted, with the count of all that match.
    pub fn list(&self, filter: &ListFilter, page: &Page) -> Result<ListPage, StoreError> {
        let c = self.sqlite();
        let (where_sql, params) = where_clause(filter);
        let total: i64 = c.query_row(
            &format!("SELECT COUNT(*) FROM runs{where_sql}"),
            rusqlite::params_from_iter(params),
            |r| r.get(0),
        )?;
        let (sql, params) = list_sql(filter, page);
        let mut st = c.prepare(&sql)?;
        let runs = st
            .query_map(rusqlite::params_from_iter(params), summary)?
            .collect::<Result<_, _>>()?;
        Ok(ListPage {
            total: u64::try_from(total).unwrap_or(0),
            runs,
        })
    }

    /// One run with its files.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let c = self.sqlite();
        let summary = c
            .query_row(
                &format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?"),
                [id],
                summary,
            )
            .optional()?
            .ok_or(StoreError::NoSuchRun(id))?;
        let mut st =
            c.prepare("SELECT name, sha256, content FROM files WHERE run_id = ? ORDER BY name")?;
        let files = st
            .query_map([id], |r| {
                Ok(RunFile {
                    name: r.get(0)?,
                    sha256: r.get(1)?,
                    content: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(StoredRun { summary, files })
    }

    /// The cells of the given runs (compare), each run's in file order; unknown ids give none.
    pub fn cells_of(&self, ids: &[RunId]) -> Result<Vec<CellRow>, StoreError> {
        let mut st = self.sqlite().prepare(
            "SELECT run_id, phase, context_tokens, context_label, concurrency, rate_mrps, status,
                total_tok_per_s, per_request_tok_per_s, prompt_tok_per_s, ttft_ms_p50,
                tbt_ms_p50, capacity_request_rate, capacity_concurrency
             FROM cells WHERE run_id = ? ORDER BY ord",
        )?;
        let mut out = Vec::new();
        // One indexed lookup per run (the primary key's prefix): as fast as IN (…) and the
        // same SQL for any number of runs.
        for id in ids {
            let rows = st.query_map([id], |r| {
                Ok(CellRow {
                    run_id: r.get(0)?,
                    phase: r.get(1)?,
                    context_tokens: u64_at(r, 2)?,
                    context_label: r.get(3)?,
                    concurrency: r.get(4)?,
                    rate_mrps: u64_at(r, 5)?,
                    status: r.get(6)?,
                    total_tok_per_s: r.get(7)?,
                    per_request_tok_per_s: r.get(8)?,
                    prompt_tok_per_s: r.get(9)?,
                    ttft_ms_p50: r.get(10)?,
                    tbt_ms_p50: r.get(11)?,
                    capacity_request_rate: r.get(12)?,
                    capacity_concurrency: r.get(13)?,
                })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        Ok(out)
    }
}
