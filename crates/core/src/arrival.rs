//! Arrival schedules of open-loop rate cells (METHOD.md, "Open-loop rate cells"): the instants
//! at which requests are due, drawn once from the run's seed before a cell starts, so the
//! driver only waits for absolute deadlines and two runs with one seed send the same schedule.
//!
//! Patterns: `poisson` (exponential gaps of mean 1/R, the default), `constant` (gaps of exactly
//! 1/R) and `gamma:SHAPE` (gamma gaps of mean 1/R and coefficient of variation 1/√SHAPE: a
//! shape below 1 is burstier than Poisson, above 1 smoother; shape 1 is Poisson). The random
//! numbers come from a self-contained SplitMix64, so the schedule of a seed never changes with
//! a dependency's version.

use crate::rng::SplitMix64;
use std::fmt;
use std::str::FromStr;

/// How requests arrive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArrivalPattern {
    /// Exponential gaps of mean 1/R (memoryless arrivals, as many users acting independently).
    Poisson,
    /// Gaps of exactly 1/R.
    Constant,
    /// Gamma gaps of mean 1/R with this shape (> 0); the coefficient of variation is 1/√shape.
    Gamma {
        /// The gamma distribution's shape parameter.
        shape: f64,
    },
}

/// An arrival pattern that could not be read, or a schedule that cannot be drawn.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ArrivalError {
    /// Not one of the patterns.
    #[error(
        "`{0}` is not an arrival pattern: use poisson, constant or gamma:SHAPE (e.g. gamma:0.5)"
    )]
    Unknown(String),
    /// A gamma shape that is not a positive number.
    #[error("gamma shape `{0}` must be a positive number (below 1 is burstier than poisson)")]
    BadShape(String),
    /// A rate or duration that is not positive and finite.
    #[error("request rate {rate}/s over {duration_s} s cannot be scheduled: both must be positive")]
    BadRate {
        /// Requests per second.
        rate: f64,
        /// Seconds.
        duration_s: f64,
    },
}

impl FromStr for ArrivalPattern {
    type Err = ArrivalError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "poisson" => Ok(ArrivalPattern::Poisson),
            "constant" => Ok(ArrivalPattern::Constant),
            _ => {
                let Some(shape) = t.strip_prefix("gamma:") else {
                    return Err(ArrivalError::Unknown(s.to_string()));
                };
                match shape.trim().parse::<f64>() {
                    Ok(k) if k.is_finite() && k > 0.0 => Ok(ArrivalPattern::Gamma { shape: k }),
                    _ => Err(ArrivalError::BadShape(shape.to_string())),
                }
            }
        }
    }
}

impl fmt::Display for ArrivalPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArrivalPattern::Poisson => f.write_str("poisson"),
            ArrivalPattern::Constant => f.write_str("constant"),
            ArrivalPattern::Gamma { shape } => write!(f, "gamma:{shape}"),
        }
    }
}

