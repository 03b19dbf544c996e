//! The rows of the open-loop section: a rate cell's row from its records and schedule, a
//! decode row's SLO verdict, and a context's capacity row from its measured points.

use crate::arrival::ArrivalPattern;
use crate::capacity_search::Capacity;
use crate::cell::{
    CapacityFigures, CapacityPoint, CellResult, CellStatus, Phase, RateFigures, SloRow,
};
use crate::counting::CountReport;
use crate::figures::Window;
use crate::meta::TokenCountSource;
use crate::plan::PlannedCell;
use crate::record::{Outcome, RequestRecord};
use crate::slo::{RequestSample, SampleSummaries, Slo, SloVerdict};
use crate::stats::{Summary, weighted_summary_at};
use crate::verdict::{ErrorTally, bare_result, prompt_check};

/// Everything gathered for one rate cell.
#[derive(Debug, Clone)]
pub struct RateObservation<'a> {
    /// One record per request sent; a record's `stream` is its index in the schedule.
    pub records: &'a [RequestRecord],
    /// Each scheduled request's due instant, ns from the cell origin (index = request).
    pub scheduled_ns: &'a [u64],
    /// Per request: it had to wait for the `max_concurrency` cap before it was sent.
    pub waited: &'a [bool],
    /// The rate asked for, requests per second.
    pub requested_rate: f64,
    /// How requests arrived.
    pub arrival: ArrivalPattern,
    /// The cap on requests in flight.
    pub max_concurrency: Option<u32>,
    /// Most requests in flight at once.
    pub max_in_flight: u64,
    /// The SLO to judge against.
    pub slo: Option<&'a Slo>,
    /// How tokens were counted.
    pub count: CountReport,
    /// The source claimed when no request had a chunk.
    pub nominal_source: TokenCountSource,
    /// Prompt tokens the tool built (C).
    pub expected_prompt_tokens: u64,
    /// Per request (index = `record.stream`), the prompt tokens built for it, where they
    /// vary; each record is then checked against its own (`expected_prompt_tokens` is
    /// unused).
    pub expected_prompts: Option<&'a [u64]>,
    /// What a cell of varying requests asked for and sent.
    pub workload: Option<crate::varying::WorkloadFigures>,
    /// Why the schedule stopped, where it did not run its fixed window.
    pub stop_reason: Option<crate::stable::StopReason>,
    /// Tokens a reported prompt length may differ by.
    pub prompt_tolerance: u64,
    /// The measurement itself broke: why.
    pub fault: Option<String>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// (n − 1) / (last − first) of sorted instants in ns; `None` with fewer than two or no span.
fn rate_of(sorted_ns: &[u64]) -> Option<f64> {
    let (first, last) = (sorted_ns.first()?, sorted_ns.last()?);
    let span = last.saturating_sub(*first) as f64 / 1e9;
    (sorted_ns.len() >= 2 && span > 0.0).then(|| (sorted_ns.len() - 1) as f64 / span)
}

/// The token-weighted gaps between consecutive chunks of each request, ms (a chunk of k tokens
/// is k gaps of gap/k), as TBT is for decode cells.
fn inter_token_gaps(records: &[RequestRecord]) -> Vec<(f64, u64)> {
    let mut gaps = Vec::new();
    for r in records {
        for w in r.chunks.windows(2) {
            let k = u64::from(w[1].tokens.max(1));
            gaps.push((ms(w[1].t_ns.saturating_sub(w[0].t_ns)) / k as f64, k));
        }
    }
    gaps
}

