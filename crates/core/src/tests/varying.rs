//! Known answers for the lengths of varying rate cells: seeded draws pass the KS test against
//! their spec, the histogram's bins cover the sent range, a sample keeps to the file's rows
//! and a replay is the file.

use super::*;
use crate::workload::{WorkloadKind, WorkloadRequest, WorkloadSpec};

fn spec(s: &str) -> LengthSpec {
    s.parse().expect("length")
}

fn workload(lengths: &[(u64, u64)]) -> Workload {
    Workload {
        source: WorkloadSpec {
            kind: WorkloadKind::ShareGpt,
            path: "w.json".into(),
        },
        requests: lengths
            .iter()
            .enumerate()
            .map(|(i, (a, b))| WorkloadRequest {
                line: i + 1,
                arrival_s: None,
                input_tokens: *a,
                output_tokens: *b,
                prefix_blocks: Vec::new(),
            })
            .collect(),
        skipped: 0,
    }
}

#[test]
fn seeded_draws_pass_the_ks_test_of_their_spec() {
    for (input, output) in [
        ("4K:normal:512", "1..256"),
        ("1K..16K", "128"),
        ("300", "2K:normal:100"),
    ] {
        let (i, o) = (spec(input), spec(output));
        let rs = cell_requests(
            LengthSource::Specs {
                input: i,
                output: o,
            },
            2000,
            42,
        );
        assert_eq!(rs.len(), 2000);
        let ins: Vec<u64> = rs.iter().map(|r| r.input_tokens).collect();
        let outs: Vec<u64> = rs.iter().map(|r| r.output_tokens).collect();
        for (sent, s) in [(&ins, i), (&outs, o)] {
            let f = length_figures(&s.to_string(), &|x| s.cdf(x), sent).expect("figures");
            let (ks, crit) = (f.ks.expect("ks"), f.ks_critical_1pct.expect("crit"));
            assert!(ks < crit, "{s}: KS {ks} ≥ {crit}");
            assert!(f.min >= s.min() && f.max <= s.max(), "{f:?}");
            assert_eq!(f.histogram.iter().map(|b| b.sent).sum::<u64>(), 2000);
            let expected: f64 = f.histogram.iter().map(|b| b.expected).sum();
            // Over the sent range only: the tails beyond the extremes hold well under 1 %.
            assert!((expected - 2000.0).abs() < 20.0, "{s}: {expected}");
            assert!(f.histogram.len() as u64 <= HISTOGRAM_BINS);
            assert_eq!(f.histogram.first().map(|b| b.lo), Some(f.min));
            assert_eq!(f.histogram.last().map(|b| b.hi), Some(f.max));
        }
    }
    // The same seed gives the same lengths; the output stream never moves the inputs.
    let a = cell_requests(
        LengthSource::Specs {
            input: spec("1K..2K"),
            output: spec("16"),
        },
        50,
        7,
    );
    let b = cell_requests(
        LengthSource::Specs {
            input: spec("1K..2K"),
            output: spec("1..64"),
        },
        50,
        7,
    );
    let ins = |v: &[CellRequest]| v.iter().map(|r| r.input_tokens).collect::<Vec<_>>();
    assert_eq!(ins(&a), ins(&b));
}

#[test]
fn a_skewed_sample_fails_the_ks_test() {
    // Every length at the top of the range: far from uniform.
    let s = spec("1..100");
    let sent = vec![100u64; 500];
    let f = length_figures("1..100", &|x| s.cdf(x), &sent).expect("figures");
    assert!(
        f.ks.expect("ks") > f.ks_critical_1pct.expect("crit"),
        "{f:?}"
    );
    assert_eq!((f.min, f.p50, f.max, f.mean), (100, 100, 100, 100.0));
    assert_eq!(f.histogram.len(), 1);
    assert_eq!(length_figures("x", &|_| 1.0, &[]), None);
}

#[test]
fn samples_and_replays_keep_to_the_file() {
    let w = workload(&[(10, 1), (20, 2), (30, 3)]);
    let rs = cell_requests(LengthSource::Sample(&w), 300, 1);
    assert_eq!(rs.len(), 300);
    assert!(rs.iter().all(|r| r.output_tokens * 10 == r.input_tokens));
    let sent: Vec<u64> = rs.iter().map(|r| r.input_tokens).collect();
    let cdf = empirical_cdf(&[10, 20, 30]);
    assert_eq!(
        (cdf(9), cdf(10), cdf(25), cdf(30)),
        (0.0, 1.0 / 3.0, 2.0 / 3.0, 1.0)
    );
    let f = length_figures("w.json", &cdf, &sent).expect("figures");
    assert!(
        f.ks.expect("ks") < f.ks_critical_1pct.expect("crit"),
        "{f:?}"
    );
    let replay = cell_requests(LengthSource::Replay(&w), 1, 1);
    let lens: Vec<u64> = replay.iter().map(|r| r.input_tokens).collect();
    assert_eq!(lens, vec![10, 20, 30]);
    assert!(cell_requests(LengthSource::Sample(&workload(&[])), 5, 1).is_empty());
}
