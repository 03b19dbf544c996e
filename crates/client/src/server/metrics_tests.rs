//! The metrics parser's tests. The parser indexes a page and parses a sample only when a lookup
//! names it (issue 44); [`reference`] keeps the parser it replaced, which parsed every line, and
//! every page here — the engines' recorded pages, the hand-written fixtures, edge cases and
//! random text — must read the same figures through both.

use super::*;
use crate::server::engine::gauges_from;
use llmib_core::EngineKind;
use proptest::prelude::*;

const SGLANG: &str = include_str!("../../fixtures/transcripts/sglang/metrics.txt");
const VLLM: &str = include_str!("../../fixtures/transcripts/vllm/metrics.txt");
const TGI: &str = include_str!("../../fixtures/transcripts/tgi/metrics.txt");
const TRT: &str = include_str!("../../fixtures/transcripts/trtllm/metrics.json");
/// A full SGLang page (71 KB, 55 families), see `testdata/metrics/README.md`.
const SGLANG_FULL: &str = include_str!("../../testdata/metrics/sglang.txt");
/// Real vLLM 0.32 pages (50–60 KB, 92 families each), recorded off a server.
const VLLM_LIVE: [&str; 8] = [
    include_str!("../../fixtures/transcripts/vllm/live/metrics_before.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_after.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_before_queue.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_after_queue.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_queued.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_before_agent_apis.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_after_agent_apis.txt"),
    include_str!("../../fixtures/transcripts/vllm/live/metrics_agent_apis_steps.txt"),
];
const LLAMACPP: [&str; 2] = [
    include_str!("../../fixtures/transcripts/llamacpp/metrics_queued.txt"),
    include_str!("../../fixtures/transcripts/llamacpp/metrics_after.txt"),
];
const EDGES: &str = "# HELP x a\n\
    x{a=\"q\\\"uote\",b=\"back\\\\slash\",c=\"new\\nline\",} 1 1700000000000\n\
    y NaN\n\
    z{} +Inf\n\
    w -Inf\n\
    v 1.5e-3\n\
    broken{a=\"unterminated} 1\n\
    novalue\n\
    u{a=\"1\"} notanumber\n\
    # EOF\n";

/// The parser before issue 44, kept as it was: every line parsed into a sample up front.
mod reference {
    use super::super::{Sample, parse_value, unescape};
    use std::borrow::Cow;

    /// A page parsed whole.
    pub(super) struct Reference<'a> {
        pub(super) samples: Vec<Sample<'a>>,
        pub(super) skipped: usize,
    }

    impl<'a> Reference<'a> {
        pub(super) fn parse(text: &'a str) -> Self {
            let mut m = Reference {
                samples: Vec::new(),
                skipped: 0,
            };
            for line in text.lines() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                match parse_line(line) {
                    Some(s) => m.samples.push(s),
                    None => m.skipped += 1,
                }
            }
            m
        }

        pub(super) fn samples_of<'s>(
            &'s self,
            name: &'s str,
        ) -> impl Iterator<Item = &'s Sample<'a>> + 's {
            self.samples.iter().filter(move |s| s.name == name)
        }

        pub(super) fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
            self.samples_of(name)
                .find(|s| s.has_labels(labels))
                .map(|s| s.value)
        }

        pub(super) fn sum_where(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
            let mut found = false;
            let mut total = 0.0;
            for s in self.samples_of(name).filter(|s| s.has_labels(labels)) {
                found = true;
                total += s.value;
            }
            found.then_some(total)
        }

        pub(super) fn mean(&self, name: &str) -> Option<f64> {
            let v: Vec<f64> = self.samples_of(name).map(|s| s.value).collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        }
    }

    fn parse_line(line: &str) -> Option<Sample<'_>> {
        let name_end = line
            .find(|c: char| c == '{' || c.is_ascii_whitespace())
            .unwrap_or(line.len());
        let name = &line[..name_end];
        if name.is_empty() {
            return None;
        }
        let mut rest = &line[name_end..];
        let mut labels = Vec::new();
        if let Some(r) = rest.strip_prefix('{') {
            rest = parse_labels(r, &mut labels)?;
        }
        let mut parts = rest.split_ascii_whitespace();
        let value = parse_value(parts.next()?)?;
        let timestamp_ms = match parts.next() {
            Some(t) => Some(t.parse::<i64>().ok()?),
            None => None,
        };
        Some(Sample {
            name,
            labels,
            value,
            timestamp_ms,
        })
    }

    fn parse_labels<'a>(mut s: &'a str, out: &mut Vec<(&'a str, Cow<'a, str>)>) -> Option<&'a str> {
        loop {
            s = s.trim_start();
            if let Some(r) = s.strip_prefix('}') {
                return Some(r);
            }
            let eq = s.find('=')?;
            let key = s[..eq].trim();
            s = s[eq + 1..].trim_start().strip_prefix('"')?;
            let bytes = s.as_bytes();
            let mut i = 0;
            let mut escaped = false;
            while i < bytes.len() {
                match bytes[i] {
                    b'\\' => {
                        escaped = true;
                        i += 2;
                        continue;
                    }
                    b'"' => break,
                    _ => i += 1,
                }
            }
            if i >= bytes.len() {
                return None;
            }
            let raw = &s[..i];
            let value = if escaped {
                Cow::Owned(unescape(raw))
            } else {
                Cow::Borrowed(raw)
            };
            out.push((key, value));
            s = s[i + 1..].trim_start();
            s = s.strip_prefix(',').unwrap_or(s);
        }
    }
}