/// The most output tokens whose chunks arrived within one one-second bucket, the buckets
/// counted from the first send (vLLM's `max_output_tokens_per_s`, whose buckets are the same,
/// the last one partial); each chunk brings its own tokens (k for a speculative step), never
/// one per chunk. `None` without a sent request or a token.
pub fn peak_output_tok_per_s(records: &[RequestRecord]) -> Option<f64> {
    let first_send = records
        .iter()
        .filter(|r| r.was_sent())
        .map(|r| r.sent_ns)
        .min()?;
    let mut buckets: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for c in records.iter().flat_map(|r| &r.chunks) {
        let second = c.t_ns.saturating_sub(first_send) / 1_000_000_000;
        *buckets.entry(second).or_default() += u64::from(c.tokens);
    }
    buckets
        .into_values()
        .max()
        .filter(|t| *t > 0)
        .map(|t| t as f64)
}

/// The send instants of the requests that were sent, ascending.
fn send_instants(records: &[RequestRecord]) -> Vec<u64> {
    let mut sends: Vec<u64> = records
        .iter()
        .filter(|r| r.was_sent())
        .map(|r| r.sent_ns)
        .collect();
    sends.sort_unstable();
    sends
}

/// Last end − first send, seconds (`None` without a positive span).
fn span_of(sent: &[&RequestRecord], all: &[RequestRecord]) -> Option<f64> {
    let first_send = sent.iter().map(|r| r.sent_ns).min()?;
    let last_end = all.iter().map(|r| r.end_ns).max()?;
    Some(last_end.saturating_sub(first_send) as f64 / 1e9).filter(|s| *s > 0.0)
}

/// The prompt tokens of the finished requests by the server's count (as vLLM's `total_input`
/// counts its successful requests); `None` when a finished request's usage had none, so the
/// figure is never a sum over part of them.
fn input_tokens(rs: &[RequestRecord]) -> Option<u64> {
    rs.iter()
        .filter(|r| matches!(r.outcome, Outcome::Finished { .. }))
        .map(|r| r.prompt_tokens_reported)
        .sum()
}

/// `rate.input_tok_per_s` and `rate.input_output_tok_per_s` of `rs` over `span_s`: the
/// finished requests' prompt tokens by the server's count ([`input_tokens`]), then with every
/// output token too; both `None` without a span or a count.
pub(crate) fn input_throughputs(
    rs: &[RequestRecord],
    span_s: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    let tokens: u64 = rs.iter().map(RequestRecord::tokens).sum();
    let both = span_s.zip(input_tokens(rs));
    (
        both.map(|(s, i)| i as f64 / s),
        both.map(|(s, i)| (i + tokens) as f64 / s),
    )
}

/// The figures of a rate cell's requests (METHOD.md, "Open-loop rate cells").
/// With the SLO's verdict, when there is an SLO (its goodput is the row's).
fn rate_figures(o: &RateObservation<'_>, ps: &[f64]) -> (RateFigures, Option<SloVerdict>) {
    let rs = o.records;
    // Every scheduled request is judged (one never sent meets nothing); only those sent have
    // send instants, queue times and pacing.
    let samples: Vec<RequestSample> = rs.iter().map(RequestSample::of_record).collect();
    let sent: Vec<&RequestRecord> = rs.iter().filter(|r| r.was_sent()).collect();
    let span_s = span_of(&sent, rs);
    let tokens: u64 = rs.iter().map(RequestRecord::tokens).sum();
    let summary = |v: Vec<f64>| Summary::of_vec(&mut { v });
    let delay = |r: &RequestRecord| {
        let due = o.scheduled_ns.get(r.stream as usize).copied().unwrap_or(0);
        r.sent_ns.saturating_sub(due)
    };
    let unwaited = |r: &&RequestRecord| !o.waited.get(r.stream as usize).copied().unwrap_or(false);
    let per = SampleSummaries::of_at(&samples, ps);
    let mut gaps = inter_token_gaps(rs);
    let (input_tok_per_s, input_output_tok_per_s) = input_throughputs(rs, span_s);
    let mut f = RateFigures {
        arrival: o.arrival.to_string(),
        scheduled: o.scheduled_ns.len() as u64,
        schedule_rate: rate_of(o.scheduled_ns),
        max_concurrency: o.max_concurrency,
        max_in_flight: o.max_in_flight,
        unfinished_requests: rs
            .iter()
            .filter(|r| r.outcome == Outcome::Cancelled)
            .count() as u64,
        never_sent: (rs.len() - sent.len()) as u64,
        output_tok_per_s: span_s.map(|s| tokens as f64 / s),
        input_tok_per_s,
        input_output_tok_per_s,
        peak_output_tok_per_s: peak_output_tok_per_s(rs),
        span_s,
        ttft_ms: per.ttft_ms,
        tpot_ms: per.tpot_ms,
        itl_ms: weighted_summary_at(&mut gaps, ps),
        e2e_ms: per.e2e_ms,
        per_user_tok_per_s: per.per_user_tok_per_s,
        queue_ms: summary(sent.iter().map(|r| ms(delay(r))).collect()),
        pacing_error_us: summary(
            sent.iter()
                .copied()
                .filter(unwaited)
                .map(|r| delay(r) as f64 / 1e3)
                .collect(),
        ),
        pacing_warning: None,
        slo: None,
        workload: o.workload.clone(),
        stop_reason: o.stop_reason,
    };
    let verdict = o.slo.map(|slo| slo.judge(&samples, span_s.unwrap_or(0.0)));
    f.slo = o
        .slo
        .zip(verdict.as_ref())
        .map(|(slo, v)| SloRow::of(slo, v));
    f.pacing_warning = pacing_warning(&f, o);
    (f, verdict)
}

