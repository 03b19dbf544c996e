//! The timetable that shards of one run follow (`run --shard I/N --start-at T`): every cell
//! gets a slot of wall-clock time, the same on every shard, so that a decode window opens and
//! closes, and a rate cell's schedule starts, at the same instants on every client machine.
//! Shards cannot talk to each other; they agree because each computes the same slots from
//! the same plan, settings and start instant. Pure: the clock is read by the caller.
//!
//! A slot, in order: *prep* (prompts built, cold prompts warmed), then at the *origin* a
//! decode cell's streams start and ramp up to the *open* instant, its window runs to *close*;
//! a rate cell's schedule starts at the origin (open = origin), its last request is due at
//! close, then its drain limit; a prefill cell is measured by shard 0 from the origin to
//! close. Each part is sized to the cell from what the plan knows ([`slot_parts`]): the
//! preparation from the prompt tokens it builds and warms, at the tokenizer's and the
//! server's prefill rate (`--shard-prefill-rate`); a decode ramp from the prefill of the
//! cell's N prompts at that rate (of their last cache block only, where the server keeps the
//! prompts the preparation warmed), at most the readiness limit a single machine uses; a rate
//! cell has no ramp at all. The first slot's preparation is at least `--shard-prep-seconds`
//! after the start instant. A measured duration cannot size a slot: it differs between
//! machines, and shards that cannot talk would disagree on every later instant. Each shard
//! records instead how long its preparation took ([`SlotRecord`]), so the merge shows the
//! slack. Also here: the schedule file a merge reads ([`ShardSchedule`]) and the host's clock
//! discipline as chrony reports it.

use crate::cell::{CellKey, ClockSync, Phase};
use crate::session::SessionPart;
use crate::slot::{Slot, SlotKind, SlotRecord};
use serde::{Deserialize, Serialize};

/// The least time from one slot's measured part (a window's close, a rate cell's drain limit,
/// a prefill's measurement) to the next slot's origin: for the streams to stop and the server
/// to free their KV. It overlaps the next slot's preparation (a warm-up is not measured), so a
/// longer preparation costs nothing more. An abort takes well under a second on the engines
/// measured: twice that.
pub const SLOT_GRACE_NS: u64 = 2_000_000_000;

/// The default `--shard-prep-seconds`: the first slot's preparation after the start instant
/// (every shard has probed the server before it). Longer where the first cell's own
/// preparation, sized from the plan, needs it.
pub const DEFAULT_PREP_S: f64 = 10.0;

/// The default `--shard-prefill-rate`, prompt tokens per second of the whole server: the
/// slowest prefill of the project's published matrix (10.6K tok/s), rounded down, so that an
/// unknown server is rather waited for than measured while it still warms.
pub const DEFAULT_SHARD_PREFILL_TOK_PER_S: f64 = 10_000.0;

/// How fast the server's tokenizer builds prompts (a tokenize, a detokenize and one or two
/// verifying tokenizes per prompt; a 1M-token prompt takes a few seconds), prompt tokens per
/// second for all shards together.
pub const BUILD_TOK_PER_S: f64 = 250_000.0;

/// A preparation's part besides its prompt tokens: the requests assembled, a progress note.
pub const PREP_FIXED_NS: u64 = 500_000_000;

/// The shortest decode ramp: N requests admitted from the prefix cache and their first
/// decode step, seen by the readiness judge in two agreeing samples.
pub const RAMP_FLOOR_NS: u64 = 1_000_000_000;

/// A prefill measurement's part besides its prompt tokens: the request sent and answered,
/// the server's prefill counters read around it.
pub const PREFILL_FLOOR_NS: u64 = 1_000_000_000;

/// The timetable's settings, shared by every shard (part of the plan's hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimetableSettings {
    /// `--start-at` as given (RFC 3339).
    pub start_at: String,
    /// The same instant, ns since the Unix epoch.
    pub start_unix_ns: u64,
    /// The first slot's preparation, seconds (`--shard-prep-seconds`).
    pub prep_s: f64,
    /// The server's prefill rate the slots are sized for, prompt tokens per second
    /// (`--shard-prefill-rate`; a run.json from before it: the default).
    #[serde(default = "default_prefill_rate")]
    pub prefill_tok_per_s: f64,
    /// Where the server's configuration says it keeps prompts in a prefix cache (vLLM
    /// `enable_prefix_caching`, SGLang's radix cache): its block size, tokens. A decode
    /// cell's preparation warms its streams' prompts, so its ramp prefills at most the last
    /// block of each ([`matrix_slot_kind`]). `None`: off or not said (llama.cpp, a hosted
    /// API, a run.json from before it), and a ramp is sized as the prefill of whole prompts.
    /// Read from the server after the probe, so shards of one server agree on it (and shards
    /// that read it differently have different plan hashes, which a merge refuses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_block_tokens: Option<u64>,
}

