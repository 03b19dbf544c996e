//! Open-loop load (METHOD.md, "Open-loop rate cells"): what a run is asked to measure (rates,
//! arrivals, the SLO, the capacity search), and the rows of rate cells and capacity rows as
//! pure functions of what the driver observed. The driver only sends on the schedule and
//! gathers records; every figure, status and warning is decided here.
//!
//! Refinements of METHOD.md (docs/method-notes.md says the same):
//! - A request still running at the drain limit is cut and counts as failed (it met nothing).
//! - Output tokens are every content token the cell's requests received, failed ones included
//!   (the server did that work); goodput counts only the tokens of requests that met the SLO.
//! - The client is late when its pacing error p99 passes the larger of 1 ms and a tenth of the
//!   schedule's mean gap, or when it sent below 95 % of the schedule's own rate without a cap
//!   to wait for: the row carries a warning with the achieved rate.

use crate::arrival::ArrivalPattern;
use crate::slo::{Slo, SloVerdict};
use crate::stats::Summary;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::str::FromStr;

/// Which request rates a context's open-loop section measures (`--request-rate`).
#[derive(Debug, Clone, PartialEq)]
pub enum RateSpec {
    /// These rates, requests per second, in the order given.
    List(Vec<f64>),
    /// The synchronous rate and the saturation throughput first, then `points` rates
    /// spanning them.
    Auto {
        /// How many rates (default 8).
        points: u32,
    },
}

/// A `--request-rate` value that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateSpecError {
    /// A rate that is not a positive number.
    #[error(
        "request rate `{0}` must be a positive number of requests per second (e.g. 2,4,8 or auto:8)"
    )]
    BadRate(String),
    /// `auto:K` with a K that is not a whole number from 2 to 64.
    #[error("`auto:{0}`: the number of rates must be a whole number from 2 to 64")]
    BadPoints(String),
}

impl FromStr for RateSpec {
    type Err = RateSpecError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        if t == "auto" {
            return Ok(RateSpec::Auto { points: 8 });
        }
        if let Some(k) = t.strip_prefix("auto:") {
            return match k.trim().parse::<u32>() {
                Ok(points) if (2..=64).contains(&points) => Ok(RateSpec::Auto { points }),
                _ => Err(RateSpecError::BadPoints(k.to_string())),
            };
        }
        let rates = t
            .split(',')
            .map(|r| match r.trim().parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
                _ => Err(RateSpecError::BadRate(r.trim().to_string())),
            })
            .collect::<Result<Vec<f64>, _>>()?;
        Ok(RateSpec::List(rates))
    }
}

impl fmt::Display for RateSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RateSpec::Auto { points } => write!(f, "auto:{points}"),
            RateSpec::List(v) => {
                let parts: Vec<String> = v.iter().map(|r| r.to_string()).collect();
                f.write_str(&parts.join(","))
            }
        }
    }
}

/// Serialises a value as its `Display` text and reads it back with `FromStr`, so run.json
/// holds what the user would type (`gamma:0.5`, `ttft_p99=2000ms`).
macro_rules! serde_as_text {
    ($t:ty) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&self.to_string())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}
serde_as_text!(RateSpec);
serde_as_text!(ArrivalPattern);
serde_as_text!(Slo);

/// What the open-loop section of each context is asked to do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSettings {
    /// Rates to measure (`None`: only the capacity search's own).
    pub rates: Option<RateSpec>,
    /// How requests arrive.
    pub arrival: ArrivalPattern,
    /// The SLO each rate cell is judged against.
    pub slo: Option<Slo>,
    /// Search each context for the largest rate that holds the SLO.
    pub find_capacity: bool,
    /// The search stops when its bracket is this narrow (0.05 = 5 %).
    pub precision: f64,
    /// At most this many requests in flight (the rest wait: client queue time).
    pub max_concurrency: Option<u32>,
    /// How long requests still running when the schedule ends are waited for, seconds.
    pub drain_s: f64,
    /// Run the rate cells without the closed-loop decode matrix.
    pub skip_decode: bool,
}