/// Whether the client kept its schedule (module docs): `Some(words)` when it did not.
fn pacing_warning(f: &RateFigures, o: &RateObservation<'_>) -> Option<String> {
    let achieved = rate_of(&send_instants(o.records));
    let schedule = f.schedule_rate?;
    let gap_ms = 1e3 / schedule;
    let p99_ms = f.pacing_error_us.as_ref().map(|s| s.p99 / 1e3);
    let late = p99_ms.is_some_and(|p| p > (gap_ms / 10.0).max(1.0));
    let slow = o.max_concurrency.is_none() && achieved.is_some_and(|a| a < 0.95 * schedule);
    let sent = achieved.map_or("no measurable rate".to_string(), |a| format!("{a:.3}/s"));
    let p99 = p99_ms.map_or("unknown".to_string(), |p| format!("{p:.3} ms"));
    if slow {
        Some(format!(
            "the client could not keep the schedule's rate: it sent {sent} of the schedule's {schedule:.3}/s (pacing error p99 {p99})"
        ))
    } else {
        late.then(|| {
            format!(
                "the client sent late: pacing error p99 {p99} against a mean gap of {gap_ms:.3} ms (it kept the rate: {sent} of {schedule:.3}/s), so arrivals bunched"
            )
        })
    }
}

/// The row of a rate cell. It is kept whatever happened: failed requests count against the
/// attainment, and the figures stay. Failed when no request finished, a prompt length
/// disagreed with the server's count, or the measurement broke; Valid otherwise.
pub fn rate_result(cell: &PlannedCell, o: RateObservation<'_>) -> CellResult {
    rate_result_at(cell, o, &[])
}