use reference::Reference;

/// A value exactly, NaN and the sign of zero included.
fn bits(v: Option<f64>) -> Option<u64> {
    v.map(f64::to_bits)
}

/// Samples as text: `Debug` writes every float so that it reads back to the same bits.
fn shown<'a, 'b: 'a>(s: impl Iterator<Item = &'a Sample<'b>>) -> Vec<String> {
    s.map(|s| format!("{s:?}")).collect()
}

/// Every figure a reader can take from `text` is the same through the new parser and the old:
/// the samples and skipped lines, and for each name on the page (and a few absent ones) every
/// lookup, with no labels, with a label set of its own and with `le="+Inf"`.
fn assert_same_figures(text: &str) {
    let (new, old) = (Metrics::parse(text), Reference::parse(text));
    assert_eq!(new.skipped_lines(), old.skipped);
    let all: Vec<Sample<'_>> = new.samples().collect();
    assert_eq!(shown(all.iter()), shown(old.samples.iter()));
    let mut names: Vec<&str> = old.samples.iter().map(|s| s.name).collect();
    names.extend(["absent", "vllm:nope", "", "x_"]);
    names.dedup();
    for name in names {
        let first_label = old
            .samples_of(name)
            .flat_map(|s| s.labels.first())
            .map(|(k, v)| (*k, v.as_ref()))
            .next();
        let sets: Vec<Vec<(&str, &str)>> = [Some(("le", "+Inf")), first_label]
            .into_iter()
            .flatten()
            .map(|l| vec![l])
            .chain([vec![]])
            .collect();
        for set in &sets {
            assert_eq!(bits(new.get(name, set)), bits(old.get(name, set)), "{name}");
            let (n, o) = (new.sum_where(name, set), old.sum_where(name, set));
            assert_eq!(bits(n), bits(o), "{name} {set:?}");
        }
        assert_eq!(
            bits(new.sum(name)),
            bits(old.sum_where(name, &[])),
            "{name}"
        );
        assert_eq!(bits(new.mean(name)), bits(old.mean(name)), "{name}");
        assert_eq!(new.has(name), old.samples_of(name).next().is_some());
        let of: Vec<Sample<'_>> = new.samples_of(name).collect();
        assert_eq!(shown(of.iter()), shown(old.samples_of(name)), "{name}");
        for cut in [1, 5, name.len()] {
            let prefix = name.get(..cut).unwrap_or(name);
            let o = old.samples.iter().any(|s| s.name.starts_with(prefix));
            assert_eq!(new.has_prefix(prefix), o, "{prefix}");
        }
    }
    for prefix in ["vllm:", "sglang:", "tgi_", "llamacpp:", "nope"] {
        let o = old.samples.iter().any(|s| s.name.starts_with(prefix));
        assert_eq!(new.has_prefix(prefix), o, "{prefix}");
    }
}

/// The recorded vLLM pages, the full SGLang page and every hand-written fixture read the same
/// figures as through the parser before issue 44.
#[test]
fn every_recorded_page_reads_the_same_figures_as_before() {
    let pages = VLLM_LIVE
        .iter()
        .chain(&LLAMACPP)
        .chain(&[SGLANG_FULL, SGLANG, VLLM, TGI, EDGES]);
    for page in pages {
        assert_same_figures(page);
        // The same page with CRLF line ends, indented lines and no final newline.
        let crlf = page.replace('\n', "\r\n");
        assert_same_figures(&crlf);
        let indented = page.replace('\n', "\n \t");
        assert_same_figures(indented.trim_end());
    }
}

