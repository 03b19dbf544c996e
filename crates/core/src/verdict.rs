//! A cell's status and its row, decided from what the client observed: pure functions, so
//! every status rule of METHOD.md (and each refinement in docs/method-notes.md) has known-answer
//! tests that need no socket and no timing. The client only gathers observations; every row of
//! `cells.jsonl` is built here.
//!
//! Decode rules, the first that fires wins:
//! 1. **Failed**: the measurement itself broke (a worker or the collector died, a request body
//!    could not be built), any request errored (warm-up included), a prompt-length mismatch, or
//!    no token arrived inside the window.
//! 2. **Requests queued**: readiness never came (the queue stalled, or the limit passed); the
//!    waiting gauge above zero in two consecutive samples inside the window *and* a mean wait
//!    (Little's law: mean waiting × window / requests sent in it) over 4 × TBT p50 + 50 ms;
//!    without a gauge, a TTFT over 4 × the warm TTFT + 50 ms.
//! 3. **Valid**.
//!
//! Figures of a Failed row are null: they are not measurements of the design.

use crate::cell::{CellResult, CellStatus, PromptCheck, QueueObservation};
use crate::counting::CountReport;
use crate::figures::{Window, prefill_figures};
use crate::meta::TokenCountSource;
use crate::plan::PlannedCell;
use crate::readiness::ReadinessBy;
use crate::record::{Outcome, RequestRecord};
use crate::stats::Summary;
use std::collections::BTreeMap;

/// Errors counted by kind, with the first one's text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ErrorTally {
    /// Count per kind.
    pub by_kind: BTreeMap<String, u64>,
    /// The first error's text.
    pub first: Option<String>,
}

impl ErrorTally {
    /// Counts `count` errors of `kind`; keeps `message` if it is the first.
    pub fn add(&mut self, kind: &str, count: u64, message: impl FnOnce() -> String) {
        if count == 0 {
            return;
        }
        *self.by_kind.entry(kind.to_string()).or_default() += count;
        if self.first.is_none() {
            self.first = Some(message());
        }
    }

    /// Counts every errored record, its kind prefixed with `prefix` (`warmup_` for warm-ups).
    pub fn add_records(&mut self, records: &[RequestRecord], prefix: &str) {
        for r in records {
            if let Outcome::Error { kind, message } = &r.outcome {
                self.add(&format!("{prefix}{kind}"), 1, || message.clone());
            }
        }
    }

    /// No error at all.
    pub fn is_empty(&self) -> bool {
        self.by_kind.is_empty()
    }
}

/// The status of a row and why, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// The status.
    pub status: CellStatus,
    /// Why (None for a plain Valid).
    pub reason: Option<String>,
}

impl Verdict {
    fn new(status: CellStatus, reason: impl Into<String>) -> Self {
        Verdict {
            status,
            reason: Some(reason.into()),
        }
    }
}

/// Everything a decode cell's status depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct DecodeFacts<'a> {
    /// N.
    pub concurrency: u32,
    /// The measurement itself broke (not a server error): why.
    pub fault: Option<&'a str>,
    /// Request errors (warm-up and window), prompt mismatches included.
    pub errors: &'a ErrorTally,
    /// Which rule opened the window.
    pub readiness: ReadinessBy,
    /// The readiness limit, seconds (for the reason's words).
    pub readiness_timeout_s: f64,
    /// Pairs of consecutive in-window samples with the waiting gauge above zero.
    pub queued_samples: u64,
    /// Largest waiting gauge seen in the window (None: no gauge).
    pub max_waiting: Option<f64>,
    /// The mean time a request spent in the server's queue, ms, by Little's law, and the
    /// threshold above which that is a real queue (None: no request was sent inside the window,
    /// so whatever waited was not a re-send in transit).
    pub queue_wait: Option<(f64, f64)>,
    /// Without a gauge: (requests over the TTFT threshold, the threshold in ms).
    pub ttft_over: Option<(u64, f64)>,
    /// Tokens inside the window.
    pub output_tokens: u64,
}

