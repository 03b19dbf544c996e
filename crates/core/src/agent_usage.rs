//! The prompt's length from the Anthropic Messages API's usage, which servers read two ways.
//!
//! Anthropic defines `input_tokens` as the prompt tokens *neither read from nor written to*
//! the prompt cache: the prompt is `input_tokens + cache_read_input_tokens +
//! cache_creation_input_tokens` (the *exclusive* reading). Some servers instead put the whole
//! prompt in `input_tokens` and report the cache's parts as subsets of it (the *inclusive*
//! reading, OpenAI's meaning of `prompt_tokens`). A server may even mix them: vLLM 0.32's
//! `message_start` says `input_tokens: 1758` for a 1,758-token prompt while its
//! `message_delta` says `input_tokens: 94` with `cache_creation_input_tokens: 1664` (cold) or
//! `cache_read_input_tokens: 1664` (warm). Under the exclusive reading both events say 1,758;
//! under the inclusive one they disagree (1,758 against 94), so the exclusive reading is the
//! server's.
//!
//! The rule: the prompt's length is the one count every usage report of the request agrees on
//! under one reading; the run's reading (learned from its calibration probes, see
//! [`infer_reading`]) is tried first, since a server that repeats the same inclusive numbers on
//! both events agrees with itself under both readings. Pure, with known answers below.

use serde::{Deserialize, Serialize};

/// One usage report of a Messages response (`message_start.message.usage`,
/// `message_delta.usage`, or a whole response's `usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MessagesUsage {
    /// `input_tokens`.
    pub input_tokens: u64,
    /// `cache_read_input_tokens`, where given.
    pub cache_read: Option<u64>,
    /// `cache_creation_input_tokens`, where given.
    pub cache_creation: Option<u64>,
}

/// How a server means `input_tokens`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InputReading {
    /// Anthropic's: the tokens neither read from nor written to the cache; the prompt is their
    /// sum with both cache counts.
    #[default]
    Exclusive,
    /// The whole prompt; the cache counts are parts of it.
    Inclusive,
}

impl InputReading {
    /// The prompt's length that `u` claims under this reading.
    pub fn prompt_tokens(self, u: &MessagesUsage) -> u64 {
        match self {
            InputReading::Exclusive => u
                .input_tokens
                .saturating_add(u.cache_read.unwrap_or(0))
                .saturating_add(u.cache_creation.unwrap_or(0)),
            InputReading::Inclusive => u.input_tokens,
        }
    }

    /// The other reading.
    pub fn other(self) -> InputReading {
        match self {
            InputReading::Exclusive => InputReading::Inclusive,
            InputReading::Inclusive => InputReading::Exclusive,
        }
    }

    /// As the report and errors print it.
    pub fn label(self) -> &'static str {
        match self {
            InputReading::Exclusive => "input_tokens excludes the cache's reads and writes",
            InputReading::Inclusive => "input_tokens is the whole prompt",
        }
    }
}

/// A request's usage reports that agree on no prompt length under either reading.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the server's usage reports disagree on the prompt's length under both readings of input_tokens (with the cache counts added: {exclusive:?}; input_tokens alone: {inclusive:?}): no prompt length is taken from them"
)]
pub struct UsageConflict {
    /// Each report's count under the exclusive reading.
    pub exclusive: Vec<u64>,
    /// Each report's count under the inclusive reading.
    pub inclusive: Vec<u64>,
}

/// Whether every report claims the same length under `reading`; that length.
fn agreed(reports: &[MessagesUsage], reading: InputReading) -> Option<u64> {
    let first = reading.prompt_tokens(reports.first()?);
    reports
        .iter()
        .all(|u| reading.prompt_tokens(u) == first)
        .then_some(first)
}

/// The prompt's length from one request's usage reports (in the order they came), and the
/// reading that gave it: `prior` (the run's) where every report agrees under it, else the
/// other where they agree under that. `Ok(None)`: no report. A single report is read by
/// `prior`.
pub fn request_prompt_tokens(
    reports: &[MessagesUsage],
    prior: InputReading,
) -> Result<Option<(u64, InputReading)>, UsageConflict> {
    if reports.is_empty() {
        return Ok(None);
    }
    for reading in [prior, prior.other()] {
        if let Some(n) = agreed(reports, reading) {
            return Ok(Some((n, reading)));
        }
    }
    Err(conflict(reports))
}

fn conflict(reports: &[MessagesUsage]) -> UsageConflict {
    let under = |r: InputReading| reports.iter().map(|u| r.prompt_tokens(u)).collect();
    UsageConflict {
        exclusive: under(InputReading::Exclusive),
        inclusive: under(InputReading::Inclusive),
    }
}

