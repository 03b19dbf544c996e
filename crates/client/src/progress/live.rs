//! What a decode window publishes for live views while it runs: per-stream first-token flags
//! and token counts, requests ended and errored, when the window opened and why, and the last
//! gauge sample. Writers are the streams (one relaxed atomic per read, no lock on the chunk
//! path) and the gauge sampler; readers (a dashboard) poll a few times a second. A session
//! cell publishes the same window, one stream per session, with its turns beside it
//! (`SessionTurns`: turns done of planned, the latest turns' TTFTs, cached tokens against
//! the prediction), written once per turn, never per chunk.
//!
//! Nothing here feeds a figure: the cell's figures come from the records. Token counts are the
//! client's running count (exact with per-chunk usage; chunks until counted otherwise, see
//! [`LiveWindow::tokens_exact`]).

use crate::progress::latency::LiveLatencies;
use crate::server::engine::Gauges;
pub use crate::wire::live::{LiveText, StreamLive, TEXT_RING_BYTES, TextRing, TextRings};
use llmib_core::ReadinessBy;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// One window's live state, shared by its streams, its sampler and any view.
#[derive(Debug)]
pub struct LiveWindow {
    /// N.
    pub concurrency: u32,
    /// The planned window length.
    pub duration: Duration,
    /// Whether [`StreamLive::tokens`] counts server-reported tokens (per-chunk usage) rather
    /// than chunks awaiting a count.
    pub tokens_exact: bool,
    streams: Vec<StreamLive>,
    ended: AtomicU64,
    errors: AtomicU64,
    opened: OnceLock<(Instant, ReadinessBy)>,
    closed: OnceLock<Instant>,
    gauges: Mutex<Option<(Instant, Gauges)>>,
    /// A session cell's turns (`None`: a decode window).
    turns: Option<SessionTurns>,
    /// The TTFT and TPOT of its requests as they end (`--metrics-listen`).
    pub latency: LiveLatencies,
}

impl LiveWindow {
    /// A window of `concurrency` streams lasting `duration` once open.
    pub fn new(concurrency: u32, duration: Duration, tokens_exact: bool) -> Self {
        LiveWindow {
            concurrency,
            duration,
            tokens_exact,
            streams: (0..concurrency).map(|_| StreamLive::default()).collect(),
            ended: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            opened: OnceLock::new(),
            closed: OnceLock::new(),
            gauges: Mutex::new(None),
            turns: None,
            latency: LiveLatencies::default(),
        }
    }

    /// A session cell's window: one stream per session (`sessions` of them), its measured
    /// turns counted as they end (`planned`: how many it plans, where that is known).
    pub fn for_sessions(
        sessions: u32,
        duration: Duration,
        tokens_exact: bool,
        planned: Option<u64>,
    ) -> Self {
        let mut w = LiveWindow::new(sessions, duration, tokens_exact);
        w.turns = Some(SessionTurns::new(planned));
        w
    }

    /// A session cell's measured turn `(session, turn)` ended (turn 1 is the first measured
    /// one), with its TTFT in ms, whether it errored, and its tokens; nothing on a decode
    /// window. Once per turn, never per chunk.
    pub fn turn_ended(
        &self,
        at: (u32, u32),
        ttft_ms: Option<f64>,
        errored: bool,
        tokens: TurnTokens,
    ) {
        if let Some(t) = &self.turns {
            t.ended(at, ttft_ms, errored, tokens);
        }
    }

    /// A session cell's measured turns began at `at` (a closed loop: every warm-up done).
    pub fn open_turns(&self, at: Instant) {
        if let Some(t) = &self.turns {
            let _ = t.opened.set(at);
        }
    }

    /// Whether this is a session cell's window ([`LiveWindow::for_sessions`]).
    pub fn is_sessions(&self) -> bool {
        self.turns.is_some()
    }

    /// A session cell's measured turns planned (`None`: not known, or a decode window).
    pub fn turns_planned(&self) -> Option<u64> {
        self.turns.as_ref().and_then(|t| t.planned)
    }

    /// A session cell's measured turns ended so far, and how many of them errored.
    pub fn turns_done(&self) -> (u64, u64) {
        self.turns.as_ref().map_or((0, 0), SessionTurns::done)
    }

    /// A session cell's prefix-cache hit rate so far: as the server reported it (over the
    /// turns it reported for) and as predicted (over every ended turn); `None` before a turn
    /// counts.
    pub fn hit_rates(&self) -> (Option<f64>, Option<f64>) {
        self.turns
            .as_ref()
            .map_or((None, None), SessionTurns::hit_rates)
    }

    /// A session cell's latest measured turns, oldest first (at most `LATEST_TURNS`): the
    /// session (0-based), the turn (1-based) and its TTFT in ms (`None`: no token came).
    pub fn latest_turns(&self) -> Vec<(u32, u32, Option<f64>)> {
        self.turns
            .as_ref()
            .map_or_else(Vec::new, SessionTurns::latest)
    }

