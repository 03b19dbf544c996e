//! Prompt and output lengths as a distribution (issue 20): a fixed `4K`, a normal
//! `4K:normal:512` or a uniform `1K..16K`, written as the user types them (`K` = 1024, the
//! size parser of `size.rs`) and drawn from the core's seeded SplitMix64, so a seed gives the
//! same lengths on every run.
//!
//! The normal is rounded to whole tokens and truncated symmetrically to [1, 2·mean − 1] by
//! redrawing: a symmetric cut keeps the mean exactly where it was asked to be, and no length
//! is ever 0 or a far tail. So that redrawing always ends quickly the std-dev may be at most
//! the mean (then at least 68 % of draws are kept); a wider spread is better asked as a
//! uniform range.

use crate::gof::normal_cdf;
use crate::rng::SplitMix64;
use crate::size::{format_tokens, parse_tokens};
use std::fmt;
use std::str::FromStr;

/// A distribution of token lengths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LengthSpec {
    /// Always this many tokens (`4K`).
    Fixed(u64),
    /// Normal of this mean and std-dev, rounded, truncated to [1, 2·mean − 1]
    /// (`4K:normal:512`).
    Normal {
        /// Mean, tokens.
        mean: u64,
        /// Standard deviation before truncation, tokens (1 ..= mean).
        std_dev: u64,
    },
    /// Every whole length from `lo` to `hi`, both included, equally likely (`1K..16K`).
    Uniform {
        /// Shortest length.
        lo: u64,
        /// Longest length (≥ lo).
        hi: u64,
    },
}

/// A length that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a length: write 4K (fixed), 4K:normal:512 (normal of std-dev 512, at most the mean) or 1K..16K (uniform, inclusive)"
)]
pub struct LengthError(pub String);

impl FromStr for LengthSpec {
    type Err = LengthError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || LengthError(s.to_string());
        let t = s.trim();
        if let Some((lo, hi)) = t.split_once("..") {
            let lo = parse_tokens(lo).map_err(|_| bad())?;
            let hi = parse_tokens(hi).map_err(|_| bad())?;
            return if lo <= hi {
                Ok(LengthSpec::Uniform { lo, hi })
            } else {
                Err(bad())
            };
        }
        let parts: Vec<&str> = t.split(':').collect();
        match parts.as_slice() {
            [n] => parse_tokens(n).map(LengthSpec::Fixed).map_err(|_| bad()),
            [mean, kind, sd] if kind.trim().eq_ignore_ascii_case("normal") => {
                let mean = parse_tokens(mean).map_err(|_| bad())?;
                let std_dev = parse_tokens(sd).map_err(|_| bad())?;
                // The mean bound keeps 2·mean − 1 inside u64.
                if std_dev > mean || mean > u64::MAX / 2 {
                    return Err(bad());
                }
                Ok(LengthSpec::Normal { mean, std_dev })
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for LengthSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LengthSpec::Fixed(n) => f.write_str(&format_tokens(*n)),
            LengthSpec::Normal { mean, std_dev } => write!(
                f,
                "{}:normal:{}",
                format_tokens(*mean),
                format_tokens(*std_dev)
            ),
            LengthSpec::Uniform { lo, hi } => {
                write!(f, "{}..{}", format_tokens(*lo), format_tokens(*hi))
            }
        }
    }
}

impl LengthSpec {
    /// One length, drawn from `rng`. Always in [`LengthSpec::min`] ..= [`LengthSpec::max`].
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        match *self {
            LengthSpec::Fixed(n) => n,
            LengthSpec::Uniform { lo, hi } => match hi.saturating_sub(lo).checked_add(1) {
                Some(span) => lo + rng.below(span),
                None => rng.next_u64(),
            },
            LengthSpec::Normal { mean, std_dev } => {
                let (m, sd) = (mean as f64, std_dev as f64);
                let top = self.max();
                // Accepts at least 68 % of draws (std_dev ≤ mean); the bound only guards a
                // broken generator.
                for _ in 0..10_000 {
                    let x = (m + sd * rng.normal()).round();
                    if x >= 1.0 && x <= top as f64 {
                        return x as u64;
                    }
                }
                mean
            }
        }
    }

    /// The shortest length a draw can give.
    pub fn min(&self) -> u64 {
        match *self {
            LengthSpec::Fixed(n) => n,
            LengthSpec::Normal { .. } => 1,
            LengthSpec::Uniform { lo, .. } => lo,
        }
    }

    /// The longest length a draw can give (what memory and context checks must allow for).
    pub fn max(&self) -> u64 {
        match *self {
            LengthSpec::Fixed(n) => n,
            // Saturating, as the fields are public: the parser's bounds make it exact.
            LengthSpec::Normal { mean, .. } => mean.saturating_mul(2).saturating_sub(1),
            LengthSpec::Uniform { hi, .. } => hi,
        }
    }

    /// The mean length, tokens.
    pub fn mean(&self) -> f64 {
        match *self {
            LengthSpec::Fixed(n) => n as f64,
            LengthSpec::Normal { mean, .. } => mean as f64,
            LengthSpec::Uniform { lo, hi } => (lo as f64 + hi as f64) / 2.0,
        }
    }

    /// P(length ≤ x): the distribution the samples follow, for [`crate::ks_statistic`].
    pub fn cdf(&self, x: u64) -> f64 {
        match *self {
            LengthSpec::Fixed(n) => f64::from(u8::from(x >= n)),
            LengthSpec::Uniform { lo, hi } => {
                if x < lo {
                    0.0
                } else if x >= hi {
                    1.0
                } else {
                    (x - lo + 1) as f64 / ((hi - lo) as f64 + 1.0)
                }
            }
            LengthSpec::Normal { mean, std_dev } => {
                if x < 1 {
                    return 0.0;
                }
                if x >= self.max() {
                    return 1.0;
                }
                // A draw rounds to x when it falls in [x − ½, x + ½): the kept mass is
                // [½, 2·mean − ½).
                let sd = std_dev.max(1) as f64;
                let phi = |v: f64| normal_cdf((v - mean as f64) / sd);
                let (lo, hi) = (phi(0.5), phi(2.0 * mean as f64 - 0.5));
                ((phi(x as f64 + 0.5) - lo) / (hi - lo)).clamp(0.0, 1.0)
            }
        }
    }
}

#[cfg(test)]
#[path = "tests/length.rs"]
mod tests;