/// The decode status rules (module docs), in order.
pub fn decode_verdict(f: &DecodeFacts<'_>) -> Verdict {
    if let Some(why) = f.fault {
        return Verdict::new(CellStatus::Failed, format!("the measurement failed: {why}"));
    }
    if !f.errors.is_empty() {
        let only_mismatch = f.errors.by_kind.keys().all(|k| k == "prompt_mismatch");
        return Verdict::new(
            CellStatus::Failed,
            if only_mismatch {
                "the server's usage.prompt_tokens differs from the built prompt"
            } else {
                "requests errored"
            },
        );
    }
    if f.output_tokens == 0 {
        return Verdict::new(CellStatus::Failed, "no token arrived inside the window");
    }
    if let Some(v) = readiness_verdict(f) {
        return v;
    }
    if let Some(v) = queueing_verdict(f) {
        return v;
    }
    Verdict {
        status: CellStatus::Valid,
        reason: None,
    }
}

/// The readiness rules: a server that never ran all N at once (None: readiness was reached).
fn readiness_verdict(f: &DecodeFacts<'_>) -> Option<Verdict> {
    let n = f.concurrency;
    match f.readiness {
        ReadinessBy::QueueStalled => Some(Verdict::new(
            CellStatus::RequestsQueued,
            format!(
                "the server would not run all {n} requests at once: requests stayed queued while the running count stopped growing"
            ),
        )),
        ReadinessBy::Timeout => Some(Verdict::new(
            CellStatus::RequestsQueued,
            format!(
                "not all {n} requests were running and producing tokens within the readiness limit of {:.0} s",
                f.readiness_timeout_s
            ),
        )),
        // Errors are counted from the records, so the error rule above has fired already; this
        // keeps the cell Failed even if a record were lost.
        ReadinessBy::RequestsErrored => Some(Verdict::new(
            CellStatus::Failed,
            "requests errored before the window opened",
        )),
        ReadinessBy::TokensFlowing => Some(Verdict::new(
            CellStatus::RequestsQueued,
            format!(
                "the server runs one request at a time (--serial-server): the other {} waited",
                n.saturating_sub(1)
            ),
        )),
        ReadinessBy::FirstTokensStalled => Some(Verdict::new(
            CellStatus::RequestsQueued,
            format!(
                "the server would not run all {n} requests at once: some streams waited for a first token long after the others had theirs (no queue gauge to read)"
            ),
        )),
        ReadinessBy::GaugesAndFirstTokens
        | ReadinessBy::FirstTokens
        | ReadinessBy::FirstTokensNoWaiting => None,
    }
}

/// The queueing rules after readiness: the waiting gauge, else slow first tokens (None: no
/// real queue, the cell is valid).
fn queueing_verdict(f: &DecodeFacts<'_>) -> Option<Verdict> {
    // At high N a closed loop re-sends many times a second and each re-send waits a scheduler
    // step for admission, so consecutive samples can each catch a different one: only a mean
    // wait longer than a few steps is a server that cannot run all N.
    let real_queue = f
        .queue_wait
        .is_none_or(|(wait, threshold)| wait > threshold);
    if f.queued_samples > 0 && real_queue {
        let wait = match f.queue_wait {
            Some((w, _)) => format!("; a request waited {w:.0} ms on average"),
            None => String::new(),
        };
        return Some(Verdict::new(
            CellStatus::RequestsQueued,
            format!(
                "the server's queue gauge was above zero (max {}){wait}",
                f.max_waiting.unwrap_or(0.0)
            ),
        ));
    }
    if let Some((over, threshold)) = f.ttft_over
        && over > 0
    {
        return Some(Verdict::new(
            CellStatus::RequestsQueued,
            format!(
                "{over} requests waited over {threshold:.0} ms for their first token (no queue gauge)"
            ),
        ));
    }
    None
}

/// The gauge-less queueing threshold: a queued request waits at least one whole request of
/// another stream, so 4 × the warm TTFT plus 50 ms separates it from batching jitter. `warm_ms`
/// is the median TTFT of the context's N = 1 cell, else `min_ms`, the cell's smallest TTFT.
pub fn ttft_queue_threshold_ms(warm_ms: Option<f64>, min_ms: f64) -> f64 {
    warm_ms.unwrap_or(min_ms) * 4.0 + 50.0
}