    /// When a session cell's measured turns began (a closed loop: every warm-up done).
    pub fn turns_opened(&self) -> Option<Instant> {
        self.turns.as_ref().and_then(|t| t.opened.get().copied())
    }

    /// Stream `i`'s state (`None` past N).
    pub fn stream(&self, i: usize) -> Option<&StreamLive> {
        self.streams.get(i)
    }

    /// Streams that have received a token.
    pub fn streams_with_token(&self) -> u32 {
        self.streams
            .iter()
            .filter(|s| s.first_token.load(Ordering::Relaxed))
            .count() as u32
    }

    /// Tokens received so far by all streams.
    pub fn tokens(&self) -> u64 {
        self.streams
            .iter()
            .map(|s| s.tokens.load(Ordering::Relaxed))
            .sum()
    }

    /// A request ended (`errored`: with an error).
    pub fn request_ended(&self, errored: bool) {
        self.ended.fetch_add(1, Ordering::Relaxed);
        if errored {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Requests ended so far, and how many of them errored.
    pub fn ended(&self) -> (u64, u64) {
        (
            self.ended.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        )
    }

    /// Requests errored so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The readiness judge decided at `at` (the window opens then, unless `by` is an error).
    pub fn open(&self, by: ReadinessBy, at: Instant) {
        let _ = self.opened.set((at, by));
    }

    /// When the ramp ended and why.
    pub fn opened(&self) -> Option<(Instant, ReadinessBy)> {
        self.opened.get().copied()
    }

    /// The window closed at `at` (its end or its failure).
    pub fn close(&self, at: Instant) {
        let _ = self.closed.set(at);
    }

    /// When the window closed.
    pub fn closed(&self) -> Option<Instant> {
        self.closed.get().copied()
    }

    /// Records a gauge sample read at `at` (a few per second, never per chunk).
    pub fn set_gauges(&self, g: Gauges, at: Instant) {
        if let Ok(mut slot) = self.gauges.lock() {
            *slot = Some((at, g));
        }
    }

    /// The last gauge sample and when it was read.
    pub fn gauges(&self) -> Option<(Instant, Gauges)> {
        self.gauges.lock().ok().and_then(|g| *g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sum_over_streams_and_marks_are_set_once() {
        let w = LiveWindow::new(3, Duration::from_secs(5), true);
        let s0 = w.stream(0).expect("stream 0");
        s0.first_token.store(true, Ordering::Relaxed);
        s0.tokens.fetch_add(7, Ordering::Relaxed);
        w.stream(2)
            .expect("stream 2")
            .tokens
            .fetch_add(5, Ordering::Relaxed);
        assert!(w.stream(3).is_none());
        assert_eq!((w.streams_with_token(), w.tokens()), (1, 12));
        w.request_ended(false);
        w.request_ended(true);
        assert_eq!(w.ended(), (2, 1));
        assert_eq!(w.opened(), None);
        w.open(ReadinessBy::FirstTokens, Instant::now());
        w.open(ReadinessBy::Timeout, Instant::now());
        assert_eq!(w.opened().map(|o| o.1), Some(ReadinessBy::FirstTokens));
        w.set_gauges(
            Gauges {
                running: Some(3.0),
                ..Default::default()
            },
            Instant::now(),
        );
        assert_eq!(w.gauges().and_then(|g| g.1.running), Some(3.0));
    }
}

/// Live counts of a rate cell, for the displays.
#[derive(Debug, Default)]
pub struct OpenLoopLive {
    /// Requests in the schedule.
    pub scheduled: AtomicUsize,
    /// Requests the pacer has fired.
    pub fired: AtomicUsize,
    /// Requests sent and not yet ended.
    pub in_flight: AtomicU64,
    /// Requests waiting for the cap.
    pub waiting: AtomicU64,
    /// Requests ended.
    pub ended: AtomicU64,
    /// Of them, ended in an error.
    pub errors: AtomicU64,
    /// Of the ended ones, requests that met the SLO (as counted so far: chunk counts can
    /// still change when counting is deferred).
    pub met: AtomicU64,
    /// The rate asked for, milli-requests per second.
    pub rate_mrps: AtomicU64,
    /// When the first and the last request so far were fired, ns from the cell origin.
    pub first_fire_ns: AtomicU64,
    /// See `first_fire_ns`.
    pub last_fire_ns: AtomicU64,
    /// The TTFT and TPOT of its requests as they end (`--metrics-listen`).
    pub latency: LiveLatencies,
}

impl OpenLoopLive {
    /// The rate asked for, requests per second.
    pub fn requested_rate(&self) -> f64 {
        self.rate_mrps.load(Ordering::Relaxed) as f64 / 1000.0
    }

    /// The rate the client has kept so far: (fired − 1) / (last fire − first fire).
    pub fn achieved_rate(&self) -> Option<f64> {
        let fired = self.fired.load(Ordering::Relaxed);
        let first = self.first_fire_ns.load(Ordering::Relaxed);
        let last = self.last_fire_ns.load(Ordering::Relaxed);
        let span = last.saturating_sub(first) as f64 / 1e9;
        (fired >= 2 && span > 0.0).then(|| (fired - 1) as f64 / span)
    }
}

/// The latest turns a session cell's live window keeps.
pub const LATEST_TURNS: usize = 8;

/// A measured turn's tokens for the live view: its whole prompt, the tokens a perfect prefix
/// cache would serve it, and the cached tokens the server reported (`None`: it said nothing).
pub type TurnTokens = (u64, u64, Option<u64>);

/// A session cell's measured turns as they end: written by each session's task once per turn
/// (a few atomics and one short lock, never per chunk), read through [`LiveWindow`]'s methods
/// a few times a second. Nothing here feeds a figure: the row comes from the records.
#[derive(Debug)]
pub(crate) struct SessionTurns {
    /// Measured turns planned (`None`: a closed loop without `--turns` runs until the window
    /// closes).
    planned: Option<u64>,
    done: AtomicU64,
    errors: AtomicU64,
    /// Prompt tokens and predicted cached tokens of every ended measured turn.
    prompt: AtomicU64,
    predicted: AtomicU64,
    /// Of the turns the server reported cached tokens for: their prompt and cached tokens.
    reported_prompt: AtomicU64,
    reported_cached: AtomicU64,
    opened: OnceLock<Instant>,
    /// The latest turns: session, turn, TTFT in ms.
    latest: Mutex<VecDeque<(u32, u32, Option<f64>)>>,
}

impl SessionTurns {
    fn new(planned: Option<u64>) -> Self {
        SessionTurns {
            planned,
            done: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            prompt: AtomicU64::new(0),
            predicted: AtomicU64::new(0),
            reported_prompt: AtomicU64::new(0),
            reported_cached: AtomicU64::new(0),
            opened: OnceLock::new(),
            latest: Mutex::new(VecDeque::with_capacity(LATEST_TURNS)),
        }
    }

    fn ended(&self, at: (u32, u32), ttft_ms: Option<f64>, errored: bool, t: TurnTokens) {
        let add = |a: &AtomicU64, v: u64| a.fetch_add(v, Ordering::Relaxed);
        add(&self.done, 1);
        add(&self.errors, u64::from(errored));
        add(&self.prompt, t.0);
        add(&self.predicted, t.1);
        if let Some(c) = t.2 {
            add(&self.reported_prompt, t.0);
            add(&self.reported_cached, c);
        }
        if let Ok(mut l) = self.latest.lock() {
            if l.len() == LATEST_TURNS {
                l.pop_front();
            }
            l.push_back((at.0, at.1, ttft_ms));
        }
    }

    fn done(&self) -> (u64, u64) {
        (
            self.done.load(Ordering::Relaxed),
            self.errors.load(Ordering::Relaxed),
        )
    }

    fn hit_rates(&self) -> (Option<f64>, Option<f64>) {
        let share = |x: &AtomicU64, of: &AtomicU64| {
            let of = of.load(Ordering::Relaxed);
            (of > 0).then(|| x.load(Ordering::Relaxed) as f64 / of as f64)
        };
        (
            share(&self.reported_cached, &self.reported_prompt),
            share(&self.predicted, &self.prompt),
        )
    }

    fn latest(&self) -> Vec<(u32, u32, Option<f64>)> {
        self.latest
            .lock()
            .map(|l| l.iter().copied().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod session_tests {
    use super::*;

    #[test]
    fn turns_count_hit_rates_and_keep_the_latest() {
        let w = LiveWindow::for_sessions(2, Duration::from_secs(60), true, Some(20));
        assert!(w.is_sessions());
        assert_eq!(w.turns_planned(), Some(20));
        assert_eq!((w.turns_done(), w.hit_rates()), ((0, 0), (None, None)));
        for k in 1..=10u32 {
            // The server reports cached tokens on odd turns only.
            let cached = (k % 2 == 1).then_some(800);
            w.turn_ended((k % 2, k), Some(f64::from(k)), k == 3, (1000, 900, cached));
        }
        assert_eq!(w.turns_done(), (10, 1));
        assert_eq!(w.hit_rates(), (Some(0.8), Some(0.9)));
        let latest = w.latest_turns();
        assert_eq!(latest.len(), LATEST_TURNS);
        assert_eq!(latest.last(), Some(&(0, 10, Some(10.0))));
        assert_eq!(latest.first().map(|l| l.1), Some(3));
        assert_eq!(w.turns_opened(), None);
        let at = Instant::now();
        w.open_turns(at);
        assert_eq!(w.turns_opened(), Some(at));
        let decode = LiveWindow::new(2, Duration::from_secs(1), true);
        decode.turn_ended((0, 1), Some(1.0), false, (10, 5, None));
        assert!(!decode.is_sessions() && decode.latest_turns().is_empty());
        assert_eq!(decode.turns_done(), (0, 0));
    }
}