/// Rates spanning the synchronous rate and the saturation throughput: `points` of them,
/// evenly spaced from the first to the second (both included). `None` when either is not a
/// positive rate; where saturation is not above the synchronous rate (a server that runs one
/// request at a time), the span is from half the synchronous rate to it, so the sweep still
/// shows the knee.
pub fn auto_rates(synchronous: f64, saturation: f64, points: u32) -> Option<Vec<f64>> {
    let ok = |x: f64| x.is_finite() && x > 0.0;
    if !ok(synchronous) || !ok(saturation) || points < 2 {
        return None;
    }
    let (lo, hi) = if saturation > synchronous {
        (synchronous, saturation)
    } else {
        (synchronous / 2.0, synchronous)
    };
    let step = (hi - lo) / f64::from(points - 1);
    Some(
        (0..points)
            .map(|i| round_rate(lo + step * f64::from(i)))
            .collect(),
    )
}

/// A rate as the tool measures and prints it: four significant digits (and never below
/// 0.001/s), so a key, a table and the schedule agree on the rate.
pub fn round_rate(rate: f64) -> f64 {
    if !rate.is_finite() || rate <= 0.0 {
        return rate;
    }
    let digits = 3 - rate.log10().floor() as i32;
    let scale = 10f64.powi(digits.clamp(-6, 3));
    ((rate * scale).round() / scale).max(0.001)
}

/// One limit of an SLO as a row holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitRow {
    /// The key (`ttft_p99`).
    pub key: String,
    /// The limit: seconds for times, tok/s for `user_tok_s`.
    pub limit: f64,
    /// The cell's figure at the quantile (failed requests as the worst value).
    pub observed: Option<f64>,
    /// Whether it is within the limit.
    pub holds: bool,
}

/// A cell judged against an SLO: attainment, whether every limit holds, and each limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloRow {
    /// The SLO as given (`ttft_p99=2000ms,…`).
    pub slo: String,
    /// Requests judged.
    pub judged: u64,
    /// Of them, requests that met every limit.
    pub met: u64,
    /// `met / judged` (null: nothing judged).
    pub attainment: Option<f64>,
    /// Whether every limit holds at its quantile.
    pub holds: bool,
    /// Each limit.
    pub limits: Vec<LimitRow>,
}

impl SloRow {
    /// The row of a verdict.
    pub fn of(slo: &Slo, v: &SloVerdict) -> SloRow {
        SloRow {
            slo: slo.to_string(),
            judged: v.sent,
            met: v.met,
            attainment: v.attainment,
            holds: v.holds,
            limits: v
                .limits
                .iter()
                .map(|l| LimitRow {
                    key: format!("{}_p{}", l.limit.figure.key(), l.limit.quantile),
                    limit: l.limit.limit,
                    observed: l.observed,
                    holds: l.holds,
                })
                .collect(),
        }
    }
}

/// An open-loop cell's own figures, beside the contract's columns of its row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateFigures {
    /// The arrival pattern (`poisson`, `constant`, `gamma:0.5`).
    pub arrival: String,
    /// Requests in the schedule.
    pub scheduled: u64,
    /// The schedule's own rate, (n − 1) / (last due − first due): what a perfect client sends.
    pub schedule_rate: Option<f64>,
    /// The cap on requests in flight, if any.
    pub max_concurrency: Option<u32>,
    /// Most requests in flight at once.
    pub max_in_flight: u64,
    /// Requests still running at the drain limit, cut (counted as failed).
    pub unfinished_requests: u64,
    /// Output tokens / (last end − first send).
    pub output_tok_per_s: Option<f64>,
    /// Last end − first send, seconds.
    pub span_s: Option<f64>,
    /// Send to first content token, ms.
    pub ttft_ms: Option<Summary>,
    /// Per request: (last token − first token) / (output tokens − 1), ms.
    pub tpot_ms: Option<Summary>,
    /// Between consecutive tokens of a request, token-weighted, ms.
    pub itl_ms: Option<Summary>,
    /// Send to end of the requests the server finished, ms.
    pub e2e_ms: Option<Summary>,
    /// Per request 1 / TPOT, tok/s.
    pub per_user_tok_per_s: Option<Summary>,
    /// Send − scheduled instant of every request, ms (waits for the cap included).
    pub queue_ms: Option<Summary>,
    /// Send − scheduled instant of the requests with no cap to wait for, µs.
    pub pacing_error_us: Option<Summary>,
    /// The client could not keep the schedule: what it achieved, in words.
    pub pacing_warning: Option<String>,
    /// The SLO's verdict, when there is one.
    pub slo: Option<SloRow>,
}

