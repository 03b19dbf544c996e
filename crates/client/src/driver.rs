//! The driver: runs a plan's cells in order (prefill scout, then decode cells with N ascending,
//! per context), decides each cell's status, and saves every row as soon as it is known.
//!
//! State per context: stream i has one fixed prompt for every N at that context, and a prompt
//! that has been sent once is cached by the server, so moving from N to 2N only prefills the N
//! new prompts in the warm-up (METHOD.md "The matrix").

use crate::engine::{Engine, PromptInput};
use crate::prompt::{BuiltPrompt, PromptBuilder};
use crate::stream::{Counting, Measured, measure};
use crate::window::{WindowSpec, run_window, warm_up};
use bytes::Bytes;
use llmib_core::cell::{CellKey, CellResult, CellStatus, Phase, PromptCheck};
use llmib_core::figures::{decode_figures, prefill_figures};
use llmib_core::meta::TokenCountSource;
use llmib_core::plan::{Plan, PlannedCell};
use llmib_core::record::{Outcome, RequestRecord};
use llmib_core::store::{RunDir, StoreError};
use llmib_core::time::now_rfc3339;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
pub use tokio_util::sync::CancellationToken;

/// What the driver tells the terminal while it works.
#[derive(Debug, Clone)]
pub enum ProgressEvent {
    /// A cell starts (`index` of `total` in run order).
    CellStarted {
        /// Position in run order (0-based).
        index: usize,
        /// Cells in the plan.
        total: usize,
        /// The cell.
        cell: PlannedCell,
    },
    /// The cell moved to a phase (`prompts`, `warm-up`, `readiness`, `window`, `counting`).
    Phase(&'static str),
    /// A row was saved.
    CellDone(Box<CellResult>),
    /// Something a user should read.
    Note(String),
}

/// A sink for progress events (terminal bar, plain lines, or nothing in tests).
pub trait Progress: Send + Sync {
    /// Receives one event.
    fn event(&self, e: ProgressEvent);
}

/// A progress sink that drops everything.
pub struct NoProgress;

impl Progress for NoProgress {
    fn event(&self, _e: ProgressEvent) {}
}

/// How a matrix run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MatrixEnd {
    /// Every planned cell has a row.
    Completed,
    /// Ctrl-C: the cell in progress and the rest are Not run.
    Interrupted,
    /// The time budget was spent: the rest are Not run.
    BudgetSpent,
    /// The server went away; the rest are Not run. The message says what happened.
    ServerGone(String),
}

/// Errors that stop the driver (only the results store: a cell's failure is data).
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// Results could not be saved.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Everything the driver needs.
pub struct MatrixRun<'a> {
    /// The probed engine.
    pub engine: Arc<Engine>,
    /// Served model name.
    pub model: String,
    /// The plan.
    pub plan: &'a Plan,
    /// Where rows go.
    pub store: &'a RunDir,
    /// Cells already measured (resume): skipped.
    pub done: HashSet<CellKey>,
    /// Progress sink.
    pub progress: &'a dyn Progress,
    /// Run-wide cancellation (Ctrl-C).
    pub cancel: CancellationToken,
}

/// Per-context prompt state.
struct ContextPrompts {
    context: u64,
    prompts: HashMap<u32, BuiltPrompt>,
    warmed: HashSet<u32>,
    /// Set when prompts cannot be built at this context: every cell here fails with it.
    error: Option<String>,
}