/// The mean time a request waited in the server's queue during a window, ms, by Little's law:
/// the mean waiting gauge × the window's length / the requests that arrived in it. `None` when
/// nothing arrived (the queue then holds no re-send in transit).
pub fn queue_wait_ms(mean_waiting: f64, window_s: f64, arrivals: u64) -> Option<f64> {
    (arrivals > 0).then(|| mean_waiting * window_s * 1e3 / arrivals as f64)
}

/// The wait above which a queue is real: a request admitted late by a scheduler step (or a few,
/// behind other re-sends' prefills) waits about one TBT; one that waits for a free slot waits
/// for a whole request. 4 × TBT p50 + 50 ms separates the two, as the TTFT rule does.
pub fn queue_wait_threshold_ms(tbt_p50_ms: Option<f64>) -> f64 {
    tbt_p50_ms.unwrap_or(0.0) * 4.0 + 50.0
}

/// Prompt lengths of `records` checked against the built length: a request mismatches when
/// its reported count is more than `tolerance` tokens away (0 for exact prompts; estimated
/// prompts get `plan::estimate_tolerance`). The largest difference is kept either way.
pub fn prompt_check(expected: u64, tolerance: u64, records: &[RequestRecord]) -> PromptCheck {
    let mut pc = PromptCheck {
        expected,
        ..Default::default()
    };
    for n in records.iter().filter_map(|r| r.prompt_tokens_reported) {
        pc.checked += 1;
        pc.reported_min = Some(pc.reported_min.map_or(n, |m| m.min(n)));
        pc.reported_max = Some(pc.reported_max.map_or(n, |m| m.max(n)));
        let d = n as i64 - expected as i64;
        if d != 0 && pc.max_diff.is_none_or(|m| d.abs() > m.abs()) {
            pc.max_diff = Some(d);
        }
        if d.unsigned_abs() > tolerance {
            pc.mismatched += 1;
        }
    }
    pc
}

/// Counts `pc`'s mismatched prompts as `prompt_mismatch` errors, the first with its words
/// (`whose` names the prompts where a row checks several kinds, e.g. `injected `).
pub(crate) fn tally_mismatch(errors: &mut ErrorTally, pc: &PromptCheck, whose: &str) {
    errors.add("prompt_mismatch", pc.mismatched, || {
        format!(
            "{whose}prompt length mismatch: built {} tokens, the server counted {:+} more",
            pc.expected,
            pc.max_diff.unwrap_or(0)
        )
    });
}

/// [`prompt_check`] of requests each built to a length of its own: `pairs` holds each
/// request's built tokens and its record; the check's `expected` is `mean` (the mean built
/// length), and its largest difference is each request's own.
pub(crate) fn prompt_check_pairs<'a>(
    mean: u64,
    tolerance: u64,
    pairs: impl Iterator<Item = (u64, &'a RequestRecord)>,
) -> PromptCheck {
    let mut pc = PromptCheck {
        expected: mean,
        ..Default::default()
    };
    for (built, r) in pairs {
        let Some(n) = r.prompt_tokens_reported else {
            continue;
        };
        let one = prompt_check(built, tolerance, std::slice::from_ref(r));
        pc.checked += 1;
        pc.mismatched += one.mismatched;
        pc.reported_min = Some(pc.reported_min.map_or(n, |m| m.min(n)));
        pc.reported_max = Some(pc.reported_max.map_or(n, |m| m.max(n)));
        if let Some(d) = one.max_diff
            && pc.max_diff.is_none_or(|m| d.abs() > m.abs())
        {
            pc.max_diff = Some(d);
        }
    }
    pc
}

