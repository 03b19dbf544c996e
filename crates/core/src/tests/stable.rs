//! Known-answer tests of the stop-when-stable rule: a hand-computed batch-means half-width, a
//! constant series (stable), linear drifts (never stable), seeded noise (stable), and the
//! target's text form.

use super::*;
use crate::rng::SplitMix64;

fn input<'a>(elapsed_s: f64, series: &'a [StableSeries<'a>]) -> StableInput<'a> {
    StableInput {
        elapsed_s,
        series,
        min_s: MIN_STABLE_S,
    }
}

#[test]
fn a_hand_computed_half_width() {
    // Batches of 2: means 1, 2, 3, 4; mean 2.5; s² = 5/3; t(0.975, 3) = 3.182;
    // half-width = 3.182 · √(5/3 / 4) = 2.053 972…; relative 0.821 589…
    let b = batch_means(&[1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 4.0, 4.0], 4).expect("means");
    assert_eq!((b.batches, b.batch_len, b.mean), (4, 2, 2.5));
    assert!((b.half_width - 2.053_972).abs() < 1e-6, "{}", b.half_width);
    assert!((b.relative().unwrap_or(0.0) - 0.821_589).abs() < 1e-6);
    // The oldest value that fills no batch is dropped; non-finite values are left out.
    let c = batch_means(
        &[100.0, 1.0, 1.0, 2.0, f64::NAN, 2.0, 3.0, 3.0, 4.0, 4.0],
        4,
    );
    assert_eq!(c, Some(b));
    assert_eq!(batch_means(&[1.0, 2.0], 3), None);
    assert_eq!(batch_means(&[1.0, 2.0], 1), None);
    assert_eq!(
        (t_975(1), t_975(9), t_975(30), t_975(31)),
        (12.706, 2.262, 2.042, 1.96)
    );
    assert!(t_975(0).is_infinite());
}

#[test]
fn a_constant_series_is_stable_once_long_enough() {
    let v = vec![500.0; 60];
    let s = [StableSeries {
        name: "output_tok_s",
        values: &v,
    }];
    assert_eq!(
        stability(&input(60.0, &s), 0.02, STABLE_BATCHES),
        StableVerdict::Stable {
            half_width_pct: 0.0,
            widest: "output_tok_s"
        }
    );
    // Too early, and too few values a batch (20 values: 2 a batch).
    assert_eq!(
        stability(&input(20.0, &s), 0.02, STABLE_BATCHES),
        StableVerdict::Continue {
            half_width_pct: Some(0.0)
        }
    );
    let short = [StableSeries {
        name: "output_tok_s",
        values: &v[..20],
    }];
    assert_eq!(
        stability(&input(60.0, &short), 0.02, STABLE_BATCHES),
        StableVerdict::Continue {
            half_width_pct: None
        }
    );
    assert_eq!(
        stability(&input(60.0, &[]), 0.02, STABLE_BATCHES),
        StableVerdict::Continue {
            half_width_pct: None
        }
    );
    // A mean of 0 has no relative width.
    let zeros = vec![0.0; 60];
    let z = [StableSeries {
        name: "output_tok_s",
        values: &zeros,
    }];
    assert!(matches!(
        stability(&input(60.0, &z), 0.02, STABLE_BATCHES),
        StableVerdict::Continue { .. }
    ));
}

#[test]
fn a_drifting_series_is_never_stable() {
    // 1..=100: batch means 5.5, 15.5, … 95.5; s = 30.2765; half-width 21.657 of 50.5.
    let v: Vec<f64> = (1..=100).map(f64::from).collect();
    let s = [StableSeries {
        name: "ttft_p99_ms",
        values: &v,
    }];
    let StableVerdict::Continue {
        half_width_pct: Some(w),
    } = stability(&input(100.0, &s), 0.02, STABLE_BATCHES)
    else {
        panic!("a drift is not stable");
    };
    assert!((w - 42.885).abs() < 0.01, "{w}");
    // A slow drift (+15 % over five minutes) is caught at 2 %, though not at 5 %.
    let slow: Vec<f64> = (0..300).map(|i| 1000.0 + 0.5 * f64::from(i)).collect();
    let s = [StableSeries {
        name: "output_tok_s",
        values: &slow,
    }];
    assert!(matches!(
        stability(&input(300.0, &s), 0.02, STABLE_BATCHES),
        StableVerdict::Continue { .. }
    ));
    assert!(matches!(
        stability(&input(300.0, &s), 0.05, STABLE_BATCHES),
        StableVerdict::Stable { .. }
    ));
}

#[test]
fn stationary_noise_settles_and_every_series_must() {
    let mut rng = SplitMix64::new(20);
    let noisy: Vec<f64> = (0..300)
        .map(|_| 1000.0 * (1.0 + 0.1 * rng.normal()))
        .collect();
    let drift: Vec<f64> = (0..300).map(|i| 200.0 + f64::from(i)).collect();
    let one = [StableSeries {
        name: "output_tok_s",
        values: &noisy,
    }];
    let StableVerdict::Stable { half_width_pct, .. } =
        stability(&input(300.0, &one), 0.02, STABLE_BATCHES)
    else {
        panic!("10 % noise over 300 s settles within 2 %");
    };
    assert!(
        half_width_pct > 0.3 && half_width_pct < 2.0,
        "{half_width_pct}"
    );
    let both = [
        one[0],
        StableSeries {
            name: "ttft_p99_ms",
            values: &drift,
        },
    ];
    let v = stability(&input(300.0, &both), 0.02, STABLE_BATCHES);
    assert!(
        matches!(v, StableVerdict::Continue { half_width_pct: Some(w) } if w > 10.0),
        "{v:?}"
    );
}

#[test]
fn targets_read_and_print_back() {
    assert_eq!("2%".parse(), Ok(StableTarget { fraction: 0.02 }));
    assert_eq!(" 0.5 % ".parse(), Ok(StableTarget { fraction: 0.005 }));
    assert_eq!("2".parse(), Ok(StableTarget { fraction: 0.02 }));
    for s in ["2%", "0.5%", "10%", "0.1%"] {
        assert_eq!(s.parse::<StableTarget>().expect(s).to_string(), s);
    }
    for bad in ["0%", "100%", "-1%", "x", "", "nan%", "inf"] {
        let e = bad.parse::<StableTarget>().expect_err(bad).to_string();
        assert!(e.contains("2%") && !e.contains('\n'), "{bad}: {e}");
    }
    let json = serde_json::to_string(&StableTarget { fraction: 0.02 }).expect("ser");
    assert_eq!(json, "\"2%\"");
    assert_eq!(
        serde_json::to_string(&StopReason::DrainCut).ok().as_deref(),
        Some("\"drain_cut\"")
    );
    assert_eq!(
        serde_json::from_str::<StopReason>("\"trace_end\"").ok(),
        Some(StopReason::TraceEnd)
    );
}

#[test]
fn the_cadence_fits_thirty_values_in_a_quarter_of_the_window() {
    assert_eq!(stable_cadence(300.0), (1.0, 30.0));
    let (i, min) = stable_cadence(20.0);
    assert!(
        (i - 1.0 / 6.0).abs() < 1e-12 && (min - 5.0).abs() < 1e-9,
        "{i} {min}"
    );
    // A short window: 0.1 s intervals, and never a verdict before 30 of them.
    assert_eq!(stable_cadence(4.0), (0.1, 3.0));
}

#[test]
fn series_bin_tokens_by_end_and_ttft_by_send() {
    let ms = 1_000_000;
    let s = |sent: u64, end: u64, tokens: u64, ttft: Option<u64>| StableSample {
        sent_ns: sent * ms,
        end_ns: end * ms,
        tokens,
        ttft_ns: ttft.map(|t| t * ms),
    };
    let samples = [
        s(10, 150, 16, Some(40)),
        s(120, 180, 16, Some(20)),
        s(130, 250, 8, None),
        // Ends in the interval still open at `now`: not counted yet.
        s(210, 390, 16, Some(30)),
    ];
    let [tok, ttft] = stable_series(&samples, 100 * ms, 350 * ms);
    // Intervals [0,100), [100,200), [200,300): 0, 32, 8 tokens → per second.
    assert_eq!(tok, vec![0.0, 320.0, 80.0]);
    // TTFT p99 by send interval: 40; max(20) of the second (the third request had none); 30.
    assert_eq!(ttft, vec![40.0, 20.0, 30.0]);
}
