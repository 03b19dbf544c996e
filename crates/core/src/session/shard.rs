//! Session cells on shards (`run --shard I/N` with session flags, docs/distributed.md): which
//! sessions a shard runs, how long a session cell's slot of the timetable is, and what a shard
//! saves of its turns so that `merge` rebuilds the row from every shard's. Pure.
//!
//! Why whole sessions, by index modulo N: a session's turns depend on each other (each turn's
//! prompt holds the model's answers to the turns before), so a session runs whole on one shard.
//! Session j runs on shard j mod N under its global index, so its history, its messages and
//! its think times are the ones one process draws for session j; an open loop's arrival
//! schedule is drawn whole by every shard and split the same way (as a rate cell's requests
//! are), each shard starting its sessions at their global instants.
//!
//! The limits a single machine gives a session cell ([`session_limits`]) live here too, so a
//! shard's slot and a one-process cell wait for the same turns.

use crate::record::RequestRecord;
use crate::session::TurnRecord;
use crate::shard::ShardSpec;
use crate::slot::SlotKind;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// How a session cell's sessions start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionLoop {
    /// S sessions at once, their histories warmed together before the window (`--sessions`).
    Closed,
    /// Sessions arriving at a rate over the window, each warming its own history
    /// (`--session-rate`).
    Open,
    /// Recorded sessions at their own starts, each opening sent cold (`--workload
    /// sessions:FILE`, `sharegpt:FILE`).
    Replay,
}

/// The span and the drain limit of a session cell, seconds, given the window `window_s`
/// (`--duration`) and a replay's last session start `last_start_s`: a closed loop starts no
/// turn after its window and lets a turn in flight run max(30 s, the window) more; an open
/// loop's sessions arrive over the window and run their turns within max(2 min, the window)
/// after it; a replay's sessions start up to the last start and run within four times that.
pub fn session_limits(kind: SessionLoop, window_s: f64, last_start_s: f64) -> (f64, f64) {
    let d = if window_s.is_finite() {
        window_s.max(0.0)
    } else {
        0.0
    };
    match kind {
        SessionLoop::Closed => (d, d.max(30.0)),
        SessionLoop::Open => (d, d.max(120.0)),
        SessionLoop::Replay => {
            let last = if last_start_s.is_finite() {
                last_start_s.max(0.0)
            } else {
                0.0
            };
            (last, 4.0 * d.max(120.0))
        }
    }
}

/// The slot a session cell takes on the timetable: `build_tokens` are every session's
/// history (a replay's openings), all shards' together; a closed loop warms them all together
/// from the origin, so its ramp is their prefill; then the span and drain of
/// [`session_limits`].
pub fn session_slot_kind(
    kind: SessionLoop,
    build_tokens: u64,
    window_s: f64,
    last_start_s: f64,
) -> SlotKind {
    let (span_s, drain_s) = session_limits(kind, window_s, last_start_s);
    SlotKind::Session {
        build_tokens,
        warm_tokens: if kind == SessionLoop::Closed {
            build_tokens
        } else {
            0
        },
        span_s,
        drain_s,
    }
}

/// The sessions a process runs of a cell whose sessions start at `starts_ns` (index =
/// session, ns from the cell's origin), each with its start: on a shard, session j ≡ I (mod
/// N) at its global start; without a shard, every session.
pub fn my_sessions(shard: Option<ShardSpec>, starts_ns: &[u64]) -> Vec<(u32, u64)> {
    let n = u32::try_from(starts_ns.len()).unwrap_or(u32::MAX);
    let mine = shard.map_or_else(|| (0..n).collect(), |s| s.streams(n));
    mine.into_iter()
        .filter_map(|j| Some((j, *starts_ns.get(j as usize)?)))
        .collect()
}

/// What a shard saves of one turn besides its record (which is in `requests.jsonl`, under
/// `stream` = the session): enough to rebuild its [`TurnRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMeta {
    /// The session, its global index.
    pub session: u32,
    /// The turn (0: the history's warm-up).
    pub turn: u32,
    /// The prompt's tokens as built and counted.
    pub prompt_tokens: u64,
    /// What a perfect prefix cache would serve of it.
    pub predicted_cached_tokens: u64,
    /// Its record's send instant (the shard's own clock): with the session, which record.
    pub sent_ns: u64,
}

impl TurnMeta {
    /// The meta of a turn as the shard recorded it.
    pub fn of(t: &TurnRecord) -> TurnMeta {
        TurnMeta {
            session: t.session,
            turn: t.turn,
            prompt_tokens: t.prompt_tokens,
            predicted_cached_tokens: t.predicted_cached_tokens,
            sent_ns: t.record.sent_ns,
        }
    }
}

/// A shard's part of a session cell beyond its records: its turns, and what the server's
/// queue gauge read during them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionPart {
    /// Every turn this shard sent (warm-ups included), in send order per session.
    pub turns: Vec<TurnMeta>,
    /// The highest queue gauge it read during its turns (`None`: no gauge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waiting: Option<f64>,
}

/// Why a shard's turns and its records are not one set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnJoinError {
    /// A turn listed without its record.
    #[error("turn {turn} of session {session} has no record in requests.jsonl")]
    NoRecord {
        /// The session.
        session: u32,
        /// The turn.
        turn: u32,
    },
    /// A record that no listed turn is.
    #[error("a record of session {session} sent at {sent_ns} ns is no turn of schedules.jsonl")]
    Unlisted {
        /// Its stream (the session).
        session: u32,
        /// Its send instant.
        sent_ns: u64,
    },
}

/// A shard's turns rebuilt from their metas and its records (`stream` = session, matched by
/// the send instant): every meta must find its record and every record its meta, or the
/// turns are not the ones the shard ran.
pub fn join_turns(
    meta: &[TurnMeta],
    records: &[RequestRecord],
) -> Result<Vec<TurnRecord>, TurnJoinError> {
    let mut by: HashMap<(u32, u64), Vec<usize>> = HashMap::new();
    for (i, r) in records.iter().enumerate().rev() {
        by.entry((r.stream, r.sent_ns)).or_default().push(i);
    }
    let mut turns = Vec::with_capacity(meta.len());
    for m in meta {
        let i = by
            .get_mut(&(m.session, m.sent_ns))
            .and_then(Vec::pop)
            .ok_or(TurnJoinError::NoRecord {
                session: m.session,
                turn: m.turn,
            })?;
        turns.push(TurnRecord {
            session: m.session,
            turn: m.turn,
            prompt_tokens: m.prompt_tokens,
            predicted_cached_tokens: m.predicted_cached_tokens,
            record: records[i].clone(),
        });
    }
    let left = by.into_iter().find(|(_, v)| !v.is_empty());
    match left {
        Some(((session, sent_ns), _)) => Err(TurnJoinError::Unlisted { session, sent_ns }),
        None => Ok(turns),
    }
}

#[cfg(test)]
#[path = "../tests/session_shard.rs"]
mod tests;
