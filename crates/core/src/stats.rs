//! Summary statistics with one documented percentile definition: linear interpolation between
//! closest ranks (numpy's default, `method="linear"`). Every summary carries its sample count,
//! and the percentiles a run asked for beyond the fixed p50, p90 and p99 (`--percentiles`), by
//! the same rule.

use serde::{Deserialize, Serialize};

/// The `p`-th percentile (0..=100) of `sorted` (ascending), by linear interpolation:
/// rank = p/100 × (n − 1), interpolated between the two neighbouring samples.
/// `None` for an empty slice.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = (p.clamp(0.0, 100.0) / 100.0) * (n - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * frac)
}

/// One percentile a run asked for beyond the fixed p50, p90 and p99 (`--percentiles`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// Which percentile, above 0 and below 100 (e.g. 99.9).
    pub p: f64,
    /// Its value, by the rule of the fixed ones (`percentile_sorted`).
    pub value: f64,
}

/// A `--percentiles` value that is not a percentile.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PercentileError {
    /// The list named nothing.
    #[error("--percentiles takes a comma-separated list of percentiles, e.g. 50,90,99,99.9")]
    Empty,
    /// An item is not a number.
    #[error("--percentiles: `{0}` is not a number (e.g. 99.9)")]
    NotANumber(String),
    /// An item is 0, 100, above or not finite: p0 and p100 are the summary's min and max.
    #[error("--percentiles: {0} is not above 0 and below 100 (min and max are always kept)")]
    OutOfRange(String),
}

/// Parses a `--percentiles` list (`50,90,99,99.9`): each above 0 and below 100, returned
/// ascending without repeats and without the fixed 50, 90 and 99 (every summary has those).
pub fn parse_percentiles(text: &str) -> Result<Vec<f64>, PercentileError> {
    let mut out: Vec<f64> = Vec::new();
    for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let p: f64 = item
            .trim_start_matches(['p', 'P'])
            .parse()
            .map_err(|_| PercentileError::NotANumber(item.to_string()))?;
        if !(p.is_finite() && p > 0.0 && p < 100.0) {
            return Err(PercentileError::OutOfRange(item.to_string()));
        }
        if !FIXED_PERCENTILES.contains(&p) && !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() && text.split(',').all(|i| i.trim().is_empty()) {
        return Err(PercentileError::Empty);
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// The percentiles every summary carries in its own fields.
pub const FIXED_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// How a percentile is written in keys and headers: `99.9`, `75` (as vLLM's `p_word`).
pub fn percentile_word(p: f64) -> String {
    format!("{p}")
}

/// Distribution summary of one figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Sample count.
    pub n: u64,
    /// Smallest sample.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest sample.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation (divided by n, as numpy's `std` and vLLM's `std_*_ms`);
    /// absent in rows saved before it existed and where a source gives none (an import).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub std: Option<f64>,
    /// The run's `--percentiles` beyond p50, p90 and p99, ascending; empty (and absent from
    /// the file) without the flag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles: Vec<Percentile>,
}

impl Summary {
    /// Summarises `samples` (any order; NaNs dropped). `None` when nothing is left.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        Self::of_vec(&mut v)
    }

    /// Like [`Summary::of`], sorting `v` in place to avoid a copy of large sample sets.
    pub fn of_vec(v: &mut Vec<f64>) -> Option<Summary> {
        Self::of_vec_at(v, &[])
    }

    /// [`Summary::of_vec`] with the extra percentiles `ps` (from [`parse_percentiles`]).
    pub fn of_vec_at(v: &mut Vec<f64>, ps: &[f64]) -> Option<Summary> {
        v.retain(|x| !x.is_nan());
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n as f64;
        Some(Summary {
            n: n as u64,
            min: v[0],
            p50: percentile_sorted(v, 50.0)?,
            p90: percentile_sorted(v, 90.0)?,
            p99: percentile_sorted(v, 99.0)?,
            max: v[n - 1],
            mean,
            std: Some(var.sqrt()),
            percentiles: ps
                .iter()
                .filter_map(|&p| {
                    Some(Percentile {
                        p,
                        value: percentile_sorted(v, p)?,
                    })
                })
                .collect(),
        })
    }

    /// The `p`-th percentile where this summary has it: a fixed one, 0 (min), 100 (max) or
    /// one of [`Summary::percentiles`].
    pub fn at(&self, p: f64) -> Option<f64> {
        match p {
            0.0 => Some(self.min),
            50.0 => Some(self.p50),
            90.0 => Some(self.p90),
            99.0 => Some(self.p99),
            100.0 => Some(self.max),
            _ => self.percentiles.iter().find(|x| x.p == p).map(|x| x.value),
        }
    }
}

