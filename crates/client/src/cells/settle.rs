//! `--until-stable` in a decode window ([`Settle`]): the window's output tok/s, interval by
//! interval, until `llmib_core::stability` says it has settled. Apart from `window` because it
//! is a rule of its own over the live token count, with no request or gauge in it.

use llmib_core::{StableInput, StableSeries, stable_cadence};
use std::time::Duration;
use tokio::time::Instant;

/// `--until-stable` in a decode window: the output tok/s of each interval (the live token
/// count's growth; `llmib_core::stable_cadence`) until `llmib_core::stability` says it has
/// settled. TTFT is not a series here: a closed loop restarts few requests inside a window
/// (none with long outputs), so a p99 of their TTFTs would have no values to settle on.
pub(crate) struct Settle {
    target: f64,
    interval: Duration,
    min_s: f64,
    start: Instant,
    /// The next instant a value is due.
    pub(crate) next: Instant,
    last_tokens: u64,
    tok_s: Vec<f64>,
}

impl Settle {
    /// `tokens`: the live count when the window opened (the ramp's tokens are not its own).
    pub(crate) fn new(target: f64, duration: Duration, start: Instant, tokens: u64) -> Settle {
        let (interval_s, min_s) = stable_cadence(duration.as_secs_f64());
        let interval = Duration::from_secs_f64(interval_s);
        Settle {
            target,
            interval,
            min_s,
            start,
            next: start + interval,
            last_tokens: tokens,
            tok_s: Vec::new(),
        }
    }

    /// Takes the live token count at `now`; true once the window may close.
    pub(crate) fn observe(&mut self, now: Instant, tokens: u64) -> bool {
        if now < self.next {
            return false;
        }
        let grown = tokens.saturating_sub(self.last_tokens) as f64;
        self.tok_s.push(grown / self.interval.as_secs_f64());
        self.last_tokens = tokens;
        self.next += self.interval;
        let series = [StableSeries {
            name: "output_tok_s",
            values: &self.tok_s,
        }];
        StableInput {
            elapsed_s: now.saturating_duration_since(self.start).as_secs_f64(),
            series: &series,
            min_s: self.min_s,
        }
        .settled(self.target)
    }
}