/// A row with its status and reason and no figures (Over capacity, Not run, a failure before
/// any figure).
pub fn bare_result(cell: &PlannedCell, status: CellStatus, reason: Option<String>) -> CellResult {
    let k = cell.key;
    let mut r = CellResult::empty(
        k.phase,
        k.context_tokens,
        &cell.label,
        k.concurrency,
        status,
    );
    r.status_reason = reason;
    // A rate row's rate is its identity: every row of the cell carries it, figures or not.
    if k.phase == crate::cell::Phase::Rate {
        r.request_rate = k.request_rate();
    }
    // A session row writes its columns as null where it has no figures.
    if k.phase == crate::cell::Phase::Session {
        r.session = crate::session::SessionColumns::bare();
        r.session.session_rate = Some(k.request_rate());
    }
    r
}

/// The row of a standalone prefill cell: `records` are cold prefills of C tokens, each with a
/// prefix of its own. Any one that is not Valid makes the row (its failure is the cell's);
/// otherwise the row gives the median prompt tok/s and TTFT, and the TTFT distribution
/// (`ttft_ms`: min, median, max) as the spread.
pub fn prefill_series_result(
    cell: &PlannedCell,
    records: &[RequestRecord],
    expected: u64,
    tolerance: u64,
) -> CellResult {
    let rows: Vec<CellResult> = records
        .iter()
        .map(|r| prefill_result(cell, r, expected, tolerance))
        .collect();
    if let Some(bad) = rows.iter().find(|r| r.status != CellStatus::Valid) {
        return bad.clone();
    }
    let Some(mut row) = rows.first().cloned() else {
        return failed_result(cell, "no_token", "no prefill was measured".into());
    };
    let mut rates: Vec<f64> = rows.iter().filter_map(|r| r.prompt_tok_per_s).collect();
    let mut ttft: Vec<f64> = rows.iter().filter_map(|r| r.ttft_ms_p50).collect();
    row.prompt_tok_per_s = Summary::of_vec(&mut rates).map(|s| s.p50);
    row.ttft_ms = Summary::of_vec(&mut ttft);
    row.ttft_ms_p50 = row.ttft_ms.as_ref().map(|s| s.p50);
    row.requests_sent = Some(records.len() as u64);
    row.completed_requests = Some(records.len() as u64);
    row.prompt_check = Some(prompt_check(expected, tolerance, records));
    row
}

/// The row of a cell that Ctrl-C (or SIGTERM) stopped while it ran: Not run, saying so.
pub fn interrupted_result(cell: &PlannedCell) -> CellResult {
    bare_result(
        cell,
        CellStatus::NotRun,
        Some("the run was interrupted during this cell".into()),
    )
}

/// How long a window keeps running after its first request error, seconds. Any error fails the
/// cell, so the rest of the window only counts errors: 10 s of them describe the failure (its
/// kinds and rate), and a server that fails every request no longer holds the run for the
/// whole window.
pub const FAILING_WINDOW_GRACE_S: f64 = 10.0;

/// Whether a window should end now, given how long ago its first request error came.
pub fn failing_window_done(first_error_age_s: Option<f64>) -> bool {
    first_error_age_s.is_some_and(|a| a >= FAILING_WINDOW_GRACE_S)
}

/// Error kinds of the transport (the connection, not the server's answer), warm-ups included.
fn is_transport_error(kind: &str) -> bool {
    matches!(
        kind.strip_prefix("warmup_").unwrap_or(kind),
        "connect"
            | "timeout"
            | "http"
            | "stream_broken"
            | "no_done"
            | "timeout_first_token"
            | "timeout_idle"
            | "prompt_connect"
    )
}

/// Whether `--resume` measures a saved row again: Not run always; Failed with `retry_failed`,
/// and by default when the run was aborted (the server went away) and the cell failed only on
/// the connection: that cell was cut by the crash, not measured.
pub fn measure_again_on_resume(row: &CellResult, run_aborted: bool, retry_failed: bool) -> bool {
    match row.status {
        CellStatus::NotRun => true,
        CellStatus::Failed => {
            retry_failed
                || (run_aborted
                    && !row.errors.is_empty()
                    && row.errors.keys().all(|k| is_transport_error(k)))
        }
        _ => false,
    }
}

