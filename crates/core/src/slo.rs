//! Service-level objectives of open-loop cells (METHOD.md, "Open-loop rate cells"): limits on
//! per-request figures at a quantile (`ttft_p99=2s,tpot_p50=40ms,e2e_p90=30s,user_tok_s_p10=20`),
//! whether each request meets them, the cell's attainment and goodput, and whether the cell
//! holds every limit at its quantile. Pure functions over per-request samples.
//!
//! Refinements of METHOD.md (docs/method-notes.md says the same):
//! - A request with at most one output token has no TPOT (and so no per-user tok/s): a limit on
//!   those figures cannot be missed by it, and it is left out of their quantiles.
//! - A failed request meets nothing, and in a quantile it counts as the worst value (an infinite
//!   time, zero tok/s), so a server that fails under load cannot hold an SLO by failing the slow
//!   requests.

use crate::record::{Outcome, RequestRecord};
use crate::size::parse_duration;
use crate::stats::percentile_sorted;
use std::fmt;
use std::str::FromStr;

/// A per-request figure an SLO can limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SloFigure {
    /// Send to first content token, seconds.
    Ttft,
    /// (last token − first token) / (output tokens − 1), seconds.
    Tpot,
    /// Send to end, seconds.
    E2e,
    /// 1 / TPOT, tokens per second (higher is better).
    UserTokS,
}

impl SloFigure {
    /// Every figure, in the order the keys are listed.
    pub const ALL: [SloFigure; 4] = [
        SloFigure::Ttft,
        SloFigure::Tpot,
        SloFigure::E2e,
        SloFigure::UserTokS,
    ];

    /// The figure's name in an SLO key (`ttft` in `ttft_p99`).
    pub fn key(self) -> &'static str {
        match self {
            SloFigure::Ttft => "ttft",
            SloFigure::Tpot => "tpot",
            SloFigure::E2e => "e2e",
            SloFigure::UserTokS => "user_tok_s",
        }
    }

    /// Whether a larger value is better (the limit is a floor, not a ceiling).
    pub fn higher_is_better(self) -> bool {
        self == SloFigure::UserTokS
    }

    /// The figure of a completed request; `None` where it does not exist.
    fn of(self, r: &RequestSample) -> Option<f64> {
        match self {
            SloFigure::Ttft => r.ttft_s,
            SloFigure::E2e => r.e2e_s,
            SloFigure::Tpot => r.tpot_s,
            SloFigure::UserTokS => r.tpot_s.filter(|t| *t > 0.0).map(|t| 1.0 / t),
        }
    }

    /// The value a failed request takes in a quantile: the worst there is.
    fn worst(self) -> f64 {
        if self.higher_is_better() {
            0.0
        } else {
            f64::INFINITY
        }
    }

    /// Whether `value` is within `limit`.
    fn within(self, value: f64, limit: f64) -> bool {
        if self.higher_is_better() {
            value >= limit
        } else {
            value <= limit
        }
    }
}

/// One limit: a figure at a quantile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SloLimit {
    /// The figure.
    pub figure: SloFigure,
    /// The quantile, 0..=100 (`p99` is 99).
    pub quantile: f64,
    /// Seconds for times, tokens per second for `user_tok_s`.
    pub limit: f64,
}

/// A service-level objective: one or more limits, each on a different figure and quantile.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The limits, in the order given.
    pub limits: Vec<SloLimit>,
}

/// An SLO that could not be read. Each names what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SloError {
    /// No limits at all.
    #[error("an SLO needs at least one limit, e.g. ttft_p99=2s,tpot_p50=40ms")]
    Empty,
    /// A part without `=`.
    #[error("`{0}` is not a limit: write FIGURE_pQ=VALUE, e.g. ttft_p99=2s")]
    NotALimit(String),
    /// A figure that does not exist.
    #[error("`{key}` is not an SLO figure: use {known} with a quantile, e.g. ttft_p99=2s")]
    UnknownFigure {
        /// The key as written.
        key: String,
        /// The figures there are.
        known: String,
    },
    /// A quantile that is not a number from 0 to 100.
    #[error("`{0}`: the quantile must be p0 to p100, e.g. p50, p99, p99.9")]
    BadQuantile(String),
    /// A value that is not a duration (times) or a positive number (tok/s).
    #[error("`{key}={value}`: {what}")]
    BadValue {
        /// The key.
        key: String,
        /// The value as written.
        value: String,
        /// What it should be.
        what: &'static str,
    },
    /// The same figure and quantile twice.
    #[error("`{0}` is given twice")]
    Duplicate(String),
}

