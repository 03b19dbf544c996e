//! A session cell's row (METHOD.md, "Sessions"): its turns' records folded into the contract's
//! columns (`turns_completed`, `cached_tokens`, `cache_hit_rate`, `per_turn`, …), the
//! figures beside them (TTFT split, cache notes), its status and its SLO verdict.

use super::columns::{PerTurn, SessionColumns, SessionFigures};
use super::{cache_note, ttft_split};
use crate::cell::{CellResult, CellStatus, PromptCheck, SloRow};
use crate::counting::CountReport;
use crate::meta::TokenCountSource;
use crate::plan::PlannedCell;
use crate::record::{Outcome, RequestRecord};
use crate::slo::{RequestSample, SampleSummaries, Slo};
use crate::stats::Summary;
use crate::verdict::{ErrorTally, bare_result};
use serde::{Deserialize, Serialize};

/// One turn as the client sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    /// The session (0..S).
    pub session: u32,
    /// The turn within the session: 0 is the history's unmeasured warm-up, 1.. are measured.
    pub turn: u32,
    /// The prompt's tokens as the tool built and counted them.
    pub prompt_tokens: u64,
    /// What a perfect prefix cache would serve of it ([`super::predicted_cached_prefix`]).
    pub predicted_cached_tokens: u64,
    /// The request.
    pub record: RequestRecord,
}

impl TurnRecord {
    /// Whether the turn is measured (not the history's warm-up).
    pub fn measured(&self) -> bool {
        self.turn > 0
    }
}

/// Everything gathered for one session cell.
#[derive(Debug, Clone)]
pub struct SessionObservation<'a> {
    /// Every turn sent, warm-ups included, in send order.
    pub turns: &'a [TurnRecord],
    /// Sessions that ran.
    pub sessions: u32,
    /// The highest queue gauge seen during the measured turns (`None`: no gauge).
    pub max_waiting: Option<f64>,
    /// The context's measured prefill rate, tok/s.
    pub prefill_tok_per_s: Option<f64>,
    /// The cache block size of the prediction.
    pub cache_block_tokens: u64,
    /// The server's KV capacity, tokens.
    pub kv_capacity: Option<u64>,
    /// Whether the cache was flushed before the cell.
    pub cache_flushed: Option<bool>,
    /// The server's cached-token counter Δ over the cell.
    pub server_cached_tokens: Option<f64>,
    /// The SLO to judge the measured turns against.
    pub slo: Option<&'a Slo>,
    /// How tokens were counted.
    pub count: CountReport,
    /// The source claimed when no turn had a chunk.
    pub nominal_source: TokenCountSource,
    /// Tokens a reported prompt length may differ by.
    pub prompt_tolerance: u64,
    /// The measurement itself broke: why.
    pub fault: Option<String>,
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn sum_cached<'a>(turns: impl Iterator<Item = &'a TurnRecord>) -> Option<u64> {
    turns.fold(None, |a, t| match (a, t.record.cached_tokens_reported) {
        (None, None) => None,
        (a, c) => Some(a.unwrap_or(0) + c.unwrap_or(0)),
    })
}

/// The split of each turn with a first token: (prefill ms, wait ms).
fn splits(turns: &[&TurnRecord], rate: Option<f64>) -> Vec<(f64, f64)> {
    turns
        .iter()
        .filter_map(|t| {
            let ttft = ms(t.record.ttft_ns()?);
            // The server's own count where it gives one; else the prediction.
            let cached = t
                .record
                .cached_tokens_reported
                .unwrap_or(t.predicted_cached_tokens);
            let s = ttft_split(ttft, t.prompt_tokens.saturating_sub(cached), rate)?;
            Some((s.prefill_ms, s.wait_ms))
        })
        .collect()
}

fn p50(v: Vec<f64>) -> Option<f64> {
    Summary::of_vec(&mut { v }).map(|s| s.p50)
}

/// The `per_turn` list, turn 0 (the warm-up) first.
fn per_turn(turns: &[TurnRecord], rate: Option<f64>) -> Vec<PerTurn> {
    let last = turns.iter().map(|t| t.turn).max().unwrap_or(0);
    (0..=last)
        .filter_map(|k| {
            let at: Vec<&TurnRecord> = turns.iter().filter(|t| t.turn == k).collect();
            if at.is_empty() {
                return None;
            }
            let sp = splits(&at, rate);
            Some(PerTurn {
                turn: k,
                measured: k > 0,
                requests: at.len() as u64,
                prompt_tokens: at.iter().map(|t| t.prompt_tokens).sum(),
                cached_tokens: sum_cached(at.iter().copied()),
                predicted_cached_tokens: at.iter().map(|t| t.predicted_cached_tokens).sum(),
                ttft_ms_p50: p50(at
                    .iter()
                    .filter_map(|t| t.record.ttft_ns())
                    .map(ms)
                    .collect()),
                ttft_prefill_ms_p50: p50(sp.iter().map(|s| s.0).collect()),
                ttft_wait_ms_p50: p50(sp.iter().map(|s| s.1).collect()),
            })
        })
        .collect()
}

