//! The driver: runs a plan's cells in order (prefill scout, then decode cells with N ascending,
//! per context) and saves every row as soon as it is known. It decides nothing about a cell:
//! each row is built by `llmib_core::verdict` from what the cell's phases observed.
//!
//! State per context: stream i has one fixed prompt for every N at that context, and a prompt
//! that has been sent once is cached by the server, so moving from N to 2N only prefills the N
//! new prompts in the warm-up (METHOD.md "The matrix").

use crate::cells::burst::send_burst;

use crate::cells::skip::CellSkip;
use crate::cells::window::{into_records, warm_up};
use crate::machine::hwmon::HwMonitor;
use crate::progress::events::{Progress, ProgressEvent, RequestErrors, Stage};
use crate::prompts::prompt::{BuiltPrompt, PromptBuilder};
use crate::server::engine::Engine;
use crate::wire::stream::{Measured, RequestSpec, StreamLimits, measure};
use llmib_core::burst_result;
use llmib_core::duration_from_secs;
use llmib_core::redact_text;
use llmib_core::server_prefill_rate;
use llmib_core::{CellKey, CellResult, CellStatus};
use llmib_core::{
    ErrorTally, failed_result, interrupted_result, prefill_result, prefill_series_result,
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
    /// This run is a shard (`--shard`): its part of each cell and its timetable
    /// (`ShardRun::of` the plan).
    pub shard: Option<Arc<crate::cells::shard::ShardRun>>,
}

impl<'a> MatrixRun<'a> {
    /// The run as one cell sees it: cancelled with the run, or alone by a skip.
    pub(crate) fn for_cell(&self) -> MatrixRun<'a> {
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
            shard: self.shard.clone(),
        }
    }
}

/// Per-context prompt state.
pub(crate) struct ContextPrompts {
    pub(crate) context: u64,
    pub(crate) prompts: HashMap<u32, BuiltPrompt>,
    pub(crate) warmed: HashSet<u32>,
    /// Set when prompts cannot be built at this context (error kind and text): every cell
    /// here fails with it.
    error: Option<(&'static str, String)>,
}

impl ContextPrompts {
    /// No prompt built yet at `context`.
    pub(crate) fn new(context: u64) -> ContextPrompts {
        ContextPrompts {
            context,
            prompts: HashMap::new(),
            warmed: HashSet::new(),
            error: None,
        }
    }
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

/// What the run carries from cell to cell.
pub(crate) struct RunState {
    /// The run's prompt builder (the open-load sections build with it too).
    pub(crate) builder: PromptBuilder,
    pub(crate) ctx: Option<ContextPrompts>,
    /// Whether the one-off hidden warm-up has run.
    pub(crate) hidden_warmup_done: bool,
    /// The TTFT of a lone warm request at each context (the N = 1 cell): the baseline for the
    /// gauge-less queueing rule.
    pub(crate) warm_ttft_ms: HashMap<u64, f64>,
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
pub(crate) async fn burst_cell(
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
    let all: Vec<u32> = (0..n).collect();
    if let Err((kind, e)) = ensure_prompts(builder, cp, &all).await {
        return failed_result(cell, kind, e);
    }
    let mut warmup_errors = match warm_cold_prompts(m, cp, &all).await {
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
    crate::server::counting::count_tokens(&m.engine, &mut measured).await;
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
    finished_records_as(m, key, measured, None)
}

/// [`finished_records`], saved with request k's `stream` as `ids[k]` (a shard's requests
/// by their index in the whole cell's schedule, so a merge joins them), returned as measured.
pub(crate) fn finished_records_as(
    m: &MatrixRun<'_>,
    key: CellKey,
    measured: Vec<Measured>,
    ids: Option<&[u32]>,
) -> Vec<RequestRecord> {
    let mut records = into_records(measured);
    let secrets = m.engine.secrets();
    for r in &mut records {
        if let Outcome::Error { message, .. } = &mut r.outcome {
            *message = redact_text(message, &secrets);
        }
    }
    if !m.plan.settings.save_requests {
        return records;
    }
    let saved = match ids {
        Some(ids) => m.store.append_requests(key, &with_ids(&records, ids)),
        None => m.store.append_requests(key, &records),
    };
    if let Err(e) = saved {
        m.progress.event(ProgressEvent::Note(format!(
            "could not save request records: {e}"
        )));
    }
    records
}

/// `records` with each `stream` k replaced by `ids[k]` (kept where `ids` has none).
fn with_ids(records: &[RequestRecord], ids: &[u32]) -> Vec<RequestRecord> {
    let mut out = records.to_vec();
    for r in &mut out {
        if let Some(id) = ids.get(r.stream as usize) {
            r.stream = *id;
        }
    }
    out
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

/// Builds the prompt of each of `streams` not built yet at this context.
pub(crate) async fn ensure_prompts(
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    streams: &[u32],
) -> Result<(), (&'static str, String)> {
    if let Some(e) = &cp.error {
        return Err(e.clone());
    }
    for &i in streams {
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
pub(crate) fn requests_for(
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

pub(crate) async fn prefill_cell(
    m: &MatrixRun<'_>,
    builder: &mut PromptBuilder,
    cp: &mut ContextPrompts,
    cell: &PlannedCell,
) -> CellResult {
    m.progress.event(ProgressEvent::Phase(Stage::Prompt));
    if let Err((kind, e)) = ensure_prompts(builder, cp, &[0]).await {
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
pub(crate) async fn warm_cold_prompts(
    m: &MatrixRun<'_>,
    cp: &mut ContextPrompts,
    streams: &[u32],
) -> Result<ErrorTally, String> {
    let cold: Vec<u32> = streams
        .iter()
        .copied()
        .filter(|i| !cp.warmed.contains(i))
        .collect();
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
