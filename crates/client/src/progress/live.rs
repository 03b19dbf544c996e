//! What a decode window publishes for live views while it runs: per-stream first-token flags
//! and token counts, requests ended and errored, when the window opened and why, and the last
//! gauge sample. Writers are the streams (one relaxed atomic per read, no lock on the chunk
//! path) and the gauge sampler; readers (a dashboard) poll a few times a second.
//!
//! Nothing here feeds a figure: the cell's figures come from the records. Token counts are the
//! client's running count (exact with per-chunk usage; chunks until counted otherwise, see
//! [`LiveWindow::tokens_exact`]).

use crate::server::engine::Gauges;
pub use crate::wire::live::{LiveText, StreamLive, TEXT_RING_BYTES, TextRing, TextRings};
use llmib_core::ReadinessBy;
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
        }
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
