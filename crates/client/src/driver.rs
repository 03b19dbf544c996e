//! The driver: runs a plan's cells in order (prefill scout, then decode cells with N ascending,
//! per context) and saves every row as soon as it is known. It decides nothing about a cell:
//! each row is built by `llmib_core::verdict` from what the cell's phases observed.
//!
//! State per context: stream i has one fixed prompt for every N at that context, and a prompt
//! that has been sent once is cached by the server, so moving from N to 2N only prefills the N
//! new prompts in the warm-up (METHOD.md "The matrix").

use crate::burst::send_burst;

use crate::engine::Engine;
use crate::hwmon::HwMonitor;
use crate::live::LiveWindow;
use crate::progress::{Progress, ProgressEvent, RequestErrors, Stage};
use crate::prompt::{BuiltPrompt, PromptBuilder};
use crate::skip::{CellSkip, SKIPPED};
use crate::stream::{Counting, Measured, RequestSpec, StreamLimits, measure};
use crate::window::{WindowRun, WindowSpec, into_records, run_window, warm_up};
use llmib_core::CountReport;
use llmib_core::burst_result;
use llmib_core::duration_from_secs;
use llmib_core::now_rfc3339;
use llmib_core::redact_text;
use llmib_core::server_prefill_rate;
use llmib_core::{CellKey, CellResult, CellStatus, Phase};
use llmib_core::{
    DecodeObservation, ErrorTally, bare_result, decode_result, failed_result, interrupted_result,
    over_capacity_result, prefill_result, prefill_series_result,
};
use llmib_core::{Outcome, RequestRecord};
use llmib_core::{Plan, PlannedCell, PrefillMetric};
use llmib_core::{RunDir, StoreError};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
pub use tokio_util::sync::CancellationToken;

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
    /// The hardware monitor whose per-cell summary goes into each measured row: only when the
    /// server runs on this machine (elsewhere this machine's GPUs say nothing of it).
    pub hardware: Option<&'a HwMonitor>,
    /// Skips the cell in progress (the dashboard's `s` key).
    pub skip: CellSkip,
}

impl<'a> MatrixRun<'a> {
    /// The run as one cell sees it: cancelled with the run, or alone by a skip.
    fn for_cell(&self) -> MatrixRun<'a> {
        MatrixRun {
            engine: self.engine.clone(),
            model: self.model.clone(),
            plan: self.plan,
            store: self.store,
            // A cell never reads which cells were done before.
            done: HashSet::new(),
            progress: self.progress,
            cancel: self.skip.arm(&self.cancel),
            hardware: self.hardware,
            skip: self.skip.clone(),
        }
    }
}