/// Median of weighted samples (value, weight): the value at which the cumulative weight first
/// reaches half the total. Used for time between tokens, where a chunk carrying k tokens counts
/// as k gaps of equal size without materialising k copies.
pub fn weighted_summary(samples: &mut [(f64, u64)]) -> Option<Summary> {
    weighted_summary_at(samples, &[])
}

/// [`weighted_summary`] with the extra percentiles `ps` (from [`parse_percentiles`]).
pub fn weighted_summary_at(samples: &mut [(f64, u64)], ps: &[f64]) -> Option<Summary> {
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u64 = samples.iter().map(|s| s.1).sum();
    if total == 0 {
        return None;
    }
    // Percentile over the expanded sequence (each value repeated `weight` times), with the same
    // linear-interpolation rule as `percentile_sorted`, computed without expanding.
    let at = |idx: u64| -> f64 {
        let mut acc = 0u64;
        for &(v, w) in samples.iter() {
            acc += w;
            if idx < acc {
                return v;
            }
        }
        samples.last().map(|s| s.0).unwrap_or(f64::NAN)
    };
    let pct = |p: f64| -> f64 {
        let rank = p / 100.0 * (total - 1) as f64;
        let lo = rank.floor() as u64;
        let hi = rank.ceil() as u64;
        let (a, b) = (at(lo), at(hi));
        a + (b - a) * (rank - lo as f64)
    };
    let sum: f64 = samples.iter().map(|&(v, w)| v * w as f64).sum();
    let mean = sum / total as f64;
    // Over the expanded sequence too: each value counts `weight` times.
    let var = samples
        .iter()
        .map(|&(v, w)| (v - mean) * (v - mean) * w as f64)
        .sum::<f64>()
        / total as f64;
    let nonzero: Vec<&(f64, u64)> = samples.iter().filter(|s| s.1 > 0).collect();
    Some(Summary {
        n: total,
        min: nonzero.first().map(|s| s.0)?,
        p50: pct(50.0),
        p90: pct(90.0),
        p99: pct(99.0),
        max: nonzero.last().map(|s| s.0)?,
        mean,
        std: Some(var.sqrt()),
        percentiles: ps
            .iter()
            .map(|&p| Percentile { p, value: pct(p) })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_match_numpy_linear() {
        // numpy.percentile([1,2,3,4], [50, 90, 99]) == [2.5, 3.7, 3.97]
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile_sorted(&v, 50.0), Some(2.5));
        assert!((percentile_sorted(&v, 90.0).unwrap_or(0.0) - 3.7).abs() < 1e-12);
        assert!((percentile_sorted(&v, 99.0).unwrap_or(0.0) - 3.97).abs() < 1e-12);
        assert_eq!(percentile_sorted(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile_sorted(&[], 50.0), None);
    }

    #[test]
    fn summary_known_answer() {
        let s = Summary::of(&[5.0, 1.0, 3.0, f64::NAN]).expect("non-empty");
        assert_eq!((s.n, s.min, s.p50, s.max, s.mean), (3, 1.0, 3.0, 5.0, 3.0));
        // numpy.std([5, 1, 3]) == sqrt(8 / 3) (population: divided by n, as vLLM's std_*_ms).
        let std = s.std.expect("a deviation");
        assert!((std - (8.0f64 / 3.0).sqrt()).abs() < 1e-12, "{std}");
        assert_eq!(Summary::of(&[4.0]).and_then(|s| s.std), Some(0.0));
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn extra_percentiles_known_answers() {
        // numpy.percentile(range(1, 11), [75, 99.9]) == [7.75, 9.991]
        let mut v: Vec<f64> = (1..=10).map(f64::from).collect();
        let s = Summary::of_vec_at(&mut v, &[75.0, 99.9]).expect("non-empty");
        let got: Vec<(f64, f64)> = s.percentiles.iter().map(|x| (x.p, x.value)).collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], (75.0, 7.75));
        assert!((got[1].1 - 9.991).abs() < 1e-12, "{got:?}");
        assert_eq!(s.at(99.9), Some(got[1].1));
        assert_eq!(
            (s.at(50.0), s.at(0.0), s.at(100.0)),
            (Some(5.5), Some(1.0), Some(10.0))
        );
        assert_eq!(s.at(95.0), None, "not asked for");
        // Small n: p99.9 of three samples interpolates between the top two (rank 1.998);
        // of one sample it is that sample.
        let three = Summary::of_vec_at(&mut vec![3.0, 1.0, 2.0], &[99.9]).expect("three");
        assert!((three.at(99.9).unwrap_or(0.0) - 2.998).abs() < 1e-12);
        let one = Summary::of_vec_at(&mut vec![4.0], &[99.9]).expect("one");
        assert_eq!(one.at(99.9), Some(4.0));
        // Without the flag nothing changes, in the summary or in its JSON.
        let plain = Summary::of(&[1.0, 2.0]).expect("two");
        assert!(plain.percentiles.is_empty());
        let json = serde_json::to_string(&plain).unwrap_or_default();
        assert!(!json.contains("percentiles"), "{json}");
    }

    #[test]
    fn percentile_lists_parse_and_bad_values_are_refused_in_one_line() {
        assert_eq!(parse_percentiles("50,90,99,99.9"), Ok(vec![99.9]));
        assert_eq!(
            parse_percentiles(" 99.9, 75 ,p95,75"),
            Ok(vec![75.0, 95.0, 99.9])
        );
        assert_eq!(parse_percentiles("50,99"), Ok(vec![]));
        for (bad, want) in [
            ("0", PercentileError::OutOfRange("0".into())),
            ("100.5", PercentileError::OutOfRange("100.5".into())),
            ("100", PercentileError::OutOfRange("100".into())),
            ("NaN", PercentileError::OutOfRange("NaN".into())),
            ("99,abc", PercentileError::NotANumber("abc".into())),
            (" , ", PercentileError::Empty),
        ] {
            let got = parse_percentiles(bad);
            assert_eq!(got, Err(want), "{bad}");
            let line = got.err().map(|e| e.to_string()).unwrap_or_default();
            assert!(
                line.starts_with("--percentiles") && !line.contains('\n'),
                "{line}"
            );
        }
        assert_eq!(
            (percentile_word(99.9), percentile_word(75.0)),
            ("99.9".into(), "75".into())
        );
    }

    #[test]
    fn weighted_extra_percentiles_equal_expanded() {
        let mut w = vec![(2.0, 3), (1.0, 1), (10.0, 2)];
        let a = weighted_summary_at(&mut w, &[99.9, 25.0]).expect("non-empty");
        let b = Summary::of_vec_at(&mut vec![1.0, 2.0, 2.0, 2.0, 10.0, 10.0], &[99.9, 25.0]);
        assert_eq!(Some(a.percentiles), b.map(|b| b.percentiles));
    }

    #[test]
    fn weighted_equals_expanded() {
        let mut w = vec![(2.0, 3), (1.0, 1), (10.0, 2)];
        let expanded = [1.0, 2.0, 2.0, 2.0, 10.0, 10.0];
        let a = weighted_summary(&mut w).expect("non-empty");
        let b = Summary::of(&expanded).expect("non-empty");
        assert_eq!(a.n, b.n);
        for (x, y) in [
            (a.p50, b.p50),
            (a.p90, b.p90),
            (a.p99, b.p99),
            (a.mean, b.mean),
            (a.std.unwrap_or(-1.0), b.std.unwrap_or(-2.0)),
        ] {
            assert!((x - y).abs() < 1e-12, "{x} vs {y}");
        }
        assert_eq!((a.min, a.max), (1.0, 10.0));
    }
}