/// A capacity row's search: every measured point and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFigures {
    /// The SLO searched for.
    pub slo: String,
    /// The stated precision (0.05 = 5 %).
    pub precision: f64,
    /// `found`, `at_least` (every rate up to the ceiling held) or `none`.
    pub outcome: String,
    /// The smallest rate above the answer that failed (found only).
    pub failed_at: Option<f64>,
    /// Every measured rate, in the order measured.
    pub points: Vec<CapacityPoint>,
    /// The synchronous rate (one request at a time), when measured.
    pub synchronous_rate: Option<f64>,
    /// The saturation throughput in requests per second, when measured.
    pub saturation_rate: Option<f64>,
    /// Goodput of the decode cell at `capacity_concurrency`, requests per second.
    pub concurrency_goodput_rps: Option<f64>,
}

/// One measured rate of a capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityPoint {
    /// Requests per second asked for.
    pub rate: f64,
    /// Whether its cell held the SLO.
    pub holds: bool,
    /// Its attainment.
    pub attainment: Option<f64>,
    /// Its goodput, requests per second.
    pub goodput_rps: Option<f64>,
    /// Its goodput, output tok/s.
    pub goodput_tok_per_s: Option<f64>,
}

#[cfg(test)]
#[path = "tests/load.rs"]
mod tests;

mod rows;
pub use rows::{
    CapacityInputs, RateObservation, capacity_concurrency, capacity_result, closed_loop_slo,
    rate_result,
};

/// The planned cell of an open-loop cell at `rate` requests per second.
pub fn rate_cell(context_tokens: u64, label: &str, rate: f64) -> crate::plan::PlannedCell {
    crate::plan::PlannedCell {
        key: crate::cell::CellKey {
            phase: crate::cell::Phase::Rate,
            context_tokens,
            concurrency: 0,
            rate_mrps: crate::cell::rate_mrps(rate),
        },
        label: label.to_string(),
        over_capacity: false,
    }
}

/// The planned cell of a context's capacity row.
pub fn capacity_cell(context_tokens: u64, label: &str) -> crate::plan::PlannedCell {
    crate::plan::PlannedCell {
        key: crate::cell::CellKey {
            phase: crate::cell::Phase::Capacity,
            context_tokens,
            concurrency: 0,
            rate_mrps: 0,
        },
        label: label.to_string(),
        over_capacity: false,
    }
}

/// The request rate of a closed batch (the synchronous rate with one request at a time, the
/// saturation throughput with many): requests the server finished / (last end − first send).
/// `None` when none finished or there is no span.
pub fn closed_batch_rate(records: &[crate::record::RequestRecord]) -> Option<f64> {
    let finished = records
        .iter()
        .filter(|r| matches!(r.outcome, crate::record::Outcome::Finished { .. }))
        .count();
    let first = records.iter().map(|r| r.sent_ns).min()?;
    let last = records.iter().map(|r| r.end_ns).max()?;
    let span = last.saturating_sub(first) as f64 / 1e9;
    (finished > 0 && span > 0.0).then(|| finished as f64 / span)
}
