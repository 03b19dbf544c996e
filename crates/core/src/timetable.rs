//! The timetable that shards of one run follow (`run --shard I/N --start-at T`): every cell
//! gets a slot of wall-clock time, the same on every shard, so that a decode window opens and
//! closes, and a rate cell's schedule starts, at the same instants on every client machine.
//! Shards cannot talk to each other; they agree because each computes the same slots from
//! the same plan, settings and start instant. Pure: the clock is read by the caller.
//!
//! A slot, in order: *prep* (`--shard-prep-seconds`: prompts built, cold prompts warmed, a
//! prefill cell measured on shard 0), then at the *origin* a decode cell's streams start and
//! ramp up to the *open* instant (the readiness limit later), its window runs to *close*; a
//! rate cell's schedule starts at the origin (open = origin) and its last request is due at
//! close, then the drain limit. A grace period lets the streams stop and the server free its
//! KV before the next slot. Also here: the schedule file a merge reads ([`ShardSchedule`]) and
//! the host's clock discipline as chrony reports it.

use crate::cell::{CellKey, ClockSync};
use serde::{Deserialize, Serialize};

/// After a slot's window or drain: time for the streams to stop and the server to free
/// their KV before the next slot starts (an abort takes well under a second on the engines
/// measured; a slow one shows as a first sample with waiting requests).
pub const SLOT_GRACE_NS: u64 = 3_000_000_000;

/// The default `--shard-prep-seconds`.
pub const DEFAULT_PREP_S: f64 = 60.0;

/// The timetable's settings, shared by every shard (part of the plan's hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimetableSettings {
    /// `--start-at` as given (RFC 3339).
    pub start_at: String,
    /// The same instant, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// Each slot's preparation, seconds (`--shard-prep-seconds`).
    pub prep_s: f64,
}

impl TimetableSettings {
    /// Why a shard starting at `now_unix_ns` cannot follow the timetable, if it cannot: the
    /// first slot's preparation is already over (a start instant in the past, or a machine
    /// that started too late), so every cell would be late.
    pub fn missed(&self, now_unix_ns: u64) -> Option<String> {
        let first_origin = self.start_unix_ns.saturating_add(ns(self.prep_s));
        (now_unix_ns > first_origin).then(|| {
            let ago = (now_unix_ns - self.start_unix_ns) as f64 / 1e9;
            format!(
                "--start-at {} passed {ago:.0} s ago: give every shard the same instant a few minutes ahead (e.g. $(date -u -d '+3 min' +%FT%TZ))",
                self.start_at
            )
        })
    }
}

/// What a slot is for, with the lengths that size it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SlotKind {
    /// A prefill cell (measured by shard 0 inside the prep time).
    Prefill,
    /// A decode cell: the ramp (the readiness limit) and the window, seconds.
    Decode {
        /// Longest ramp before the window opens.
        ramp_s: f64,
        /// The window.
        window_s: f64,
    },
    /// A rate cell: the schedule's span (its last due instant) and the drain limit, seconds.
    Rate {
        /// From the first to the last due instant.
        span_s: f64,
        /// How long requests still running are waited for.
        drain_s: f64,
    },
}

/// One cell's slot, instants in ns since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// The slot starts: preparation.
    pub start_unix_ns: u64,
    /// The cell origin: decode streams start, a rate schedule's offsets count from here.
    pub origin_unix_ns: u64,
    /// A decode window opens (a rate cell: = origin).
    pub open_unix_ns: u64,
    /// A decode window closes; a rate cell's last request is due.
    pub close_unix_ns: u64,
    /// The next slot starts.
    pub end_unix_ns: u64,
}

/// Hands out consecutive slots from the start instant.
#[derive(Debug, Clone)]
pub struct Timetable {
    next_unix_ns: u64,
    prep_ns: u64,
}

/// Seconds as ns, saturating (a hand-edited run.json never panics).
fn ns(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e9).min(u64::MAX as f64) as u64
    } else {
        0
    }
}

impl Timetable {
    /// The timetable of `s`: the first slot starts at the start instant.
    pub fn new(s: &TimetableSettings) -> Timetable {
        Timetable {
            next_unix_ns: s.start_unix_ns,
            prep_ns: ns(s.prep_s),
        }
    }

