//! Reading engine metrics: a Prometheus text-format parser (SGLang, vLLM, llama.cpp, TGI) and
//! TensorRT-LLM's JSON `/metrics`.
//!
//! A run reads the page five times a second (the window's gauges every 250 ms, the telemetry
//! sampler every second), and a vLLM or SGLang page is 50–100 KB of which a row needs a dozen
//! lines: the rest is histogram buckets, Python's collectors and HTTP counters. So
//! [`Metrics::parse`] only indexes the page — it slices each line's name, with no allocation
//! per line — and a sample's labels and value are parsed when a lookup asks for its name. A
//! family the row never asks for costs the name's slice and nothing more. The parser borrows
//! from the response body and unescapes a label value only when it has escapes.
//!
//! Lookups are by name and, optionally, a subset of labels; [`Metrics::sum`] adds a metric
//! over all its label sets, which is the right reading for per-engine/per-DP-rank gauges and
//! counters (vLLM's `engine` label, SGLang's `dp_rank`, vLLM's `reason` on
//! `num_requests_waiting`).
//!
//! Lines that do not parse are skipped and counted ([`Metrics::skipped_lines`]), never fatal: a
//! new engine version adding an odd line must not cost the run its queue gauge.

use std::borrow::Cow;
use std::ops::Range;

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

/// Consecutive sample lines of one name (a family's lines come together on every engine's
/// page, so a page has a few runs per family, not one per line).
#[derive(Debug, Clone, PartialEq)]
struct Run<'a> {
    name: &'a str,
    /// Their places in [`Metrics::rests`].
    lines: Range<usize>,
}

/// A Prometheus text page, indexed by name; samples are parsed when looked up.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics<'a> {
    runs: Vec<Run<'a>>,
    /// Every named sample line after its name (labels, value, timestamp), in page order.
    rests: Vec<&'a str>,
    /// Lines that were neither comments nor named (they cannot be samples).
    nameless: usize,
}

impl<'a> Metrics<'a> {
    /// Indexes a page in the Prometheus text exposition format (also OpenMetrics' `# EOF`).
    pub fn parse(text: &'a str) -> Self {
        // About one sample line per 80 bytes on the engines' pages: one allocation, mostly.
        let mut m = Metrics {
            rests: Vec::with_capacity(text.len() / 80),
            ..Metrics::default()
        };
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = m.rests.len();
            // The line of a run's name needs no scan for its end: a histogram's buckets are
            // dozens of lines of one name.
            let end = match m.runs.last_mut() {
                Some(r) if name_ends_at(line, r.name.len()) && line.starts_with(r.name) => {
                    r.lines.end = at + 1;
                    r.name.len()
                }
                _ => {
                    let end = line
                        .bytes()
                        .position(|b| b == b'{' || b.is_ascii_whitespace())
                        .unwrap_or(line.len());
                    if end == 0 {
                        m.nameless += 1;
                        continue;
                    }
                    m.runs.push(Run {
                        name: &line[..end],
                        lines: at..at + 1,
                    });
                    end
                }
            };
            m.rests.push(&line[end..]);
        }
        m
    }

    /// Lines that were neither comments nor valid samples (parses the whole page: for tests
    /// and diagnostics, not for a run's reads).
    pub fn skipped_lines(&self) -> usize {
        let bad = self
            .runs
            .iter()
            .flat_map(|r| self.rests[r.lines.clone()].iter())
            .filter(|rest| parse_rest(rest, false).is_none())
            .count();
        self.nameless + bad
    }

    /// Every sample, in page order (parses the whole page).
    pub fn samples(&self) -> impl Iterator<Item = Sample<'a>> + '_ {
        self.runs.iter().flat_map(|r| self.parsed(r))
    }

    /// The valid samples of one run.
    fn parsed<'s>(&'s self, r: &'s Run<'a>) -> impl Iterator<Item = Sample<'a>> + 's {
        self.rests[r.lines.clone()]
            .iter()
            .filter_map(move |rest| parse_rest(rest, true).map(|p| p.sample(r.name)))
    }

    /// The lines (after the name) of every sample line named `name`, in page order.
    fn rests_of<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'a str> + 's {
        self.runs
            .iter()
            .filter(move |r| r.name == name)
            .flat_map(|r| self.rests[r.lines.clone()].iter().copied())
    }

    /// The values of the valid samples named `name`, in page order; their labels are checked
    /// but not kept.
    fn values_of<'s>(&'s self, name: &'s str) -> impl Iterator<Item = f64> + 's {
        self.rests_of(name)
            .filter_map(|rest| parse_rest(rest, false).map(|p| p.value))
    }

    /// Whether any sample has this name.
    pub fn has(&self, name: &str) -> bool {
        self.values_of(name).next().is_some()
    }

    /// Whether any sample name starts with `prefix` (engine detection: `vllm:`, `sglang:`).
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.runs
            .iter()
            .filter(|r| r.name.starts_with(prefix))
            .any(|r| self.parsed(r).next().is_some())
    }

    /// All samples with this name.
    pub fn samples_of<'s>(&'s self, name: &'s str) -> impl Iterator<Item = Sample<'a>> + 's {
        self.runs
            .iter()
            .filter(move |r| r.name == name)
            .flat_map(|r| self.parsed(r))
    }

    /// The first sample with this name whose labels include all of `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        if labels.is_empty() {
            return self.values_of(name).next();
        }
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
        let mut add = |v: f64| {
            found = true;
            total += v;
        };
        if labels.is_empty() {
            self.values_of(name).for_each(&mut add);
        } else {
            self.samples_of(name)
                .filter(|s| s.has_labels(labels))
                .for_each(|s| add(s.value));
        }
        found.then_some(total)
    }

    /// The mean over every label set of `name` (a ratio reported per rank, such as a KV
    /// usage fraction); `None` when the page has no such metric.
    pub fn mean(&self, name: &str) -> Option<f64> {
        let v: Vec<f64> = self.values_of(name).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    }

    /// The first of `names` present on the page, summed over its label sets (engines renamed
    /// metrics across versions; list the newest name first).
    pub fn sum_first(&self, names: &[&str]) -> Option<f64> {
        names.iter().find_map(|n| self.sum(n))
    }
}

