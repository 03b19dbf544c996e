//! A session cell's side on a shard (`run --shard I/N` with session flags, docs/distributed.md):
//! the cell's slot of the timetable (sized by `llmib_core::session_slot_kind`), this shard's
//! sessions (`llmib_core::my_sessions`: session j on shard j mod N, at its global start), the
//! instants it waits for, and what it saves for `merge`: its line of `schedules.jsonl` (every
//! session's start, its own sessions, each turn's session, turn, prompt and prediction; the
//! records themselves are in `requests.jsonl`) and the row's record of the slot.
//!
//! Without a shard every function here gives what one process does: all sessions, no slot,
//! the instants of its own clock.

use crate::cells::context::MatrixRun;
use crate::cells::shard::sleep_until_precise;
use llmib_core::{
    CellResult, CellStatus, PlannedCell, SessionPart, ShardSchedule, Slot, SlotKind, TurnMeta,
    bare_result, failed_result, my_sessions, unix_now_ns,
};
use tokio::time::{Duration, Instant};

/// A shard's row of a session cell none of whose sessions are its own.
pub(crate) const NO_SESSIONS: &str = "no sessions on this shard (session j runs on shard j mod N)";

/// What a session cell runs here: its sessions (global index, start ns after the origin) and,
/// on a shard, its slot and every session's start.
#[derive(Debug, Clone)]
pub(crate) struct SessionShare {
    /// This process's sessions and their starts.
    pub mine: Vec<(u32, u64)>,
    /// Every session's start (all shards'), for the merge.
    pub starts: Vec<u64>,
    /// The cell's slot, on a shard.
    pub slot: Option<Slot>,
}

impl SessionShare {
    /// The global indices of this process's sessions.
    pub(crate) fn ids(&self) -> Vec<u32> {
        self.mine.iter().map(|(j, _)| *j).collect()
    }

    /// Whether this process flushes the server's cache before the cell: one process does,
    /// and of the shards only shard 0, at its slot's start (before any shard's origin).
    pub(crate) fn flushes(&self, m: &MatrixRun<'_>) -> bool {
        m.shard.as_ref().is_none_or(|s| s.spec.index == 0)
    }
}

/// The cell's share and, on a shard, its slot once its preparation starts. `None`: Ctrl-C
/// while waiting for it.
pub(crate) async fn share(
    m: &MatrixRun<'_>,
    starts: Vec<u64>,
    kind: SlotKind,
) -> Option<SessionShare> {
    let spec = m.shard.as_ref().map(|s| s.spec);
    let mine = my_sessions(spec, &starts);
    let slot = match &m.shard {
        Some(shard) => Some(shard.next_slot(kind, m.progress, &m.cancel).await?),
        None => None,
    };
    Some(SessionShare { mine, starts, slot })
}

/// The monotonic instant at which the wall clock read or reads `unix_ns`, in the past too: a
/// turn's offsets count from the slot's instant itself even where this shard reached it late.
fn instant_of(unix_ns: u64) -> Instant {
    let (now, wall) = (Instant::now(), unix_now_ns());
    match unix_ns.checked_sub(wall) {
        Some(ahead) => now + Duration::from_nanos(ahead),
        None => now
            .checked_sub(Duration::from_nanos(wall - unix_ns))
            .unwrap_or(now),
    }
}

/// Waits until the wall clock reads `unix_ns` (returns at once where it has, or at Ctrl-C):
/// its instant.
async fn until(m: &MatrixRun<'_>, unix_ns: u64) -> Instant {
    let at = instant_of(unix_ns);
    sleep_until_precise(at, &m.cancel).await;
    at
}

/// A shard too late for its session cell's slot: why, as the failed row says it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct LateForSlot(String);

/// The cell's origin: now, or on a shard its slot's origin, waited for once this shard is
/// ready; `Err` with why when it is too late for the slot (a closed loop may start its
/// warm-ups until its window's open instant, the others within the schedule's tolerance).
pub(crate) async fn origin(
    m: &MatrixRun<'_>,
    share: &SessionShare,
    closed: bool,
) -> Result<Instant, LateForSlot> {
    let (Some(slot), Some(shard)) = (share.slot, m.shard.as_deref()) else {
        return Ok(Instant::now());
    };
    if let Some(late) = shard.late_for(&slot, closed) {
        return Err(LateForSlot(late));
    }
    Ok(until(m, slot.origin_unix_ns).await)
}

/// A closed loop's window, once every warm-up of this process is done: it opens now and
/// closes `window_s` later, or on a shard at the slot's instants (with whether this shard's
/// warm-ups were done by the open instant).
pub(crate) async fn window(
    m: &MatrixRun<'_>,
    share: &SessionShare,
    window_s: f64,
) -> (Instant, Option<bool>) {
    match share.slot {
        Some(slot) => {
            let ready = unix_now_ns() <= slot.open_unix_ns;
            until(m, slot.open_unix_ns).await;
            (instant_of(slot.close_unix_ns), Some(ready))
        }
        None => (
            Instant::now() + llmib_core::duration_from_secs(window_s),
            None,
        ),
    }
}

/// A shard's row of a cell none of whose sessions are its own, with its line saying so.
pub(crate) fn idle_row(m: &MatrixRun<'_>, cell: &PlannedCell, share: &SessionShare) -> CellResult {
    let row = bare_result(cell, CellStatus::NotRun, Some(NO_SESSIONS.into()));
    finish(m, cell, share, Vec::new(), (None, None), row)
}

/// On a shard, the row of a session cell with what `merge` needs: its line of
/// `schedules.jsonl` (its turns' metas, the queue gauge it read) and the row's record of the
/// slot (`ready`: whether a closed loop's warm-ups were done at the open instant). A line that
/// cannot be saved fails the row: without it the merge cannot rebuild the cell. Without a
/// shard, the row as it is.
pub(crate) fn finish(
    m: &MatrixRun<'_>,
    cell: &PlannedCell,
    share: &SessionShare,
    turns: Vec<TurnMeta>,
    (max_waiting, ready): (Option<f64>, Option<bool>),
    mut row: CellResult,
) -> CellResult {
    let (Some(shard), Some(slot)) = (m.shard.as_deref(), share.slot) else {
        return row;
    };
    let line = ShardSchedule {
        cell: cell.key,
        due_ns: share.starts.clone(),
        mine: share.ids(),
        prompt_tokens: None,
        expected_prompt_tokens: cell.key.context_tokens,
        slot: shard.record(),
        session: Some(SessionPart { turns, max_waiting }),
    };
    if let Err(e) = m.store.append_schedule(&line) {
        row = failed_result(cell, "store", format!("could not save the schedule: {e}"));
    }
    // The turns' instants count from the slot's origin itself (converted once to this
    // process's clock), as a rate cell's schedule does: lateness shows in the turns.
    let mut c = shard.cell(&slot, slot.origin_unix_ns, share.mine.len() as u64);
    c.ready_at_open = ready;
    row.shard = Some(c);
    row
}