/// [`rate_result`] with the run's extra percentiles (`--percentiles`) in TTFT, TPOT, ITL, E2E.
pub fn rate_result_at(cell: &PlannedCell, o: RateObservation<'_>, ps: &[f64]) -> CellResult {
    let (f, verdict) = rate_figures(&o, ps);
    let rs = o.records;
    let completed = rs
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Finished { .. }))
        .count() as u64;
    let failed = rs.len() as u64 - completed;
    let pc = match o.expected_prompts {
        Some(each) => prompt_check_each(each, o.prompt_tolerance, rs),
        None => prompt_check(o.expected_prompt_tokens, o.prompt_tolerance, rs),
    };
    let mut errors = ErrorTally::default();
    errors.add_records(rs, "");
    errors.add("drain_cut", f.unfinished_requests, || {
        "requests still running at the drain limit were cut".into()
    });
    crate::verdict::tally_mismatch(&mut errors, &pc, "");
    let (status, reason) = if let Some(fault) = &o.fault {
        (CellStatus::Failed, Some(fault.clone()))
    } else if completed == 0 {
        (CellStatus::Failed, Some("no request finished".to_string()))
    } else if pc.mismatched > 0 {
        (
            CellStatus::Failed,
            Some("prompt lengths disagree with the server's count".into()),
        )
    } else if failed > 0 {
        (
            CellStatus::Valid,
            Some(format!("{failed} of {} requests failed", rs.len())),
        )
    } else {
        (CellStatus::Valid, None)
    };
    let mut row = bare_result(cell, status, reason);
    let sends = send_instants(rs);
    row.request_rate = Some(o.requested_rate);
    row.achieved_request_rate = Some(rate_of(&sends));
    row.requests_sent = Some(sends.len() as u64);
    row.completed_requests = Some(completed);
    row.failed_requests = Some(Some(failed));
    row.output_tokens = Some(rs.iter().map(RequestRecord::tokens).sum());
    row.total_tok_per_s = f.output_tok_per_s;
    row.measured_s = f.span_s;
    row.ttft_ms_p50 = f.ttft_ms.as_ref().map(|s| s.p50);
    row.tbt_ms_p50 = f.itl_ms.as_ref().map(|s| s.p50);
    row.per_request_tok_per_s = f.per_user_tok_per_s.as_ref().map(|s| s.p50);
    row.ttft_ms = f.ttft_ms.clone();
    row.tbt_ms = f.itl_ms.clone();
    row.per_request_tok_per_s_summary = f.per_user_tok_per_s.clone();
    row.token_count_source = Some(o.count.source_or(o.nominal_source));
    row.token_count_note = o.count.note();
    row.slo_attainment = Some(verdict.as_ref().and_then(|v| v.attainment));
    row.goodput_rps = Some(verdict.as_ref().and_then(|v| v.goodput_rps));
    row.goodput_tok_per_s = Some(verdict.as_ref().and_then(|v| v.goodput_tok_per_s));
    row.errors = errors.by_kind;
    row.first_error = errors.first.or(o.fault);
    row.prompt_check = Some(pc);
    row.rate = Some(Box::new(f));
    crate::loop_row::guard_loops(row, rs)
}

/// [`prompt_check`] with a built length per request (`expected[record.stream]`): its
/// `expected` is the mean built length, and the largest difference is each request's own. A
/// record with no built length (it cannot happen: every request is built) counts as checked
/// against 0.
fn prompt_check_each(
    expected: &[u64],
    tolerance: u64,
    records: &[RequestRecord],
) -> crate::cell::PromptCheck {
    let mean = (expected.iter().map(|x| *x as f64).sum::<f64>() / expected.len().max(1) as f64)
        .round() as u64;
    let built = |r: &RequestRecord| expected.get(r.stream as usize).copied().unwrap_or(0);
    crate::verdict::prompt_check_pairs(mean, tolerance, records.iter().map(|r| (built(r), r)))
}

/// A decode cell judged against the SLO: the requests that ended inside the window, finished
/// or failed (a request the window's close cut was not over, so it has no E2E to judge).
pub fn closed_loop_slo(slo: &Slo, records: &[RequestRecord], window: Window) -> SloRow {
    let judged: Vec<RequestSample> = records
        .iter()
        .filter(|r| r.outcome != Outcome::Cancelled && window.contains(r.end_ns))
        .map(RequestSample::of_record)
        .collect();
    SloRow::of(slo, &slo.judge(&judged, window.secs()))
}