/// Per-context prompt state.
struct ContextPrompts {
    context: u64,
    prompts: HashMap<u32, BuiltPrompt>,
    warmed: HashSet<u32>,
    /// Set when prompts cannot be built at this context (error kind and text): every cell
    /// here fails with it.
    error: Option<(&'static str, String)>,
}

/// The run's state before its first cell.
pub(crate) fn new_state(m: &MatrixRun<'_>) -> RunState {
    RunState {
        builder: PromptBuilder::new(m.engine.clone(), m.plan.settings.prompt_seed)
            .with_targeting(m.plan.settings.token_targeting),
        ctx: None,
        hidden_warmup_done: false,
        warm_ttft_ms: HashMap::new(),
    }
}

/// The context of the first cell this run will measure: not measured before (resume), and
/// not skipped as Over capacity. `None`: the matrix measures nothing.
pub(crate) fn first_measured_context(m: &MatrixRun<'_>) -> Option<u64> {
    m.plan
        .cells
        .iter()
        .filter(|c| !m.done.contains(&c.key))
        .find(|c| m.plan.measures(c))
        .map(|c| c.key.context_tokens)
}

/// Runs the matrix's planned cells in order (`crate::run` runs the open-load sections after
/// them); returns how the matrix ended.
pub(crate) async fn run_cells(
    m: &MatrixRun<'_>,
    st: &mut RunState,
    started: Instant,
) -> Result<MatrixEnd, DriverError> {
    let mut end = MatrixEnd::Completed;
    let total = m.plan.cells.len();
    let mut recent: Vec<CellResult> = Vec::new();

    for (index, cell) in m.plan.cells.iter().enumerate() {
        if m.done.contains(&cell.key) {
            continue;
        }
        // Over capacity is a prediction, true whether or not the run goes on (unless the user
        // asked to measure such cells anyway).
        if !m.plan.measures(cell) {
            let s = &m.plan.settings;
            let kv = m.plan.kv_capacity_tokens.unwrap_or(0);
            let k = cell.key;
            let needs = llmib_core::kv_tokens_needed(k.concurrency, k.context_tokens, s.max_output);
            m.progress.event(ProgressEvent::Skipped {
                cell: cell.clone(),
                reason: format!("over KV capacity (needs {needs} tokens, has {kv})"),
            });
            save(m, over_capacity_result(cell, s.max_output, kv))?;
            continue;
        }
        if end == MatrixEnd::Completed {
            end = stop_reason(m, started);
        }
        if end != MatrixEnd::Completed {
            save(
                m,
                bare_result(cell, CellStatus::NotRun, Some(not_run_reason(&end))),
            )?;
            continue;
        }
        m.progress.event(ProgressEvent::CellStarted {
            index,
            total,
            cell: cell.clone(),
        });
        let mut row = measure_cell(m, st, cell).await;
        if row.status == CellStatus::NotRun && m.cancel.is_cancelled() {
            end = MatrixEnd::Interrupted;
            row.status_reason = Some(not_run_reason(&end));
        }
        let failed = row.status == CellStatus::Failed;
        recent.push(row.clone());
        if recent.len() > 4 {
            recent.remove(0);
        }
        save(m, row)?;
        if failed && let Some(gone) = server_gone(m, &recent).await {
            end = gone;
        }
    }
    Ok(end)
}

/// One cell measured, its row stamped with its times and hardware; Not run, "skipped", when
/// the dashboard's `s` stopped it.
async fn measure_cell(m: &MatrixRun<'_>, st: &mut RunState, cell: &PlannedCell) -> CellResult {
    let t0 = now_rfc3339();
    if let Some(hw) = m.hardware {
        hw.begin_cell();
    }
    let cm = m.for_cell();
    let mut row = run_cell(&cm, st, cell).await;
    m.skip.disarm();
    if cm.cancel.is_cancelled() && !m.cancel.is_cancelled() {
        // Whatever the cell got to, its row measures nothing.
        m.progress.event(ProgressEvent::Note(format!(
            "{} {} × {} skipped",
            cell.key.phase.label(),
            cell.label,
            cell.key.concurrency
        )));
        row = bare_result(cell, CellStatus::NotRun, Some(SKIPPED.to_string()));
    }
    if cell.over_capacity {
        mark_capacity_limited(m, cell, &mut row);
    }
    row.started_at = Some(t0);
    row.finished_at = Some(now_rfc3339());
    if let Some(hw) = m.hardware {
        row.hardware = hw.end_cell();
    }
    row
}

/// A cell predicted Over capacity and measured anyway (`--show-capacity-limited-values`): the
/// row says so, with the prediction, so no figure of it is read as a fitting cell's.
fn mark_capacity_limited(m: &MatrixRun<'_>, cell: &PlannedCell, row: &mut CellResult) {
    let k = cell.key;
    let s = &m.plan.settings;
    let kv = m.plan.kv_capacity_tokens.unwrap_or(0);
    let needs = llmib_core::kv_tokens_needed(k.concurrency, k.context_tokens, s.max_output);
    let mark = format!(
        "predicted over KV capacity (needs {needs} tokens, has {kv}), measured anyway (--show-capacity-limited-values)"
    );
    row.capacity_limited = true;
    row.status_reason = Some(match row.status_reason.take() {
        Some(r) => format!("{mark}; {r}"),
        None => mark,
    });
}

/// After a failed cell: whether the server is gone, so the run ends (every later cell would
/// fail the same way) — it no longer answers at all, or it accepts requests and never answers
/// them (`llmib_core::first_token_stall`: two cells in a row without a first token).
async fn server_gone(m: &MatrixRun<'_>, recent: &[CellResult]) -> Option<MatrixEnd> {
    if !m.engine.alive().await {
        return Some(MatrixEnd::ServerGone(format!(
            "the server at {} stopped answering",
            m.engine.base_url()
        )));
    }
    llmib_core::first_token_stall(recent).then(|| {
        MatrixEnd::ServerGone(format!(
            "the server at {} accepts requests but sent no first token in two cells in a row (raise --first-token-timeout if its prefill is that slow)",
            m.engine.base_url()
        ))
    })
}

/// What the run carries from cell to cell.
pub(crate) struct RunState {
    /// The run's prompt builder (the open-load sections build with it too).
    pub(crate) builder: PromptBuilder,
    ctx: Option<ContextPrompts>,
    /// Whether the one-off hidden warm-up has run.
    pub(crate) hidden_warmup_done: bool,
    /// The TTFT of a lone warm request at each context (the N = 1 cell): the baseline for the
    /// gauge-less queueing rule.
    warm_ttft_ms: HashMap<u64, f64>,
}

/// Why the run stops before the next cell, if it does (Ctrl-C, the time budget).
pub(crate) fn stop_reason(m: &MatrixRun<'_>, started: Instant) -> MatrixEnd {
    if m.cancel.is_cancelled() {
        MatrixEnd::Interrupted
    } else if m
        .plan
        .settings
        .max_time_s
        .is_some_and(|b| started.elapsed().as_secs_f64() >= b)
    {
        MatrixEnd::BudgetSpent
    } else {
        MatrixEnd::Completed
    }
}

/// Measures one cell: its context's prompt state, then the cell (`crate::warm` ran the
/// run's one-off warm-ups before the first).
async fn run_cell(m: &MatrixRun<'_>, st: &mut RunState, cell: &PlannedCell) -> CellResult {
    let key = cell.key;
    if st
        .ctx
        .as_ref()
        .is_none_or(|c| c.context != key.context_tokens)
    {
        st.ctx = Some(ContextPrompts {
            context: key.context_tokens,
            prompts: HashMap::new(),
            warmed: HashSet::new(),
            error: None,
        });
    }
    let Some(cp) = st.ctx.as_mut() else {
        return failed_result(cell, "internal", "no prompt state for this context".into());
    };
    match key.phase {
        Phase::Prefill => prefill_cell(m, &mut st.builder, cp, cell).await,
        Phase::Decode => decode_cell(m, &mut st.builder, cp, cell, &mut st.warm_ttft_ms).await,
        Phase::Burst => burst_cell(m, &mut st.builder, cp, cell).await,
        // The open-loop section runs after the matrix (`crate::load_driver`), never as a
        // planned cell.
        Phase::Rate | Phase::Capacity => failed_result(
            cell,
            "internal",
            "an open-loop cell in the matrix's plan".into(),
        ),
    }
}

/// The server's cumulative (prompt tokens, prefill seconds), where it exports both.
async fn prefill_counters(m: &MatrixRun<'_>) -> Option<(f64, f64)> {
    let g = m.engine.gauges().await.ok()?;
    g.prompt_tokens_total.zip(g.prompt_seconds_total)
}

/// The server's prefill rate since `before`. llama.cpp adds a request to its counters when its
/// slot is released, just after the stream ends: one more read 100 ms later covers that.
async fn server_rate_after(m: &MatrixRun<'_>, before: (f64, f64)) -> Option<f64> {
    for attempt in 0..2 {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        if let Some(r) = prefill_counters(m)
            .await
            .and_then(|after| server_prefill_rate(before, after))
        {
            return Some(r);
        }
    }
    None
}

/// A Burst / E2E cell: the context's prompts warmed, W warm-up requests, then R measured ones
/// with at most N in flight, counted and judged by `llmib_core::burst`.
async fn burst_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    cell: &PlannedCell,
) -> CellResult {
    let s = &m.plan.settings;
    let Some(b) = s.burst else {
        return failed_result(
            cell,
            "internal",
            "a burst cell without burst settings".into(),
        );
    };
    let n = cell.key.concurrency;
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    if let Err((kind, e)) = ensure_prompts(builder, cp, n).await {
        return failed_result(cell, kind, e);
    }
    let mut warmup_errors = match warm_cold_prompts(m, cp, n).await {
        Ok(e) => e,
        Err(e) => return failed_result(cell, "request_body", e),
    };
    let requests: Vec<RequestSpec> = match requests_for(m, cp, 0..n, s.max_output, false) {
        Ok(v) => v.into_iter().map(|(_, r)| r).collect(),
        Err(e) => return failed_result(cell, "request_body", e),
    };
    let warmups = b.warmup_requests(n);
    if warmups > 0 {
        m.progress.event(ProgressEvent::Phase(Stage::BurstWarmUp));
        match send_burst(&m.engine, &requests, warmups, &m.cancel).await {
            Ok(w) => warmup_errors.add_records(&into_records(w), "warmup_"),
            Err(e) => return failed_result(cell, "fault", e.to_string()),
        }
    }
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    m.progress.event(ProgressEvent::Phase(Stage::Burst));
    let mut measured = match send_burst(&m.engine, &requests, b.requests(n), &m.cancel).await {
        Ok(v) => v,
        Err(e) => return failed_result(cell, "fault", e.to_string()),
    };
    if m.cancel.is_cancelled() {
        return interrupted_result(cell);
    }
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    crate::counting::count_tokens(&m.engine, &mut measured).await;
    let records = finished_records(m, cell.key, measured);
    report_errors(m, Stage::Burst, &records);
    burst_result(
        cell,
        &records,
        warmup_errors,
        cp.prompts
            .get(&0)
            .map_or(cell.key.context_tokens, |p| p.tokens),
        prompt_tolerance(m, cell),
    )
}

