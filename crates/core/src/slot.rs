//! A shard's slots of the timetable as data (`crate::timetable` hands them out and sizes them):
//! the instants of one cell's slot, what the plan knew of the cell's work, and a shard's record
//! of both with how long its own preparation took. Apart from the timetable so that a row
//! (`crate::cell`) can hold its slot's record without importing the timetable, which imports
//! the row's key.

use serde::{Deserialize, Serialize};

/// What a slot is for, with what the plan knows of its work: what sizes it (and, in a
/// shard's record, what it was sized from). Token counts are the whole cell's, all shards'.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "cell", rename_all = "snake_case")]
pub enum SlotKind {
    /// A prefill cell: shard 0 builds its prompts, then measures its cold prefills.
    Prefill {
        /// Prompt tokens built (every repeat's prompt).
        build_tokens: u64,
        /// Prompt tokens prefilled cold by the measurement.
        cold_tokens: u64,
    },
    /// A decode cell: the prompts of the streams new at this context built and warmed, the
    /// ramp, the window.
    Decode {
        /// Prompt tokens built and warmed (the streams no earlier cell at this context ran).
        warm_tokens: u64,
        /// The N streams' prompt tokens the ramp prefills (at most): all of them, or the
        /// last cache block of each where the server caches the prompts the preparation
        /// warmed.
        stream_tokens: u64,
        /// The readiness limit (`--readiness-timeout`), seconds.
        readiness_limit_s: f64,
        /// The window, seconds.
        window_s: f64,
    },
    /// A rate cell: its prompts built (cold by design, none warmed), its schedule's span (the
    /// last due instant) and the drain limit.
    Rate {
        /// Prompt tokens built (every request's).
        build_tokens: u64,
        /// From the first to the last due instant, seconds.
        span_s: f64,
        /// How long requests still running are waited for (`--drain-timeout`), seconds.
        drain_s: f64,
    },
    /// A session cell (`crate::session_slot_kind`): every session's history (a replay's
    /// opening) built; a closed loop's histories warmed together from the origin (turn 0)
    /// before its window opens; its sessions' starts and turns over the span, then the drain
    /// limit a single machine gives the turns still running.
    Session {
        /// Prompt tokens built (every session's history or opening).
        build_tokens: u64,
        /// Prompt tokens a closed loop warms together before its window (every history);
        /// 0 where each session warms its own at its arrival (an open loop, a replay).
        warm_tokens: u64,
        /// The window (a closed loop), the arrivals' window (an open loop) or the last
        /// session's start (a replay), seconds.
        span_s: f64,
        /// How long turns still running after the span are waited for, seconds.
        drain_s: f64,
    },
}

/// One cell's slot, instants in ns since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slot {
    /// The slot starts: preparation.
    pub start_unix_ns: u64,
    /// The cell origin: decode streams start, a rate schedule's offsets count from here, a
    /// prefill is measured.
    pub origin_unix_ns: u64,
    /// A decode window opens (otherwise = origin).
    pub open_unix_ns: u64,
    /// A decode window closes; a rate cell's last request is due; a prefill's measurement
    /// should be over.
    pub close_unix_ns: u64,
    /// The next slot starts (a rate cell: after its drain limit).
    pub end_unix_ns: u64,
}

/// A shard's record of one slot (its row's, and a rate cell's schedule line): the instants,
/// what they were sized from, and when this shard's preparation was done.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SlotRecord {
    /// The slot's instants.
    pub slot: Slot,
    /// What the plan knew of the cell's work.
    pub sized_from: SlotKind,
    /// The prefill rate the slot was sized for, prompt tokens per second.
    pub prefill_tok_per_s: f64,
    /// When this shard was ready for the origin, ns after the slot's start: its preparation
    /// took that long (`None`: it prepared nothing, having no part in the cell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_ns: Option<u64>,
}

impl SlotRecord {
    /// The slot's preparation, ns (the budget the shard's `ready_ns` is held to).
    pub fn prep_ns(&self) -> u64 {
        self.slot
            .origin_unix_ns
            .saturating_sub(self.slot.start_unix_ns)
    }
}
