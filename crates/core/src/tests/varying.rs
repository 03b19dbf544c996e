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

/// Three prompts, the first two with their own `max_tokens` (8 and 40), the third without.
fn user_prompts() -> crate::workload::UserPrompts {
    let spec: WorkloadSpec = "prompts:p.jsonl".parse().expect("spec");
    let text = [
        r#"{"prompt": "aaaa", "max_tokens": 8}"#,
        r#"{"prompt": "bbbbbbbb", "max_tokens": 40}"#,
        r#"{"messages": [{"role": "user", "content": "cccccccccccc"}]}"#,
    ]
    .join("\n");
    crate::workload::UserPrompts::parse(&spec, &text).expect("prompts")
}

/// The user's prompts are sampled with replacement from the sample stream (every one of 300
/// picks names a line, each line picked, the same picks for the same seed); a line's own
/// `max_tokens` is asked, a line without one draws from `--output-len`; the estimate stands
/// in for the length until the server counts it.
#[test]
fn user_prompts_are_sampled_with_their_own_max_tokens() {
    let p = user_prompts();
    let src = LengthSource::Prompts {
        prompts: &p,
        output: spec("100..200"),
    };
    let rs = cell_requests(src, 300, 9);
    assert_eq!(rs.len(), 300);
    let mut seen = [0usize; 3];
    for r in &rs {
        let i = r.prompt.expect("a prompt of the file");
        seen[i] += 1;
        let (approx, out) = match i {
            0 => (1, Some(8)),
            1 => (2, Some(40)),
            _ => (3, None),
        };
        assert_eq!(r.input_tokens, approx, "{r:?}");
        match out {
            Some(o) => assert_eq!(r.output_tokens, o, "{r:?}"),
            None => assert!((100..=200).contains(&r.output_tokens), "{r:?}"),
        }
        assert!(r.prefix_blocks.is_empty());
    }
    assert!(
        seen.iter().all(|n| *n > 60),
        "each line about a third: {seen:?}"
    );
    assert_eq!(cell_requests(src, 300, 9), rs, "seeded");
    assert_ne!(cell_requests(src, 300, 10), rs, "another seed, other picks");
}

/// The row of a prompts cell: the input side is the server's counts (no KS: no length was
/// asked), the output side is judged against what the file asks (its lines' own
/// `max_tokens`, else the output spec, each line a third), named by which it was.
#[test]
fn user_prompts_figures_count_the_servers_lengths() {
    let p = user_prompts();
    let src = LengthSource::Prompts {
        prompts: &p,
        output: spec("100"),
    };
    // As the caller gives them: each sent request's input as the server counted it.
    let sent: Vec<CellRequest> = [(12, 8), (30, 40), (21, 100), (12, 8)]
        .iter()
        .map(|(i, o)| CellRequest {
            input_tokens: *i,
            output_tokens: *o,
            prefix_blocks: Vec::new(),
            prompt: Some(0),
        })
        .collect();
    let refs: Vec<&CellRequest> = sent.iter().collect();
    let f = workload_figures(src, &refs).expect("figures");
    assert_eq!(f.source, "prompts:p.jsonl");
    assert_eq!(f.input.requested, "prompts:p.jsonl, counted by the server");
    assert_eq!(
        (
            f.input.count,
            f.input.min,
            f.input.p50,
            f.input.max,
            f.input.mean
        ),
        (4, 12, 12, 30, 18.75)
    );
    assert_eq!((f.input.ks, f.input.ks_critical_1pct), (None, None));
    let expected: Vec<f64> = f.input.histogram.iter().map(|b| b.expected).collect();
    let held: Vec<f64> = f.input.histogram.iter().map(|b| b.sent as f64).collect();
    assert_eq!(expected, held, "each bin expects what it holds");
    assert_eq!(f.output.requested, "prompts:p.jsonl, else 100");
    // P(out ≤ 8) = 1/3, ≤ 40 = 2/3, ≤ 100 = 1: sent 8, 40, 100, 8 is 1/2, 3/4, 1 there;
    // the largest gap is at 8 (1/2 − 1/3) or just below 100 (3/4 − 2/3).
    let ks = f.output.ks.expect("ks");
    assert!((ks - 1.0 / 6.0).abs() < 1e-9, "{ks}");
    let names = |text: &str, out: &str| {
        let file: WorkloadSpec = "prompts:q.jsonl".parse().expect("spec");
        let q = crate::workload::UserPrompts::parse(&file, text).expect("prompts");
        let one = [CellRequest {
            input_tokens: 5,
            output_tokens: 7,
            prefix_blocks: Vec::new(),
            prompt: Some(0),
        }];
        let refs: Vec<&CellRequest> = one.iter().collect();
        let src = LengthSource::Prompts {
            prompts: &q,
            output: spec(out),
        };
        workload_figures(src, &refs)
            .expect("figures")
            .output
            .requested
    };
    assert_eq!(
        names(r#"{"prompt": "a", "max_tokens": 7}"#, "9"),
        "prompts:q.jsonl"
    );
    assert_eq!(names(r#"{"prompt": "a"}"#, "1..9"), "1..9");
}

/// The prompt lengths a prompts cell is checked against are the server's own, by stream.
#[test]
fn user_prompts_are_checked_against_the_servers_counts() {
    let rec = |stream: u32, n: Option<u64>| crate::record::RequestRecord {
        prompt_tokens_reported: n,
        ..crate::record::RequestRecord::never_sent(stream, 0)
    };
    let records = [
        rec(2, Some(30)),
        rec(0, Some(12)),
        rec(1, None),
        rec(7, Some(5)),
    ];
    assert_eq!(server_counted_prompts(&records, 4), vec![12, 0, 30, 0]);
}
