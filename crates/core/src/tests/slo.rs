//! Known-answer tests of SLO parsing, per-request meeting, attainment, goodput and holding.

use super::*;

fn ok(ttft: f64, tpot: Option<f64>, e2e: f64, tokens: u64) -> RequestSample {
    RequestSample {
        ok: true,
        ttft_s: Some(ttft),
        tpot_s: tpot,
        e2e_s: Some(e2e),
        output_tokens: tokens,
    }
}

fn failed() -> RequestSample {
    RequestSample::default()
}

#[test]
fn the_issues_example_reads_with_units() {
    let slo: Slo = "ttft_p99=2s,tpot_p50=40ms,e2e_p90=30s,user_tok_s_p10=20"
        .parse()
        .expect("slo");
    let want = [
        (SloFigure::Ttft, 99.0, 2.0),
        (SloFigure::Tpot, 50.0, 0.040),
        (SloFigure::E2e, 90.0, 30.0),
        (SloFigure::UserTokS, 10.0, 20.0),
    ];
    assert_eq!(slo.limits.len(), want.len());
    for (l, (f, q, v)) in slo.limits.iter().zip(want) {
        assert_eq!((l.figure, l.quantile), (f, q));
        assert!((l.limit - v).abs() < 1e-12, "{l:?}");
    }
    let fractional: Slo = "ttft_p99.9=500ms".parse().expect("p99.9");
    assert_eq!(fractional.limits[0].quantile, 99.9);
    assert_eq!(fractional.limits[0].to_string(), "ttft_p99.9=500ms");
}

#[test]
fn bad_slos_are_one_line_errors_that_say_what_to_write() {
    let unknown = "itl_p50=10ms".parse::<Slo>().expect_err("itl");
    assert_eq!(
        unknown.to_string(),
        "`itl_p50` is not an SLO figure: use ttft, tpot, e2e, user_tok_s with a quantile, \
         e.g. ttft_p99=2s"
    );
    for (bad, says) in [
        ("", "at least one limit"),
        ("ttft", "not a limit"),
        ("ttft=2s", "not an SLO figure"),
        ("ttft_p101=2s", "p0 to p100"),
        ("ttft_pxx=2s", "p0 to p100"),
        ("ttft_p99=fast", "a duration"),
        ("user_tok_s_p10=-3", "positive number"),
        ("ttft_p99=1s,ttft_p99=2s", "given twice"),
    ] {
        let e = bad.parse::<Slo>().expect_err(bad).to_string();
        assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
    }
    // The same figure at two quantiles is two limits, not a duplicate.
    assert!("ttft_p50=1s,ttft_p99=3s".parse::<Slo>().is_ok());
}

#[test]
fn a_request_meets_only_when_every_limit_is_within() {
    let slo: Slo = "ttft_p99=1s,tpot_p50=50ms,user_tok_s_p10=10"
        .parse()
        .expect("slo");
    assert!(slo.meets(&ok(0.5, Some(0.04), 3.0, 50)));
    assert!(
        slo.meets(&ok(1.0, Some(0.05), 3.0, 50)),
        "limits are inclusive"
    );
    assert!(!slo.meets(&ok(1.2, Some(0.04), 3.0, 50)), "ttft over");
    assert!(
        !slo.meets(&ok(0.5, Some(0.2), 3.0, 50)),
        "5 tok/s is under the floor of 10"
    );
    assert!(!slo.meets(&failed()), "a failed request meets nothing");
    // One output token: no TPOT, so no TPOT limit to miss.
    assert!(slo.meets(&ok(0.5, None, 0.5, 1)));
    // A completed request without a TTFT cannot be shown to meet a TTFT limit.
    let no_ttft = RequestSample {
        ttft_s: None,
        ..ok(0.5, Some(0.04), 3.0, 50)
    };
    assert!(!slo.meets(&no_ttft));
}