/// Runs the matrix.
pub async fn run_matrix(m: MatrixRun<'_>) -> Result<MatrixEnd, DriverError> {
    let s = &m.plan.settings;
    let started = Instant::now();
    let mut builder = PromptBuilder::new(m.engine.clone(), s.prompt_seed);
    let mut ctx: Option<ContextPrompts> = None;
    let mut end = MatrixEnd::Completed;
    let mut hidden_warmup_done = false;
    // The TTFT of a lone warm request at each context (the N = 1 cell): the baseline for the
    // gauge-less queueing rule.
    let mut warm_ttft_ms: HashMap<u64, f64> = HashMap::new();
    let total = m.plan.cells.len();

    for (index, cell) in m.plan.cells.iter().enumerate() {
        if m.done.contains(&cell.key) {
            continue;
        }
        let key = cell.key;
        let stamp = |mut r: CellResult, t0: String| {
            r.started_at = Some(t0);
            r.finished_at = Some(now_rfc3339());
            r
        };
        // Over capacity is a prediction, true whether or not the run goes on.
        if cell.over_capacity {
            let mut r = CellResult::empty(
                key.phase,
                key.context_tokens,
                &cell.label,
                key.concurrency,
                CellStatus::OverCapacity,
            );
            r.status_reason = Some(format!(
                "{} × ({} + {}) tokens exceeds the KV capacity of {}",
                key.concurrency,
                key.context_tokens,
                s.max_output,
                m.plan.kv_capacity_tokens.unwrap_or(0)
            ));
            save(&m, r)?;
            continue;
        }
        if end != MatrixEnd::Completed {
            // Already stopping: keep the first reason.
        } else if m.cancel.is_cancelled() {
            end = MatrixEnd::Interrupted;
        } else if s
            .max_time_s
            .is_some_and(|b| started.elapsed().as_secs_f64() >= b)
        {
            end = MatrixEnd::BudgetSpent;
        }
        if end != MatrixEnd::Completed {
            let mut r = CellResult::empty(
                key.phase,
                key.context_tokens,
                &cell.label,
                key.concurrency,
                CellStatus::NotRun,
            );
            r.status_reason = Some(not_run_reason(&end));
            save(&m, r)?;
            continue;
        }

        m.progress.event(ProgressEvent::CellStarted {
            index,
            total,
            cell: cell.clone(),
        });
        let t0 = now_rfc3339();
        if ctx.as_ref().is_none_or(|c| c.context != key.context_tokens) {
            ctx = Some(ContextPrompts {
                context: key.context_tokens,
                prompts: HashMap::new(),
                warmed: HashSet::new(),
                error: None,
            });
        }
        let Some(cp) = ctx.as_mut() else { continue };

        if !hidden_warmup_done {
            // A hidden warm-up at concurrency 1: the server's first prefill and decode steps pay
            // one-off costs (graph capture, allocator growth) that belong to no cell. Its prompt
            // shares no prefix with any measured one.
            m.progress.event(ProgressEvent::Phase("hidden warm-up"));
            let p = builder.throwaway(key.context_tokens.min(512));
            let _ = warm_up(
                &m.engine,
                &m.model,
                &[(0, p)],
                s.max_output.min(32),
                &m.cancel,
            )
            .await;
            hidden_warmup_done = true;
        }

        let row = match key.phase {
            Phase::Prefill => prefill_cell(&m, &mut builder, cp, cell).await,
            Phase::Decode => decode_cell(&m, &mut builder, cp, cell, &mut warm_ttft_ms).await,
        };
        let mut row = stamp(row, t0);
        if row.status == CellStatus::NotRun && m.cancel.is_cancelled() {
            end = MatrixEnd::Interrupted;
            row.status_reason = Some(not_run_reason(&end));
        }
        let failed = row.status == CellStatus::Failed;
        save(&m, row)?;
        // A failed cell is data, but a server that no longer answers at all ends the run: every
        // later cell would fail the same way.
        if failed && !m.engine.alive().await {
            end = MatrixEnd::ServerGone(format!(
                "the server at {} stopped answering",
                m.engine.base_url()
            ));
        }
    }
    Ok(end)
}

fn not_run_reason(end: &MatrixEnd) -> String {
    match end {
        MatrixEnd::Completed => "skipped".into(),
        MatrixEnd::Interrupted => "the run was interrupted".into(),
        MatrixEnd::BudgetSpent => "the --max-time budget was spent".into(),
        MatrixEnd::ServerGone(why) => format!("the run stopped early: {why}"),
    }
}

fn save(m: &MatrixRun<'_>, row: CellResult) -> Result<(), DriverError> {
    m.store.append_cell(&row)?;
    m.progress.event(ProgressEvent::CellDone(Box::new(row)));
    Ok(())
}

async fn ensure_prompts(
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    n: u32,
) -> Result<(), String> {
    if let Some(e) = &cp.error {
        return Err(e.clone());
    }
    for i in 0..n {
        if cp.prompts.contains_key(&i) {
            continue;
        }
        match builder.build(cp.context, i).await {
            Ok(p) => {
                cp.prompts.insert(i, p);
            }
            Err(e) => {
                cp.error = Some(e.to_string());
                return Err(e.to_string());
            }
        }
    }
    Ok(())
}

fn failed_row(cell: &PlannedCell, kind: &str, message: String) -> CellResult {
    let k = cell.key;
    let mut r = CellResult::empty(
        k.phase,
        k.context_tokens,
        &cell.label,
        k.concurrency,
        CellStatus::Failed,
    );
    r.errors.insert(kind.to_string(), 1);
    r.first_error = Some(message);
    r
}

