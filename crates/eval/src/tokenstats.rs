//! Completion-token statistics (`eval --profile long-answer`, or `--prompt`): the decisions of
//! the adaptive concurrency search, the final answer line a correctness pattern is matched
//! against, and the run's figures. Async code only sends the batches.
//!
//! The search probes concurrency levels in order, one closed batch each (L requests sent
//! together, each run to its end; aggregate tok/s = Σ completion tokens / the batch's wall
//! time). It keeps going while a level beats the best so far by at least `min_gain`; after
//! `patience` levels in a row that do not, it stops. The chosen level is the fastest probed
//! (ties to the lower concurrency).

use llmib_core::Summary;
use llmib_core::wilson_95;
use serde::{Deserialize, Serialize};

/// One probed level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelResult {
    /// Requests at once.
    pub concurrency: u32,
    /// Requests that finished (errors excluded).
    pub requests: u64,
    /// Requests that failed.
    pub errors: u64,
    /// Σ completion tokens of the finished requests.
    pub completion_tokens: u64,
    /// First send to last end, seconds.
    pub wall_s: f64,
    /// `completion_tokens / wall_s`.
    pub tok_per_s: f64,
}

/// What the search does next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Probe this level.
    Probe(u32),
    /// Stop; run the rest at `chosen`.
    Done {
        /// The fastest level probed.
        chosen: u32,
        /// Why the search stopped, in words.
        reason: String,
    },
}

/// The fastest of `done` (ties to the lower concurrency); `None` when none finished a request.
pub fn fastest(done: &[LevelResult]) -> Option<&LevelResult> {
    done.iter()
        .filter(|l| l.requests > 0)
        .fold(None, |best, l| match best {
            Some(b) if b.tok_per_s >= l.tok_per_s => Some(b),
            _ => Some(l),
        })
}

/// The next step after `done` (the levels probed so far, in order) over `levels` (the levels
/// to try, ascending).
pub fn next_step(levels: &[u32], done: &[LevelResult], min_gain: f64, patience: u32) -> Step {
    let stop = |reason: String| match fastest(done) {
        Some(b) => Step::Done {
            chosen: b.concurrency,
            reason,
        },
        None => Step::Done {
            chosen: 0,
            reason: format!("{reason}; no level finished a request"),
        },
    };
    if let Some(last) = done.last()
        && last.requests == 0
    {
        return stop(format!("every request at {} failed", last.concurrency));
    }
    // Consecutive levels at the end that did not beat the best before them by min_gain.
    let mut best = f64::NEG_INFINITY;
    let mut stale = 0u32;
    for l in done {
        if l.tok_per_s >= best * (1.0 + min_gain) || best == f64::NEG_INFINITY {
            stale = 0;
        } else {
            stale += 1;
        }
        best = best.max(l.tok_per_s);
    }
    if stale >= patience.max(1) {
        return stop(format!(
            "{stale} level(s) in a row gained less than {:.0} % over the best",
            min_gain * 100.0
        ));
    }
    match levels
        .iter()
        .find(|&&n| done.iter().all(|l| l.concurrency != n))
    {
        Some(&n) => Step::Probe(n),
        None => stop("every level was probed".to_string()),
    }
}

/// The last non-empty line of an output: where a long answer states its result.
pub fn final_line(output: &str) -> &str {
    output
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
}

/// One request's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// Requests at once when it ran.
    pub concurrency: u32,
    /// Completion tokens (server usage, else counted).
    pub completion_tokens: Option<u64>,
    /// Time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// `finish_reason`.
    pub finish_reason: Option<String>,
    /// Whether the final answer line matched the pattern (`None`: no pattern, or it failed).
    pub correct: Option<bool>,
    /// The error, if it failed.
    pub error: Option<String>,
}

/// The run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskStats {
    /// Completion tokens over every finished request (min, p50, p90, p99, max, mean).
    pub completion_tokens: Option<Summary>,
    /// Requests that ended at the token limit (`finish_reason` = `length`).
    pub max_token_hits: u64,
    /// TTFT at the chosen level, ms.
    pub ttft_ms: Option<Summary>,
    /// Requests whose final line matched, of those judged, with its Wilson 95 % interval.
    pub correct: Option<(u64, u64)>,
    /// `correct`'s interval.
    pub correct_wilson_95: Option<(f64, f64)>,
    /// Finished requests.
    pub results: u64,
    /// Failed requests.
    pub errors: u64,
}

