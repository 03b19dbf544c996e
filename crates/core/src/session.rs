//! Sessions (METHOD.md, "Sessions"): what a session section is asked to do, and the pure
//! decisions about a conversation's turns: the prefix cache's prediction, the split of a
//! turn's TTFT into prefill and waiting, the cell's KV need, and what a cache that served less
//! than predicted says. The client only sends turns and gathers their records; the row comes
//! from [`session_result`] (`session/row.rs`).
//!
//! A session is one conversation: turn 0 is its history of C tokens (a system prompt, shared
//! by a group of sessions, and an earlier user message), sent once unmeasured so that the
//! server's cache may hold it; turn k ≥ 1 appends the model's own answer to turn k − 1 and a
//! new user message of U tokens, and asks for O tokens.

use crate::length::LengthSpec;
use crate::size::{format_tokens, parse_duration};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

mod agentic;
mod capacity;
mod columns;
mod replay;
mod row;
mod shard;
mod weka;
pub use agentic::{
    AnswerKind, Fork, MessageKind, PriorTurn, fork_shares_turn, replay_shared_prefix,
};
pub use capacity::{
    SESSION_RATE_CAPACITY, SESSION_RATE_CEILING, SESSIONS_CEILING, next_session_rate_step,
    next_session_step, session_capacity_result, session_holds, session_rate_bounds,
    session_rate_capacity_cell, session_rate_capacity_result, session_rate_points,
};
pub use columns::{PerTurn, SessionColumns, SessionFigures};
pub use replay::{
    ReplaySession, ReplayTurn, SessionReplay, TurnInput, parse_session_trace,
    parse_sharegpt_sessions,
};
pub use row::{SessionObservation, TurnRecord, session_result, session_result_at};
pub use shard::{
    SessionLoop, SessionPart, TurnJoinError, TurnMeta, join_turns, my_sessions, session_limits,
    session_slot_kind,
};
pub use weka::parse_weka_trace;

/// The pause between a turn's end and the next turn's send (`--think-time`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ThinkTime {
    /// Always this many seconds (`0`, `2s`, `500ms`).
    Fixed(f64),
    /// Exponential with this mean, seconds (`exp:2s`): a user or a tool that answers at
    /// random instants.
    Exponential(f64),
}

/// A `--think-time` that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a think time: write 0, 2s, 500ms (fixed) or exp:2s (exponential mean)")]
pub struct ThinkTimeError(pub String);

impl FromStr for ThinkTime {
    type Err = ThinkTimeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let bad = || ThinkTimeError(s.to_string());
        let secs = |x: &str| -> Result<f64, ThinkTimeError> {
            let x = x.trim();
            if x == "0" {
                return Ok(0.0);
            }
            parse_duration(x)
                .map(|d| d.as_secs_f64())
                .map_err(|_| bad())
        };
        match t.strip_prefix("exp:") {
            Some(m) => match secs(m)? {
                m if m > 0.0 => Ok(ThinkTime::Exponential(m)),
                _ => Err(bad()),
            },
            None => secs(t).map(ThinkTime::Fixed),
        }
    }
}

impl fmt::Display for ThinkTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = |s: f64| format!("{}ms", (s * 1e3).round() as u64);
        match self {
            ThinkTime::Fixed(s) if *s == 0.0 => f.write_str("0"),
            ThinkTime::Fixed(s) => f.write_str(&ms(*s)),
            ThinkTime::Exponential(m) => write!(f, "exp:{}", ms(*m)),
        }
    }
}

impl ThinkTime {
    /// The pause before one turn, seconds; `u` is a uniform draw in [0, 1) (the run's seeded
    /// generator), so the same seed gives the same pauses.
    pub fn draw(self, u: f64) -> f64 {
        match self {
            ThinkTime::Fixed(s) => s,
            // Inverse CDF; 1 − u is in (0, 1], so the log is finite.
            ThinkTime::Exponential(m) => -m * (1.0 - u.clamp(0.0, 1.0 - f64::EPSILON)).ln(),
        }
    }
}

