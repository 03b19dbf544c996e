//! Reading engine metrics: a Prometheus text-format parser (SGLang, vLLM, llama.cpp, TGI) and
//! TensorRT-LLM's JSON `/metrics`.
//!
//! The parser borrows from the response body and unescapes a label value only when it has
//! escapes, so reading a 100 KB vLLM page four times a second stays cheap. Lookups are by name
//! and, optionally, a subset of labels; [`Metrics::sum`] adds a metric over all its label sets,
//! which is the right reading for per-engine/per-DP-rank gauges and counters (vLLM's `engine`
//! label, SGLang's `dp_rank`, vLLM's `reason` on `num_requests_waiting`).
//!
//! Lines that do not parse are skipped and counted ([`Metrics::skipped_lines`]), never fatal: a
//! new engine version adding an odd line must not cost the run its queue gauge.

use std::borrow::Cow;

use serde::Deserialize;

/// One sample line.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// Metric name, as written (`vllm:num_requests_running`, `tgi_queue_size`).
    pub name: &'a str,
    /// Labels in the order written, values unescaped.
    pub labels: Vec<(&'a str, Cow<'a, str>)>,
    /// The value (`NaN`, `+Inf` and `-Inf` included).
    pub value: f64,
    /// Timestamp in milliseconds, where the line has one.
    pub timestamp_ms: Option<i64>,
}

impl Sample<'_> {
    /// The value of label `key`, if present.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_ref())
    }

    fn has_labels(&self, want: &[(&str, &str)]) -> bool {
        want.iter().all(|(k, v)| self.label(k) == Some(*v))
    }
}

/// A parsed Prometheus text page.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics<'a> {
    /// All samples, in page order.
    pub samples: Vec<Sample<'a>>,
    skipped: usize,
}

impl<'a> Metrics<'a> {
    /// Parses a page in the Prometheus text exposition format (also OpenMetrics' `# EOF`).
    pub fn parse(text: &'a str) -> Self {
        let mut m = Metrics::default();
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

    /// Lines that were neither comments nor valid samples.
    pub fn skipped_lines(&self) -> usize {
        self.skipped
    }

    /// Whether any sample has this name.
    pub fn has(&self, name: &str) -> bool {
        self.samples.iter().any(|s| s.name == name)
    }

    /// Whether any sample name starts with `prefix` (engine detection: `vllm:`, `sglang:`).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.samples.iter().any(|s| s.name.starts_with(prefix))
    }

    /// All samples with this name.
    pub fn samples_of<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'s Sample<'a>> + 's {
        self.samples.iter().filter(move |s| s.name == name)
    }

    /// The first sample with this name whose labels include all of `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples_of(name)
            .find(|s| s.has_labels(labels))
            .map(|s| s.value)
    }

    /// The sum over every label set of `name`; `None` when the page has no such metric.
    pub fn sum(&self, name: &str) -> Option<f64> {
        self.sum_where(name, &[])
    }

    /// The sum over the label sets of `name` that include all of `labels`.
    pub fn sum_where(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let mut found = false;
        let mut total = 0.0;
        for s in self.samples_of(name).filter(|s| s.has_labels(labels)) {
            found = true;
            total += s.value;
        }
        found.then_some(total)
    }

    /// The mean over every label set of `name` (a ratio reported per rank, such as a KV
    /// usage fraction); `None` when the page has no such metric.
    pub fn mean(&self, name: &str) -> Option<f64> {
        let v: Vec<f64> = self.samples_of(name).map(|s| s.value).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// The first of `names` present on the page, summed over its label sets (engines renamed
    /// metrics across versions; list the newest name first).
    pub fn sum_first(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.sum(n))
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

/// Parses `k="v",k2="v2"}` (after the `{`); returns what follows the `}`.
fn parse_labels<'a>(mut s: &'a str, out: &mut Vec<(&'a str, Cow<'a, str>)>) -> Option<&'a str> {
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix('}') {
            return Some(r);
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        // Find the closing quote, skipping escaped characters.
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

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_value(s: &str) -> Option<f64> {
    match s {
        "NaN" | "nan" => Some(f64::NAN),
        "+Inf" | "Inf" | "+inf" | "inf" => Some(f64::INFINITY),
        "-Inf" | "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse::<f64>().ok(),
    }
}

/// The last iteration of TensorRT-LLM's JSON `/metrics` (`trtllm-serve`).
///
/// The endpoint drains the engine's iteration-stats queue: each read returns the iterations
/// since the previous read, and another reader (a dashboard) steals them. An empty list means
/// no iteration ran since the last read, i.e. the engine was idle.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TrtLlmStats {
    /// Iterations in this read.
    pub iterations: usize,
    /// `numActiveRequests` of the last iteration.
    pub active_requests: Option<f64>,
    /// `numQueuedRequests` of the last iteration.
    pub queued_requests: Option<f64>,
    /// `kvCacheStats.maxNumBlocks` of the last iteration.
    pub kv_max_blocks: Option<u64>,
    /// `kvCacheStats.tokensPerBlock` of the last iteration.
    pub kv_tokens_per_block: Option<u64>,
    /// `kvCacheStats.usedNumBlocks` of the last iteration.
    pub kv_used_blocks: Option<u64>,
}

