//! Why the shards' parts of one cell are not one cell: their windows or schedules disagree, a
//! shard holds a record that is not its own, a session cell's turns are not every session's,
//! or none recorded what the merge needs. Any of
//! them fails the merged row (merge.rs, rule 1), these words being its reason.

use crate::figures::Window;

/// Why a cell's shards cannot be merged into one cell.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CellMergeError {
    /// Two shards recorded different decode windows.
    #[error(
        "the shards' windows disagree: shard {first} [{}, {}] ns, shard {shard} [{}, {}] ns",
        .first_window.start_ns,
        .first_window.end_ns,
        .window.start_ns,
        .window.end_ns
    )]
    WindowsDisagree {
        /// The first shard that recorded one.
        first: u32,
        /// Its window.
        first_window: Window,
        /// The shard that disagrees.
        shard: u32,
        /// Its window.
        window: Window,
    },
    /// No shard recorded the decode window.
    #[error("no shard recorded the decode window")]
    NoWindow,
    /// No shard wrote the rate cell's schedule.
    #[error("no shard wrote the cell's schedule (schedules.jsonl)")]
    NoSchedule,
    /// Two shards wrote different schedules.
    #[error(
        "the shards' schedules disagree: shard {first} has {first_due} requests due, shard {shard} {due} (or other instants)"
    )]
    SchedulesDisagree {
        /// The first shard that wrote one.
        first: u32,
        /// How many requests its schedule has due.
        first_due: usize,
        /// The shard that disagrees.
        shard: u32,
        /// How many its schedule has due.
        due: usize,
    },
    /// A shard claims a request past the end of the schedule.
    #[error("shard {shard} claims request {request} of a schedule of {len}")]
    PastSchedule {
        /// The shard.
        shard: u32,
        /// The request it claims.
        request: u32,
        /// Requests in the schedule.
        len: usize,
    },
    /// Two shards claim one request.
    #[error("shards {other} and {shard} both claim request {request}")]
    Claimed {
        /// The shard that claimed it first.
        other: u32,
        /// The second.
        shard: u32,
        /// The request.
        request: u32,
    },
    /// A shard holds a record of a request its schedule does not give it.
    #[error(
        "shard {shard} holds a record of request {request}, which its schedule does not give it"
    )]
    ForeignRequest {
        /// The shard.
        shard: u32,
        /// The request (its record's stream).
        request: u32,
    },
    /// Sessions of a session cell that no shard ran (a shard that wrote no schedule line).
    #[error(
        "sessions {sessions:?} of {of} are in no shard's line of schedules.jsonl: no shard ran them"
    )]
    Unclaimed {
        /// The first few sessions no shard claims.
        sessions: Vec<u32>,
        /// Sessions in the cell.
        of: usize,
    },
    /// A shard's schedule line of a session cell without its turns.
    #[error("shard {shard}'s line of schedules.jsonl lists no turns of the session cell")]
    NoTurns {
        /// The shard.
        shard: u32,
    },
    /// A shard's turns and its records are not one set.
    #[error("shard {shard}: {source}")]
    Turns {
        /// The shard.
        shard: u32,
        /// What does not match.
        source: crate::session::TurnJoinError,
    },
    /// A shard holds a decode record that is not one of its streams.
    #[error("shard {shard} holds a record of stream {stream}, which is not one of its streams")]
    ForeignStream {
        /// The shard.
        shard: u32,
        /// The stream.
        stream: u32,
    },
}