    /// The next slot, for a cell of `kind`. Every shard asks for slots in the same order
    /// (the plan's), so every shard gets the same ones.
    pub fn slot(&mut self, kind: SlotKind) -> Slot {
        let start = self.next_unix_ns;
        let origin = start.saturating_add(self.prep_ns);
        let (open, close, end) = match kind {
            SlotKind::Prefill => (origin, origin, origin),
            SlotKind::Decode { ramp_s, window_s } => {
                let open = origin.saturating_add(ns(ramp_s));
                let close = open.saturating_add(ns(window_s));
                (open, close, close.saturating_add(SLOT_GRACE_NS))
            }
            SlotKind::Rate { span_s, drain_s } => {
                let close = origin.saturating_add(ns(span_s));
                let end = close.saturating_add(ns(drain_s));
                (origin, close, end.saturating_add(SLOT_GRACE_NS))
            }
        };
        self.next_unix_ns = end;
        Slot {
            start_unix_ns: start,
            origin_unix_ns: origin,
            open_unix_ns: open,
            close_unix_ns: close,
            end_unix_ns: end,
        }
    }
}

/// How late a rate cell's schedule may start against its slot's origin: later, its first
/// requests would go out together instead of on the schedule.
pub const RATE_START_TOLERANCE_NS: u64 = 50_000_000;

/// Whether a shard that is ready to start a cell at `now_unix_ns` is too late for its slot,
/// and why (`None`: on time). A decode cell's streams may start late up to the window's open
/// instant (the ramp absorbs it); a rate cell's schedule must start within
/// [`RATE_START_TOLERANCE_NS`] of the origin.
pub fn slot_lateness(now_unix_ns: u64, slot: &Slot, decode: bool) -> Option<String> {
    let (limit, what) = if decode {
        (slot.open_unix_ns, "the window's open instant")
    } else {
        (
            slot.origin_unix_ns.saturating_add(RATE_START_TOLERANCE_NS),
            "the schedule's start",
        )
    };
    (now_unix_ns > limit).then(|| {
        let late_s = now_unix_ns.saturating_sub(slot.origin_unix_ns) as f64 / 1e9;
        format!(
            "this shard was ready {late_s:.1} s after its slot's origin, past {what}: raise --shard-prep-seconds (prompts and warm-up took longer than the slot's preparation)"
        )
    })
}

/// Reads `chronyc -c tracking` (CSV: reference id, name, stratum, reference time, system
/// time offset s, last offset s, RMS offset s, frequency, residual frequency, skew, root delay
/// s, root dispersion s, update interval, leap status). The estimated error is the system
/// clock's offset from chrony's estimate of true time; the maximum adds half the root delay
/// and the root dispersion (chrony's own bound on the reference's error). `None` for any
/// other text.
pub fn parse_chrony_tracking(text: &str) -> Option<ClockSync> {
    let f: Vec<&str> = text.lines().next()?.split(',').map(str::trim).collect();
    if f.len() < 14 {
        return None;
    }
    let num = |i: usize| f[i].parse::<f64>().ok().filter(|x| x.is_finite());
    let offset = num(4)?.abs();
    let (delay, dispersion) = (num(10)?.abs(), num(11)?.abs());
    Some(ClockSync {
        synchronized: f[13].eq_ignore_ascii_case("normal"),
        est_error_ms: offset * 1e3,
        max_error_ms: (offset + delay / 2.0 + dispersion) * 1e3,
    })
}

/// One line of a shard's `schedules.jsonl`: a rate cell's global schedule, and the prompt
/// lengths built for this shard's requests, so a merge can judge the union as one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSchedule {
    /// The rate cell.
    pub cell: CellKey,
    /// Every request's due instant, ns from the origin (all shards', index = request).
    pub due_ns: Vec<u64>,
    /// The requests this shard sent (global indices, ascending).
    pub mine: Vec<u32>,
    /// Where prompt lengths vary: the prompt tokens built for each of `mine`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<Vec<u64>>,
    /// The prompt tokens built (C) where all prompts are alike.
    pub expected_prompt_tokens: u64,
}

#[cfg(test)]
#[path = "tests/timetable.rs"]
mod tests;