/// Whether the measured turns' hit rate fell from the first measured turn to the last.
fn falling(per: &[PerTurn]) -> bool {
    let rate = |p: &PerTurn| {
        p.cached_tokens
            .filter(|_| p.prompt_tokens > 0)
            .map(|c| c as f64 / p.prompt_tokens as f64)
    };
    let measured: Vec<&PerTurn> = per.iter().filter(|p| p.measured).collect();
    match (
        measured.first().and_then(|p| rate(p)),
        measured.last().and_then(|p| rate(p)),
    ) {
        (Some(a), Some(b)) => measured.len() >= 2 && b + super::CACHE_SHORTFALL < a,
        _ => false,
    }
}

/// The tokens each session holds at its end: its last turn's prompt and answer.
fn working_set(turns: &[TurnRecord]) -> u64 {
    let mut last: std::collections::BTreeMap<u32, u64> = Default::default();
    for t in turns {
        let held = t.prompt_tokens + t.record.tokens();
        last.insert(t.session, held);
    }
    last.values().sum()
}

/// The row of a session cell. Failed when no measured turn finished, a prompt's length
/// disagreed with the server's count, or the measurement broke; Requests queued when the
/// server's queue gauge was above zero during the turns; Valid otherwise.
pub fn session_result(cell: &PlannedCell, o: SessionObservation<'_>) -> CellResult {
    let measured: Vec<&TurnRecord> = o.turns.iter().filter(|t| t.measured()).collect();
    let records: Vec<RequestRecord> = measured.iter().map(|t| t.record.clone()).collect();
    let completed = records
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Finished { .. }))
        .count() as u64;
    let pc = turn_prompt_check(o.turns, o.prompt_tolerance);
    let mut errors = ErrorTally::default();
    // Warm-ups count too: a history the server refused is why a session never ran.
    let all: Vec<RequestRecord> = o.turns.iter().map(|t| t.record.clone()).collect();
    errors.add_records(&all, "");
    crate::verdict::tally_mismatch(&mut errors, &pc, "");
    let failed = measured.len() as u64 - completed;
    let (status, mut reason) = if let Some(fault) = &o.fault {
        (CellStatus::Failed, Some(fault.clone()))
    } else if completed == 0 {
        (
            CellStatus::Failed,
            Some("no measured turn finished".to_string()),
        )
    } else if pc.mismatched > 0 {
        let why = "turn prompt lengths disagree with the server's count";
        (CellStatus::Failed, Some(why.to_string()))
    } else if o.max_waiting.is_some_and(|w| w > 0.0) {
        let why = format!(
            "the server's queue gauge reached {:.0} during the turns",
            o.max_waiting.unwrap_or(0.0)
        );
        (CellStatus::RequestsQueued, Some(why))
    } else {
        (CellStatus::Valid, None)
    };
    if failed > 0 && status != CellStatus::Failed {
        let more = format!("{failed} of {} measured turns failed", measured.len());
        reason = Some(reason.map_or(more.clone(), |r| format!("{r}; {more}")));
    }
    let mut row = bare_result(cell, status, reason);
    row.errors = errors.by_kind;
    row.first_error = errors.first.or(o.fault.clone());
    row.prompt_check = Some(pc);
    fill_figures(&mut row, &o, &measured, &records, completed);
    // A warm-up turn that looped fails the cell too: its answer is the next turn's history.
    crate::loop_row::guard_loops(row, &all)
}

/// [`session_result`] with the run's extra percentiles (`--percentiles`) in TTFT and TPOT:
/// the same measured turns, summarised again with them (nothing else of the row changes).
pub fn session_result_at(cell: &PlannedCell, o: SessionObservation<'_>, ps: &[f64]) -> CellResult {
    let samples: Vec<RequestSample> = (o.turns.iter())
        .filter(|t| t.measured())
        .map(|t| RequestSample::of_record(&t.record))
        .collect();
    let mut row = session_result(cell, o);
    if !ps.is_empty() {
        let per = SampleSummaries::of_at(&samples, ps);
        if row.ttft_ms.is_some() {
            row.ttft_ms = per.ttft_ms;
        }
        if let Some(t) = row.session.tpot_ms.as_mut().filter(|t| t.is_some()) {
            *t = per.tpot_ms;
        }
    }
    row
}

