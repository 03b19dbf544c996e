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
//!    **Short answers** (`first_tokens_no_waiting`, with gauges, `--respect-eos` only): every
//!    stream has received a token, some requests have already finished, and the waiting gauge
//!    read 0 in `stable_samples` consecutive samples. With `--respect-eos` and short answers the running
//!    gauge rarely shows all N (streams are between a finished request and its re-send), so
//!    the gauge rule alone would wait out the whole readiness limit on a server that holds
//!    every stream.
//! 2. **Queue stalled** (`queue_stalled`, not ready): the waiting gauge has been above zero in
//!    every sample for `stall_ns`, and the running gauge has not grown in that time: a slot- or
//!    KV-bound server will not admit more before requests finish.
//!    **First tokens stalled** (`first_tokens_stalled`, not ready, no gauges: hosted
//!    endpoints): some streams have a token, the others none, and no stream got its first
//!    token for [`first_token_stall_ns`] (the longest of `stall_ns`, 4 × the warm TTFT +
//!    50 ms, and the time the served streams took to get theirs). A server that runs all N
//!    gives every stream its first token within about one batch's TTFT; one that queues
//!    keeps the rest waiting for a whole request to finish. Without this rule a hosted
//!    endpoint that queues was judged only at the readiness limit.
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
    /// Every stream had a token, requests had already finished (short answers) and the
    /// waiting gauge stayed at 0: the server holds every stream though the running gauge
    /// rarely shows all N.
    FirstTokensNoWaiting,
    /// No gauges: some streams had a token and the rest got none for the stall period (the
    /// server queues them).
    FirstTokensStalled,
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
            ReadinessBy::FirstTokensNoWaiting => "first_tokens_no_waiting",
            ReadinessBy::FirstTokensStalled => "first_tokens_stalled",
        }
    }

    /// Whether this rule means the server was running all N (a window opened otherwise is
    /// marked Requests queued).
    pub fn is_ready(self) -> bool {
        matches!(
            self,
            ReadinessBy::GaugesAndFirstTokens
                | ReadinessBy::FirstTokens
                | ReadinessBy::FirstTokensNoWaiting
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
    /// The TTFT of a lone warm request at this context (the N = 1 cell), where known: the
    /// first-token stall rule waits at least 4 × it + 50 ms.
    pub warm_ttft_ns: Option<u64>,
    /// `--respect-eos`: answers end at EOS, so the short-answer rule applies.
    pub respect_eos: bool,
}

/// How long no stream may get its first token, while some have theirs and others none,
/// before the rest count as queued (no gauges): the longest of the rule's `stall_ns`, 4 × the
/// warm TTFT + 50 ms (METHOD.md's no-gauge queue threshold) and `served_by_ns`, the time the
/// served streams took to get their first tokens (a slow ramp gets as long again).
pub fn first_token_stall_ns(rule: &ReadinessRule, served_by_ns: u64) -> u64 {
    let warm = rule
        .warm_ttft_ns
        .map_or(0, |w| w.saturating_mul(4).saturating_add(50_000_000));
    rule.stall_ns.max(warm).max(served_by_ns)
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
    /// Requests of the measured phase that have finished (not errored) so far.
    pub finished_requests: u64,
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
    /// Consecutive gauge samples with none waiting (the short-answer rule).
    consecutive_no_waiting: u32,
    /// The most streams with a token seen, and when that count last grew.
    tokens_max: u32,
    tokens_grew_at: u64,
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
            consecutive_no_waiting: 0,
            tokens_max: 0,
            tokens_grew_at: 0,
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
        if o.streams_with_token > self.tokens_max {
            self.tokens_max = o.streams_with_token;
            self.tokens_grew_at = o.t_ns;
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
            self.first_tokens_stalled(o)
        };
        let by = by.or((o.t_ns >= self.rule.timeout_ns).then_some(ReadinessBy::Timeout));
        self.opened = by.map(|by| Opened { by, at_ns: o.t_ns });
        self.opened
    }

    /// No gauges: some streams have their first token, the rest have had none for
    /// [`first_token_stall_ns`].
    fn first_tokens_stalled(&self, o: RampObservation) -> Option<ReadinessBy> {
        let stall = first_token_stall_ns(&self.rule, self.tokens_grew_at);
        (o.streams_with_token >= 1 && o.t_ns.saturating_sub(self.tokens_grew_at) >= stall)
            .then_some(ReadinessBy::FirstTokensStalled)
    }

    fn observe_gauges(&mut self, o: RampObservation, all_tokens: bool) -> Option<ReadinessBy> {
        if let Some((_, waiting)) = o.gauges {
            if waiting <= 0.0 {
                self.consecutive_no_waiting += 1;
            } else {
                self.consecutive_no_waiting = 0;
            }
        }
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
        // Only where answers end at EOS: with fixed-length answers the running gauge does show
        // N on a server that holds them, and a slot-bound one (llama.cpp with fewer slots than
        // N) would pass here too, its waiting gauge reading 0 at each hand-over. Under
        // `--respect-eos` such a server still opens "ready" by this rule; the in-window queue
        // rule then marks the cell Requests queued.
        if self.rule.respect_eos
            && all_tokens
            && o.finished_requests > 0
            && self.consecutive_no_waiting >= self.rule.stable_samples.max(1)
        {
            return Some(ReadinessBy::FirstTokensNoWaiting);
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
            warm_ttft_ns: None,
            respect_eos: false,
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
            finished_requests: 0,
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
    fn short_answers_open_on_first_tokens_when_nothing_waits() {
        let done =
            |t: u64, tokens: u32, running: f64, waiting: f64, finished: u64| RampObservation {
                finished_requests: finished,
                ..obs(t, tokens, Some((running, waiting)))
            };
        // --respect-eos with short answers: requests end and re-send, so the running gauge
        // rarely reads 4, yet nothing waits.
        let eos = ReadinessRule {
            respect_eos: true,
            ..rule(4)
        };
        let mut j = ReadinessJudge::new(eos, true);
        let seq = [
            done(10, 2, 3.0, 0.0, 0),
            done(30, 4, 3.0, 0.0, 2),
            done(50, 4, 2.0, 0.0, 3),
        ];
        let o = run(&mut j, &seq).expect("open");
        assert_eq!((o.0, o.1.by), (1, ReadinessBy::FirstTokensNoWaiting));
        // Fixed-length answers on a slot-bound server (4 slots, N = 8, llama.cpp): every stream
        // gets a token and the waiting gauge reads 0 at hand-overs, but the rule is not for it.
        let mut j = ReadinessJudge::new(rule(8), true);
        let seq = [
            done(10, 4, 4.0, 4.0, 0),
            done(30, 8, 4.0, 0.0, 4),
            done(50, 8, 4.0, 0.0, 6),
            done(70, 8, 4.0, 4.0, 8),
        ];
        assert_eq!(run(&mut j, &seq), None);
        assert!(o.1.by.is_ready());
        // A request waiting in between resets the count.
        let mut j = ReadinessJudge::new(eos, true);
        let seq = [
            done(10, 4, 3.0, 0.0, 1),
            done(30, 4, 3.0, 1.0, 2),
            done(50, 4, 3.0, 0.0, 3),
        ];
        assert_eq!(run(&mut j, &seq), None);
    }

    #[test]
    fn without_gauges_first_tokens_that_stop_coming_mean_a_queue() {
        let case = |warm_ms: Option<u64>, seq: &[(u64, u32)]| {
            let r = ReadinessRule {
                warm_ttft_ns: warm_ms.map(|w| w * MS),
                ..rule(4)
            };
            let mut j = ReadinessJudge::new(r, false);
            let seq: Vec<RampObservation> = seq.iter().map(|&(t, k)| obs(t, k, None)).collect();
            run(&mut j, &seq).map(|(i, o)| (i, o.by))
        };
        let stalled = ReadinessBy::FirstTokensStalled;
        // Two of four served by 100 ms; the floor of 2 s passes at 2.1 s.
        let seq = [(100, 2), (1000, 2), (2050, 2), (2200, 2)];
        assert_eq!(case(None, &seq), Some((3, stalled)));
        // A warm TTFT of 1 s asks for 4 × 1 s + 50 ms after the last first token.
        let seq = [(100, 2), (4000, 2), (4200, 2)];
        assert_eq!(case(Some(1000), &seq), Some((2, stalled)));
        // A slow ramp (the third stream at 3.5 s) waits as long again before judging.
        let seq = [(100, 1), (1500, 2), (3500, 3), (5000, 3), (7000, 3)];
        assert_eq!(case(None, &seq), Some((4, stalled)));
        // Every stream's token before the stall opens as ready; none at all is no queue
        // evidence (the readiness limit and the first-token limit decide).
        let seq = [(100, 2), (1900, 4)];
        assert_eq!(case(None, &seq), Some((1, ReadinessBy::FirstTokens)));
        assert_eq!(case(None, &[(100, 0), (9000, 0)]), None);
        assert!(!stalled.is_ready());
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