/// Whether a finished run failed as a whole: at least one cell was measured (not Over capacity,
/// not Not run) and every measured cell is Failed. Returns the first failure's text (or a
/// generic one) so the exit line can say what went wrong.
pub fn every_measured_cell_failed(rows: &[CellResult]) -> Option<String> {
    let measured: Vec<&CellResult> = rows
        .iter()
        .filter(|r| !matches!(r.status, CellStatus::OverCapacity | CellStatus::NotRun))
        .collect();
    if measured.is_empty() || measured.iter().any(|r| r.status != CellStatus::Failed) {
        return None;
    }
    Some(
        measured
            .iter()
            .find_map(|r| r.first_error.clone().or(r.status_reason.clone()))
            .unwrap_or_else(|| "no reason recorded".into()),
    )
}

/// Whether a finished run measured nothing: it wrote rows and none of them has figures (a
/// capacity row, derived from others, aside): every cell was Over capacity, Not run (the
/// `--max-time` budget spent before the first) or Failed. Returns why, in the words of the
/// first row that has them. No rows at all measured nothing too: every section was dropped
/// before a cell was planned (the run's notes say why).
pub fn nothing_measured(rows: &[CellResult]) -> Option<String> {
    if rows.is_empty() {
        return Some(
            "no cell was run: every section was dropped or skipped (the notes above say why)"
                .into(),
        );
    }
    let cells: Vec<&CellResult> = rows
        .iter()
        .filter(|r| r.phase != crate::cell::Phase::Capacity)
        .collect();
    if cells.is_empty() || cells.iter().any(|r| r.status.has_figures()) {
        return None;
    }
    Some(
        cells
            .iter()
            .find_map(|r| r.status_reason.clone().or(r.first_error.clone()))
            .unwrap_or_else(|| "no reason recorded".into()),
    )
}

/// Whether the server accepts requests but never answers them: the last two measured rows
/// (Over capacity and Not run ones are not measured) both Failed, every error of each a
/// first-token timeout (warm-up or window). The run stops there rather than wait out the limit
/// cell after cell.
pub fn first_token_stall(rows: &[CellResult]) -> bool {
    let measured = rows
        .iter()
        .rev()
        .filter(|r| !matches!(r.status, CellStatus::OverCapacity | CellStatus::NotRun))
        .take(2);
    let stalled = |r: &CellResult| {
        r.status == CellStatus::Failed
            && !r.errors.is_empty()
            && r.errors.keys().all(|k| k.ends_with("timeout_first_token"))
    };
    let v: Vec<&CellResult> = measured.collect();
    v.len() == 2 && v.into_iter().all(stalled)
}

/// The row of a cell the plan predicted over the KV capacity: never run, whatever else happens.
pub fn over_capacity_result(cell: &PlannedCell, max_output: u32, kv_capacity: u64) -> CellResult {
    let k = cell.key;
    bare_result(
        cell,
        CellStatus::OverCapacity,
        Some(crate::capacity::over_capacity_reason(
            k.concurrency,
            k.context_tokens,
            max_output,
            kv_capacity,
        )),
    )
}

/// A Failed row with one error of `kind`.
pub fn failed_result(cell: &PlannedCell, kind: &str, message: String) -> CellResult {
    let mut r = bare_result(cell, CellStatus::Failed, None);
    r.errors.insert(kind.to_string(), 1);
    r.first_error = Some(message);
    r
}