impl TaskStats {
    /// The figures of `results`, TTFT taken at `chosen` only (it depends on the load).
    pub fn of(results: &[TaskResult], chosen: u32) -> TaskStats {
        let ok: Vec<&TaskResult> = results.iter().filter(|r| r.error.is_none()).collect();
        let tokens: Vec<f64> = ok
            .iter()
            .filter_map(|r| r.completion_tokens)
            .map(|t| t as f64)
            .collect();
        let ttft: Vec<f64> = ok
            .iter()
            .filter(|r| r.concurrency == chosen)
            .filter_map(|r| r.ttft_ms)
            .collect();
        let judged: Vec<bool> = ok.iter().filter_map(|r| r.correct).collect();
        let correct = (!judged.is_empty()).then(|| {
            (
                judged.iter().filter(|c| **c).count() as u64,
                judged.len() as u64,
            )
        });
        TaskStats {
            completion_tokens: Summary::of(&tokens),
            max_token_hits: ok
                .iter()
                .filter(|r| r.finish_reason.as_deref() == Some("length"))
                .count() as u64,
            ttft_ms: Summary::of(&ttft),
            correct_wilson_95: correct.and_then(|(k, n)| wilson_95(k, n)),
            correct,
            results: ok.len() as u64,
            errors: (results.len() - ok.len()) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(concurrency: u32, tok_per_s: f64) -> LevelResult {
        LevelResult {
            concurrency,
            requests: u64::from(concurrency),
            errors: 0,
            completion_tokens: 100,
            wall_s: 1.0,
            tok_per_s,
        }
    }

    const LEVELS: [u32; 5] = [1, 2, 4, 8, 16];

    #[test]
    fn the_search_goes_on_while_levels_gain() {
        assert_eq!(next_step(&LEVELS, &[], 0.1, 1), Step::Probe(1));
        let done = [level(1, 100.0), level(2, 190.0)];
        assert_eq!(next_step(&LEVELS, &done, 0.1, 1), Step::Probe(4));
    }

    #[test]
    fn it_stops_after_patience_levels_without_gain_and_picks_the_fastest() {
        // 4 gains 5 % over 2: not the 10 % asked. Patience 1 stops there; 2 is chosen.
        let done = [level(1, 100.0), level(2, 200.0), level(4, 210.0)];
        match next_step(&LEVELS, &done, 0.1, 1) {
            Step::Done { chosen, reason } => {
                assert_eq!(chosen, 4, "the fastest probed, even if its gain was small");
                assert!(reason.contains("1 level(s) in a row"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Patience 2 tries one more level; a dip then a recovery resets the count.
        assert_eq!(next_step(&LEVELS, &done, 0.1, 2), Step::Probe(8));
        let done = [
            level(1, 100.0),
            level(2, 200.0),
            level(4, 150.0),
            level(8, 260.0),
        ];
        assert_eq!(next_step(&LEVELS, &done, 0.1, 2), Step::Probe(16));
        let done = [
            level(1, 100.0),
            level(2, 200.0),
            level(4, 150.0),
            level(8, 205.0),
        ];
        match next_step(&LEVELS, &done, 0.1, 2) {
            Step::Done { chosen, .. } => assert_eq!(chosen, 8),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn it_stops_at_the_last_level_or_a_level_that_only_failed() {
        let done: Vec<LevelResult> = LEVELS
            .iter()
            .map(|&n| level(n, f64::from(n) * 100.0))
            .collect();
        match next_step(&LEVELS, &done, 0.1, 1) {
            Step::Done { chosen, reason } => {
                assert_eq!(chosen, 16);
                assert_eq!(reason, "every level was probed");
            }
            other => panic!("{other:?}"),
        }
        let mut failed = level(4, 0.0);
        failed.requests = 0;
        failed.errors = 4;
        let done = [level(1, 100.0), level(2, 150.0), failed];
        match next_step(&LEVELS, &done, 0.1, 3) {
            Step::Done { chosen, reason } => {
                assert_eq!(chosen, 2);
                assert!(reason.contains("every request at 4 failed"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        // Ties go to the lower concurrency.
        assert_eq!(
            fastest(&[level(1, 100.0), level(2, 100.0)]).map(|l| l.concurrency),
            Some(1)
        );
    }

    #[test]
    fn final_lines_and_stats() {
        assert_eq!(
            final_line("work\n\nFinal answer: 42\n\n  "),
            "Final answer: 42"
        );
        assert_eq!(final_line(""), "");
        let r = |c: u32, t: u64, fin: &str, ok: Option<bool>| TaskResult {
            concurrency: c,
            completion_tokens: Some(t),
            ttft_ms: Some(f64::from(c) * 10.0),
            finish_reason: Some(fin.into()),
            correct: ok,
            error: None,
        };
        let mut all = vec![
            r(1, 100, "stop", Some(true)),
            r(2, 200, "stop", Some(false)),
            r(2, 300, "length", Some(false)),
            r(2, 400, "stop", Some(true)),
        ];
        all.push(TaskResult {
            error: Some("HTTP 500".into()),
            ..r(2, 0, "stop", None)
        });
        let s = TaskStats::of(&all, 2);
        assert_eq!(s.results, 4);
        assert_eq!(s.errors, 1);
        assert_eq!(s.max_token_hits, 1);
        let t = s.completion_tokens.expect("tokens");
        assert_eq!((t.min, t.p50, t.max, t.mean), (100.0, 250.0, 400.0, 250.0));
        let ttft = s.ttft_ms.expect("ttft");
        assert_eq!((ttft.n, ttft.p50), (3, 20.0), "the chosen level only");
        assert_eq!(s.correct, Some((2, 4)));
        assert_eq!(s.correct_wilson_95, wilson_95(2, 4));
    }
}
