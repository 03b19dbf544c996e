//! `merge`: one run's rows from its shards' results (`run --shard I/N` on several client
//! machines). Pure: the caller reads the directories, these functions decide every row.
//!
//! Why the figures are recomputed rather than combined: a percentile of the whole cell is not
//! any mix of the shards' percentiles, and a throughput over the window is the server's, not a
//! sum of clients' estimates. So each shard's records are moved onto the timetable's clock
//! (a record at `t` on a shard whose origin was late by `L` by its own wall clock happened at
//! `t + L` on the common clock), their union is judged by the same functions a one-machine
//! run uses ([`crate::decode_result`], [`crate::rate_result`]), and the shards' own rows only
//! contribute what no record holds: the server's gauges and counters (read by every shard,
//! server-wide), how tokens were counted, and each shard's status.
//!
//! The status of a merged row, the first that fires wins:
//! 1. **Failed** when a shard's own row is Failed (the reason names every such shard), or the
//!    shards disagree on the window or the schedule (then the union is not one cell);
//! 2. **Not run** when a shard that had streams or requests in the cell did not run them
//!    (its row says Not run, or it wrote none): the union is not the designed load;
//! 3. the union's own status when that is Failed;
//! 4. **Requests queued** when a shard was not ready when the window opened, or its own row
//!    is Requests queued (the reason names the shards);
//! 5. the union's own status.

use crate::cell::{CellResult, CellStatus, QueueObservation};
use crate::cell::{MergedShard, MergedShards, ShardCell};
use crate::counting::CountReport;
use crate::figures::Window;
use crate::load::{RateObservation, closed_loop_slo};
// The tests judge rows with the plain form (no extra percentiles).
#[cfg(test)]
use crate::load::rate_result;
use crate::meta::TokenCountSource;
use crate::plan::{Plan, PlannedCell, prompt_tolerance};
use crate::readiness::ReadinessBy;
use crate::record::RequestRecord;
use crate::shard::ShardSpec;
use crate::timetable::ShardSchedule;
use crate::verdict::{DecodeObservation, ErrorTally, bare_result};
use fault::CellMergeError;

mod fault;

/// One shard's part of a cell: its row, its records of the cell (on its own clock) and, for a
/// rate cell, its line of `schedules.jsonl`.
#[derive(Debug, Clone, Copy)]
pub struct ShardPart<'a> {
    /// The shard's index (its `--shard I`).
    pub index: u32,
    /// Its row of the cell.
    pub row: &'a CellResult,
    /// Its records of the cell, ns from its own cell origin.
    pub records: &'a [RequestRecord],
    /// A rate cell's schedule as the shard wrote it.
    pub schedule: Option<&'a ShardSchedule>,
}

/// How late a shard's cell origin was against the timetable, ns, by its own wall clock
/// (negative: early).
pub fn origin_late_ns(sc: &ShardCell) -> i128 {
    i128::from(sc.origin_unix_ns) - i128::from(sc.origin_due_unix_ns)
}

/// `t + late_ns`, clamped to the range of a record's instants: a hand-edited or hostile row
/// gives a wrong instant, never a panic.
fn shift(t: u64, late_ns: i128) -> u64 {
    (i128::from(t) + late_ns).clamp(0, i128::from(u64::MAX)) as u64
}

/// A shard's records moved onto the common clock: every instant plus `late_ns`
/// ([`origin_late_ns`] of its row), saturating at both ends.
pub fn to_common_clock(records: &[RequestRecord], late_ns: i128) -> Vec<RequestRecord> {
    records
        .iter()
        .map(|r| {
            let mut r = r.clone();
            r.sent_ns = shift(r.sent_ns, late_ns);
            r.headers_ns = r.headers_ns.map(|t| shift(t, late_ns));
            r.end_ns = shift(r.end_ns, late_ns);
            for c in &mut r.chunks {
                c.t_ns = shift(c.t_ns, late_ns);
            }
            r
        })
        .collect()
}

fn late_of(p: &ShardPart<'_>) -> i128 {
    p.row.shard.as_deref().map_or(0, origin_late_ns)
}

