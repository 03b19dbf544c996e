//! Known-answer tests of workload files: the three sample files of testdata/workloads (counts,
//! sums, lines, spans and the prefix-sharing prediction, computed independently when the files
//! were written), every error naming its file and line, time scales, and garbage that never
//! panics.

use super::*;
use proptest::prelude::*;
use std::path::Path;

/// A stand-in tokenizer: one token per word.
fn words(s: &str) -> u64 {
    s.split_whitespace().count() as u64
}

fn sample(kind: &str, file: &str) -> Workload {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/workloads");
    let spec: WorkloadSpec = format!("{kind}:{}", dir.join(file).display())
        .parse()
        .expect("spec");
    Workload::load(&spec, &words).expect(file)
}

fn parse(kind: &str, text: &str) -> Result<Workload, WorkloadError> {
    let spec: WorkloadSpec = format!("{kind}:w.txt").parse().expect("spec");
    Workload::parse(&spec, text, &words)
}

fn row(line: usize, input: u64, blocks: &[u64]) -> WorkloadRequest {
    WorkloadRequest {
        line,
        arrival_s: Some(line as f64),
        input_tokens: input,
        output_tokens: 1,
        prefix_blocks: blocks.to_vec(),
    }
}

#[test]
fn specs_read_and_print_back() {
    for s in [
        "sharegpt:data/sg.json",
        "mooncake:/t/conv.jsonl",
        "azure:code.csv",
        "weka:traces/trace_0001.json",
    ] {
        let spec: WorkloadSpec = s.parse().expect(s);
        assert_eq!(spec.to_string(), s);
    }
    let spec: WorkloadSpec = "weka:w.jsonl".parse().expect("spec");
    assert!(spec.kind == WorkloadKind::Weka && spec.kind.is_session_trace());
    let e = Workload::parse(&spec, "{}", &words).expect_err("sessions only");
    assert!(matches!(e, WorkloadError::SessionsOnly { .. }), "{e}");
    let spec: WorkloadSpec = "Mooncake: c:/x.jsonl".parse().expect("spec");
    assert_eq!(
        (spec.kind, spec.path.to_str()),
        (WorkloadKind::Mooncake, Some("c:/x.jsonl"))
    );
    for bad in ["burstgpt:x.csv", "x.csv", "azure:", ""] {
        let e = bad.parse::<WorkloadSpec>().expect_err(bad).to_string();
        assert!(
            !e.contains('\n')
                && ["sharegpt", "mooncake", "azure"]
                    .iter()
                    .all(|k| e.contains(k)),
            "{bad}: {e}"
        );
    }
}

#[test]
fn the_sharegpt_sample_keeps_the_first_pairs() {
    let w = sample("sharegpt", "sharegpt.json");
    assert_eq!((w.requests.len(), w.skipped), (21, 9));
    let input: u64 = w.requests.iter().map(|r| r.input_tokens).sum();
    let output: u64 = w.requests.iter().map(|r| r.output_tokens).sum();
    assert_eq!((input, output), (612, 1291));
    // The first conversation's object starts on line 2, the second on line 15.
    assert_eq!((w.requests[0].line, w.requests[1].line), (2, 15));
    assert!(
        w.requests
            .iter()
            .all(|r| r.arrival_s.is_none() && r.prefix_blocks.is_empty())
    );
    assert_eq!(w.trace_rate(), None);
    let e = trace_offsets(&w, 1.0)
        .expect_err("no timestamps")
        .to_string();
    assert!(
        e.contains("sharegpt.json") && e.contains("--request-rate"),
        "{e}"
    );
}

#[test]
fn the_mooncake_sample_has_its_spans_and_shared_blocks() {
    let w = sample("mooncake", "mooncake.jsonl");
    assert_eq!(w.requests.len(), 40);
    let last = w.requests.last().expect("rows");
    // First row at 900 ms, last at 25,239 ms.
    assert!((last.arrival_s.unwrap_or(0.0) - 24.339).abs() < 1e-9);
    assert_eq!(w.requests[0].prefix_blocks, vec![0, 1, 2]);
    let p = predicted_cached_tokens(&w.requests, MOONCAKE_BLOCK_TOKENS);
    assert_eq!((p.prompt_tokens, p.cached_tokens), (156_116, 125_906));
    assert_eq!(p.per_request[0], 0);
    // Offsets at twice the speed end at half the span.
    let due = trace_offsets(&w, 2.0).expect("offsets");
    assert_eq!((due[0], due[39]), (0, 12_169_500_000));
    assert!(due.windows(2).all(|d| d[0] <= d[1]));
    assert!(w.check_fits(8876).is_ok());
    let e = w.check_fits(8875).expect_err("too long").to_string();
    assert!(e.contains("mooncake.jsonl:") && e.contains("8875"), "{e}");
}

