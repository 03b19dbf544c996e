//! What the open-loop section of each context is asked to do (`--request-rate`,
//! `--arrival`, `--slo`, `--find-capacity`, …), as the plan and run.json hold it. The
//! arrival pattern and the SLO are written as the user types them.

use crate::arrival::ArrivalPattern;
use crate::slo::Slo;
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
serde_as_text!(crate::length::LengthSpec);
serde_as_text!(crate::workload::WorkloadSpec);
serde_as_text!(crate::workload::TimeScaleSpec);
serde_as_text!(crate::stable::StableTarget);

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
    /// Prompt lengths of the open-loop requests (`--input-len`): when given, one open-loop
    /// section labelled by it replaces the per-context ones. Old run.json files have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_len: Option<crate::length::LengthSpec>,
    /// Output lengths asked of the open-loop requests (`--output-len`; `None`: `--max-output`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_len: Option<crate::length::LengthSpec>,
    /// A workload file (`--workload`): its lengths (ShareGPT) or its replay (traces) replace the
    /// per-context sections, as `input_len` does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::workload::WorkloadSpec>,
    /// How fast a trace replays (`--time-scale`; `None`: 1, the trace's own speed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<crate::workload::TimeScaleSpec>,
    /// A `prompts:FILE` workload's file as the run recorded it (name, prompts, size, sha256;
    /// never its text): a resumed run must be given the same file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<crate::workload::PromptsSource>,
}