impl FromStr for Slo {
    type Err = SloError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut limits: Vec<SloLimit> = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let limit = parse_limit(part)?;
            let same = |l: &&SloLimit| l.figure == limit.figure && l.quantile == limit.quantile;
            if limits.iter().any(|l| same(&l)) {
                return Err(SloError::Duplicate(part.to_string()));
            }
            limits.push(limit);
        }
        if limits.is_empty() {
            return Err(SloError::Empty);
        }
        Ok(Slo { limits })
    }
}

/// One `FIGURE_pQ=VALUE`.
fn parse_limit(part: &str) -> Result<SloLimit, SloError> {
    let (key, value) = part
        .split_once('=')
        .map(|(k, v)| (k.trim(), v.trim()))
        .ok_or_else(|| SloError::NotALimit(part.to_string()))?;
    let unknown = || SloError::UnknownFigure {
        key: key.to_string(),
        known: SloFigure::ALL.map(SloFigure::key).join(", "),
    };
    let (name, q) = key.rsplit_once("_p").ok_or_else(unknown)?;
    let figure = SloFigure::ALL
        .into_iter()
        .find(|f| f.key() == name.to_ascii_lowercase())
        .ok_or_else(unknown)?;
    let quantile = match q.parse::<f64>() {
        Ok(q) if (0.0..=100.0).contains(&q) => q,
        _ => return Err(SloError::BadQuantile(key.to_string())),
    };
    let bad = |what| SloError::BadValue {
        key: key.to_string(),
        value: value.to_string(),
        what,
    };
    let limit = if figure.higher_is_better() {
        match value.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => v,
            _ => return Err(bad("a positive number of tokens per second")),
        }
    } else {
        parse_duration(value)
            .map_err(|_| bad("a duration such as 2s or 40ms"))?
            .as_secs_f64()
    };
    Ok(SloLimit {
        figure,
        quantile,
        limit,
    })
}

impl fmt::Display for SloLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, q) = (self.figure.key(), self.quantile);
        if self.figure.higher_is_better() {
            write!(f, "{key}_p{q}={}", self.limit)
        } else {
            write!(f, "{key}_p{q}={}ms", self.limit * 1e3)
        }
    }
}

impl fmt::Display for Slo {
    /// The limits as `--slo` takes them, comma-separated (times in ms).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, l) in self.limits.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{l}")?;
        }
        Ok(())
    }
}

/// What one request of a cell showed.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RequestSample {
    /// Whether it ended properly (a failed request meets nothing).
    pub ok: bool,
    /// Send to first content token, seconds.
    pub ttft_s: Option<f64>,
    /// Time per output token after the first, seconds (`None` with at most one token).
    pub tpot_s: Option<f64>,
    /// Send to end, seconds.
    pub e2e_s: Option<f64>,
    /// Output tokens.
    pub output_tokens: u64,
}

impl RequestSample {
    /// The figures of one request's record (METHOD.md): TTFT = first content token − send,
    /// TPOT = (last token − first token) / (output tokens − 1), E2E = end − send, output
    /// tokens as counted per chunk. Only a request the server finished is `ok`: one cut at the
    /// drain limit or failed meets no SLO.
    pub fn of_record(r: &RequestRecord) -> RequestSample {
        let tokens = r.tokens();
        let tpot_s = match (r.chunks.first(), r.chunks.last()) {
            (Some(first), Some(last)) if tokens >= 2 => {
                Some(last.t_ns.saturating_sub(first.t_ns) as f64 / 1e9 / (tokens - 1) as f64)
            }
            _ => None,
        };
        RequestSample {
            ok: matches!(r.outcome, Outcome::Finished { .. }),
            ttft_s: r.ttft_ns().map(|t| t as f64 / 1e9),
            tpot_s,
            e2e_s: Some(r.end_ns.saturating_sub(r.sent_ns) as f64 / 1e9),
            output_tokens: tokens,
        }
    }
}

/// The per-request figures of a cell's requests (METHOD.md, "Open-loop rate cells"), in ms and
/// tok/s: TTFT over every request that had a first token; TPOT, E2E and per-user tok/s
/// (1 / TPOT) over the requests the server finished.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct SampleSummaries {
    /// TTFT, ms.
    pub(crate) ttft_ms: Option<crate::stats::Summary>,
    /// TPOT, ms.
    pub(crate) tpot_ms: Option<crate::stats::Summary>,
    /// E2E, ms.
    pub(crate) e2e_ms: Option<crate::stats::Summary>,
    /// Per-user tok/s.
    pub(crate) per_user_tok_per_s: Option<crate::stats::Summary>,
}