#[test]
fn the_azure_sample_has_its_bursts() {
    let w = sample("azure", "azure.csv");
    assert_eq!(w.requests.len(), 48);
    let t: Vec<f64> = w.requests.iter().filter_map(|r| r.arrival_s).collect();
    assert_eq!(t[0], 0.0);
    assert!((t[47] - 61.0878).abs() < 1e-9, "{}", t[47]);
    let gaps: Vec<f64> = t.windows(2).map(|g| g[1] - g[0]).collect();
    assert!(gaps.iter().filter(|g| **g < 0.02).count() >= 40, "bursts");
    assert_eq!(gaps.iter().filter(|g| **g > 4.0).count(), 5, "quiet gaps");
    assert!((w.trace_rate().unwrap_or(0.0) - 47.0 / 61.0878).abs() < 1e-9);
    assert_eq!((w.requests[0].line, w.requests[0].input_tokens), (2, 5108));
}

#[test]
fn a_hand_made_prefix_prediction() {
    // Blocks of 4 tokens. A: new. B shares A's first two blocks, then a new one. C shares
    // block 1 but not block 0 (no hit: a prefix must start at the prompt's start). D repeats
    // A's blocks with a shorter prompt (its last block holds 2 tokens).
    let rs = [
        row(1, 12, &[10, 11, 12]),
        row(2, 11, &[10, 11, 20]),
        row(3, 8, &[30, 11]),
        row(4, 10, &[10, 11, 12]),
    ];
    let p = predicted_cached_tokens(&rs, 4);
    assert_eq!(p.per_request, vec![0, 8, 0, 10]);
    assert_eq!((p.prompt_tokens, p.cached_tokens), (41, 18));
    assert!((p.share().unwrap_or(0.0) - 18.0 / 41.0).abs() < 1e-12);
    // More hash ids than the prompt holds: the extra block serves nothing.
    let p = predicted_cached_tokens(&[row(1, 4, &[1, 2]), row(2, 4, &[1, 2])], 4);
    assert_eq!(p.per_request, vec![0, 4]);
    // A block first sent in part (a prompt that ended 2 tokens into block 2) serves only
    // those 2 tokens to a later prompt holding all of it, and ends the run there.
    let p = predicted_cached_tokens(&[row(1, 6, &[1, 2]), row(2, 12, &[1, 2, 3])], 4);
    assert_eq!(p.per_request, vec![0, 6]);
    let p = predicted_cached_tokens(
        &[
            row(1, 6, &[1, 2]),
            row(2, 12, &[1, 2, 3]),
            row(3, 12, &[1, 2, 3]),
        ],
        4,
    );
    assert_eq!(p.per_request, vec![0, 6, 12]);
    assert_eq!(predicted_cached_tokens(&[], 512).share(), None);
}

