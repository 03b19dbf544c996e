//! When a decode window opens: a pure state machine fed with what the client observed during
//! the ramp (how many streams have their first token, and the server's gauges), so that the
//! rule is tested with known answers and no socket or clock.
//!
//! Why every stream must have a token, not only the gauges: vLLM (and the simulator's serial
//! prefill mode) counts a request as *running* from admission, while its prompt is still being
//! prefilled. With N cached prompts prefilled one after another, the gauges read "N running,
//! 0 waiting" at once while most streams have produced nothing yet; a window opened then
//! contains the ramp and under-reads total tok/s, more so at high N (see docs/method-notes.md).
//!
//! Rules, in order, at each observation:
//! 1. **Ready** (`gauges_and_first_tokens`): the gauges have shown waiting = 0 and running ≥ N
//!    in `stable_samples` consecutive samples (the server holds all N), and every stream has
//!    received a token of the measured phase. The gauge condition is latched once it held: at
//!    high N with short outputs the first streams finish, and their re-sends wait a scheduler
//!    step, before the last stream's first token, so "0 waiting" at that very moment would
//!    rarely come (the in-window queue rule judges those re-sends). Without gauges
//!    (`first_tokens`): every stream has received a token.
//! 2. **Queue stalled** (`queue_stalled`, not ready): the waiting gauge has been above zero in
//!    every sample for `stall_ns`, and the running gauge has not grown in that time: a slot- or
//!    KV-bound server will not admit more before requests finish.
//! 3. **Timeout** (`timeout`, not ready): `timeout_ns` passed since the first send.
//!
//! Before all of them: **a request errored** (`requests_errored`, not ready). Any error fails
//! the cell, so the ramp stops at once: waiting on a server that died would take the whole
//! readiness limit and measure nothing.

use serde::{Deserialize, Serialize};

/// Which rule opened a window (`queue.readiness_by` in the results).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadinessBy {
    /// Gauges showed N running and none waiting for the stable period, and every stream had a
    /// token.
    GaugesAndFirstTokens,
    /// No gauges: every stream had a token.
    FirstTokens,
    /// The queue stayed while the running count stopped growing.
    QueueStalled,
    /// The readiness limit passed.
    Timeout,
    /// A request of the measured phase errored before the window opened: the cell fails
    /// whatever the window would show, and a server that died would otherwise be waited on for
    /// the whole readiness limit.
    RequestsErrored,
    /// `--serial-server`: tokens flow on at least one stream. A single-flight server never
    /// runs N at once, so above N = 1 the window measures a queue (and is marked so).
    TokensFlowing,
}

impl ReadinessBy {
    /// The name stored in the results.
    pub fn as_str(self) -> &'static str {
        match self {
            ReadinessBy::GaugesAndFirstTokens => "gauges_and_first_tokens",
            ReadinessBy::FirstTokens => "first_tokens",
            ReadinessBy::QueueStalled => "queue_stalled",
            ReadinessBy::Timeout => "timeout",
            ReadinessBy::RequestsErrored => "requests_errored",
            ReadinessBy::TokensFlowing => "tokens_flowing",
        }
    }

    /// Whether this rule means the server was running all N (a window opened otherwise is
    /// marked Requests queued).
    pub fn is_ready(self) -> bool {
        matches!(
            self,
            ReadinessBy::GaugesAndFirstTokens | ReadinessBy::FirstTokens
        )
    }
}

/// The parameters of the rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadinessRule {
    /// N: streams, and the running count required.
    pub concurrency: u32,
    /// Consecutive gauge samples in which the ready state must hold (≥ 1).
    pub stable_samples: u32,
    /// How long a queue must stay, with no growth of the running count, to count as stalled.
    pub stall_ns: u64,
    /// The readiness limit, from the first send.
    pub timeout_ns: u64,
    /// A single-flight server (`--serial-server`): open once tokens flow on one stream.
    pub serial: bool,
}