/// The due instants, in ns from the cell's start, of the requests of a cell at `rate` requests
/// per second over `duration_s` seconds: every instant is below the duration, ascending. The
/// first request is due one gap after the start, as in a process already running: a constant
/// schedule at 2/s over 2 s is 0.5, 1.0 and 1.5 s (2.0 s is not below the duration). The same
/// seed gives the same schedule.
pub fn schedule(
    pattern: ArrivalPattern,
    rate: f64,
    duration_s: f64,
    seed: u64,
) -> Result<Vec<u64>, ArrivalError> {
    if !(rate.is_finite() && rate > 0.0 && duration_s.is_finite() && duration_s > 0.0) {
        return Err(ArrivalError::BadRate { rate, duration_s });
    }
    let mut rng = SplitMix64::new(seed);
    let mean_gap_s = 1.0 / rate;
    let mut due_s = 0.0;
    let mut out = Vec::with_capacity((rate * duration_s).ceil().min(1e7) as usize);
    for n in 1u64.. {
        due_s = match pattern {
            // Computed, not summed, so no rounding drifts over many gaps.
            ArrivalPattern::Constant => n as f64 * mean_gap_s,
            ArrivalPattern::Poisson => due_s + mean_gap_s * rng.exponential(),
            // Gamma(k) has mean k: divided by k, the gap's mean stays 1/R.
            ArrivalPattern::Gamma { shape } => due_s + mean_gap_s * rng.gamma(shape) / shape,
        };
        if due_s >= duration_s {
            return Ok(out);
        }
        out.push((due_s * 1e9).round() as u64);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps_s(s: &[u64]) -> Vec<f64> {
        let mut prev = 0u64;
        s.iter()
            .map(|&t| {
                let g = (t - prev) as f64 / 1e9;
                prev = t;
                g
            })
            .collect()
    }

    fn mean_cv(v: &[f64]) -> (f64, f64) {
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn patterns_read_and_print_back() {
        for s in ["poisson", "constant", "gamma:0.5", "gamma:2"] {
            let p: ArrivalPattern = s.parse().expect(s);
            assert_eq!(p.to_string(), s);
        }
        assert_eq!("Gamma: 4".parse(), Ok(ArrivalPattern::Gamma { shape: 4.0 }));
        for bad in [
            "uniform",
            "gamma",
            "gamma:",
            "gamma:0",
            "gamma:-1",
            "gamma:nan",
        ] {
            let e = bad.parse::<ArrivalPattern>().expect_err(bad).to_string();
            assert!(!e.contains('\n') && e.contains("gamma"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_constant_schedule_is_exact_and_ends_before_the_duration() {
        let s = schedule(ArrivalPattern::Constant, 2.0, 2.0, 7).expect("schedule");
        assert_eq!(s, vec![500_000_000, 1_000_000_000, 1_500_000_000]);
        let s = schedule(ArrivalPattern::Constant, 1000.0, 1.0, 7).expect("schedule");
        assert_eq!(s.len(), 999);
        assert_eq!(s[0], 1_000_000);
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule_and_another_seed_another() {
        let a = schedule(ArrivalPattern::Poisson, 50.0, 10.0, 42).expect("a");
        let b = schedule(ArrivalPattern::Poisson, 50.0, 10.0, 42).expect("b");
        let c = schedule(ArrivalPattern::Poisson, 50.0, 10.0, 43).expect("c");
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "ascending");
        assert!(a.iter().all(|&t| t < 10_000_000_000), "inside the duration");
    }

    #[test]
    fn poisson_gaps_have_mean_one_over_r_and_cv_one() {
        let s = schedule(ArrivalPattern::Poisson, 100.0, 1000.0, 1).expect("schedule");
        // ~100,000 gaps: the mean within 1 % and the CV within 2 % of theory.
        assert!(
            (s.len() as f64 / 100_000.0 - 1.0).abs() < 0.01,
            "{}",
            s.len()
        );
        let (mean, cv) = mean_cv(&gaps_s(&s));
        assert!((mean / 0.01 - 1.0).abs() < 0.01, "mean {mean}");
        assert!((cv - 1.0).abs() < 0.02, "cv {cv}");
    }

    #[test]
    fn gamma_gaps_keep_the_rate_and_set_the_burstiness() {
        for shape in [0.25, 0.5, 2.0, 8.0] {
            let p = ArrivalPattern::Gamma { shape };
            let s = schedule(p, 100.0, 1000.0, 3).expect("schedule");
            let (mean, cv) = mean_cv(&gaps_s(&s));
            assert!(
                (mean / 0.01 - 1.0).abs() < 0.02,
                "shape {shape}: mean {mean}"
            );
            let want = 1.0 / shape.sqrt();
            assert!(
                (cv / want - 1.0).abs() < 0.05,
                "shape {shape}: cv {cv} vs {want}"
            );
        }
    }

    #[test]
    fn a_rate_or_duration_that_is_not_positive_is_an_error() {
        for (r, d) in [
            (0.0, 1.0),
            (-1.0, 1.0),
            (1.0, 0.0),
            (f64::NAN, 1.0),
            (1.0, f64::INFINITY),
        ] {
            assert!(
                schedule(ArrivalPattern::Poisson, r, d, 0).is_err(),
                "{r} {d}"
            );
        }
    }
}