/// Whether a name of `len` bytes could end at `len` in `line`: the line goes on with labels or
/// a space, or ends there (the line's own scan would stop at the same place).
fn name_ends_at(line: &str, len: usize) -> bool {
    match line.as_bytes().get(len) {
        Some(&b) => b == b'{' || b.is_ascii_whitespace(),
        None => len > 0 && line.len() == len,
    }
}

/// A sample line's parts after its name.
struct Parsed<'a> {
    labels: Vec<(&'a str, Cow<'a, str>)>,
    value: f64,
    timestamp_ms: Option<i64>,
}

impl<'a> Parsed<'a> {
    fn sample(self, name: &'a str) -> Sample<'a> {
        Sample {
            name,
            labels: self.labels,
            value: self.value,
            timestamp_ms: self.timestamp_ms,
        }
    }
}

/// Parses what follows a sample's name: `{labels}` (kept only where `keep_labels`; checked
/// either way, since a line with broken labels is no sample), the value and the timestamp.
fn parse_rest(mut rest: &str, keep_labels: bool) -> Option<Parsed<'_>> {
    let mut labels = Vec::new();
    if let Some(r) = rest.strip_prefix('{') {
        rest = parse_labels(r, keep_labels.then_some(&mut labels))?;
    }
    let mut parts = rest.split_ascii_whitespace();
    let value = parse_value(parts.next()?)?;
    let timestamp_ms = match parts.next() {
        Some(t) => Some(t.parse::<i64>().ok()?),
        None => None,
    };
    Some(Parsed {
        labels,
        value,
        timestamp_ms,
    })
}

/// Parses `k="v",k2="v2"}` (after the `{`) into `out`, where given; returns what follows the
/// `}`.
fn parse_labels<'a>(
    mut s: &'a str,
    mut out: Option<&mut Vec<(&'a str, Cow<'a, str>)>>,
) -> Option<&'a str> {
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
        if let Some(out) = out.as_deref_mut() {
            let raw = &s[..i];
            let value = if escaped {
                Cow::Owned(unescape(raw))
            } else {
                Cow::Borrowed(raw)
            };
            out.push((key, value));
        }
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
#[path = "metrics_tests.rs"]
mod tests;