#[test]
fn errors_name_the_file_and_line() {
    let back = "{\"timestamp\": 5, \"input_length\": 3, \"output_length\": 1}\n\n{\"timestamp\": 4, \"input_length\": 3, \"output_length\": 1}\n";
    let e = parse("mooncake", back).expect_err("backwards").to_string();
    assert!(e.starts_with("w.txt:3: ") && e.contains("sort"), "{e}");
    let csv = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.5,10,2\n2023-11-16 18:15:46.4,10,2\n";
    let e = parse("azure", csv).expect_err("backwards").to_string();
    assert!(e.starts_with("w.txt:3: timestamp -0.100 s"), "{e}");
    for (kind, text, at) in [
        (
            "mooncake",
            "{\"timestamp\": 1, \"input_length\": 3}\n",
            "w.txt:1: ",
        ),
        (
            "mooncake",
            "{\"timestamp\": 1, \"input_length\": 0, \"output_length\": 1}",
            "w.txt:1: ",
        ),
        (
            "mooncake",
            "\n{\"timestamp\": -1, \"input_length\": 1, \"output_length\": 1}",
            "w.txt:2: ",
        ),
        ("azure", "TIMESTAMP,ContextTokens\n", "w.txt:1: "),
        (
            "azure",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,x,1\n",
            "w.txt:2: ",
        ),
        (
            "azure",
            "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16,1,1\n",
            "w.txt:2: ",
        ),
        ("sharegpt", "[\n{\"conversations\": 3}\n]", "w.txt:2: "),
    ] {
        let e = parse(kind, text).expect_err(text).to_string();
        assert!(e.starts_with(at) && !e.contains('\n'), "{kind} {text}: {e}");
    }
    for (kind, text) in [
        ("mooncake", "\n\n"),
        ("azure", "TIMESTAMP,ContextTokens,GeneratedTokens\n"),
        ("azure", ""),
        ("sharegpt", "[]"),
        (
            "sharegpt",
            "[{\"conversations\": [{\"from\": \"gpt\", \"value\": \"hi\"}]}]",
        ),
    ] {
        let e = parse(kind, text).expect_err(text);
        assert!(
            matches!(e, WorkloadError::Empty { .. }),
            "{kind} {text}: {e}"
        );
    }
    let e = parse("sharegpt", "[{\"conversations\": []}]").expect_err("empty");
    assert!(e.to_string().contains("1 entries skipped"), "{e}");
}

#[test]
fn time_scales_read_print_and_resolve() {
    assert_eq!("2".parse(), Ok(TimeScaleSpec::Factor(2.0)));
    assert_eq!(" AUTO ".parse(), Ok(TimeScaleSpec::Auto));
    for s in ["0.5", "auto", "2"] {
        assert_eq!(s.parse::<TimeScaleSpec>().expect(s).to_string(), s);
    }
    for bad in ["0", "-1", "fast", "inf", "nan", ""] {
        let e = bad.parse::<TimeScaleSpec>().expect_err(bad).to_string();
        assert!(e.contains("auto"), "{bad}: {e}");
    }
    assert_eq!(TimeScaleSpec::Factor(3.0).factor(None, 9.0), Some(3.0));
    assert_eq!(TimeScaleSpec::Auto.factor(Some(2.0), 8.0), Some(4.0));
    assert_eq!(TimeScaleSpec::Auto.factor(None, 8.0), None);
    assert_eq!(TimeScaleSpec::Auto.factor(Some(2.0), 0.0), None);
    let w = parse("mooncake", "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 1e12, \"input_length\": 1, \"output_length\": 1}").expect("w");
    assert!(trace_offsets(&w, 1.0).is_err() && trace_offsets(&w, 0.0).is_err());
    assert_eq!(trace_offsets(&w, 1e3).expect("fits").len(), 2);
}

/// Lines that look like the formats' rows, broken in every way.
fn rowish() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "\\{\"timestamp\": ?-?[0-9e.]{0,25}, \"input_length\": ?-?[0-9]{0,22}, \"output_length\": [0-9]{0,3}(, \"hash_ids\": \\[[0-9, -]{0,12}\\])?\\}",
        "[0-9]{1,5}-[0-9]{1,2}-[0-9]{1,2}[ T][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\\.[0-9]{0,12})?,[0-9a-z-]{0,21},[0-9]{0,21}",
        "\\[\\{\"conversations\": \\[\\{\"from\": \"(human|gpt)\", \"value\": \"[a-z \\\\\"]{0,9}\"\\}[,\\]{}\\[]{0,4}",
    ]
}

proptest! {
    #[test]
    fn garbage_never_panics(lines in proptest::collection::vec(rowish(), 0..6)) {
        let text = lines.join("\n");
        let csv = format!("TIMESTAMP,ContextTokens,GeneratedTokens\n{text}");
        for (kind, t) in [("mooncake", &text), ("azure", &csv), ("sharegpt", &text)] {
            if let Ok(w) = parse(kind, t) {
                let _ = w.check_fits(4096);
                let _ = trace_offsets(&w, 1e-3);
                let _ = predicted_cached_tokens(&w.requests, 512);
                let _ = w.trace_rate();
            }
        }
    }
}
