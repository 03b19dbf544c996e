//! Known-answer tests of length distributions: text forms, bounds, and a Kolmogorov–Smirnov
//! fit of 2,000 seeded draws of each form below the 1 % critical value.

use super::*;
use crate::gof::{ks_critical_1pct, ks_statistic};

#[test]
fn lengths_read_and_print_back() {
    for (s, want) in [
        ("4K", LengthSpec::Fixed(4096)),
        ("1500", LengthSpec::Fixed(1500)),
        (
            "4K:normal:512",
            LengthSpec::Normal {
                mean: 4096,
                std_dev: 512,
            },
        ),
        (
            "1K..16K",
            LengthSpec::Uniform {
                lo: 1024,
                hi: 16384,
            },
        ),
        ("100..100", LengthSpec::Uniform { lo: 100, hi: 100 }),
    ] {
        let got: LengthSpec = s.parse().expect(s);
        assert_eq!(got, want, "{s}");
        assert_eq!(got.to_string(), s);
    }
    assert_eq!(
        " 4k : NORMAL : 0.5K ".parse(),
        Ok(LengthSpec::Normal {
            mean: 4096,
            std_dev: 512
        })
    );
    let json = serde_json::to_string(&LengthSpec::Uniform { lo: 1024, hi: 2048 }).expect("ser");
    assert_eq!(json, "\"1K..2K\"");
    assert_eq!(
        serde_json::from_str::<LengthSpec>(&json).ok(),
        Some(LengthSpec::Uniform { lo: 1024, hi: 2048 })
    );
}

#[test]
fn bad_lengths_say_the_accepted_forms_on_one_line() {
    for bad in [
        "",
        "0",
        "4K:normal",
        "4K:normal:8K",
        "4K:gamma:2",
        "16K..1K",
        "..",
        "1K..",
        "x",
        "4K:",
        "1:normal:0",
    ] {
        let e = bad.parse::<LengthSpec>().expect_err(bad).to_string();
        assert!(
            !e.contains('\n') && e.contains("4K:normal:512") && e.contains("1K..16K"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn draws_stay_in_bounds_and_repeat_with_the_seed() {
    for s in [
        "4K",
        "1:normal:1",
        "100:normal:100",
        "7..9",
        "4K:normal:512",
    ] {
        let spec: LengthSpec = s.parse().expect(s);
        let mut a = SplitMix64::new(5);
        let mut b = SplitMix64::new(5);
        for _ in 0..2000 {
            let x = spec.sample(&mut a);
            assert!(x >= spec.min() && x <= spec.max(), "{s}: {x}");
            assert_eq!(x, spec.sample(&mut b));
        }
    }
    let full = LengthSpec::Uniform {
        lo: 0,
        hi: u64::MAX,
    };
    let _ = full.sample(&mut SplitMix64::new(1));
}

fn draws(spec: &LengthSpec, seed: u64, n: usize) -> Vec<u64> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| spec.sample(&mut rng)).collect()
}

#[test]
fn two_thousand_draws_fit_their_distribution() {
    for s in [
        "4K:normal:512",
        "1K..16K",
        "100:normal:60",
        "1:normal:1",
        "3..5",
        "4K",
    ] {
        let spec: LengthSpec = s.parse().expect(s);
        let d = ks_statistic(&draws(&spec, 2026, 2000), &|x| spec.cdf(x)).expect("d");
        assert!(d < ks_critical_1pct(2000), "{s}: D = {d}");
    }
}

#[test]
fn the_fit_tells_distributions_apart() {
    let normal: LengthSpec = "4K:normal:512".parse().expect("normal");
    let uniform: LengthSpec = "1K..16K".parse().expect("uniform");
    let d = ks_statistic(&draws(&uniform, 2026, 2000), &|x| normal.cdf(x)).expect("d");
    assert!(d > 10.0 * ks_critical_1pct(2000), "D = {d}");
    // A normal a little off its mean (4K vs 4.1K) is caught too.
    let near: LengthSpec = "4200:normal:512".parse().expect("near");
    let d = ks_statistic(&draws(&near, 2026, 2000), &|x| normal.cdf(x)).expect("d");
    assert!(d > ks_critical_1pct(2000), "D = {d}");
}

#[test]
fn the_normal_keeps_its_mean_and_its_std_dev() {
    let spec: LengthSpec = "4K:normal:512".parse().expect("spec");
    let v: Vec<f64> = draws(&spec, 9, 20_000)
        .into_iter()
        .map(|x| x as f64)
        .collect();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt();
    assert!((mean - 4096.0).abs() < 15.0, "{mean}");
    assert!((sd / 512.0 - 1.0).abs() < 0.03, "{sd}");
    // The symmetric cut keeps the mean of a wide normal too (1..=199 around 100).
    let wide: LengthSpec = "100:normal:100".parse().expect("wide");
    let v = draws(&wide, 9, 20_000);
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    assert!((mean - 100.0).abs() < 1.5, "{mean}");
}

#[test]
fn values_built_by_hand_outside_the_parser_bounds_never_panic() {
    let mut rng = SplitMix64::new(3);
    for spec in [
        LengthSpec::Normal {
            mean: 0,
            std_dev: 0,
        },
        LengthSpec::Normal {
            mean: u64::MAX,
            std_dev: u64::MAX,
        },
        LengthSpec::Uniform { lo: 9, hi: 3 },
        LengthSpec::Fixed(0),
    ] {
        let _ = (
            spec.sample(&mut rng),
            spec.max(),
            spec.mean(),
            spec.to_string(),
        );
        for x in [0, 1, 5, u64::MAX] {
            let p = spec.cdf(x);
            assert!((0.0..=1.0).contains(&p) || p.is_nan(), "{spec:?} {x}: {p}");
        }
    }
}