/// The records of a cell's measured requests, error texts redacted, saved to
/// `requests.jsonl` when asked.
pub(crate) fn finished_records(
    m: &MatrixRun<'_>,
    key: CellKey,
    measured: Vec<Measured>,
) -> Vec<RequestRecord> {
    let mut records = into_records(measured);
    let secrets = m.engine.secrets();
    for r in &mut records {
        if let Outcome::Error { message, .. } = &mut r.outcome {
            *message = redact_text(message, &secrets);
        }
    }
    if m.plan.settings.save_requests
        && let Err(e) = m.store.append_requests(key, &records)
    {
        m.progress.event(ProgressEvent::Note(format!(
            "could not save request records: {e}"
        )));
    }
    records
}

/// Reports the errored requests among `records` (a warm-up's or a burst's, once they are all
/// done: neither re-sends).
pub(crate) fn report_errors(m: &MatrixRun<'_>, stage: Stage, records: &[RequestRecord]) {
    let secrets = m.engine.secrets();
    let mut errors = RequestErrors::new(m.progress, stage);
    for r in records {
        if let Outcome::Error { kind, message } = &r.outcome {
            errors.report(
                r.stream,
                kind,
                || redact_text(message, &secrets),
                None,
                false,
            );
        }
    }
    errors.finish();
}