/// [`DEFAULT_SHARD_PREFILL_TOK_PER_S`], for serde.
fn default_prefill_rate() -> f64 {
    DEFAULT_SHARD_PREFILL_TOK_PER_S
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

/// A slot's parts, ns, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotParts {
    /// Preparation, to the origin.
    pub prep_ns: u64,
    /// Decode: the ramp, from the origin to the window's open instant.
    pub ramp_ns: u64,
    /// The window, the schedule's span, or the prefill measurement.
    pub body_ns: u64,
    /// Rate: the drain limit after the last due instant.
    pub drain_ns: u64,
}

/// The time `tokens` take at `per_s` tokens per second, ns.
fn at_rate(tokens: u64, per_s: f64) -> u64 {
    ns(tokens as f64 / per_s)
}

/// The parts of a slot of `kind` when the server prefills `prefill_tok_per_s` (an invalid
/// rate counts as the default). The preparation is the fixed part plus its prompt tokens at
/// the tokenizer's rate ([`BUILD_TOK_PER_S`]) and those it warms at the prefill rate, at
/// least [`SLOT_GRACE_NS`] (the grace before the origin); a decode ramp is the prefill of the
/// N prompts plus [`RAMP_FLOOR_NS`], at most the readiness limit; a rate cell has no ramp,
/// and its drain limit is a single machine's; a closed loop of sessions ramps by warming its
/// histories, and drains as a single machine does. Every shard computes the same.
pub fn slot_parts(kind: SlotKind, prefill_tok_per_s: f64) -> SlotParts {
    let rate = if prefill_tok_per_s.is_finite() && prefill_tok_per_s > 0.0 {
        prefill_tok_per_s
    } else {
        DEFAULT_SHARD_PREFILL_TOK_PER_S
    };
    let prep = |build: u64, warm: u64| {
        PREP_FIXED_NS
            .saturating_add(at_rate(build, BUILD_TOK_PER_S))
            .saturating_add(at_rate(warm, rate))
            .max(SLOT_GRACE_NS)
    };
    let none = SlotParts {
        prep_ns: 0,
        ramp_ns: 0,
        body_ns: 0,
        drain_ns: 0,
    };
    match kind {
        SlotKind::Prefill {
            build_tokens,
            cold_tokens,
        } => SlotParts {
            prep_ns: prep(build_tokens, 0),
            body_ns: PREFILL_FLOOR_NS.saturating_add(at_rate(cold_tokens, rate)),
            ..none
        },
        SlotKind::Decode {
            warm_tokens,
            stream_tokens,
            readiness_limit_s,
            window_s,
        } => SlotParts {
            prep_ns: prep(warm_tokens, warm_tokens),
            ramp_ns: RAMP_FLOOR_NS
                .saturating_add(at_rate(stream_tokens, rate))
                .min(ns(readiness_limit_s)),
            body_ns: ns(window_s),
            ..none
        },
        SlotKind::Rate {
            build_tokens,
            span_s,
            drain_s,
        } => SlotParts {
            prep_ns: prep(build_tokens, 0),
            body_ns: ns(span_s),
            drain_ns: ns(drain_s),
            ..none
        },
        // The histories are built in the preparation and warmed inside the cell (turn 0 is
        // the cell's own, unmeasured), so a closed loop's ramp is their prefill, uncapped: a
        // single machine's window too opens only when every warm-up is done.
        SlotKind::Session {
            build_tokens,
            warm_tokens,
            span_s,
            drain_s,
        } => SlotParts {
            prep_ns: prep(build_tokens, 0),
            ramp_ns: if warm_tokens > 0 {
                RAMP_FLOOR_NS.saturating_add(at_rate(warm_tokens, rate))
            } else {
                0
            },
            body_ns: ns(span_s),
            drain_ns: ns(drain_s),
        },
    }
}

/// What sizes a matrix cell's slot besides the cell itself (from the run's settings).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MatrixSlotSettings {
    /// `--prefill-repeats`: cold prefills per prefill cell.
    pub prefill_repeats: u32,
    /// `--readiness-timeout`, seconds.
    pub readiness_limit_s: f64,
    /// `--duration`, seconds.
    pub window_s: f64,
    /// [`TimetableSettings::cached_prompt_block_tokens`]: the server keeps warmed prompts
    /// in its prefix cache, in blocks of this many tokens.
    pub cached_prompt_block_tokens: Option<u64>,
}