/// The gauges a row takes from the full pages: the recorded vLLM page (8 streams on 4
/// sequences) and the SGLang page, each family found among 500–700 lines of others.
#[test]
fn the_rows_gauges_from_full_pages() {
    let v = gauges_from(EngineKind::Vllm, &Metrics::parse(VLLM_LIVE[4]));
    assert_eq!((v.running, v.waiting), (Some(4.0), Some(4.0)));
    assert_eq!(v.generation_tokens_total, Some(324.0));
    assert_eq!(v.prompt_tokens_total, Some(4197.0));
    assert_eq!(v.cached_prompt_tokens_total, Some(0.0));
    assert_eq!(v.prefix_cache_queries_total, Some(4197.0));
    assert_eq!(v.preemptions_total, Some(0.0));
    assert_eq!(v.kv_usage, Some(0.0004883408619216212));
    assert_eq!(v.prompt_seconds_total, Some(0.7715693099999044));
    assert_eq!(v.spec_counters, None);
    let s = gauges_from(EngineKind::Sglang, &Metrics::parse(SGLANG_FULL));
    assert_eq!((s.running, s.waiting), (Some(1.0), Some(0.0)));
    assert_eq!(s.generation_tokens_total, Some(921600.0));
    assert_eq!(s.prompt_tokens_total, Some(1843200.0));
    assert_eq!(s.cached_prompt_tokens_total, Some(1228800.0));
    assert_eq!(s.preemptions_total, Some(3.0));
    assert_eq!(s.kv_usage, Some(0.0041));
    assert_eq!(
        (s.spec_accept_rate, s.spec_accept_length),
        (Some(0.47), Some(2.41))
    );
}

/// A family the row needs, planted after thousands of lines of others, split over two places
/// on the page, with labels, next to names it is a prefix of: every one of its samples is
/// found, and no other name's.
#[test]
fn a_planted_family_is_found_wherever_it_is() {
    let mut page = String::from("vllm:num_requests_running{engine=\"0\"} 3\n");
    for i in 0..3000 {
        page += &format!("vllm:other_bucket{{engine=\"0\",le=\"{i}\"}} {i}\n");
    }
    page += "vllm:num_requests_running_total{engine=\"1\"} 100\n";
    page += "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 4\n";
    page += "vllm:num_requests_running\t5 1700000000000\n";
    page += "vllm:num_requests_running{engine=\"2\"} broken\n";
    let m = Metrics::parse(&page);
    assert_eq!(m.sum("vllm:num_requests_running"), Some(12.0));
    assert_eq!(
        m.get("vllm:num_requests_running", &[("engine", "1")]),
        Some(4.0)
    );
    assert_eq!(m.sum("vllm:num_requests_running_total"), Some(100.0));
    assert_eq!(m.mean("vllm:num_requests_running"), Some(4.0));
    assert_eq!(m.skipped_lines(), 1);
    assert_same_figures(&page);
}

/// One line of a random page: names that share prefixes, labels with escapes and odd spacing,
/// values of every kind, timestamps, comments, blank and broken lines.
fn line() -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["a", "a_b", "a:b", "ab", "vllm:x", "", "{", "a\u{e9}"]);
    let key = prop::sample::select(vec!["k", "le", "engine", " k ", "k2"]);
    let val = "[a-z0-9\"\\\\ ,{}=+.]{0,6}";
    let labels = prop::collection::vec((key, val), 0..3).prop_map(|ls| {
        ls.iter()
            .map(|(k, v)| format!("{k}=\"{v}\""))
            .collect::<Vec<_>>()
            .join(",")
    });
    let value = prop::sample::select(vec!["1", "2.5", "-0.0", "NaN", "+Inf", "-inf", "1e3", "x"]);
    let tail = prop::sample::select(vec!["", " 17", " x", "\r", "  "]);
    let sep = prop::sample::select(vec![" ", "\t", "  "]);
    let comment = prop::sample::select(vec!["# HELP a b", "# TYPE a gauge", "", "   ", "#"]);
    prop_oneof![
        4 => (name, prop::option::of(labels), sep, value, tail).prop_map(|(n, l, s, v, t)| {
            let l = l.map(|l| format!("{{{l}}}")).unwrap_or_default();
            format!("{n}{l}{s}{v}{t}")
        }),
        1 => comment.prop_map(str::to_owned),
    ]
}