/// The silence limits of a request of `prompt_tokens` sent with `in_flight − 1` others like it.
pub(crate) fn limits(m: &MatrixRun<'_>, prompt_tokens: u64, in_flight: u32) -> StreamLimits {
    let s = &m.plan.settings;
    StreamLimits {
        first_token: duration_from_secs(s.first_token_limit_s(prompt_tokens, in_flight)),
        idle: duration_from_secs(s.idle_timeout_s),
    }
}

pub(crate) fn not_run_reason(end: &MatrixEnd) -> String {
    match end {
        MatrixEnd::Completed => "skipped".into(),
        MatrixEnd::Interrupted => "the run was interrupted".into(),
        MatrixEnd::BudgetSpent => "the --max-time budget was spent".into(),
        MatrixEnd::ServerGone(why) => format!("the run stopped early: {why}"),
    }
}

pub(crate) fn save(m: &MatrixRun<'_>, mut row: CellResult) -> Result<(), DriverError> {
    // Error texts come from the server, which may echo the key or a URL's password.
    let secrets = m.engine.secrets();
    for s in [
        &mut row.first_error,
        &mut row.status_reason,
        &mut row.token_count_note,
    ]
    .into_iter()
    .flatten()
    {
        *s = redact_text(s, &secrets);
    }
    m.store.append_cell(&row)?;
    m.progress.event(ProgressEvent::CellDone(Box::new(row)));
    Ok(())
}