/// The row of a prefill measurement: one request with `max_tokens = 1`.
pub fn prefill_result(
    cell: &PlannedCell,
    record: &RequestRecord,
    expected: u64,
    tolerance: u64,
) -> CellResult {
    let k = cell.key;
    let mut row = match (&record.outcome, prefill_figures(k.context_tokens, record)) {
        (Outcome::Cancelled, _) => return interrupted_result(cell),
        (Outcome::Error { kind, message }, _) => failed_result(cell, kind, message.clone()),
        (_, Some(f)) => {
            let mut r = bare_result(cell, CellStatus::Valid, None).with_prefill(&f);
            // The scout's output (one token by `max_tokens = 1`) is counted like any request's:
            // the server's final usage when it reports the same count, else the chunks.
            let chunks = record.chunks.len() as u64;
            r.token_count_source = Some(if record.completion_tokens_reported == Some(chunks) {
                TokenCountSource::ServerUsageFinalTokenizerChunks
            } else {
                TokenCountSource::ChunkCount
            });
            r
        }
        (_, None) => failed_result(
            cell,
            "no_token",
            "the prefill request produced no token".into(),
        ),
    };
    let pc = prompt_check(expected, tolerance, std::slice::from_ref(record));
    if pc.mismatched > 0 && row.status == CellStatus::Valid {
        let mut errors = ErrorTally::default();
        tally_mismatch(&mut errors, &pc, "");
        row = bare_result(
            cell,
            CellStatus::Failed,
            Some("the server's usage.prompt_tokens differs from the built prompt".into()),
        );
        row.errors = errors.by_kind;
        row.first_error = errors.first;
    }
    row.prompt_check = Some(pc);
    row
}

/// Everything gathered for one decode cell.
#[derive(Debug, Clone)]
pub struct DecodeObservation<'a> {
    /// Every request of the measured phase, token counts final.
    pub records: &'a [RequestRecord],
    /// The window, ns from the cell origin.
    pub window: Window,
    /// Which rule opened the window.
    pub readiness: ReadinessBy,
    /// Queue, readiness and counter-read observations (completed here with the TTFT rule and
    /// the ramp).
    pub queue: QueueObservation,
    /// Pairs of consecutive in-window samples with the waiting gauge above zero.
    pub queued_samples: u64,
    /// The readiness limit, seconds.
    pub readiness_timeout_s: f64,
    /// The median TTFT of this context's N = 1 cell, ms, if measured.
    pub warm_ttft_ms: Option<f64>,
    /// Errors of the warm-up requests (kinds already prefixed).
    pub warmup_errors: ErrorTally,
    /// Prompt tokens the tool built (C).
    pub expected_prompt_tokens: u64,
    /// Tokens a reported prompt length may differ by (0: exact prompts).
    pub prompt_tolerance: u64,
    /// How tokens were counted.
    pub count: CountReport,
    /// The source claimed when no request had a chunk.
    pub nominal_source: TokenCountSource,
    /// The server counter's delta over the window.
    pub server_generation_tokens: Option<f64>,
    /// The measurement itself broke: why.
    pub fault: Option<String>,
    /// The client's scheduling delays through the window, ms (`llmib_core::lag`; empty when
    /// no window was measured).
    pub client_delay_ms: Vec<f64>,
    /// How the window's chunk instants were taken, where the raw reader stamped them with the
    /// kernel's receive time (`llmib_core::lag`; `None`: the reqwest reader).
    pub kernel_stamps: Option<crate::lag::KernelStamps>,
    /// Speculative decoding over the window, where the server reported it.
    pub speculative: Option<crate::cell::SpecFigures>,
}

/// The row of a decode cell: figures, status and reason, errors, queue and prompt checks.
pub fn decode_result(cell: &PlannedCell, o: DecodeObservation<'_>) -> CellResult {
    decode_result_at(cell, o, &[])
}

/// [`decode_result`] with the run's extra percentiles (`--percentiles`) in TTFT and TBT.
pub fn decode_result_at(cell: &PlannedCell, o: DecodeObservation<'_>, ps: &[f64]) -> CellResult {
    busy_result(cell, &o.queue).unwrap_or_else(|| window_result(cell, o, ps))
}