proptest! {
    /// Random pages read the same figures through the new parser and the old.
    #[test]
    fn random_pages_read_the_same_figures_as_before(
        lines in prop::collection::vec(line(), 0..40),
        indent in any::<bool>(),
    ) {
        let sep = if indent { "\n  " } else { "\n" };
        assert_same_figures(&lines.join(sep));
    }
}

#[test]
fn sglang_sums_over_dp_ranks() {
    let m = Metrics::parse(SGLANG);
    assert_eq!(m.skipped_lines(), 0);
    assert_eq!(m.sum("sglang:num_running_reqs"), Some(8.0));
    assert_eq!(m.sum("sglang:num_queue_reqs"), Some(1.0));
    assert_eq!(m.sum("sglang:generation_tokens_total"), Some(98304.0));
    assert_eq!(m.sum("sglang:max_total_num_tokens"), Some(2.4e6));
    assert_eq!(
        m.get("sglang:num_running_reqs", &[("dp_rank", "1")]),
        Some(2.0)
    );
    assert!(m.has_prefix("sglang:"));
    assert_eq!(
        m.get(
            "sglang:time_to_first_token_seconds_bucket",
            &[("le", "+Inf")]
        ),
        Some(12.0)
    );
    assert_eq!(m.sum("sglang:nope"), None);
}

#[test]
fn vllm_waiting_summed_over_reasons_and_cache_info_labels() {
    let m = Metrics::parse(VLLM);
    assert_eq!(m.skipped_lines(), 0);
    assert_eq!(m.sum("vllm:num_requests_waiting"), Some(3.0));
    assert_eq!(
        m.sum_where("vllm:num_requests_waiting", &[("reason", "capacity")]),
        Some(2.0)
    );
    assert_eq!(m.sum("vllm:num_requests_running"), Some(4.0));
    assert_eq!(
        m.sum_first(&[
            "vllm:prompt_tokens_cached_total",
            "vllm:prefix_cache_hits_total"
        ]),
        Some(15360.0)
    );
    let info = m.samples_of("vllm:cache_config_info").next().expect("info");
    assert_eq!(info.label("kv_cache_size_tokens"), Some("1048576"));
    assert_eq!(info.label("num_gpu_blocks"), Some("8192"));
    assert_eq!(info.label("block_size"), Some("128"));
}

#[test]
fn tgi_page() {
    let m = Metrics::parse(TGI);
    assert_eq!(m.sum("tgi_queue_size"), Some(3.0));
    assert_eq!(m.sum("tgi_batch_current_size"), Some(16.0));
    assert_eq!(m.sum("tgi_request_generated_tokens_sum"), Some(409600.0));
}

#[test]
fn escapes_special_values_timestamps_and_junk() {
    let m = Metrics::parse(EDGES);
    let samples: Vec<Sample<'_>> = m.samples().collect();
    assert_eq!(samples.len(), 5);
    assert_eq!(m.skipped_lines(), 3);
    let x = &samples[0];
    assert_eq!(x.label("a"), Some("q\"uote"));
    assert_eq!(x.label("b"), Some("back\\slash"));
    assert_eq!(x.label("c"), Some("new\nline"));
    assert_eq!(x.timestamp_ms, Some(1_700_000_000_000));
    assert!(m.sum("y").is_some_and(f64::is_nan));
    assert_eq!(m.sum("z"), Some(f64::INFINITY));
    assert_eq!(m.sum("w"), Some(f64::NEG_INFINITY));
    assert_eq!(m.sum("v"), Some(0.0015));
}

#[test]
fn trtllm_json_last_iteration() {
    let s = parse_trtllm_json(TRT).expect("json");
    assert_eq!(s.iterations, 2);
    assert_eq!(s.active_requests, Some(8.0));
    assert_eq!(s.queued_requests, Some(2.0));
    assert_eq!(s.kv_capacity_tokens(), Some(4096 * 32));
    let empty = parse_trtllm_json("[]").expect("json");
    assert_eq!(empty.iterations, 0);
    assert_eq!(empty.active_requests, None);
    let stringly = parse_trtllm_json(r#"["{\"numActiveRequests\":3,\"numQueuedRequests\":0}"]"#)
        .expect("json");
    assert_eq!(stringly.active_requests, Some(3.0));
    assert!(parse_trtllm_json("# HELP not json").is_err());
}
