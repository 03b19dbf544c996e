//! What the hub's pages read: the run list (filters, free-text search, sort, pages), one run
//! with its files, the cells of runs to compare, and a model's headline figures per run.
//!
//! Every query is written once for both databases; free text is the one condition spelled per
//! dialect (SQLite's FTS5 table, PostgreSQL's `tsvector` index). Every filter and sort reads
//! an indexed column of `runs`; the list's plans are checked by tests on both databases, so a
//! new filter without its index fails there.

use crate::db::Dialect;
use crate::error::StoreError;
use crate::sql::{Row, SqlValue};
use crate::{RunId, Store};

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
    /// The sweep this run measured a combination of (its key), if any.
    pub sweep_key: Option<String>,
    /// That combination's name.
    pub combination: Option<String>,
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

pub(crate) const SUMMARY_COLUMNS: &str = "id, run_key, uploaded_at, model, engine, engine_version, \
     quantization, gpu_name, gpu_count, started_at, tool_version, standard, run_state, \
     cell_count, best_decode_tok_per_s, best_prefill_tok_per_s, sweep_key, combination";

pub(crate) fn summary(r: &Row) -> Result<RunSummary, StoreError> {
    Ok(RunSummary {
        id: r.i64(0)?,
        run_key: r.text(1)?,
        uploaded_at: r.text(2)?,
        model: r.text(3)?,
        engine: r.opt_text(4)?,
        engine_version: r.opt_text(5)?,
        quantization: r.opt_text(6)?,
        gpu_name: r.opt_text(7)?,
        gpu_count: r.opt_int(8)?,
        started_at: r.opt_text(9)?,
        tool_version: r.text(10)?,
        standard: r.opt_text(11)?,
        state: r.text(12)?,
        cell_count: r.int(13)?,
        best_decode_tok_per_s: r.opt_f64(14)?,
        best_prefill_tok_per_s: r.opt_f64(15)?,
        sweep_key: r.opt_text(16)?,
        combination: r.opt_text(17)?,
    })
}

/// The words of free text: each whitespace-separated word as its runs of letters and digits
/// (what both databases index, see `upload/insert.rs`); a word with none is dropped.
fn words(text: &str) -> Vec<Vec<&str>> {
    text.split_whitespace()
        .map(|w| {
            w.split(|c: char| !c.is_alphanumeric())
                .filter(|p| !p.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|parts| !parts.is_empty())
        .collect()
}

/// Free text as an FTS5 query: each word a quoted phrase of its parts (so no user text is
/// query syntax) matched as a prefix, all words required. `None` when no word is left.
fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = words(text)
        .into_iter()
        .map(|parts| format!("\"{}\"*", parts.join(" ")))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Free text as a PostgreSQL `tsquery`, the same meaning as [`fts_query`]: a word's parts
/// follow each other (`<->`), the last one a prefix (`:*`), all words required (`&`). Each
/// part is a quoted term (quotes and backslashes escaped, though parts are letters and digits
/// only), so no user text is query syntax.
pub(crate) fn ts_query(text: &str) -> Option<String> {
    let term = |p: &str| format!("'{}'", p.replace('\\', "\\\\").replace('\'', "''"));
    let words: Vec<String> = words(text)
        .into_iter()
        .map(|parts| {
            let terms: Vec<String> = parts.iter().map(|p| term(p)).collect();
            format!("{}:*", terms.join(" <-> "))
        })
        .collect();
    (!words.is_empty()).then(|| words.join(" & "))
}

/// The list's WHERE clause and its parameters, for `dialect` (free text is the one condition
/// the databases spell differently).
pub(crate) fn where_clause(f: &ListFilter, dialect: Dialect) -> (String, Vec<SqlValue>) {
    let mut conds: Vec<&str> = Vec::new();
    let mut params: Vec<SqlValue> = Vec::new();
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
            params.push(SqlValue::Text(v.clone()));
        }
    }
    if let Some(n) = f.gpu_count {
        conds.push("gpu_count = ?");
        params.push(SqlValue::from(n));
    }
    if let Some(text) = f.text.as_deref() {
        let (cond, query) = match dialect {
            Dialect::Sqlite => (
                "id IN (SELECT rowid FROM runs_fts WHERE runs_fts MATCH ?)",
                fts_query(text),
            ),
            // The expression is the GIN index's own (migration 1), so the index serves it.
            Dialect::Postgres => (
                "to_tsvector('simple', search_text) @@ to_tsquery('simple', ?)",
                ts_query(text),
            ),
        };
        if let Some(q) = query {
            conds.push(cond);
            params.push(SqlValue::Text(q));
        }
    }
    if conds.is_empty() {
        (String::new(), params)
    } else {
        (format!(" WHERE {}", conds.join(" AND ")), params)
    }
}