impl Serialize for ThinkTime {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for ThinkTime {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// What the session section of each context is asked to do (`--sessions`, `--turns`, …), as
/// the plan and run.json hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionSettings {
    /// Concurrent sessions S of each cell (a closed loop: a session's next turn follows its
    /// last one's end and think time).
    pub sessions: Vec<u32>,
    /// Open-loop cells: sessions start at these rates, per second, on a Poisson schedule over
    /// the window (`--session-rate`); each runs `turns` turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_rates: Option<Vec<f64>>,
    /// How an open loop's sessions arrive (`--arrival`; Poisson unless asked).
    #[serde(default = "poisson", skip_serializing_if = "is_poisson")]
    pub arrival: crate::arrival::ArrivalPattern,
    /// Measured turns per session (`None`: turns until the window closes).
    pub turns: Option<u32>,
    /// Tokens of each turn's new user message (U).
    #[serde(with = "length_text")]
    pub turn_input: LengthSpec,
    /// Output tokens asked of each turn (O).
    pub turn_output: u32,
    /// Tokens of the system prompt at the start of every session's history.
    pub system_prompt_tokens: u64,
    /// Sessions share their system prompt in this many groups (session i is in group
    /// i mod g); 0: every session has its own.
    pub system_prompt_groups: u32,
    /// Pause between a turn's end and the next turn's send.
    pub think_time: ThinkTime,
    /// Empty the server's prefix cache before each cell (where the engine has an endpoint).
    pub flush_cache: bool,
    /// The server's cache block size in tokens, where the user knows it better than the
    /// engine says (`None`: the engine's, else 1).
    pub cache_block_tokens: Option<u64>,
    /// The closed-loop decode matrix runs too (`--concurrency` given); else only prefill
    /// cells (the TTFT split's rate) run before the sessions.
    #[serde(default)]
    pub with_decode: bool,
    /// The SLO each session cell is judged against, on its measured turns (`--slo`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<crate::slo::Slo>,
    /// Search each context for the most concurrent sessions whose cell holds the SLO
    /// (`--find-capacity`).
    #[serde(default)]
    pub find_capacity: bool,
    /// The search stops when (failing − holding) / holding is at most this, or the two are
    /// neighbours.
    #[serde(default = "default_precision")]
    pub precision: f64,
    /// A replay of recorded sessions instead of the per-context cells (`--workload
    /// sessions:FILE`, or `sharegpt:FILE` with `--session-rate`), as the user wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// A session trace's speed (`--time-scale K`: 2 replays twice as fast).
    #[serde(default = "one")]
    pub time_scale: f64,
}

fn one() -> f64 {
    1.0
}

fn poisson() -> crate::arrival::ArrivalPattern {
    crate::arrival::ArrivalPattern::Poisson
}

fn is_poisson(a: &crate::arrival::ArrivalPattern) -> bool {
    *a == crate::arrival::ArrivalPattern::Poisson
}

fn default_precision() -> f64 {
    0.05
}

mod length_text {
    use crate::length::LengthSpec;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(l: &LengthSpec, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&l.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<LengthSpec, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl SessionSettings {
    /// The defaults of the flags: 4 turns of a 1K message asking 256 tokens, a 2K system
    /// prompt shared by all sessions, no think time.
    pub fn new(sessions: Vec<u32>) -> SessionSettings {
        SessionSettings {
            sessions,
            session_rates: None,
            arrival: crate::arrival::ArrivalPattern::Poisson,
            turns: Some(4),
            turn_input: LengthSpec::Fixed(1024),
            turn_output: 256,
            system_prompt_tokens: 2048,
            system_prompt_groups: 1,
            think_time: ThinkTime::Fixed(0.0),
            flush_cache: false,
            cache_block_tokens: None,
            with_decode: false,
            slo: None,
            find_capacity: false,
            precision: default_precision(),
            replay: None,
            time_scale: 1.0,
        }
    }

    /// The system-prompt group of session `i` (`None`: it shares its system prompt with none).
    pub fn group_of(&self, session: u32) -> Option<u32> {
        (self.system_prompt_groups > 0).then(|| session % self.system_prompt_groups)
    }

    /// One line for the run's header: `S 1,8 × 4 turns of 1K → 256, system 2K shared`.
    pub fn describe(&self) -> String {
        let mut s: Vec<String> = self.sessions.iter().map(u32::to_string).collect();
        for r in self.session_rates.iter().flatten() {
            s.push(format!("{r}/s"));
        }
        let turns = self
            .turns
            .map_or("turns until the window closes".into(), |t| {
                format!("{t} turns")
            });
        let shared = match self.system_prompt_groups {
            0 => "own".to_string(),
            1 => "shared".to_string(),
            g => format!("in {g} groups"),
        };
        format!(
            "sessions {} × {turns} of {} → {} tokens, system prompt {} {shared}, think {}",
            s.join(","),
            self.turn_input,
            self.turn_output,
            format_tokens(self.system_prompt_tokens),
            self.think_time
        )
    }
}

/// What a perfect prefix cache serves of a prompt of `prompt_tokens` whose first
/// `shared_prefix` tokens were sent or generated before (METHOD.md): the shared prefix, at
/// most the prompt − 1 (an engine computes at least one token), in whole blocks of
/// `block_tokens` (0 or 1: token granularity).
pub fn predicted_cached_prefix(shared_prefix: u64, prompt_tokens: u64, block_tokens: u64) -> u64 {
    let p = shared_prefix.min(prompt_tokens.saturating_sub(1));
    let b = block_tokens.max(1);
    p / b * b
}

/// The prefix turn k + 1 shares with what came before it in its own session: turn k's
/// prompt and the answer the server generated for it (its KV is cached by vLLM's blocks and
/// SGLang's radix tree alike). The new message follows, so nothing of it is shared.
pub fn turn_shared_prefix(previous_prompt: u64, previous_answer: u64) -> u64 {
    previous_prompt.saturating_add(previous_answer)
}

/// One turn's TTFT split (METHOD.md refinement in docs/method-notes.md): the part its
/// uncached tokens explain at the context's measured prefill rate, and the rest (queueing,
/// scheduling), so a slow turn says whether it prefilled or waited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TtftSplit {
    /// Uncached tokens ÷ prefill rate, ms, at most the TTFT.
    pub prefill_ms: f64,
    /// TTFT − `prefill_ms`, ms (≥ 0).
    pub wait_ms: f64,
}

/// The split of a turn's `ttft_ms` with `uncached` prompt tokens at `prefill_tok_per_s`;
/// `None` without a positive rate.
pub fn ttft_split(
    ttft_ms: f64,
    uncached: u64,
    prefill_tok_per_s: Option<f64>,
) -> Option<TtftSplit> {
    let rate = prefill_tok_per_s.filter(|r| r.is_finite() && *r > 0.0)?;
    let prefill_ms = (uncached as f64 / rate * 1e3).min(ttft_ms.max(0.0));
    Some(TtftSplit {
        prefill_ms,
        wait_ms: (ttft_ms - prefill_ms).max(0.0),
    })
}

/// KV tokens a session cell needs at once: every session's history of C tokens plus its first
/// measured turn (U + O, and the warm-up's answer of O), so that no session's prefix must be
/// evicted to run the others. A cell above the KV capacity is predicted Over capacity.
pub fn session_kv_needed(sessions: u32, history: u64, turn_input: u64, turn_output: u32) -> u64 {
    let per = history
        .saturating_add(turn_input)
        .saturating_add(2 * u64::from(turn_output));
    u64::from(sessions).saturating_mul(per)
}

/// How far below its prediction a cell's measured hit rate may be before the row says why:
/// a tenth of the prompt tokens (a template that retokenizes a seam costs a block or two per
/// turn, far less).
pub const CACHE_SHORTFALL: f64 = 0.10;

/// What the cache figures of a cell say, in words (`None`: nothing to say). `cached`: tokens
/// the server reported served from cache (`None`: it does not report them); `working_set`:
/// the tokens every session's history and turns hold at the end; `kv_capacity`: the server's
/// KV tokens, where known; `falling`: the per-turn hit rate fell from the first measured turn
/// to the last by more than [`CACHE_SHORTFALL`].
pub fn cache_note(
    prompt: u64,
    cached: Option<u64>,
    predicted: u64,
    working_set: u64,
    kv_capacity: Option<u64>,
    falling: bool,
) -> Option<String> {
    if prompt == 0 {
        return None;
    }
    let share = |x: u64| x as f64 / prompt as f64;
    let Some(cached) = cached else {
        return Some(
            "the server does not report cached tokens (usage.prompt_tokens_details.cached_tokens or timings.cache_n): the hit rate is predicted only".into(),
        );
    };
    let (measured, predicted_share) = (share(cached), share(predicted));
    if cached == 0 && predicted_share >= 0.5 {
        return Some(format!(
            "prefix caching looks off: the server served no prompt token from cache where a prefix cache would have served {:.0} % (SGLang: drop --disable-radix-cache; vLLM: --enable-prefix-caching)",
            predicted_share * 100.0
        ));
    }
    if measured + CACHE_SHORTFALL >= predicted_share {
        return None;
    }
    let gap = format!(
        "the cache served {:.1} % of prompt tokens against {:.1} % predicted",
        measured * 100.0,
        predicted_share * 100.0
    );
    Some(match kv_capacity {
        Some(kv) if working_set > kv => format!(
            "{gap}: the server evicted sessions' prefixes (their working set of {} tokens exceeds its KV capacity of {kv})",
            working_set
        ),
        _ if falling => {
            format!("{gap}, falling turn by turn: the server evicted sessions' prefixes")
        }
        _ => format!(
            "{gap}: the server evicted prefixes or caches less than a whole prefix (a smaller cache, or a template that rewrites earlier turns)"
        ),
    })
}

#[cfg(test)]
#[path = "tests/session.rs"]
mod tests;
