//! Goodness of fit of drawn or sent lengths to the distribution they were asked to follow: the
//! one-sample Kolmogorov–Smirnov statistic over whole-token values, its 1 % critical value, and
//! the standard normal CDF that the normal length distribution needs.
//!
//! Why KS and not chi-square: lengths take thousands of distinct values (`1K..16K` has 15,361),
//! so chi-square would need a binning decision; KS needs none and works on the sorted samples.
//! For a discrete distribution the asymptotic critical value is conservative (the test rejects
//! less often than its level), which is the safe side for "the sampler follows the spec".

/// The one-sample Kolmogorov–Smirnov statistic D = sup |F_n(x) − F(x)| of whole-number
/// `samples` against `cdf`, where `cdf(x)` = P(X ≤ x). Discrete-aware: at every distinct sample
/// value v both the step's top (F_n(v) vs F(v)) and its foot (F_n(v−) vs F(v − 1)) are
/// compared, which covers every point between samples too (both functions are monotone).
/// `None` for no samples.
pub fn ks_statistic(samples: &[u64], cdf: &dyn Fn(u64) -> f64) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let n = v.len() as f64;
    let mut d: f64 = 0.0;
    let mut i = 0;
    while i < v.len() {
        let x = v[i];
        let below = i as f64 / n;
        while i < v.len() && v[i] == x {
            i += 1;
        }
        let upto = i as f64 / n;
        let foot = if x == 0 { 0.0 } else { cdf(x - 1) };
        d = d.max((upto - cdf(x)).abs()).max((below - foot).abs());
    }
    Some(d)
}

/// The KS critical value at the 1 % level for `n` samples, asymptotic (1.628 / √n; within 1 %
/// of the exact value from n = 100 on). A statistic below it means "no evidence, at 1 %, that
/// the samples do not follow the distribution". Infinite for n = 0.
pub fn ks_critical_1pct(n: usize) -> f64 {
    1.628 / (n as f64).sqrt()
}

/// The standard normal CDF Φ(z), from the complementary error function (Numerical Recipes'
/// Chebyshev fit, absolute error below 1.2e-7, ample for a goodness-of-fit test).
pub fn normal_cdf(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_cdf_matches_tables() {
        for (z, want) in [
            (0.0, 0.5),
            (1.0, 0.841_344_75),
            (-1.96, 0.024_997_9),
            (2.575_829, 0.995),
            (-8.0, 6.2e-16),
        ] {
            assert!(
                (normal_cdf(z) - want).abs() < 2e-7,
                "{z}: {}",
                normal_cdf(z)
            );
        }
    }

    #[test]
    fn ks_known_answers() {
        // Uniform on 1..=4: samples 1, 2, 3, 4 match exactly; all-ones is off by 3/4.
        let cdf = |x: u64| (x.min(4) as f64) / 4.0;
        assert_eq!(ks_statistic(&[4, 2, 3, 1], &cdf), Some(0.0));
        assert_eq!(ks_statistic(&[1, 1, 1, 1], &cdf), Some(0.75));
        // Two samples at 4: below 4 the ECDF is 0 while F(3) = 3/4.
        assert_eq!(ks_statistic(&[4, 4], &cdf), Some(0.75));
        assert_eq!(ks_statistic(&[], &cdf), None);
        assert!((ks_critical_1pct(2000) - 0.036_402).abs() < 1e-5);
    }
}