/// The list's query (SELECT, WHERE, ORDER BY, LIMIT) and its parameters.
pub(crate) fn list_sql(f: &ListFilter, page: &Page, dialect: Dialect) -> (String, Vec<SqlValue>) {
    let (where_sql, mut params) = where_clause(f, dialect);
    let dir = if page.descending { "DESC" } else { "ASC" };
    let order: Vec<String> = page
        .sort
        .columns()
        .iter()
        .chain(&["id"])
        .map(|c| format!("{c} {dir}"))
        .collect();
    params.push(SqlValue::from(page.limit.min(Page::MAX_LIMIT)));
    params.push(SqlValue::from(page.offset));
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM runs{where_sql} ORDER BY {} LIMIT ? OFFSET ?",
        order.join(", ")
    );
    (sql, params)
}

/// A compare row from the cells query's columns.
fn cell_row(r: &Row) -> Result<CellRow, StoreError> {
    Ok(CellRow {
        run_id: r.i64(0)?,
        phase: r.text(1)?,
        context_tokens: r.int(2)?,
        context_label: r.text(3)?,
        concurrency: r.int(4)?,
        rate_mrps: r.int(5)?,
        status: r.text(6)?,
        total_tok_per_s: r.opt_f64(7)?,
        per_request_tok_per_s: r.opt_f64(8)?,
        prompt_tok_per_s: r.opt_f64(9)?,
        ttft_ms_p50: r.opt_f64(10)?,
        tbt_ms_p50: r.opt_f64(11)?,
        capacity_request_rate: r.opt_f64(12)?,
        capacity_concurrency: r.opt_int(13)?,
    })
}

impl Store {
    /// A page of the runs that match `filter`, sorted, with the count of all that match.
    pub fn list(&self, filter: &ListFilter, page: &Page) -> Result<ListPage, StoreError> {
        let db = self.db();
        let (where_sql, params) = where_clause(filter, db.dialect());
        let total = db.query(&format!("SELECT COUNT(*) FROM runs{where_sql}"), &params)?;
        let total = match total.first() {
            Some(r) => r.int(0)?,
            None => 0,
        };
        let (sql, params) = list_sql(filter, page, db.dialect());
        let runs = db
            .query(&sql, &params)?
            .iter()
            .map(summary)
            .collect::<Result<_, _>>()?;
        Ok(ListPage { total, runs })
    }

    /// One run with its files.
    pub fn run(&self, id: RunId) -> Result<StoredRun, StoreError> {
        let db = self.db();
        let rows = db.query(
            &format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE id = ?"),
            &[SqlValue::Int(id)],
        )?;
        let summary = summary(rows.first().ok_or(StoreError::NoSuchRun(id))?)?;
        let files = db
            .query(
                "SELECT name, sha256, content FROM files WHERE run_id = ? ORDER BY name",
                &[SqlValue::Int(id)],
            )?
            .iter()
            .map(|r| {
                Ok(RunFile {
                    name: r.text(0)?,
                    sha256: r.text(1)?,
                    content: r.blob(2)?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok(StoredRun { summary, files })
    }

    /// The cells of the given runs (compare), each run's in file order; unknown ids give none.
    pub fn cells_of(&self, ids: &[RunId]) -> Result<Vec<CellRow>, StoreError> {
        let mut out = Vec::new();
        // One indexed lookup per run (the primary key's prefix): as fast as IN (…) and the
        // same SQL for any number of runs.
        for id in ids {
            let rows = self.db().query(
                "SELECT run_id, phase, context_tokens, context_label, concurrency, rate_mrps,
                    status, total_tok_per_s, per_request_tok_per_s, prompt_tok_per_s,
                    ttft_ms_p50, tbt_ms_p50, capacity_request_rate, capacity_concurrency
                 FROM cells WHERE run_id = ? ORDER BY ord",
                &[SqlValue::Int(*id)],
            )?;
            for r in &rows {
                out.push(cell_row(r)?);
            }
        }
        Ok(out)
    }
}
