//! Replaying a trace: its timestamps as send offsets at a time scale, and the prompt tokens a
//! perfect prefix cache would serve from the trace's shared blocks.
//!
//! Time scale K: a row at t seconds is sent at t / K, so K = 2 replays twice as fast (twice the
//! rate, same burstiness) and K = 0.5 at half speed. `auto` chooses K from a target rate
//! (see [`TimeScaleSpec::factor`]), which lets one trace stand in for an arrival pattern at
//! every rate of a sweep or of the capacity search.
//!
//! Prefix-sharing prediction: requests in send order; a request's blocks are cached from the
//! start of its prompt for as long as each block was in some earlier request (sent before it,
//! whether or not that one had finished), and the first block never seen ends the run of
//! hits. A block's tokens here are `block_tokens`, or the remainder for a prompt's last,
//! partial block; a cached block serves as many of them as the most any earlier request sent
//! of that block (a block id is one fixed text, and a prompt that ended inside it sent only
//! its start), and a block served only in part ends the run too, since what follows it was
//! never sent after the same tokens. The cache is perfect: unbounded and never evicting, so a
//! real server serves at most this many tokens from cache (fewer when it evicts, or caches by
//! another block size).

use super::Workload;
use super::error::WorkloadError;
use super::request::WorkloadRequest;
use crate::size::MAX_DURATION_S;
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// How fast a trace is replayed (`--time-scale`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimeScaleSpec {
    /// Send a row at t / K: K > 1 faster, K < 1 slower than the trace.
    Factor(f64),
    /// K chosen so the trace's mean rate becomes a target rate.
    Auto,
}

impl FromStr for TimeScaleSpec {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("auto") {
            return Ok(TimeScaleSpec::Auto);
        }
        match t.parse::<f64>() {
            Ok(k) if k.is_finite() && k > 0.0 => Ok(TimeScaleSpec::Factor(k)),
            _ => Err(WorkloadError::BadTimeScale(format!(
                "time scale `{s}` must be a positive number (2 replays twice as fast) or auto"
            ))),
        }
    }
}

impl fmt::Display for TimeScaleSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeScaleSpec::Factor(k) => write!(f, "{k}"),
            TimeScaleSpec::Auto => f.write_str("auto"),
        }
    }
}

impl TimeScaleSpec {
    /// The factor K: the given one, or for `auto` the one that turns the trace's mean rate
    /// ([`Workload::trace_rate`]) into `target_rate` requests per second. `None` when `auto`
    /// has no positive rates to go by.
    pub fn factor(&self, trace_rate: Option<f64>, target_rate: f64) -> Option<f64> {
        match *self {
            TimeScaleSpec::Factor(k) => Some(k),
            TimeScaleSpec::Auto => {
                let k = target_rate / trace_rate?;
                (k.is_finite() && k > 0.0).then_some(k)
            }
        }
    }
}

impl Workload {
    /// The trace's mean request rate, (n − 1) / (last − first arrival) per second. `None`
    /// without timestamps, with one row, or when every row has the same instant.
    pub fn trace_rate(&self) -> Option<f64> {
        let first = self.requests.first()?.arrival_s?;
        let last = self.requests.last()?.arrival_s?;
        let span = last - first;
        (self.requests.len() > 1 && span > 0.0).then(|| (self.requests.len() - 1) as f64 / span)
    }
}

/// The send offsets, ns from the replay's start, of a trace replayed at time scale `k`: row
/// at t seconds → t / k, in file order (ascending, as the parser checked). Errors: a workload
/// without timestamps, a `k` that is not positive, or a replay longer than 30 days.
pub fn trace_offsets(w: &Workload, k: f64) -> Result<Vec<u64>, WorkloadError> {
    if !(k.is_finite() && k > 0.0) {
        return Err(WorkloadError::BadTimeScale(format!(
            "time scale {k} must be a positive number"
        )));
    }
    let file = || w.source.path.display().to_string();
    w.requests
        .iter()
        .map(|r| {
            let t = r.arrival_s.ok_or_else(|| WorkloadError::NoTimestamps(file()))?;
            let s = t / k;
            if !(0.0..=MAX_DURATION_S).contains(&s) {
                return Err(WorkloadError::BadTimeScale(format!(
                    "{}:{}: at time scale {k} this row is sent {s:.0} s after the start, past the 30-day limit: raise the time scale",
                    file(),
                    r.line
                )));
            }
            Ok((s * 1e9).round() as u64)
        })
        .collect()
}

/// What a perfect prefix cache would serve of a trace's prompts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrefixPrediction {
    /// Prompt tokens of every request.
    pub prompt_tokens: u64,
    /// Of those, the tokens served from cache.
    pub cached_tokens: u64,
    /// Each request's cached tokens, in the order given.
    pub per_request: Vec<u64>,
}

impl PrefixPrediction {
    /// Cached / prompt tokens; `None` with no prompt tokens.
    pub fn share(&self) -> Option<f64> {
        (self.prompt_tokens > 0).then(|| self.cached_tokens as f64 / self.prompt_tokens as f64)
    }
}

/// The prompt tokens a perfect prefix cache serves to `requests` sent in this order, with
/// blocks of `block_tokens` (Mooncake: [`super::MOONCAKE_BLOCK_TOKENS`]); the module's doc has
/// the rule. A block that would start past a prompt's end (more `hash_ids` than its length
/// holds) serves nothing.
pub fn predicted_cached_tokens(
    requests: &[WorkloadRequest],
    block_tokens: u64,
) -> PrefixPrediction {
    // Block id -> the most tokens of it any request sent so far.
    let mut sent: HashMap<u64, u64> = HashMap::new();
    let mut per_request = Vec::with_capacity(requests.len());
    let here = |r: &WorkloadRequest, i: usize| {
        let start = (i as u64).saturating_mul(block_tokens);
        r.input_tokens.saturating_sub(start).min(block_tokens)
    };
    for r in requests {
        let mut cached = 0u64;
        for (i, id) in r.prefix_blocks.iter().enumerate() {
            let want = here(r, i);
            let served = sent.get(id).map_or(0, |s| (*s).min(want));
            cached = cached.saturating_add(served);
            if served == 0 || served < want {
                break;
            }
        }
        for (i, id) in r.prefix_blocks.iter().enumerate() {
            let n = here(r, i);
            let e = sent.entry(*id).or_insert(0);
            *e = (*e).max(n);
        }
        per_request.push(cached);
    }
    PrefixPrediction {
        prompt_tokens: requests
            .iter()
            .fold(0u64, |a, r| a.saturating_add(r.input_tokens)),
        cached_tokens: per_request.iter().fold(0u64, |a, c| a.saturating_add(*c)),
        per_request,
    }
}