impl TrtLlmStats {
    /// Used KV blocks as a fraction of all blocks.
    pub fn kv_usage(&self) -> Option<f64> {
        let max = self.kv_max_blocks.filter(|m| *m > 0)?;
        Some(self.kv_used_blocks? as f64 / max as f64)
    }

    /// KV capacity in tokens: `maxNumBlocks × tokensPerBlock`.
    pub fn kv_capacity_tokens(&self) -> Option<u64> {
        self.kv_max_blocks?.checked_mul(self.kv_tokens_per_block?)
    }
}

/// Parses TensorRT-LLM's JSON `/metrics` (a list of iteration stats). Errors when the body is
/// not a JSON list.
pub fn parse_trtllm_json(body: &str) -> Result<TrtLlmStats, serde_json::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Iter {
        #[serde(default)]
        num_active_requests: Option<f64>,
        #[serde(default)]
        num_queued_requests: Option<f64>,
        #[serde(default)]
        kv_cache_stats: Option<Kv>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Kv {
        #[serde(default)]
        max_num_blocks: Option<u64>,
        #[serde(default)]
        tokens_per_block: Option<u64>,
        #[serde(default)]
        used_num_blocks: Option<u64>,
    }
    // Older builds return each iteration as a JSON string inside the list.
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Item {
        Obj(Iter),
        Str(String),
    }
    let items: Vec<Item> = serde_json::from_str(body)?;
    let mut stats = TrtLlmStats {
        iterations: items.len(),
        ..TrtLlmStats::default()
    };
    let last = match items.into_iter().last() {
        Some(Item::Obj(i)) => Some(i),
        Some(Item::Str(s)) => Some(serde_json::from_str::<Iter>(&s)?),
        None => None,
    };
    if let Some(i) = last {
        stats.active_requests = i.num_active_requests;
        stats.queued_requests = i.num_queued_requests;
        if let Some(kv) = i.kv_cache_stats {
            stats.kv_max_blocks = kv.max_num_blocks;
            stats.kv_tokens_per_block = kv.tokens_per_block;
            stats.kv_used_blocks = kv.used_num_blocks;
        }
    }
    Ok(stats)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SGLANG: &str = include_str!("../../fixtures/transcripts/sglang/metrics.txt");
    const VLLM: &str = include_str!("../../fixtures/transcripts/vllm/metrics.txt");
    const TGI: &str = include_str!("../../fixtures/transcripts/tgi/metrics.txt");
    const TRT: &str = include_str!("../../fixtures/transcripts/trtllm/metrics.json");

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
        let text = "# HELP x a\n\
            x{a=\"q\\\"uote\",b=\"back\\\\slash\",c=\"new\\nline\",} 1 1700000000000\n\
            y NaN\n\
            z{} +Inf\n\
            w -Inf\n\
            v 1.5e-3\n\
            broken{a=\"unterminated} 1\n\
            novalue\n\
            u{a=\"1\"} notanumber\n\
            # EOF\n";
        let m = Metrics::parse(text);
        assert_eq!(m.samples.len(), 5);
        assert_eq!(m.skipped_lines(), 3);
        let x = &m.samples[0];
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
        let stringly =
            parse_trtllm_json(r#"["{\"numActiveRequests\":3,\"numQueuedRequests\":0}"]"#)
                .expect("json");
        assert_eq!(stringly.active_requests, Some(3.0));
        assert!(parse_trtllm_json("# HELP not json").is_err());
    }
}