/// The contract's columns and the figures beside them.
fn fill_figures(
    row: &mut CellResult,
    o: &SessionObservation<'_>,
    measured: &[&TurnRecord],
    records: &[RequestRecord],
    completed: u64,
) {
    let samples: Vec<RequestSample> = records.iter().map(RequestSample::of_record).collect();
    let span_s = span_s(records);
    let output: u64 = records.iter().map(RequestRecord::tokens).sum();
    let prompt: u64 = measured.iter().map(|t| t.prompt_tokens).sum();
    let cached = sum_cached(measured.iter().copied());
    let predicted: u64 = measured.iter().map(|t| t.predicted_cached_tokens).sum();
    let per = per_turn(o.turns, o.prefill_tok_per_s);
    let share = |x: u64| (prompt > 0).then(|| x as f64 / prompt as f64);
    let ws = working_set(o.turns);
    let summary = |v: Vec<f64>| Summary::of_vec(&mut { v });
    let per_request = SampleSummaries::of(&samples);
    let ttft = per_request.ttft_ms;
    let tpot = per_request.tpot_ms;
    let sp = splits(measured, o.prefill_tok_per_s);
    row.requests_sent = Some(measured.len() as u64);
    row.completed_requests = Some(completed);
    row.output_tokens = Some(output);
    row.measured_s = span_s;
    row.total_tok_per_s = span_s.map(|s| output as f64 / s);
    row.ttft_ms_p50 = ttft.as_ref().map(|s| s.p50);
    row.ttft_ms = ttft;
    let per_user = per_request.per_user_tok_per_s;
    row.per_request_tok_per_s = per_user.as_ref().map(|s| s.p50);
    row.per_request_tok_per_s_summary = per_user;
    row.token_count_source = Some(o.count.source_or(o.nominal_source));
    row.token_count_note = o.count.note();
    judge(row, o.slo, &samples, span_s);
    let note = cache_note(prompt, cached, predicted, ws, o.kv_capacity, falling(&per));
    if let Some(n) = &note {
        row.status_reason = Some(match row.status_reason.take() {
            Some(r) => format!("{r}; {n}"),
            None => n.clone(),
        });
    }
    let session_rate = row.session.session_rate.flatten();
    row.session = SessionColumns {
        turns_completed: Some(Some(completed)),
        prompt_tokens: Some(Some(prompt)),
        cached_tokens: Some(cached),
        predicted_cached_tokens: Some(Some(predicted)),
        cache_hit_rate: Some(cached.and_then(share)),
        predicted_cache_hit_rate: Some(share(predicted)),
        tpot_ms: Some(tpot),
        per_turn: Some(Some(per)),
        session_rate: Some(session_rate),
        capacity_sessions: None,
        capacity_session_rate: None,
        session: Some(Box::new(SessionFigures {
            sessions: o.sessions,
            turns_sent: measured.len() as u64,
            e2e_ms: per_request.e2e_ms,
            ttft_prefill_ms: summary(sp.iter().map(|s| s.0).collect()),
            ttft_wait_ms: summary(sp.iter().map(|s| s.1).collect()),
            prefill_tok_per_s: o.prefill_tok_per_s,
            cache_block_tokens: o.cache_block_tokens,
            cache_flushed: o.cache_flushed,
            server_cached_tokens: o.server_cached_tokens,
            cache_note: note,
            working_set_tokens: ws,
            output_tokens: output,
            replay: None,
        })),
    };
}

/// The row judged against the SLO on its measured turns, where there is one.
fn judge(row: &mut CellResult, slo: Option<&Slo>, samples: &[RequestSample], span_s: Option<f64>) {
    if let Some(slo) = slo {
        let v = slo.judge(samples, span_s.unwrap_or(0.0));
        row.slo_attainment = Some(v.attainment);
        row.goodput_rps = Some(v.goodput_rps);
        row.goodput_tok_per_s = Some(v.goodput_tok_per_s);
        row.slo = Some(SloRow::of(slo, &v));
    }
}

/// Last end − first send of the measured turns, seconds.
fn span_s(records: &[RequestRecord]) -> Option<f64> {
    let first = records.iter().map(|r| r.sent_ns).min()?;
    let last = records.iter().map(|r| r.end_ns).max()?;
    Some(last.saturating_sub(first) as f64 / 1e9).filter(|s| *s > 0.0)
}

/// Every turn (warm-ups too) checked against its own built length.
fn turn_prompt_check(turns: &[TurnRecord], tolerance: u64) -> PromptCheck {
    let n = turns.len().max(1) as f64;
    let mean = (turns.iter().map(|t| t.prompt_tokens as f64).sum::<f64>() / n).round() as u64;
    let pairs = turns.iter().map(|t| (t.prompt_tokens, &t.record));
    crate::verdict::prompt_check_pairs(mean, tolerance, pairs)
}

#[cfg(test)]
#[path = "../tests/session_percentiles.rs"]
mod percentile_tests;