async fn ensure_prompts(
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    n: u32,
) -> Result<(), (&'static str, String)> {
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
            // A server that could not be reached is not a fact about this context: the next
            // cell tries again (and the run ends if the server is gone).
            Err(e) if e.kind() == "prompt_connect" => {
                return Err((e.kind(), e.to_string()));
            }
            Err(e) => {
                let err = (e.kind(), e.to_string());
                cp.error = Some(err.clone());
                return Err(err);
            }
        }
    }
    Ok(())
}

/// Builds the streamed request of each stream in `streams` (once; re-sends reuse it).
fn requests_for(
    m: &MatrixRun<'_>,
    cp: &ContextPrompts,
    streams: impl Iterator<Item = u32>,
    max_tokens: u32,
    deferred: bool,
) -> Result<Vec<(u32, RequestSpec)>, String> {
    let streams: Vec<u32> = streams.collect();
    let lim = limits(m, cp.context, streams.len() as u32);
    streams
        .into_iter()
        .map(|i| {
            let p = cp
                .prompts
                .get(&i)
                .ok_or_else(|| format!("no prompt was built for stream {i}"))?;
            let spec = m
                .engine
                .stream_request(&m.model, p.input.clone(), max_tokens, deferred, lim)
                .map_err(|e| e.to_string())?;
            Ok((i, spec))
        })
        .collect()
}

async fn prefill_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    cell: &PlannedCell,
) -> CellResult {
    m.progress.event(ProgressEvent::Phase(Stage::Prompt));
    if let Err((kind, e)) = ensure_prompts(builder, cp, 1).await {
        return failed_result(cell, kind, e);
    }
    let (expected, spec) = match requests_for(m, cp, 0..1, 1, true) {
        Ok(mut v) if !v.is_empty() => (cp.prompts[&0].tokens, v.remove(0).1),
        Ok(_) => return failed_result(cell, "prompt", "no prompt".into()),
        Err(e) => return failed_result(cell, "request_body", e),
    };
    m.progress.event(ProgressEvent::Phase(Stage::Prefill));
    let (record, server_rate) = timed_prefill(m, &spec, 0).await;
    cp.warmed.insert(0);
    if server_rate.is_none() && m.plan.settings.prefill_metric == PrefillMetric::Server {
        m.progress.event(ProgressEvent::Note(format!(
            "prefill {}: the server's prefill rate is not available (its metrics export no prefill counters, or they did not move)",
            cell.label
        )));
    }
    let tolerance = prompt_tolerance(m, cell);
    let repeats = m.plan.settings.prefill_repeats.max(1);
    if repeats == 1 || matches!(record.outcome, Outcome::Cancelled) {
        let mut row = prefill_result(cell, &record, expected, tolerance);
        if row.status == CellStatus::Valid {
            row.server_prompt_tok_per_s = server_rate;
        }
        return row;
    }
    // Standalone prefill: more cold prefills, each with a prompt of its own (a stream index
    // no decode cell uses), so none is served from the prefix cache.
    let mut records = vec![record];
    let mut server_rates: Vec<f64> = server_rate.into_iter().collect();
    for r in 1..repeats {
        if m.cancel.is_cancelled() {
            return interrupted_result(cell);
        }
        let stream = u32::MAX - r;
        let prompt = match builder.build(cell.key.context_tokens, stream).await {
            Ok(p) => p,
            Err(e) => return failed_result(cell, e.kind(), e.to_string()),
        };
        let spec = match m.engine.stream_request(
            &m.model,
            prompt.input,
            1,
            true,
            limits(m, prompt.tokens, 1),
        ) {
            Ok(s) => s,
            Err(e) => return failed_result(cell, "request_body", e.to_string()),
        };
        let (record, server_rate) = timed_prefill(m, &spec, r).await;
        records.push(record);
        server_rates.extend(server_rate);
    }
    let mut row = prefill_series_result(cell, &records, expected, tolerance);
    if row.status == CellStatus::Valid {
        // The server's rate of the same cold prefills, median like the client's.
        row.server_prompt_tok_per_s = llmib_core::Summary::of_vec(&mut server_rates).map(|s| s.p50);
    }
    row
}

