//! Summary statistics with one documented percentile definition: linear interpolation between
//! closest ranks (numpy's default, `method="linear"`). Every summary carries its sample count.

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
}

impl Summary {
    /// Summarises `samples` (any order; NaNs dropped). `None` when nothing is left.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        let mut v: Vec<f64> = samples.iter().copied().filter(|x| !x.is_nan()).collect();
        Self::of_vec(&mut v)
    }

    /// Like [`Summary::of`], sorting `v` in place to avoid a copy of large sample sets.
    pub fn of_vec(v: &mut Vec<f64>) -> Option<Summary> {
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
        })
    }
}

/// Median of weighted samples (value, weight): the value at which the cumulative weight first
/// reaches half the total. Used for time between tokens, where a chunk carrying k tokens counts
/// as k gaps of equal size without materialising k copies.
pub fn weighted_summary(samples: &mut [(f64, u64)]) -> Option<Summary> {
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