async fn prefill_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    cell: &PlannedCell,
) -> CellResult {
    m.progress.event(ProgressEvent::Phase("prompt"));
    if let Err(e) = ensure_prompts(builder, cp, 1).await {
        return failed_row(cell, "prompt", e);
    }
    let Some(p) = cp.prompts.get(&0).cloned() else {
        return failed_row(cell, "prompt", "no prompt".into());
    };
    m.progress.event(ProgressEvent::Phase("prefill"));
    let body = Bytes::from(
        serde_json::to_vec(&m.engine.completion_body(&m.model, p.input.clone(), 1, true))
            .unwrap_or_default(),
    );
    let origin = Instant::now();
    let meas = measure(
        m.engine.client(),
        &m.engine.completions_url(),
        body,
        0,
        origin,
        Counting::Deferred,
        &m.cancel,
        None,
    )
    .await;
    cp.warmed.insert(0);
    let k = cell.key;
    let rec = &meas.record;
    if matches!(rec.outcome, Outcome::Cancelled) {
        return CellResult::empty(
            k.phase,
            k.context_tokens,
            &cell.label,
            1,
            CellStatus::NotRun,
        );
    }
    let mut row = match (&rec.outcome, prefill_figures(k.context_tokens, rec)) {
        (Outcome::Error { kind, message }, _) => failed_row(cell, kind, message.clone()),
        (_, Some(f)) => {
            CellResult::empty(k.phase, k.context_tokens, &cell.label, 1, CellStatus::Valid)
                .with_prefill(&f)
        }
        (_, None) => failed_row(
            cell,
            "no_token",
            "the prefill request produced no token".into(),
        ),
    };
    row.prompt_check = Some(prompt_check(p.tokens, std::slice::from_ref(rec)));
    if let Some(pc) = &row.prompt_check
        && pc.mismatched > 0
        && row.status == CellStatus::Valid
    {
        row.status = CellStatus::Failed;
        row.first_error = Some(format!(
            "prompt length mismatch: built {} tokens, the server counted {}",
            p.tokens,
            rec.prompt_tokens_reported.unwrap_or(0)
        ));
        row.errors.insert("prompt_mismatch".into(), 1);
        row.status_reason =
            Some("the server's usage.prompt_tokens differs from the built prompt".into());
    }
    row
}

fn prompt_check(expected: u64, recs: &[RequestRecord]) -> PromptCheck {
    let mut pc = PromptCheck {
        expected,
        ..Default::default()
    };
    for r in recs {
        if let Some(n) = r.prompt_tokens_reported {
            pc.checked += 1;
            if n != expected {
                pc.mismatched += 1;
                let d = n as i64 - expected as i64;
                if pc.max_diff.is_none_or(|m| d.abs() > m.abs()) {
                    pc.max_diff = Some(d);
                }
            }
        }
    }
    pc
}