/// One observation of the ramp.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RampObservation {
    /// When, ns from the cell origin (the first send).
    pub t_ns: u64,
    /// Streams that have received at least one token of the measured phase.
    pub streams_with_token: u32,
    /// Requests of the measured phase that have errored so far.
    pub errored_requests: u64,
    /// The gauges read at `t_ns`: (running, waiting). `None` when this observation has no gauge
    /// sample (an engine without gauges, or a scrape that failed: no information either way).
    pub gauges: Option<(f64, f64)>,
}

/// The decision: the window opens now, by this rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opened {
    /// The rule.
    pub by: ReadinessBy,
    /// When, ns from the cell origin.
    pub at_ns: u64,
}

/// The readiness state machine of one window.
#[derive(Debug, Clone)]
pub struct ReadinessJudge {
    rule: ReadinessRule,
    use_gauges: bool,
    consecutive_ready: u32,
    /// The gauges showed N running and none waiting for the stable period (latched).
    gauges_held: bool,
    running_max: f64,
    running_grew_at: u64,
    waiting_since: Option<u64>,
    gauges_ready_at: Option<u64>,
    all_tokens_at: Option<u64>,
    opened: Option<Opened>,
}

impl ReadinessJudge {
    /// A judge for one window; `use_gauges` when the engine has running and waiting gauges.
    pub fn new(rule: ReadinessRule, use_gauges: bool) -> Self {
        ReadinessJudge {
            rule,
            use_gauges,
            consecutive_ready: 0,
            gauges_held: false,
            running_max: f64::NEG_INFINITY,
            running_grew_at: 0,
            waiting_since: None,
            gauges_ready_at: None,
            all_tokens_at: None,
            opened: None,
        }
    }

    /// Takes one observation; returns the decision once the window should open (and the same
    /// decision for every later call).
    pub fn observe(&mut self, o: RampObservation) -> Option<Opened> {
        if self.opened.is_some() {
            return self.opened;
        }
        if o.errored_requests > 0 {
            self.opened = Some(Opened {
                by: ReadinessBy::RequestsErrored,
                at_ns: o.t_ns,
            });
            return self.opened;
        }
        let n = self.rule.concurrency;
        let all_tokens = o.streams_with_token >= n;
        if all_tokens && self.all_tokens_at.is_none() {
            self.all_tokens_at = Some(o.t_ns);
        }
        let by = if self.rule.serial && o.streams_with_token >= 1 {
            Some(if all_tokens {
                ReadinessBy::FirstTokens
            } else {
                ReadinessBy::TokensFlowing
            })
        } else if self.use_gauges {
            self.observe_gauges(o, all_tokens)
        } else if all_tokens {
            Some(ReadinessBy::FirstTokens)
        } else {
            None
        };
        let by = by.or((o.t_ns >= self.rule.timeout_ns).then_some(ReadinessBy::Timeout));
        self.opened = by.map(|by| Opened { by, at_ns: o.t_ns });
        self.opened
    }

    fn observe_gauges(&mut self, o: RampObservation, all_tokens: bool) -> Option<ReadinessBy> {
        if let Some((running, waiting)) = o.gauges {
            let gauges_ready = running >= f64::from(self.rule.concurrency) && waiting <= 0.0;
            if gauges_ready {
                self.gauges_ready_at.get_or_insert(o.t_ns);
                self.consecutive_ready += 1;
                if self.consecutive_ready >= self.rule.stable_samples.max(1) {
                    self.gauges_held = true;
                }
            } else {
                self.consecutive_ready = 0;
            }
            if running > self.running_max {
                self.running_max = running;
                self.running_grew_at = o.t_ns;
            }
            if waiting > 0.0 {
                self.waiting_since.get_or_insert(o.t_ns);
            } else {
                self.waiting_since = None;
            }
        }
        if self.gauges_held {
            // The server has run all N: a queue seen later is re-sends in transit, judged
            // inside the window, not here.
            return all_tokens.then_some(ReadinessBy::GaugesAndFirstTokens);
        }
        let since = self.waiting_since?;
        let quiet_from = since.max(self.running_grew_at);
        (o.gauges.is_some() && o.t_ns.saturating_sub(quiet_from) >= self.rule.stall_ns)
            .then_some(ReadinessBy::QueueStalled)
    }