/// One timed prefill request (`index` in the cell), with the server's own prefill rate from
/// its counters read around it where `--prefill-metric` asks for it and the engine has them.
async fn timed_prefill(
    m: &MatrixRun<'_>,
    spec: &RequestSpec,
    index: u32,
) -> (RequestRecord, Option<f64>) {
    let before = if m.plan.settings.prefill_metric != PrefillMetric::Client {
        prefill_counters(m).await
    } else {
        None
    };
    let meas = measure(
        m.engine.client(),
        spec,
        index,
        Instant::now(),
        &m.cancel,
        None,
    )
    .await;
    let rate = match before {
        Some(b) => server_rate_after(m, b).await,
        None => None,
    };
    (meas.record, rate)
}

/// How far a reported prompt length may be from C: 0 for exact prompts, the estimate's
/// tolerance otherwise.
pub(crate) fn prompt_tolerance(m: &MatrixRun<'_>, cell: &PlannedCell) -> u64 {
    llmib_core::prompt_tolerance(m.plan.settings.token_targeting, cell.key.context_tokens)
}

/// Sends the prompts the server has not seen yet once (`max_tokens = 1`), so the window's
/// requests hit the prefix cache; returns the warm-up's errors.
async fn warm_cold_prompts(
    m: &MatrixRun<'_>,
    cp: &mut ContextPrompts,
    n: u32,
) -> Result<ErrorTally, String> {
    let cold: Vec<u32> = (0..n).filter(|i| !cp.warmed.contains(i)).collect();
    let mut errors = ErrorTally::default();
    if cold.is_empty() {
        return Ok(errors);
    }
    m.progress.event(ProgressEvent::Phase(Stage::WarmUp));
    let reqs = requests_for(m, cp, cold.into_iter(), 1, true)?;
    let done = into_records(warm_up(&m.engine, &reqs, &m.cancel).await);
    report_errors(m, Stage::WarmUp, &done);
    errors.add_records(&done, "warmup_");
    cp.warmed
        .extend(done.iter().filter(|r| !r.is_error()).map(|r| r.stream));
    Ok(errors)
}

/// A decode window's settings at N = `n`.
pub(crate) fn window_spec(m: &MatrixRun<'_>, n: u32) -> WindowSpec {
    let s = &m.plan.settings;
    WindowSpec {
        concurrency: n,
        // From run.json when resuming: clamped, never a panic on a hand-edited file.
        duration: duration_from_secs(s.duration_s),
        readiness_timeout: duration_from_secs(s.readiness_timeout_s),
        gauge_interval: Duration::from_millis(s.gauge_interval_ms.clamp(10, 60_000)),
        serial_server: s.serial_server,
        warm_ttft: None,
        until_stable: s.until_stable.map(|t| t.fraction),
        respect_eos: s.respect_eos,
    }
}