async fn decode_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    cell: &PlannedCell,
    warm_ttft_ms: &mut HashMap<u64, f64>,
) -> CellResult {
    let s = &m.plan.settings;
    let k = cell.key;
    let n = k.concurrency;
    m.progress.event(ProgressEvent::Phase("prompts"));
    if let Err(e) = ensure_prompts(builder, cp, n).await {
        return failed_row(cell, "prompt", e);
    }
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut first_error: Option<String> = None;
    // Warm-up: only the prompts the server has not seen yet.
    let cold: Vec<(u32, PromptInput)> = (0..n)
        .filter(|i| !cp.warmed.contains(i))
        .filter_map(|i| cp.prompts.get(&i).map(|p| (i, p.input.clone())))
        .collect();
    if !cold.is_empty() {
        m.progress.event(ProgressEvent::Phase("warm-up"));
        for w in warm_up(&m.engine, &m.model, &cold, 1, &m.cancel).await {
            if let Outcome::Error { kind, message } = &w.record.outcome {
                *errors.entry(format!("warmup_{kind}")).or_default() += 1;
                first_error.get_or_insert_with(|| message.clone());
            } else {
                cp.warmed.insert(w.record.stream);
            }
        }
    }
    if m.cancel.is_cancelled() {
        return CellResult::empty(
            k.phase,
            k.context_tokens,
            &cell.label,
            n,
            CellStatus::NotRun,
        );
    }
    let counting = if m.engine.info().capabilities.continuous_usage_stats == Some(true) {
        Counting::UsagePerChunk
    } else {
        Counting::Deferred
    };
    let prompts: Vec<PromptInput> = (0..n)
        .filter_map(|i| cp.prompts.get(&i).map(|p| p.input.clone()))
        .collect();
    let spec = WindowSpec {
        concurrency: n,
        duration: Duration::from_secs_f64(s.duration_s),
        readiness_timeout: Duration::from_secs_f64(s.readiness_timeout_s),
        gauge_interval: Duration::from_millis(s.gauge_interval_ms.max(10)),
        counting,
    };
    m.progress.event(ProgressEvent::Phase("window"));
    let mut w = run_window(
        m.engine.clone(),
        &m.model,
        &prompts,
        s.max_output,
        &spec,
        &m.cancel,
    )
    .await;
    if w.interrupted {
        let mut r = CellResult::empty(
            k.phase,
            k.context_tokens,
            &cell.label,
            n,
            CellStatus::NotRun,
        );
        r.status_reason = Some("the run was interrupted during this cell".into());
        return r;
    }
    m.progress.event(ProgressEvent::Phase("counting"));
    let source = match counting {
        Counting::UsagePerChunk
            if w.records
                .iter()
                .all(|r| r.saw_usage_per_chunk || r.record.chunks.is_empty()) =>
        {
            TokenCountSource::ServerUsagePerChunk
        }
        _ => crate::counting::count_deferred(&m.engine, &mut w.records).await,
    };
    let records: Vec<RequestRecord> = w.records.into_iter().map(|x: Measured| x.record).collect();
    if m.plan.settings.save_requests
        && let Err(e) = m.store.append_requests(k, &records)
    {
        m.progress.event(ProgressEvent::Note(format!(
            "could not save request records: {e}"
        )));
    }

    for r in &records {
        if let Outcome::Error { kind, message } = &r.outcome {
            *errors.entry(kind.clone()).or_default() += 1;
            first_error.get_or_insert_with(|| message.clone());
        }
    }
    let f = decode_figures(&records, w.window);
    let mut row = CellResult::empty(k.phase, k.context_tokens, &cell.label, n, CellStatus::Valid)
        .with_decode(&f);
    row.token_count_source = Some(source);
    row.server_generation_tokens = w.server_generation_tokens;
    row.prompt_check = Some(prompt_check(
        cp.prompts.get(&0).map_or(k.context_tokens, |p| p.tokens),
        &records,
    ));

    // Queueing: the gauge (two consecutive samples above zero), readiness that never came, or
    // without a gauge, a TTFT far above this context's warm TTFT.
    let mut queued_reason = None;
    if !w.queue.ready {
        queued_reason = Some(
            if w.queue.readiness_by.as_deref() == Some("queue_stalled") {
                format!(
                    "the server would not run all {n} requests at once: requests stayed queued while the running count stopped growing"
                )
            } else {
                format!(
                    "not all {n} requests were running within the readiness limit of {:.0} s",
                    s.readiness_timeout_s
                )
            },
        );
    } else if w.queued_samples > 0 {
        queued_reason = Some(format!(
            "the server's queue gauge was above zero (max {})",
            w.queue.max_waiting.unwrap_or(0.0)
        ));
    } else if w.queue.max_waiting.is_none()
        && let Some(ttft) = &f.ttft_ms
    {
        let base = warm_ttft_ms
            .get(&k.context_tokens)
            .copied()
            .unwrap_or(ttft.min);
        // A queued request waits at least one whole request of another stream; 4× the warm TTFT
        // plus 50 ms separates that from ordinary batching jitter.
        let threshold = base * 4.0 + 50.0;
        w.queue.ttft_queue_threshold_ms = Some(threshold);
        let over = records
            .iter()
            .filter_map(|r| r.ttft_ns())
            .filter(|t| *t as f64 / 1e6 > threshold)
            .count() as u64;
        w.queue.ttft_over_threshold = Some(over);
        if over > 0 {
            queued_reason = Some(format!(
                "{over} requests waited over {threshold:.0} ms for their first token (no queue gauge)"
            ));
        }
    }
    if n == 1
        && let Some(t) = &f.ttft_ms
    {
        warm_ttft_ms.entry(k.context_tokens).or_insert(t.p50);
    }
    row.queue = Some(w.queue);
    if let Some(reason) = queued_reason {
        row.status = CellStatus::RequestsQueued;
        row.status_reason = Some(reason);
    }
    if let Some(pc) = &row.prompt_check
        && pc.mismatched > 0
    {
        *errors.entry("prompt_mismatch".into()).or_default() += pc.mismatched;
        first_error.get_or_insert_with(|| {
            format!(
                "prompt length mismatch: built {} tokens, the server counted {:+} more",
                pc.expected,
                pc.max_diff.unwrap_or(0)
            )
        });
    }
    if !errors.is_empty() {
        row = CellResult {
            status: CellStatus::Failed,
            status_reason: Some("requests errored".into()),
            ..row
        };
        // Figures of a failed cell are not measurements of the design: null them.
        let mut clean = CellResult::empty(
            k.phase,
            k.context_tokens,
            &cell.label,
            n,
            CellStatus::Failed,
        );
        clean.queue = row.queue.take();
        clean.prompt_check = row.prompt_check.take();
        clean.requests_sent = row.requests_sent;
        clean.status_reason = row.status_reason.take();
        row = clean;
    }
    row.errors = errors;
    row.first_error = first_error;
    row
}