/// The run's reading, from the usage reports of several requests *of the same prompt* (the
/// calibration's probe sent cold, then again warm from the cache, each with its start and end
/// reports): the reading under which every report of every request claims one length. Where
/// both readings do (a server that reported no cache counts, where they give the same length;
/// or one that repeats the cache's part of the whole on every report), the one whose length is
/// nearer `near` (the prompt's length by another count, the chat template's render), and
/// Anthropic's (exclusive) on a tie or without `near`. An error where neither reading agrees.
pub fn infer_reading(
    requests: &[Vec<MessagesUsage>],
    near: Option<u64>,
) -> Result<InputReading, UsageConflict> {
    let all: Vec<MessagesUsage> = requests.iter().flatten().copied().collect();
    if all.is_empty() {
        return Ok(InputReading::Exclusive);
    }
    let found: Vec<(InputReading, u64)> = [InputReading::Exclusive, InputReading::Inclusive]
        .into_iter()
        .filter_map(|r| agreed(&all, r).map(|n| (r, n)))
        .collect();
    match (found.as_slice(), near) {
        ([], _) => Err(conflict(&all)),
        ([(r, _)], _) | ([(r, _), _], None) => Ok(*r),
        ([(ex, a), (inc, b), ..], Some(near)) => Ok(if b.abs_diff(near) < a.abs_diff(near) {
            *inc
        } else {
            *ex
        }),
        ([_, _, _, ..], None) => Ok(InputReading::Exclusive),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(input: u64, read: Option<u64>, creation: Option<u64>) -> MessagesUsage {
        MessagesUsage {
            input_tokens: input,
            cache_read: read,
            cache_creation: creation,
        }
    }

    /// vLLM 0.32 on a 1,758-token prompt: the start event's whole prompt, the end event's
    /// uncached rest plus the cache's write (cold) or read (warm).
    fn vllm_cold() -> Vec<MessagesUsage> {
        vec![u(1758, None, None), u(94, Some(0), Some(1664))]
    }
    fn vllm_warm() -> Vec<MessagesUsage> {
        vec![u(1758, None, None), u(94, Some(1664), Some(0))]
    }
    /// A server of the other reading, cache counts as parts of the whole, on both events.
    fn inclusive_warm() -> Vec<MessagesUsage> {
        vec![u(1758, Some(1664), None), u(1758, Some(1664), None)]
    }

    #[test]
    fn vllms_trap_is_the_sum_on_the_end_event_and_the_whole_on_the_start() {
        for reports in [vllm_cold(), vllm_warm()] {
            for prior in [InputReading::Exclusive, InputReading::Inclusive] {
                let got = request_prompt_tokens(&reports, prior).expect("agree");
                assert_eq!(got, Some((1758, InputReading::Exclusive)), "{prior:?}");
            }
        }
        // Taking input_tokens from the end event alone would say 94.
        assert_eq!(InputReading::Inclusive.prompt_tokens(&vllm_warm()[1]), 94);
    }

    #[test]
    fn the_inclusive_reading_needs_the_runs_reading_when_both_events_repeat_it() {
        let r = inclusive_warm();
        // Both readings agree with themselves here; the run's reading decides.
        assert_eq!(
            request_prompt_tokens(&r, InputReading::Inclusive).expect("agree"),
            Some((1758, InputReading::Inclusive))
        );
        assert_eq!(
            request_prompt_tokens(&r, InputReading::Exclusive).expect("agree"),
            Some((3422, InputReading::Exclusive))
        );
        // A start event without the cache counts settles it alone.
        let r = [u(1758, None, None), u(1758, Some(1664), None)];
        assert_eq!(
            request_prompt_tokens(&r, InputReading::Exclusive).expect("agree"),
            Some((1758, InputReading::Inclusive))
        );
    }

    #[test]
    fn the_runs_reading_comes_from_a_cold_and_a_warm_probe() {
        assert_eq!(
            infer_reading(&[vllm_cold(), vllm_warm()], Some(94)).expect("one"),
            InputReading::Exclusive
        );
        let cold = vec![u(1758, Some(0), None), u(1758, Some(0), None)];
        assert_eq!(
            infer_reading(&[cold, inclusive_warm()], None).expect("one"),
            InputReading::Inclusive
        );
        // No cache counts anywhere: the readings agree, Anthropic's is named.
        let plain = vec![u(500, None, None), u(500, None, None)];
        assert_eq!(
            infer_reading(&[plain.clone(), plain], Some(500)).expect("one"),
            InputReading::Exclusive
        );
        assert_eq!(
            infer_reading(&[], None).expect("none"),
            InputReading::Exclusive
        );
    }

    /// A server of the other reading that reports the cache's write as a part of the whole
    /// too: cold and warm agree under both readings (3,372 with the cache added, 1,758 alone);
    /// the prompt's length by the chat render (1,757 here, one BOS less) decides.
    #[test]
    fn where_both_readings_agree_the_length_nearer_the_render_decides() {
        let cold = vec![u(1758, Some(0), Some(1664)), u(1758, Some(0), Some(1664))];
        let r = [cold, inclusive_warm()];
        assert_eq!(
            infer_reading(&r, Some(1757)).expect("one"),
            InputReading::Inclusive
        );
        assert_eq!(
            infer_reading(&r, None).expect("one"),
            InputReading::Exclusive
        );
        // Equally near: Anthropic's.
        let tie = [vec![u(100, Some(10), None)], vec![u(100, Some(10), None)]];
        assert_eq!(
            infer_reading(&tie, Some(105)).expect("one"),
            InputReading::Exclusive
        );
    }

    #[test]
    fn reports_that_agree_under_no_reading_are_a_conflict_never_a_count() {
        let r = [u(1758, Some(1664), None), u(94, Some(0), None)];
        let e = request_prompt_tokens(&r, InputReading::Exclusive).expect_err("conflict");
        assert_eq!(e.exclusive, vec![3422, 94]);
        assert_eq!(e.inclusive, vec![1758, 94]);
        assert!(e.to_string().contains("no prompt length"), "{e}");
        assert!(infer_reading(&[r.to_vec()], Some(1758)).is_err());
        assert_eq!(
            request_prompt_tokens(&[], InputReading::Exclusive),
            Ok(None)
        );
    }

    #[test]
    fn one_report_is_read_by_the_runs_reading() {
        let r = [u(94, Some(1664), Some(0))];
        assert_eq!(
            request_prompt_tokens(&r, InputReading::Exclusive).expect("one"),
            Some((1758, InputReading::Exclusive))
        );
        assert_eq!(
            request_prompt_tokens(&r, InputReading::Inclusive).expect("one"),
            Some((94, InputReading::Inclusive))
        );
    }
}