    /// When the gauges alone first showed N running and none waiting (the rule of earlier
    /// versions): the difference to the opening is the ramp this rule kept out of the window.
    pub fn gauges_ready_at_ns(&self) -> Option<u64> {
        self.gauges_ready_at
    }

    /// When every stream first had a token.
    pub fn all_tokens_at_ns(&self) -> Option<u64> {
        self.all_tokens_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn rule(n: u32) -> ReadinessRule {
        ReadinessRule {
            concurrency: n,
            stable_samples: 2,
            stall_ns: 2000 * MS,
            timeout_ns: 10_000 * MS,
            serial: false,
        }
    }

    #[test]
    fn a_serial_server_opens_once_tokens_flow() {
        let mut j = ReadinessJudge::new(
            ReadinessRule {
                serial: true,
                ..rule(4)
            },
            true,
        );
        assert_eq!(j.observe(obs(10, 0, Some((1.0, 3.0)))), None);
        let o = j.observe(obs(20, 1, Some((1.0, 3.0)))).expect("open");
        assert_eq!(o.by, ReadinessBy::TokensFlowing);
        assert!(!o.by.is_ready(), "above N = 1 it measures a queue");
        let mut one = ReadinessJudge::new(
            ReadinessRule {
                serial: true,
                ..rule(1)
            },
            false,
        );
        assert_eq!(
            one.observe(obs(5, 1, None)).map(|o| o.by),
            Some(ReadinessBy::FirstTokens)
        );
    }

    fn obs(t_ms: u64, with_token: u32, g: Option<(f64, f64)>) -> RampObservation {
        RampObservation {
            t_ns: t_ms * MS,
            streams_with_token: with_token,
            errored_requests: 0,
            gauges: g,
        }
    }

    /// Feeds observations in order; returns the first decision and its index.
    fn run(j: &mut ReadinessJudge, seq: &[RampObservation]) -> Option<(usize, Opened)> {
        seq.iter()
            .enumerate()
            .find_map(|(i, o)| j.observe(*o).map(|d| (i, d)))
    }

    #[test]
    fn known_answers() {
        // (name, N, gauges?, observations, expected (index, rule) or None)
        type Case = (
            &'static str,
            u32,
            bool,
            Vec<RampObservation>,
            Option<(usize, ReadinessBy)>,
        );
        let g = |r: f64, w: f64| Some((r, w));
        let cases: Vec<Case> = vec![
            (
                // vLLM-like: all admitted at once, gauges ready from the start, tokens later.
                "gauges ready early wait for every stream's token",
                4,
                true,
                vec![
                    obs(10, 0, g(4.0, 0.0)),
                    obs(30, 1, g(4.0, 0.0)),
                    obs(50, 3, g(4.0, 0.0)),
                    obs(70, 4, g(4.0, 0.0)),
                    obs(90, 4, g(4.0, 0.0)),
                ],
                Some((3, ReadinessBy::GaugesAndFirstTokens)),
            ),
            (
                "every token but the gauges held for one sample only: wait for a second",
                4,
                true,
                vec![
                    obs(10, 4, g(3.0, 0.0)),
                    obs(30, 4, g(4.0, 0.0)),
                    obs(50, 4, g(4.0, 0.0)),
                ],
                Some((2, ReadinessBy::GaugesAndFirstTokens)),
            ),
            (
                // Short outputs at high N: the first streams finish and re-send before the last
                // stream's first token, so the queue is busy when the ramp ends.
                "re-sends in the queue after the gauges held do not delay the window",
                4,
                true,
                vec![
                    obs(10, 0, g(4.0, 0.0)),
                    obs(30, 1, g(4.0, 0.0)),
                    obs(50, 3, g(3.0, 1.0)),
                    obs(70, 4, g(3.0, 1.0)),
                ],
                Some((3, ReadinessBy::GaugesAndFirstTokens)),
            ),
            (
                "a waiting blip resets the stable count",
                2,
                true,
                vec![
                    obs(10, 2, g(2.0, 0.0)),
                    obs(30, 2, g(2.0, 1.0)),
                    obs(50, 2, g(2.0, 0.0)),
                    obs(70, 2, g(2.0, 0.0)),
                ],
                Some((3, ReadinessBy::GaugesAndFirstTokens)),
            ),
            (
                "a failed scrape neither counts nor resets",
                2,
                true,
                vec![
                    obs(10, 2, g(2.0, 0.0)),
                    obs(30, 2, None),
                    obs(50, 2, g(2.0, 0.0)),
                ],
                Some((2, ReadinessBy::GaugesAndFirstTokens)),
            ),
            (
                "tokens everywhere but the gauge shows fewer running: not ready",
                4,
                true,
                vec![obs(10, 4, g(3.0, 0.0)), obs(30, 4, g(3.0, 0.0))],
                None,
            ),
            (
                "without gauges every stream's token opens at once",
                3,
                false,
                vec![obs(10, 1, None), obs(30, 3, None)],
                Some((1, ReadinessBy::FirstTokens)),
            ),
            (
                "a queue that stays while running stops growing stalls after 2 s",
                8,
                true,
                vec![
                    obs(100, 0, g(2.0, 6.0)),
                    obs(600, 2, g(4.0, 4.0)),
                    obs(1600, 4, g(4.0, 4.0)),
                    obs(2500, 4, g(4.0, 4.0)),
                    obs(2600, 4, g(4.0, 4.0)),
                ],
                Some((4, ReadinessBy::QueueStalled)),
            ),
            (
                // A re-send sits in the queue for a moment: the queue must stay for the whole
                // stall period, counted from when it appeared.
                "short waiting blips never stall",
                8,
                true,
                vec![
                    obs(100, 8, g(7.0, 0.0)),
                    obs(2200, 8, g(7.0, 1.0)),
                    obs(2300, 8, g(7.0, 0.0)),
                    obs(4400, 8, g(7.0, 1.0)),
                ],
                None,
            ),
            (
                "an errored request ends the ramp at once",
                4,
                true,
                vec![
                    obs(10, 1, g(4.0, 0.0)),
                    RampObservation {
                        errored_requests: 1,
                        ..obs(30, 1, None)
                    },
                ],
                Some((1, ReadinessBy::RequestsErrored)),
            ),
            (
                "the limit opens a window that is not ready",
                4,
                true,
                vec![obs(9_000, 3, g(4.0, 0.0)), obs(10_000, 3, g(4.0, 0.0))],
                Some((1, ReadinessBy::Timeout)),
            ),
        ];
        for (name, n, gauges, seq, want) in cases {
            let mut j = ReadinessJudge::new(rule(n), gauges);
            let got = run(&mut j, &seq).map(|(i, d)| (i, d.by));
            assert_eq!(got, want, "{name}");
            if let Some((i, _)) = want {
                // The decision sticks.
                assert_eq!(
                    j.observe(obs(99_999, 0, None)).map(|d| d.at_ns),
                    Some(seq[i].t_ns)
                );
            }
        }
    }

    #[test]
    fn records_when_the_gauges_alone_would_have_opened() {
        let mut j = ReadinessJudge::new(rule(2), true);
        j.observe(obs(10, 0, Some((2.0, 0.0))));
        j.observe(obs(400, 2, Some((2.0, 0.0))));
        let d = j.observe(obs(420, 2, Some((2.0, 0.0)))).expect("ready");
        assert_eq!(d.by, ReadinessBy::GaugesAndFirstTokens);
        assert_eq!(j.gauges_ready_at_ns(), Some(10 * MS));
        assert_eq!(j.all_tokens_at_ns(), Some(400 * MS));
        assert!(d.by.is_ready() && !ReadinessBy::QueueStalled.is_ready());
    }
}