/// The slot of the matrix cell `cells[index]` (prefill or decode; the matrix's other phases
/// never run on shards and are sized as a prefill), from the plan alone: `measured(i)` says
/// whether cell i takes a slot (one predicted over capacity does not). A decode cell builds
/// and warms the streams no earlier measured decode cell at its context ran (N ascends, and a
/// prompt warmed once stays cached). Its ramp prefills every stream's prompt, or where the
/// server keeps prompts in a prefix cache, at most the last block of each: the engines
/// recompute at least a prompt's last token for its logits, and a block cache serves whole
/// blocks only.
pub fn matrix_slot_kind(
    cells: &[CellKey],
    index: usize,
    measured: &dyn Fn(usize) -> bool,
    s: MatrixSlotSettings,
) -> SlotKind {
    let Some(key) = cells.get(index) else {
        return SlotKind::Prefill {
            build_tokens: 0,
            cold_tokens: 0,
        };
    };
    let (c, n) = (key.context_tokens, u64::from(key.concurrency));
    if key.phase != Phase::Decode {
        let tokens = c.saturating_mul(u64::from(s.prefill_repeats.max(1)));
        return SlotKind::Prefill {
            build_tokens: tokens,
            cold_tokens: tokens,
        };
    }
    let ran = (0..index)
        .filter(|&i| cells[i].phase == Phase::Decode && cells[i].context_tokens == c)
        .filter(|&i| measured(i))
        .map(|i| u64::from(cells[i].concurrency))
        .max()
        .unwrap_or(0);
    let uncached = s
        .cached_prompt_block_tokens
        .map_or(c, |block| c.min(block.max(1)));
    SlotKind::Decode {
        warm_tokens: n.saturating_sub(ran).saturating_mul(c),
        stream_tokens: n.saturating_mul(uncached),
        readiness_limit_s: s.readiness_limit_s,
        window_s: s.window_s,
    }
}

/// Hands out consecutive slots from the start instant.
#[derive(Debug, Clone)]
pub struct Timetable {
    next_unix_ns: u64,
    /// The first slot's least preparation; 0 once it is handed out.
    first_prep_ns: u64,
    prefill_tok_per_s: f64,
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
            first_prep_ns: ns(s.prep_s),
            prefill_tok_per_s: s.prefill_tok_per_s,
        }
    }

    /// The prefill rate the slots are sized for.
    pub fn prefill_tok_per_s(&self) -> f64 {
        self.prefill_tok_per_s
    }

    /// The next slot, for a cell of `kind` ([`slot_parts`]; the first slot's preparation is
    /// at least `--shard-prep-seconds`). Every shard asks for slots in the same order (the
    /// plan's), so every shard gets the same ones.
    pub fn slot(&mut self, kind: SlotKind) -> Slot {
        let p = slot_parts(kind, self.prefill_tok_per_s);
        let start = self.next_unix_ns;
        let origin = start.saturating_add(p.prep_ns.max(self.first_prep_ns));
        let open = origin.saturating_add(p.ramp_ns);
        let close = open.saturating_add(p.body_ns);
        let end = close.saturating_add(p.drain_ns);
        self.next_unix_ns = end;
        self.first_prep_ns = 0;
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
            "this shard was ready {late_s:.1} s after its slot's origin, past {what}: its prompts and warm-up took longer than the slot's preparation, which is sized from the plan at --shard-prefill-rate (give the server's measured prefill rate, or less; the first slot's is at least --shard-prep-seconds)"
        )
    })
}

/// Whether a prefill that shard 0 finished measuring at `now_unix_ns` ran past its slot's
/// close, and why (`None`: it ended inside the slot). The next slot's preparation starts at
/// the close on every other shard, so its warm-ups may have run beside the measurement.
pub fn prefill_overrun(now_unix_ns: u64, slot: &Slot) -> Option<String> {
    (now_unix_ns > slot.close_unix_ns).then(|| {
        let over_s = (now_unix_ns - slot.close_unix_ns) as f64 / 1e9;
        format!(
            "the prefill measurement ended {over_s:.1} s after its slot closed, when the next cell's preparation may have run beside it: give --shard-prefill-rate the server's measured prefill rate, or less (the slot is sized from it)"
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
/// lengths built for this shard's requests, so a merge can judge the union as one cell; or a
/// session cell's sessions' starts and this shard's turns.
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
    /// The cell's slot on this shard: what it was sized from and how long the preparation
    /// took (absent in a schedule written before slots were recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotRecord>,
    /// A session cell: `due_ns` holds every session's start (index = session, all shards'),
    /// `mine` this shard's sessions, and this its turns (which session and turn each of its
    /// records in `requests.jsonl` is), so a merge rebuilds the row from every shard's turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionPart>,
}

#[cfg(test)]
#[path = "tests/timetable.rs"]
mod tests;
