//! A shard's side of a run spread over several client machines (`run --shard I/N`): its
//! place in the shared timetable (`llmib_core::Timetable`), waits on the wall clock until a
//! slot's instants, the row's record of the slot ([`llmib_core::ShardCell`], with the slot's
//! sizing and when this shard's preparation was done: `llmib_core::SlotRecord`), and the
//! host's clock discipline. Which requests and streams are this shard's is
//! `llmib_core::ShardSpec`'s.
//!
//! Why the wall clock: shards on different machines share no monotonic clock; the timetable's
//! instants are wall-clock ones, converted once per slot to this process's monotonic clock
//! (every offset inside a cell is then monotonic, as on one machine). A skew between the
//! machines' wall clocks shifts a shard's whole cell by the skew; the row records its origin
//! by its own clock, and the host's own error bound, so the merged run can say so.

use crate::progress::events::{Progress, ProgressEvent};
use llmib_core::{
    ClockSync, Plan, ShardCell, ShardSpec, Slot, SlotKind, SlotRecord, Timetable,
    parse_chrony_tracking,
};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// This process's shard and the slots it has handed out.
#[derive(Debug)]
pub struct ShardRun {
    /// The shard.
    pub spec: ShardSpec,
    table: Mutex<Timetable>,
    /// The slot handed out last (cells run one at a time), with when this shard was ready.
    current: Mutex<Option<SlotRecord>>,
    /// The host's clock discipline, read once when the run starts.
    pub clock: Option<ClockSync>,
}

/// The value behind `m`, whether or not a panic poisoned it (the data is plain).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub use llmib_core::unix_now_ns;

/// The monotonic instant at which the wall clock reads `unix_ns` (now, when that has passed).
pub fn instant_at(unix_ns: u64) -> Instant {
    let (now, wall) = (Instant::now(), unix_now_ns());
    now + Duration::from_nanos(unix_ns.saturating_sub(wall))
}

/// A shard's row of a cell another shard measures, or one it has no part in.
pub const NO_STREAMS: &str = "no streams on this shard (stream i runs on shard i mod N)";

/// A prefill cell on a shard other than 0.
pub const PREFILL_ON_SHARD_0: &str = "measured by shard 0";

/// What a shard says before it waits for a slot (`None`: it starts within a second).
fn waiting_note(shard: &ShardRun, slot: &Slot) -> Option<String> {
    let wait_ns = slot.start_unix_ns.saturating_sub(unix_now_ns());
    (wait_ns > 1_000_000_000).then(|| {
        let at = UNIX_EPOCH + Duration::from_nanos(slot.start_unix_ns);
        format!(
            "shard {}: the next cell's slot starts at {} (in {:.0} s)",
            shard.spec,
            llmib_core::rfc3339(at),
            wait_ns as f64 / 1e9
        )
    })
}

/// How long before a timetable instant the runtime's timer hands over to a spin: the timer
/// wakes a millisecond or more late, and every shard's window should open on the instant.
const SPIN_LEAD: Duration = Duration::from_millis(2);

/// Sleeps until `t` on the timer, then yields in a loop for the last [`SPIN_LEAD`], so the
/// caller resumes within microseconds of `t` rather than at the timer's next tick; `false`
/// when `cancel` fired first.
pub async fn sleep_until_precise(t: Instant, cancel: &CancellationToken) -> bool {
    let spin = async {
        tokio::time::sleep_until(t - SPIN_LEAD.min(t.saturating_duration_since(Instant::now())))
            .await;
        while Instant::now() < t {
            tokio::task::yield_now().await;
        }
    };
    tokio::select! {
        _ = cancel.cancelled() => false,
        _ = spin => true,
    }
}

/// The global indices of `n` (an N-stream cell's streams, or a schedule's requests) this
/// process runs: all of them, or a shard's share (`llmib_core::ShardSpec::streams`).
pub fn mine(shard: Option<&ShardRun>, n: u32) -> Vec<u32> {
    match shard {
        Some(s) => s.spec.streams(n),
        None => (0..n).collect(),
    }
}

impl ShardRun {
    /// The shard of `plan`, where it is one (`--shard` and its timetable).
    pub fn of(plan: &Plan) -> Option<ShardRun> {
        let spec = plan.settings.shard?;
        let table = Timetable::new(plan.settings.timetable.as_ref()?);
        Some(ShardRun {
            spec,
            table: Mutex::new(table),
            current: Mutex::new(None),
            clock: read_clock_sync(),
        })
    }

    /// Records that this shard's preparation for the current slot is done (the first call
    /// counts), and says whether it is too late for `slot` (`llmib_core::slot_lateness`).
    pub fn late_for(&self, slot: &Slot, decode: bool) -> Option<String> {
        let now = unix_now_ns();
        self.mark_ready(now);
        llmib_core::slot_lateness(now, slot, decode)
    }

    /// Records that this shard was ready for the current slot's origin at `now_unix_ns`.
    pub fn mark_ready(&self, now_unix_ns: u64) {
        if let Some(r) = lock(&self.current).as_mut() {
            r.ready_ns
                .get_or_insert(now_unix_ns.saturating_sub(r.slot.start_unix_ns));
        }
    }

    /// The current slot's record: its sizing, and when this shard was ready.
    pub fn record(&self) -> Option<SlotRecord> {
        *lock(&self.current)
    }

    /// The next slot of the timetable, once its preparation starts (a note first, where that
    /// is more than a second away). Every shard asks in the plan's order, so they agree.
    /// `None`: `cancel` fired while waiting.
    pub async fn next_slot(
        &self,
        kind: SlotKind,
        progress: &dyn Progress,
        cancel: &CancellationToken,
    ) -> Option<Slot> {
        let (slot, rate) = {
            let mut t = lock(&self.table);
            (t.slot(kind), t.prefill_tok_per_s())
        };
        *lock(&self.current) = Some(SlotRecord {
            slot,
            sized_from: kind,
            prefill_tok_per_s: rate,
            ready_ns: None,
        });
        if let Some(note) = waiting_note(self, &slot) {
            progress.event(ProgressEvent::Note(note));
        }
        sleep_until_precise(instant_at(slot.start_unix_ns), cancel)
            .await
            .then_some(slot)
    }

    /// The row's record of this shard's part of a cell whose origin was taken at
    /// `origin_unix_ns` by this host's clock.
    pub fn cell(&self, slot: &Slot, origin_unix_ns: u64, requests: u64) -> Box<ShardCell> {
        Box::new(ShardCell {
            index: self.spec.index,
            count: self.spec.count,
            origin_due_unix_ns: slot.origin_unix_ns,
            origin_unix_ns,
            open_ns: None,
            close_ns: None,
            ready_at_open: None,
            requests,
            server_generation_tokens: None,
            clock: self.clock,
            slot: self.record().filter(|r| r.slot == *slot),
        })
    }
}

/// The host's clock discipline from chrony (`chronyc -c tracking`), where chrony runs.
/// `None` otherwise: the run then says nothing of its clock's error (docs/distributed.md).
fn read_clock_sync() -> Option<ClockSync> {
    let out = std::process::Command::new("chronyc")
        .args(["-c", "tracking"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    parse_chrony_tracking(&String::from_utf8_lossy(&out.stdout))
}