/// [`decode_result`] of a window that ran.
fn window_result(cell: &PlannedCell, o: DecodeObservation<'_>, ps: &[f64]) -> CellResult {
    let n = cell.key.concurrency;
    let f = crate::figures::decode_figures_at(o.records, o.window, ps);
    let mut queue = o.queue;
    queue.ready = o.readiness.is_ready();
    queue.readiness_by = Some(o.readiness.as_str().to_string());
    // The tokens that came before the window opened: the ramp readiness kept out.
    queue.ramp_tokens = Some(
        o.records
            .iter()
            .flat_map(|r| &r.chunks)
            .filter(|c| c.t_ns < o.window.start_ns)
            .map(|c| u64::from(c.tokens))
            .sum(),
    );
    let mut ttft_over = None;
    if queue.max_waiting.is_none()
        && let Some(ttft) = &f.ttft_ms
    {
        let threshold = ttft_queue_threshold_ms(o.warm_ttft_ms, ttft.min);
        let over = o
            .records
            .iter()
            .filter_map(|r| r.ttft_ns())
            .filter(|t| *t as f64 / 1e6 > threshold)
            .count() as u64;
        queue.ttft_queue_threshold_ms = Some(threshold);
        queue.ttft_over_threshold = Some(over);
        ttft_over = Some((over, threshold));
    }
    let mut queue_wait = None;
    if let Some(mean) = queue.mean_waiting {
        let arrivals = o
            .records
            .iter()
            .filter(|r| r.sent_ns > o.window.start_ns && r.sent_ns <= o.window.end_ns)
            .count() as u64;
        let threshold = queue_wait_threshold_ms(f.tbt_ms.as_ref().map(|t| t.p50));
        queue.queue_wait_threshold_ms = Some(threshold);
        queue.queue_wait_ms = queue_wait_ms(mean, o.window.secs(), arrivals);
        queue_wait = queue.queue_wait_ms.map(|w| (w, threshold));
    }
    let pc = prompt_check(o.expected_prompt_tokens, o.prompt_tolerance, o.records);
    let mut errors = o.warmup_errors;
    errors.add_records(o.records, "");
    tally_mismatch(&mut errors, &pc, "");
    let verdict = decode_verdict(&DecodeFacts {
        concurrency: n,
        fault: o.fault.as_deref(),
        errors: &errors,
        readiness: o.readiness,
        readiness_timeout_s: o.readiness_timeout_s,
        queued_samples: o.queued_samples,
        max_waiting: queue.max_waiting,
        queue_wait,
        ttft_over,
        output_tokens: f.output_tokens,
    });
    let mut row = bare_result(cell, verdict.status, verdict.reason);
    if verdict.status.has_figures() {
        row = row.with_decode(&f);
        row.token_count_source = Some(o.count.source_or(o.nominal_source));
        row.token_count_note = o.count.note();
        row.server_generation_tokens = o.server_generation_tokens;
        let mut delays = o.client_delay_ms;
        row.client_lag = crate::lag::client_lag(&mut delays, row.tbt_ms_p50, o.kernel_stamps);
        row.speculative = o.speculative;
        row.tokens_per_chunk = crate::figures::tokens_per_chunk(o.records, o.window);
    } else {
        row.requests_sent = Some(f.requests_sent);
    }
    row.errors = errors.by_kind;
    row.first_error = errors.first.or(o.fault);
    row.queue = Some(queue);
    row.prompt_check = Some(pc);
    row.requests_stopped_early = stopped_early(o.records, o.window);
    crate::loop_row::guard_loops(row, o.records)
}

/// The drain barrier found the server busy at the start (`crate::drain`): nothing was sent,
/// nothing is measured, the row says what the gauges showed.
fn busy_result(cell: &PlannedCell, queue: &QueueObservation) -> Option<CellResult> {
    let reason = queue.start_barrier.and_then(|b| b.busy_reason())?;
    let mut row = bare_result(cell, CellStatus::Failed, Some(reason.clone()));
    row.errors.insert(crate::drain::SERVER_BUSY_KIND.into(), 1);
    row.first_error = Some(reason);
    row.queue = Some(queue.clone());
    Some(row)
}

/// Requests that ended inside the window for a reason other than the length limit (`stop`:
/// EOS or a stop string); `None` when there were none.
pub fn stopped_early(records: &[RequestRecord], w: Window) -> Option<u64> {
    let n = records
        .iter()
        .filter(|r| w.contains(r.end_ns))
        .filter(|r| matches!(&r.outcome, Outcome::Finished { reason } if reason != "length"))
        .count() as u64;
    (n > 0).then_some(n)
}

#[cfg(test)]
#[path = "tests/verdict.rs"]
mod tests;