/// Every shard's records of a cell on the common clock, ordered by (stream, send) so the
/// merged file reads the same whatever order the shards were named in.
pub fn union_records(parts: &[ShardPart<'_>]) -> Vec<RequestRecord> {
    let mut all: Vec<RequestRecord> = parts
        .iter()
        .flat_map(|p| to_common_clock(p.records, late_of(p)))
        .collect();
    all.sort_by_key(|r| (r.stream, r.sent_ns));
    all
}

/// Most requests in flight at once: the largest number of the sent records' `[sent_ns,
/// end_ns)` intervals that overlap (one ending at the instant another starts does not).
pub fn max_in_flight(records: &[RequestRecord]) -> u64 {
    // An end sorts before a start at the same instant (false < true): half-open intervals.
    let mut events: Vec<(u64, bool)> = records
        .iter()
        .filter(|r| r.was_sent())
        .flat_map(|r| [(r.sent_ns, true), (r.end_ns.max(r.sent_ns), false)])
        .collect();
    events.sort_unstable();
    let (mut now, mut most) = (0u64, 0u64);
    for (_, start) in events {
        if start {
            now += 1;
            most = most.max(now);
        } else {
            now = now.saturating_sub(1);
        }
    }
    most
}

/// Why a shard's row is what it is, in words.
fn why(row: &CellResult) -> String {
    row.status_reason
        .clone()
        .or_else(|| row.first_error.clone())
        .unwrap_or_else(|| row.status.label().to_string())
}

/// What the shards' own rows say of the merged cell (module docs, rules 1, 2 and 4).
#[derive(Debug, Default)]
struct Findings {
    failed: Vec<String>,
    missing: Vec<String>,
    queued: Vec<String>,
    not_ready: bool,
}

impl Findings {
    /// Every shard measured its part (a row with figures, ready at open).
    fn complete(&self) -> bool {
        self.failed.is_empty() && self.missing.is_empty() && !self.not_ready
    }
}

fn findings(parts: &[ShardPart<'_>], owes: &dyn Fn(&ShardPart<'_>) -> u64) -> Findings {
    let mut f = Findings::default();
    for p in parts {
        let (row, name) = (p.row, format!("shard {}", p.index));
        let requests = row.shard.as_ref().map_or(0, |s| s.requests);
        match row.status {
            CellStatus::Failed => f.failed.push(format!("{name} failed: {}", why(row))),
            CellStatus::NotRun if requests == 0 && owes(p) == 0 => {}
            CellStatus::NotRun | CellStatus::OverCapacity => f
                .missing
                .push(format!("{name} did not run its part: {}", why(row))),
            CellStatus::RequestsQueued => f.queued.push(format!("{name} was queued: {}", why(row))),
            CellStatus::Valid => {}
        }
        let ready = row.shard.as_ref().and_then(|s| s.ready_at_open);
        if row.status.has_figures() && ready == Some(false) {
            f.not_ready = true;
            if row.status == CellStatus::Valid {
                f.queued
                    .push(format!("{name} was not ready when the window opened"));
            }
        }
    }
    f
}

/// What the merged row says of its shards.
fn merged_shards(parts: &[ShardPart<'_>], complete: bool) -> MergedShards {
    MergedShards {
        shards: parts
            .iter()
            .map(|p| {
                let sc = p.row.shard.as_deref();
                MergedShard {
                    index: p.index,
                    status: p.row.status,
                    status_reason: p.row.status_reason.clone(),
                    requests: sc.map_or(0, |s| s.requests),
                    origin_late_ms: sc.map_or(0.0, |s| origin_late_ns(s) as f64 / 1e6),
                    ready_at_open: sc.and_then(|s| s.ready_at_open),
                    clock: sc.and_then(|s| s.clock),
                    prep_ms: sc.and_then(|s| s.slot?.ready_ns).map(|n| n as f64 / 1e6),
                    prep_budget_ms: sc.and_then(|s| s.slot).map(|r| r.prep_ns() as f64 / 1e6),
                }
            })
            .collect(),
        complete,
    }
}

/// The part of shard 0 (the first part when shard 0 is absent).
fn first<'p, 'a>(parts: &'p [ShardPart<'a>]) -> Option<&'p ShardPart<'a>> {
    parts.iter().find(|p| p.index == 0).or(parts.first())
}

/// The weakest count source of the shards' rows that have one, with their notes: the union
/// claims no more than its weakest shard.
fn weakest_count(parts: &[ShardPart<'_>]) -> (CountReport, TokenCountSource, Option<String>) {
    let mut count = CountReport::new();
    for s in parts.iter().filter_map(|p| p.row.token_count_source) {
        count.source = Some(count.source.map_or(s, |a| a.weaker(s)));
    }
    let notes: Vec<String> = parts
        .iter()
        .filter_map(|p| {
            Some(format!(
                "shard {}: {}",
                p.index,
                p.row.token_count_note.as_ref()?
            ))
        })
        .collect();
    // With no source anywhere no token was counted; claim the weakest rather than a better one.
    let nominal = count.source.unwrap_or(TokenCountSource::ChunkCount);
    (
        count,
        nominal,
        (!notes.is_empty()).then(|| notes.join("; ")),
    )
}

/// Carries the shards' wall-clock bounds and what they were onto the merged row.
fn finish_row(mut row: CellResult, parts: &[ShardPart<'_>], complete: bool) -> CellResult {
    row.started_at = parts.iter().filter_map(|p| p.row.started_at.clone()).min();
    row.finished_at = parts.iter().filter_map(|p| p.row.finished_at.clone()).max();
    row.shard = None;
    row.merged = Some(Box::new(merged_shards(parts, complete)));
    row
}

/// A Not run row for a cell some shard did not run its part of.
fn missing_row(cell: &PlannedCell, parts: &[ShardPart<'_>], f: &Findings) -> CellResult {
    let reason = format!("not every shard ran its part: {}", f.missing.join("; "));
    finish_row(
        bare_result(cell, CellStatus::NotRun, Some(reason)),
        parts,
        false,
    )
}

/// Applies the shards' findings to the union's row (module docs, rules 1, 3 and 4).
fn apply_findings(mut row: CellResult, f: &Findings) -> CellResult {
    if !f.failed.is_empty() {
        row.status = CellStatus::Failed;
        row.status_reason = Some(f.failed.join("; "));
    } else if !f.queued.is_empty() && row.status != CellStatus::Failed {
        row.status = CellStatus::RequestsQueued;
        row.status_reason = Some(f.queued.join("; "));
    }
    row
}

/// The decode window every shard's row gives (`open_ns`, `close_ns` of its [`ShardCell`]):
/// an error when none gives one or two disagree.
fn decode_window(parts: &[ShardPart<'_>]) -> Result<Window, CellMergeError> {
    let mut seen: Option<(u32, Window)> = None;
    for p in parts {
        let Some(sc) = p.row.shard.as_deref() else {
            continue;
        };
        let (Some(start_ns), Some(end_ns)) = (sc.open_ns, sc.close_ns) else {
            continue;
        };
        let w = Window { start_ns, end_ns };
        match seen {
            Some((i, s)) if s != w => {
                return Err(CellMergeError::WindowsDisagree {
                    first: i,
                    first_window: s,
                    shard: p.index,
                    window: w,
                });
            }
            Some(_) => {}
            None => seen = Some((p.index, w)),
        }
    }
    seen.map(|(_, w)| w).ok_or(CellMergeError::NoWindow)
}

/// Warm-up errors of every shard's row (the `warmup_` kinds), each shard's first error as
/// the text when it had some.
fn warmup_errors(parts: &[ShardPart<'_>]) -> ErrorTally {
    let mut t = ErrorTally::default();
    for p in parts {
        for (kind, n) in p
            .row
            .errors
            .iter()
            .filter(|(k, _)| k.starts_with("warmup_"))
        {
            t.add(kind, *n, || {
                format!(
                    "shard {}: {}",
                    p.index,
                    p.row.first_error.as_deref().unwrap_or(kind)
                )
            });
        }
    }
    t
}

/// Shard 0's queue observation, its instants moved onto the common clock and the figures
/// [`crate::decode_result`] recomputes from the union cleared (shard 0 judged them on its own
/// streams).
fn shard0_queue(p: &ShardPart<'_>) -> QueueObservation {
    let mut q = p.row.queue.clone().unwrap_or_default();
    let late_s = late_of(p) as f64 / 1e9;
    q.counter_reads_s = q.counter_reads_s.map(|[a, b]| [a + late_s, b + late_s]);
    q.ttft_queue_threshold_ms = None;
    q.ttft_over_threshold = None;
    q.queue_wait_ms = None;
    q.queue_wait_threshold_ms = None;
    q
}

/// The rule that opened shard 0's window, as its row names it. A row that names none is
/// judged by the shards' `ready_at_open`: every shard ready reads as the first-token rule (with
/// the gauges where shard 0 read them), anything else as `timeout` (no evidence the server ran
/// all N).
fn readiness_of(q: &QueueObservation, parts: &[ShardPart<'_>]) -> ReadinessBy {
    let named = q
        .readiness_by
        .as_ref()
        .and_then(|s| serde_json::from_value(serde_json::Value::String(s.clone())).ok());
    let all_ready = parts
        .iter()
        .filter(|p| p.row.status.has_figures())
        .all(|p| p.row.shard.as_ref().and_then(|s| s.ready_at_open) == Some(true));
    named.unwrap_or(match (all_ready, q.max_waiting.is_some()) {
        (true, true) => ReadinessBy::GaugesAndFirstTokens,
        (true, false) => ReadinessBy::FirstTokens,
        (false, _) => ReadinessBy::Timeout,
    })
}

/// The inputs of a merged decode cell that are not in its records.
#[derive(Debug, Clone, Copy)]
pub struct DecodeMergeInputs<'a> {
    /// The run's plan (shard 0's).
    pub plan: &'a Plan,
    /// The median TTFT of this context's merged N = 1 cell, ms (the gauge-less queue rule).
    pub warm_ttft_ms: Option<f64>,
}

/// The merged row of a decode cell from every shard's part (module docs), with the union of
/// records it was computed from (common clock, global stream indices).
pub fn merge_decode_cell(
    cell: &PlannedCell,
    inputs: DecodeMergeInputs<'_>,
    parts: &[ShardPart<'_>],
) -> (CellResult, Vec<RequestRecord>) {
    let n = u64::from(cell.key.concurrency);
    let count = parts.len() as u32;
    let f = findings(parts, &|p| {
        ShardSpec {
            index: p.index,
            count,
        }
        .share(n)
    });
    let records = union_records(parts);
    let window = decode_window(parts);
    let fault = (!f.failed.is_empty())
        .then(|| f.failed.join("; "))
        .or(window.as_ref().err().map(ToString::to_string))
        .or(foreign_stream(parts, n, count).map(|e| e.to_string()));
    if fault.is_none() && !f.missing.is_empty() {
        return (missing_row(cell, parts, &f), records);
    }
    let Some(zero) = first(parts) else {
        let row = bare_result(cell, CellStatus::NotRun, Some("no shard's row".into()));
        return (finish_row(row, parts, false), records);
    };
    let st = &inputs.plan.settings;
    let (count_report, nominal, note) = weakest_count(parts);
    let queue = shard0_queue(zero);
    let readiness = readiness_of(&queue, parts);
    let window = window.unwrap_or(Window {
        start_ns: 0,
        end_ns: 0,
    });
    let obs = DecodeObservation {
        records: &records,
        window,
        readiness,
        queue,
        // The gauge rule's consecutive samples are not in a row; shard 0's own verdict of
        // them reaches the merged row through rule 4 (its row is then Requests queued).
        queued_samples: 0,
        readiness_timeout_s: st.readiness_timeout_s,
        warm_ttft_ms: inputs.warm_ttft_ms,
        warmup_errors: warmup_errors(parts),
        expected_prompt_tokens: zero
            .row
            .prompt_check
            .as_ref()
            .map_or(cell.key.context_tokens, |pc| pc.expected),
        prompt_tolerance: prompt_tolerance(st.token_targeting, cell.key.context_tokens),
        count: count_report,
        nominal_source: nominal,
        server_generation_tokens: server_tokens(parts),
        fault,
        client_delay_ms: Vec::new(),
        // The shards' own lateness verdicts (their kernel stamps with them) come from their
        // rows: `worst_lag` below.
        kernel_stamps: None,
        speculative: zero.row.speculative.clone(),
    };
    let mut row = apply_findings(
        crate::verdict::decode_result_at(cell, obs, &st.percentiles),
        &f,
    );
    if row.status.has_figures() {
        row.token_count_note = note;
        row.client_lag = worst_lag(parts);
        if let Some(slo) = st.load.as_ref().and_then(|l| l.slo.as_ref()) {
            row.slo = Some(closed_loop_slo(slo, &records, window));
        }
    }
    (finish_row(row, parts, f.complete()), records)
}

/// A decode record that is not one of its shard's streams (i ≡ index mod count, i < N): two
/// shards would then have run one stream, and the union would not be the cell's N.
fn foreign_stream(parts: &[ShardPart<'_>], n: u64, count: u32) -> Option<CellMergeError> {
    parts.iter().find_map(|p| {
        let r = p.records.iter().find(|r| {
            let s = u64::from(r.stream);
            s >= n || s % u64::from(count.max(1)) != u64::from(p.index)
        })?;
        Some(CellMergeError::ForeignStream {
            shard: p.index,
            stream: r.stream,
        })
    })
}

/// The server's generation-token counter over the window: server-wide, so any shard's read
/// is the cell's; shard 0's first.
fn server_tokens(parts: &[ShardPart<'_>]) -> Option<f64> {
    let read = |p: &ShardPart<'_>| {
        p.row
            .shard
            .as_ref()
            .and_then(|s| s.server_generation_tokens)
    };
    first(parts)
        .and_then(read)
        .or_else(|| parts.iter().find_map(read))
}

/// The latest client of the shards (largest p90 scheduling delay): each client's lateness is
/// its own machine's, and the worst one bounds what the merged figures may carry.
fn worst_lag(parts: &[ShardPart<'_>]) -> Option<crate::lag::ClientLag> {
    parts
        .iter()
        .filter_map(|p| p.row.client_lag.clone())
        .max_by(|a, b| a.delay_ms.p90.total_cmp(&b.delay_ms.p90))
}

/// A rate cell's global schedule, checked: every shard that wrote one wrote the same due
/// instants, no request is claimed by two shards, and each shard's records are its own
/// requests. Returns the due instants and, where prompt lengths vary, the built length of
/// every request (index = request).
fn common_schedule(
    parts: &[ShardPart<'_>],
) -> Result<(Vec<u64>, Option<Vec<u64>>), CellMergeError> {
    let with: Vec<(u32, &ShardSchedule)> = parts
        .iter()
        .filter_map(|p| Some((p.index, p.schedule?)))
        .collect();
    let Some((i0, s0)) = with.first() else {
        return Err(CellMergeError::NoSchedule);
    };
    let due = &s0.due_ns;
    let mut owner: Vec<Option<u32>> = vec![None; due.len()];
    let varies = with.iter().any(|(_, s)| s.prompt_tokens.is_some());
    let mut built = varies.then(|| vec![0u64; due.len()]);
    for (i, s) in &with {
        if s.due_ns != *due {
            return Err(CellMergeError::SchedulesDisagree {
                first: *i0,
                first_due: due.len(),
                shard: *i,
                due: s.due_ns.len(),
            });
        }
        for (j, m) in s.mine.iter().enumerate() {
            let slot = owner
                .get_mut(*m as usize)
                .ok_or(CellMergeError::PastSchedule {
                    shard: *i,
                    request: *m,
                    len: due.len(),
                })?;
            if let Some(other) = slot.replace(*i) {
                return Err(CellMergeError::Claimed {
                    other,
                    shard: *i,
                    request: *m,
                });
            }
            let tokens = s.prompt_tokens.as_ref().and_then(|t| t.get(j));
            if let (Some(b), Some(t)) = (built.as_mut(), tokens) {
                b[*m as usize] = *t;
            }
        }
    }
    for p in parts {
        if let Some(r) = p
            .records
            .iter()
            .find(|r| owner.get(r.stream as usize).copied().flatten() != Some(p.index))
        {
            return Err(CellMergeError::ForeignRequest {
                shard: p.index,
                request: r.stream,
            });
        }
    }
    Ok((due.clone(), built))
}

/// The merged row of an open-loop rate cell from every shard's part (module docs), with the
/// union of records it was computed from (common clock, global request indices).
pub fn merge_rate_cell(
    cell: &PlannedCell,
    plan: &Plan,
    parts: &[ShardPart<'_>],
) -> (CellResult, Vec<RequestRecord>) {
    let records = union_records(parts);
    let schedule = common_schedule(parts);
    let n = schedule.as_ref().map_or(0, |(due, _)| due.len() as u64);
    let count = parts.len() as u32;
    let f = findings(parts, &|p| {
        ShardSpec {
            index: p.index,
            count,
        }
        .share(n)
    });
    let fault = (!f.failed.is_empty())
        .then(|| f.failed.join("; "))
        .or(schedule.as_ref().err().map(ToString::to_string));
    if fault.is_none() && !f.missing.is_empty() {
        return (missing_row(cell, parts, &f), records);
    }
    let (due, built) = schedule.unwrap_or_default();
    let waited = vec![false; due.len()];
    let (count_report, nominal, note) = weakest_count(parts);
    let load = plan.settings.load.as_ref();
    let zero = first(parts);
    let arrival = load.map(|l| l.arrival).or_else(|| {
        let f = zero?.row.rate.as_ref()?;
        f.arrival.parse().ok()
    });
    let expected = parts
        .iter()
        .find_map(|p| p.schedule.map(|s| s.expected_prompt_tokens))
        .unwrap_or(cell.key.context_tokens);
    let obs = RateObservation {
        records: &records,
        scheduled_ns: &due,
        // Shards refuse --max-concurrency: no request waits for a cap.
        waited: &waited,
        requested_rate: zero
            .and_then(|p| p.row.request_rate)
            .or(cell.key.request_rate())
            .unwrap_or(0.0),
        arrival: arrival.unwrap_or(crate::arrival::ArrivalPattern::Poisson),
        max_concurrency: load.and_then(|l| l.max_concurrency),
        max_in_flight: max_in_flight(&records),
        slo: load.and_then(|l| l.slo.as_ref()),
        count: count_report,
        nominal_source: nominal,
        expected_prompt_tokens: expected,
        expected_prompts: built.as_deref(),
        // What a varying cell asked for (its output lengths) is not in the shards' files.
        workload: None,
        // Shards refuse --until-stable, so every schedule runs whole: a trace's replay says
        // so (`trace_end`) on every shard's row.
        stop_reason: parts
            .iter()
            .find_map(|p| p.row.rate.as_ref().and_then(|r| r.stop_reason)),
        prompt_tolerance: prompt_tolerance(plan.settings.token_targeting, cell.key.context_tokens),
        fault,
    };
    let mut row = apply_findings(
        crate::load::rate_result_at(cell, obs, &plan.settings.percentiles),
        &f,
    );
    row.token_count_note = note;
    (finish_row(row, parts, f.complete()), records)
}

/// A row measured by one shard or by none, copied: a prefill cell (shard 0's row; the others
/// say "measured by shard 0"), an Over capacity cell (identical on every shard). Its records
/// are shard 0's, on the common clock.
pub fn merge_copied_row(
    cell: &PlannedCell,
    parts: &[ShardPart<'_>],
) -> (CellResult, Vec<RequestRecord>) {
    let Some(zero) = first(parts) else {
        let row = bare_result(cell, CellStatus::NotRun, Some("no shard's row".into()));
        return (finish_row(row, parts, false), Vec::new());
    };
    let row = zero.row.clone();
    let complete = row.status.has_figures() || row.status == CellStatus::OverCapacity;
    let records = union_records(std::slice::from_ref(zero));
    (finish_row(row, parts, complete), records)
}

#[cfg(test)]
#[path = "tests/merge.rs"]
mod tests;

mod cell;
mod run;
mod session;
pub use cell::merge_cell;
pub use run::{MergedCell, MergedRun, ShardResults, merge_shards};
pub use session::merge_session_cell;