/// A decode cell's window, its live state announced first: the closed loop run, its tokens
/// counted, its records finished. `None`: the run was interrupted.
async fn measure_window(
    m: &MatrixRun<'_>,
    key: CellKey,
    requests: &[RequestSpec],
    warm_ttft_ms: Option<f64>,
) -> Option<(WindowRun, Vec<RequestRecord>, CountReport)> {
    let mut spec = window_spec(m, key.concurrency);
    spec.warm_ttft = warm_ttft_ms.map(|ms| duration_from_secs(ms / 1000.0));
    let live = Arc::new(LiveWindow::new(
        key.concurrency,
        spec.duration,
        m.engine.counting() == Counting::UsagePerChunk,
    ));
    m.progress.event(ProgressEvent::Phase(Stage::Window));
    m.progress.event(ProgressEvent::WindowLive(live.clone()));
    let mut w = run_window(
        m.engine.clone(),
        requests,
        &spec,
        &m.cancel,
        live,
        m.progress,
    )
    .await;
    if w.interrupted {
        return None;
    }
    m.progress.event(ProgressEvent::Window {
        origin: w.origin,
        window: w.window,
    });
    m.progress.event(ProgressEvent::Phase(Stage::Counting));
    let count = crate::counting::count_tokens(&m.engine, &mut w.records).await;
    let records = finished_records(m, key, std::mem::take(&mut w.records));
    Some((w, records, count))
}

/// A decode cell: its prompts built and warmed, its window measured, its row judged by
/// `llmib_core::verdict` (the N = 1 row gives the context its warm TTFT baseline).
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
    m.progress.event(ProgressEvent::Phase(Stage::Prompts));
    if let Err((kind, e)) = ensure_prompts(builder, cp, n).await {
        return failed_result(cell, kind, e);
    }
    let warmup_errors = match warm_cold_prompts(m, cp, n).await {
        Ok(e) => e,
        Err(e) => return failed_result(cell, "request_body", e),
    };
    if m.cancel.is_cancelled() {
        return bare_result(cell, CellStatus::NotRun, None);
    }
    let requests: Vec<RequestSpec> = match requests_for(m, cp, 0..n, s.max_output, false) {
        Ok(v) => v.into_iter().map(|(_, r)| r).collect(),
        Err(e) => return failed_result(cell, "request_body", e),
    };
    let warm = warm_ttft_ms.get(&k.context_tokens).copied();
    let Some((mut w, records, count)) = measure_window(m, k, &requests, warm).await else {
        return interrupted_result(cell);
    };
    let row = decode_result(
        cell,
        DecodeObservation {
            records: records.as_slice(),
            window: w.window,
            readiness: w.readiness,
            queue: w.queue,
            queued_samples: w.queued_samples,
            readiness_timeout_s: s.readiness_timeout_s,
            warm_ttft_ms: warm_ttft_ms.get(&k.context_tokens).copied(),
            warmup_errors,
            expected_prompt_tokens: cp.prompts.get(&0).map_or(k.context_tokens, |p| p.tokens),
            prompt_tolerance: prompt_tolerance(m, cell),
            count,
            nominal_source: m.engine.counting().nominal_source(),
            server_generation_tokens: w.server_generation_tokens,
            fault: w.fault,
            client_delay_ms: std::mem::take(&mut w.client_delay_ms),
            speculative: w.speculative.take(),
        },
    );
    let mut row = row;
    if let Some(slo) = s.load.as_ref().and_then(|l| l.slo.as_ref())
        && row.status.has_figures()
    {
        row.slo = Some(llmib_core::closed_loop_slo(slo, &records, w.window));
    }
    if n == 1
        && row.status == CellStatus::Valid
        && let Some(t) = &row.ttft_ms
    {
        warm_ttft_ms.entry(k.context_tokens).or_insert(t.p50);
    }
    row
}