/// The largest concurrency at a context whose decode cell holds the SLO, every measured
/// concurrency below it holding too (a noisy hold above a failure is never the answer, as in
/// the rate search). `rows` are any rows; those of other contexts or phases are ignored.
pub fn capacity_concurrency(rows: &[CellResult], context_tokens: u64) -> Option<&CellResult> {
    let mut decode: Vec<&CellResult> = rows
        .iter()
        .filter(|r| r.phase == Phase::Decode && r.context_tokens == context_tokens)
        .filter(|r| r.status.has_figures() || r.status == CellStatus::Failed)
        .collect();
    decode.sort_by_key(|r| r.concurrency);
    let mut best = None;
    for r in decode {
        match &r.slo {
            Some(s) if s.holds && r.status.has_figures() => best = Some(r),
            _ => break,
        }
    }
    best
}

/// What a context's capacity row is made of.
#[derive(Debug, Clone)]
pub struct CapacityInputs<'a> {
    /// The SLO.
    pub slo: &'a Slo,
    /// The search's precision.
    pub precision: f64,
    /// The search's answer.
    pub answer: Capacity,
    /// Every rate row measured at this context (search and sweep alike).
    pub rate_rows: &'a [CellResult],
    /// Every row of the run (decode rows give the concurrency).
    pub rows: &'a [CellResult],
    /// The synchronous rate, when measured.
    pub synchronous_rate: Option<f64>,
    /// The saturation throughput, when measured.
    pub saturation_rate: Option<f64>,
}

fn holds(r: &CellResult) -> bool {
    r.rate
        .as_ref()
        .and_then(|f| f.slo.as_ref())
        .is_some_and(|s| s.holds)
}

/// A context's capacity row: the largest rate whose cell holds the SLO (null when none does),
/// the largest concurrency, the goodput there, and every measured point.
pub fn capacity_result(cell: &PlannedCell, c: CapacityInputs<'_>) -> CellResult {
    let (outcome, rate, failed_at) = match c.answer {
        Capacity::Found { rate, failed_at } => ("found", Some(rate), Some(failed_at)),
        Capacity::AtLeast { rate } => ("at_least", Some(rate), None),
        Capacity::None => ("none", None, None),
    };
    let points: Vec<CapacityPoint> = c
        .rate_rows
        .iter()
        .filter_map(|r| {
            Some(CapacityPoint {
                rate: r.request_rate?,
                holds: holds(r),
                attainment: r.slo_attainment.flatten(),
                goodput_rps: r.goodput_rps.flatten(),
                goodput_tok_per_s: r.goodput_tok_per_s.flatten(),
            })
        })
        .collect();
    let at = |x: f64| points.iter().find(|p| (p.rate - x).abs() < 1e-9);
    let best_n = capacity_concurrency(c.rows, cell.key.context_tokens);
    let reason = match c.answer {
        Capacity::Found { .. } => None,
        Capacity::AtLeast { rate } => Some(format!(
            "every rate up to {rate}/s held the SLO: capacity is at least that"
        )),
        Capacity::None => Some("no rate meets the SLO".to_string()),
    };
    let mut row = bare_result(cell, CellStatus::Valid, reason);
    row.capacity_request_rate = Some(rate);
    row.capacity_concurrency = Some(best_n.map(|r| r.concurrency));
    row.request_rate = rate;
    row.slo_attainment = Some(rate.and_then(at).and_then(|p| p.attainment));
    row.goodput_rps = Some(rate.and_then(at).and_then(|p| p.goodput_rps));
    row.goodput_tok_per_s = Some(rate.and_then(at).and_then(|p| p.goodput_tok_per_s));
    row.capacity = Some(Box::new(CapacityFigures {
        slo: c.slo.to_string(),
        precision: c.precision,
        outcome: outcome.to_string(),
        failed_at,
        points,
        synchronous_rate: c.synchronous_rate,
        saturation_rate: c.saturation_rate,
        concurrency_goodput_rps: best_n.and_then(|r| {
            let s = r.slo.as_ref()?;
            let secs = r.measured_s?;
            (secs > 0.0).then(|| s.met as f64 / secs)
        }),
        time_scale: None,
        over: None,
    }));
    row
}