#[test]
fn attainment_and_goodput_count_met_requests_over_the_span() {
    let slo: Slo = "ttft_p90=1s".parse().expect("slo");
    let requests = [
        ok(0.2, Some(0.02), 2.0, 100),
        ok(0.4, Some(0.02), 2.0, 60),
        ok(1.5, Some(0.02), 3.0, 100),
        failed(),
    ];
    let v = slo.judge(&requests, 10.0);
    assert_eq!((v.sent, v.met), (4, 2));
    assert_eq!(v.attainment, Some(0.5));
    assert_eq!(v.goodput_rps, Some(0.2));
    assert_eq!(v.goodput_tok_per_s, Some(16.0));
    // p90 of [0.2, 0.4, 1.5, ∞] is ∞ (the failure is the worst value): the cell does not hold.
    assert!(!v.holds);
    assert_eq!(v.limits[0].observed, Some(f64::INFINITY));
    // Nothing sent: no attainment, no goodput, and nothing holds.
    let empty = slo.judge(&[], 10.0);
    assert_eq!(
        (empty.attainment, empty.goodput_rps, empty.holds),
        (None, None, false)
    );
    // A span that is not positive gives no rate.
    assert_eq!(slo.judge(&requests, 0.0).goodput_rps, None);
}

#[test]
fn a_cell_holds_when_each_limit_holds_at_its_quantile() {
    // TTFTs 0.1 … 1.0 s: p50 = 0.55 s, p90 = 0.91 s (linear interpolation, numpy's default).
    let requests: Vec<RequestSample> = (1..=10)
        .map(|i| ok(f64::from(i) / 10.0, Some(0.02), 2.0, 10))
        .collect();
    let holds = |s: &str| s.parse::<Slo>().expect(s).judge(&requests, 5.0).holds;
    assert!(holds("ttft_p50=0.6s"));
    assert!(!holds("ttft_p50=0.5s"));
    assert!(holds("ttft_p90=920ms"));
    assert!(!holds("ttft_p90=900ms"));
    // Per-user tok/s is a floor: 1 / 0.02 s = 50 tok/s for every request.
    assert!(holds("user_tok_s_p10=50"));
    assert!(!holds("user_tok_s_p10=51"));
    let v = "ttft_p50=0.6s"
        .parse::<Slo>()
        .expect("slo")
        .judge(&requests, 5.0);
    let observed = v.limits[0].observed.expect("observed");
    assert!((observed - 0.55).abs() < 1e-12, "{observed}");
    // Attainment is per request, holding is per quantile: they can disagree.
    assert_eq!(v.attainment, Some(0.6));
}

#[test]
fn one_token_answers_cannot_break_a_tpot_limit() {
    let slo: Slo = "tpot_p99=10ms".parse().expect("slo");
    let v = slo.judge(&[ok(0.1, None, 0.1, 1), ok(0.1, None, 0.1, 1)], 1.0);
    assert_eq!(v.limits[0].observed, None);
    assert!(v.holds);
    assert_eq!(v.attainment, Some(1.0));
}

#[test]
fn a_records_figures_follow_the_method() {
    use crate::record::{Chunk, Outcome, RequestRecord};
    let chunk = |t_ns, tokens| Chunk { t_ns, tokens };
    let mut r = RequestRecord {
        stream: 0,
        sent_ns: 1_000_000_000,
        headers_ns: None,
        // First token at 1.2 s; 1 + 2 + 1 tokens, the last at 1.5 s.
        chunks: vec![
            chunk(1_200_000_000, 1),
            chunk(1_400_000_000, 2),
            chunk(1_500_000_000, 1),
        ],
        end_ns: 1_600_000_000,
        outcome: Outcome::Finished {
            reason: "length".into(),
        },
        prompt_tokens_reported: None,
        completion_tokens_reported: Some(4),
        cached_tokens_reported: None,
        repetition: None,
        structured: None,
        text: None,
    };
    let s = RequestSample::of_record(&r);
    assert!(s.ok);
    assert_eq!(s.output_tokens, 4);
    assert!((s.ttft_s.expect("ttft") - 0.2).abs() < 1e-12);
    // (1.5 − 1.2) s over 3 tokens after the first.
    assert!((s.tpot_s.expect("tpot") - 0.1).abs() < 1e-12);
    assert!((s.e2e_s.expect("e2e") - 0.6).abs() < 1e-12);
    // One token: no TPOT. Cut at the drain limit: not ok.
    r.chunks.truncate(1);
    assert_eq!(RequestSample::of_record(&r).tpot_s, None);
    r.outcome = Outcome::Cancelled;
    assert!(!RequestSample::of_record(&r).ok);
}