impl SampleSummaries {
    /// The summaries of `samples`.
    pub(crate) fn of(samples: &[RequestSample]) -> SampleSummaries {
        Self::of_at(samples, &[])
    }

    /// [`SampleSummaries::of`] with the run's extra percentiles (`--percentiles`) in the
    /// latencies (TTFT, TPOT, E2E).
    pub(crate) fn of_at(samples: &[RequestSample], ps: &[f64]) -> SampleSummaries {
        let summary = |v: Vec<f64>| crate::stats::Summary::of_vec(&mut { v });
        let ms = |v: &mut dyn Iterator<Item = f64>| {
            crate::stats::Summary::of_vec_at(&mut v.map(|t| t * 1e3).collect(), ps)
        };
        let ok = || samples.iter().filter(|s| s.ok);
        SampleSummaries {
            ttft_ms: ms(&mut samples.iter().filter_map(|s| s.ttft_s)),
            tpot_ms: ms(&mut ok().filter_map(|s| s.tpot_s)),
            e2e_ms: ms(&mut ok().filter_map(|s| s.e2e_s)),
            per_user_tok_per_s: summary(
                ok().filter_map(|s| s.tpot_s)
                    .filter(|t| *t > 0.0)
                    .map(|t| 1.0 / t)
                    .collect(),
            ),
        }
    }
}

impl Slo {
    /// Whether a request meets every limit (METHOD.md). A figure a completed request does not
    /// have is met only where it cannot exist (TPOT and per-user tok/s of a one-token answer).
    pub fn meets(&self, r: &RequestSample) -> bool {
        r.ok && self.limits.iter().all(|l| match l.figure.of(r) {
            Some(v) => l.figure.within(v, l.limit),
            None => matches!(l.figure, SloFigure::Tpot | SloFigure::UserTokS),
        })
    }

    /// The cell's verdict over its sent requests; `span_s` is last end − first send.
    pub fn judge(&self, requests: &[RequestSample], span_s: f64) -> SloVerdict {
        let met: Vec<&RequestSample> = requests.iter().filter(|r| self.meets(r)).collect();
        let sent = requests.len() as u64;
        // Nothing sent, or no span: no rate to state (never a 0 that looks measured).
        let per_span =
            |x: f64| (sent > 0 && span_s > 0.0 && span_s.is_finite()).then(|| x / span_s);
        let limits: Vec<LimitVerdict> = self
            .limits
            .iter()
            .map(|l| limit_verdict(*l, requests))
            .collect();
        SloVerdict {
            sent,
            met: met.len() as u64,
            attainment: (sent > 0).then(|| met.len() as f64 / sent as f64),
            goodput_rps: per_span(met.len() as f64),
            goodput_tok_per_s: per_span(met.iter().map(|r| r.output_tokens as f64).sum()),
            holds: sent > 0 && limits.iter().all(|l| l.holds),
            limits,
        }
    }
}

/// One limit judged over a cell's requests.
fn limit_verdict(limit: SloLimit, requests: &[RequestSample]) -> LimitVerdict {
    let mut values: Vec<f64> = requests
        .iter()
        .filter_map(|r| {
            if r.ok {
                limit.figure.of(r)
            } else {
                Some(limit.figure.worst())
            }
        })
        .collect();
    values.sort_by(f64::total_cmp);
    let observed = percentile_sorted(&values, limit.quantile);
    LimitVerdict {
        limit,
        observed,
        // No value at all (every answer one token long) cannot break a limit on TPOT.
        holds: observed.is_none_or(|v| limit.figure.within(v, limit.limit)),
    }
}

/// A limit and what the cell showed at its quantile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimitVerdict {
    /// The limit.
    pub limit: SloLimit,
    /// The figure at the limit's quantile (failed requests as the worst value); `None` when no
    /// request has the figure.
    pub observed: Option<f64>,
    /// Whether the observed value is within the limit.
    pub holds: bool,
}

/// A cell judged against an SLO.
#[derive(Debug, Clone, PartialEq)]
pub struct SloVerdict {
    /// Requests sent.
    pub sent: u64,
    /// Of them, requests that met every limit.
    pub met: u64,
    /// `met / sent`; `None` when nothing was sent.
    pub attainment: Option<f64>,
    /// Requests that met the SLO per second of the cell's span.
    pub goodput_rps: Option<f64>,
    /// Their output tokens per second of the span.
    pub goodput_tok_per_s: Option<f64>,
    /// Every limit, judged at its quantile.
    pub limits: Vec<LimitVerdict>,
    /// Whether every limit holds (and something was sent).
    pub holds: bool,
}

#[cfg(test)]
#[path = "tests/slo.rs"]
mod tests;
