//! The merged row of a session cell (closed loop, open loop or replay) run on shards: every
//! shard's turns, rebuilt from its schedule line's turn metas and its records
//! ([`crate::join_turns`]) and moved onto the common clock, judged together by
//! [`crate::session_result`], the function a one-process cell's row comes from. The shards'
//! rows only give what no turn holds: the prefill rate of the TTFT split, the cache's block
//! size, whether shard 0 flushed the cache, the server's cached-token counter, how tokens were
//! counted, and each shard's status (merge.rs, rules 1 to 5).
//!
//! A cell whose sessions are not every session once (a session no shard ran, two shards
//! claiming one, a shard's turns without their records) fails with the reason: summing the
//! other shards' turns would report conversations the server never held.

use super::fault::CellMergeError;
use super::{
    ShardPart, apply_findings, common_schedule, findings, finish_row, first, missing_row,
    to_common_clock, weakest_count,
};
use crate::cell::{CellResult, CellStatus};
use crate::plan::{Plan, PlannedCell};
use crate::record::RequestRecord;
use crate::session::{SessionFigures, SessionObservation, TurnRecord, join_turns};
// The tests judge rows with the plain form (no extra percentiles).
#[cfg(test)]
use crate::session::session_result;
use crate::shard::ShardSpec;

/// Sessions named in an error at most (the rest are counted by `of`).
const NAMED: usize = 8;

/// Every shard's turns on the common clock, checked: each shard's line lists its turns, each
/// turn has its record and each record its turn, and every session of the cell (`n`) is some
/// shard's.
fn union_turns(parts: &[ShardPart<'_>], n: usize) -> Result<Vec<TurnRecord>, CellMergeError> {
    let mut claimed = vec![false; n];
    let mut all = Vec::new();
    for p in parts {
        let Some(s) = p.schedule else { continue };
        let part = s
            .session
            .as_ref()
            .ok_or(CellMergeError::NoTurns { shard: p.index })?;
        let turns = join_turns(&part.turns, p.records).map_err(|source| CellMergeError::Turns {
            shard: p.index,
            source,
        })?;
        let late = super::late_of(p);
        all.extend(turns.into_iter().map(|mut t| {
            t.record = to_common_clock(std::slice::from_ref(&t.record), late)
                .pop()
                .unwrap_or(t.record);
            t
        }));
        for j in &s.mine {
            if let Some(c) = claimed.get_mut(*j as usize) {
                *c = true;
            }
        }
    }
    let unclaimed: Vec<u32> = (0u32..)
        .zip(&claimed)
        .filter(|(_, c)| !**c)
        .map(|(j, _)| j)
        .collect();
    if !unclaimed.is_empty() {
        return Err(CellMergeError::Unclaimed {
            sessions: unclaimed.into_iter().take(NAMED).collect(),
            of: n,
        });
    }
    // The order one process keeps: by send, so `per_turn` and the records read the same
    // whatever order the shards were named in.
    all.sort_by_key(|t| (t.record.sent_ns, t.session, t.turn));
    Ok(all)
}

/// The session figures of the shards' rows, shard 0's first: what the cell was run with.
fn figures<'p>(parts: &'p [ShardPart<'_>]) -> Vec<&'p SessionFigures> {
    let mut v: Vec<&ShardPart<'_>> = parts.iter().collect();
    v.sort_by_key(|p| p.index);
    v.into_iter()
        .filter_map(|p| p.row.session.session.as_deref())
        .collect()
}

/// The largest of the shards' readings: a server-wide gauge or counter, each shard's read
/// around its own part of the cell, the longest span seeing the most.
fn largest(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    values.flatten().reduce(f64::max)
}

/// The merged row of a session cell from every shard's part (module docs), with the union of
/// its turns' records (common clock, `stream` = the session).
pub fn merge_session_cell(
    cell: &PlannedCell,
    plan: &Plan,
    parts: &[ShardPart<'_>],
) -> (CellResult, Vec<RequestRecord>) {
    let count = parts.len() as u32;
    let schedule = common_schedule(parts);
    let n = schedule.as_ref().map_or(0, |(due, _)| due.len());
    let f = findings(parts, &|p| {
        ShardSpec {
            index: p.index,
            count,
        }
        .share(n as u64)
    });
    let turns = schedule
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|_| union_turns(parts, n));
    let fault = (!f.failed.is_empty())
        .then(|| f.failed.join("; "))
        .or(turns.as_ref().err().map(ToString::to_string));
    let turns = turns.unwrap_or_default();
    let mut records: Vec<RequestRecord> = turns.iter().map(|t| t.record.clone()).collect();
    records.sort_by_key(|r| (r.stream, r.sent_ns));
    if fault.is_none() && !f.missing.is_empty() {
        return (missing_row(cell, parts, &f), records);
    }
    if first(parts).is_none() {
        let row =
            crate::verdict::bare_result(cell, CellStatus::NotRun, Some("no shard's row".into()));
        return (finish_row(row, parts, false), records);
    }
    let figs = figures(parts);
    let (count_report, nominal, note) = weakest_count(parts);
    let st = plan.settings.sessions.as_ref();
    let obs = SessionObservation {
        turns: &turns,
        sessions: u32::try_from(n).unwrap_or(u32::MAX),
        max_waiting: largest(parts.iter().map(|p| {
            p.schedule
                .and_then(|s| s.session.as_ref())
                .and_then(|s| s.max_waiting)
        })),
        prefill_tok_per_s: figs.iter().find_map(|s| s.prefill_tok_per_s),
        cache_block_tokens: figs.first().map_or(1, |s| s.cache_block_tokens),
        kv_capacity: plan.kv_capacity_tokens,
        // Shard 0 alone flushes the cache, at its slot's start (the others say null).
        cache_flushed: figs.iter().find_map(|s| s.cache_flushed),
        server_cached_tokens: largest(figs.iter().map(|s| s.server_cached_tokens)),
        slo: st.and_then(|s| s.slo.as_ref()),
        count: count_report,
        nominal_source: nominal,
        prompt_tolerance: 0,
        fault,
    };
    let mut row = apply_findings(
        crate::session::session_result_at(cell, obs, &plan.settings.percentiles),
        &f,
    );
    let replay = figs.iter().find_map(|s| s.replay.clone());
    if let Some(s) = row.session.session.as_mut() {
        s.replay = replay;
    }
    if row.status.has_figures() {
        row.token_count_note = note;
    }
    (finish_row(row, parts, f.complete()), records)
}

#[cfg(test)]
#[path = "../tests/merge_session.rs"]
mod tests;
