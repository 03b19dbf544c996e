//! Imports `vllm bench serve --save-result` files as a run of this tool: one row per file,
//! holding the figures vLLM reported under vLLM's own definitions. Where a figure of this tool
//! means the same as vLLM's (TTFT, TPOT, output tokens) it takes vLLM's value; where the
//! definitions differ (vLLM's ITL is per streamed chunk, its duration starts before the first
//! send) the row still carries vLLM's value and the run's notes say how it differs; where vLLM
//! has no equivalent the field is null, never computed from something else. Pure: the caller
//! reads the files and writes the results directory (`docs/import.md` has the mapping).

use crate::cell::{CellResult, CellStatus, Phase, RateFigures};
use crate::import_common::{
    ImportError, ImportFile, ImportedMeta, ImportedRun, cell_words, exact_numbers, imported_note,
    imported_run_info,
};
use crate::run::RunInfo;
use crate::size::format_tokens;
use crate::stats::Summary;
use serde::Deserialize;
use std::collections::BTreeMap;

/// The tool whose results are imported, as rows and notes name it.
pub const VLLM_BENCH: &str = "vllm bench serve";

/// The kind under which a row counts the requests vLLM reported failed.
pub const VLLM_ERROR_KIND: &str = "vllm_request_error";

/// The fields of a `vllm bench serve --save-result` file that the import reads (others are
/// kept in `rest` and otherwise ignored). Per-request lists are there only with
/// `--save-detailed` (vLLM keeps `latencies` without it).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct VllmResult {
    /// When vLLM saved the file, its machine's local time (`%Y%m%d-%H%M%S`, no zone).
    pub date: String,
    /// The request dialect vLLM's client spoke (`openai`, `openai-chat`, `vllm`).
    #[serde(default)]
    pub backend: Option<String>,
    /// The model named in requests.
    pub model_id: String,
    /// The tokenizer vLLM counted with.
    #[serde(default)]
    pub tokenizer_id: Option<String>,
    /// Requests in the benchmark.
    pub num_prompts: u64,
    /// Requests per second, or the string `"inf"` (every request sent at once).
    pub request_rate: serde_json::Value,
    /// The gamma shape of the arrivals (1: Poisson).
    #[serde(default)]
    pub burstiness: Option<f64>,
    /// The cap on requests in flight (`--max-concurrency`).
    #[serde(default)]
    pub max_concurrency: Option<u32>,
    /// Benchmark start (before the first send) to the last request's end, seconds.
    pub duration: f64,
    /// Requests that succeeded.
    pub completed: u64,
    /// Requests that failed (absent in files of older vLLM).
    #[serde(default)]
    pub failed: Option<u64>,
    /// Prompt tokens of the completed requests.
    pub total_input_tokens: u64,
    /// Output tokens of the completed requests.
    pub total_output_tokens: u64,
    /// `completed / duration`.
    pub request_throughput: f64,
    /// `total_output_tokens / duration`.
    pub output_throughput: f64,
    /// The most output tokens in one one-second bucket from the benchmark's first send
    /// (absent in files of older vLLM).
    #[serde(default)]
    pub max_output_tokens_per_s: Option<f64>,
    /// Per request: prompt tokens (`--save-detailed`).
    #[serde(default)]
    pub input_lens: Option<Vec<u64>>,
    /// Per request: output tokens, 0 for a failed one.
    #[serde(default)]
    pub output_lens: Option<Vec<u64>>,
    /// Per request: time to first token, seconds.
    #[serde(default)]
    pub ttfts: Option<Vec<f64>>,
    /// Per request: the gaps between streamed chunks after the first, seconds.
    #[serde(default)]
    pub itls: Option<Vec<Vec<f64>>>,
    /// Per request: send to end, seconds.
    #[serde(default)]
    pub latencies: Option<Vec<f64>>,
    /// Per request: the send instant on vLLM's monotonic clock, seconds.
    #[serde(default)]
    pub start_times: Option<Vec<f64>>,
    /// Per request: the error text, empty for a success.
    #[serde(default)]
    pub errors: Option<Vec<String>>,
    /// Every other field: the `mean_/median_/std_/pNN_{ttft,tpot,itl,e2el}_ms` summaries among
    /// them.
    #[serde(flatten)]
    pub rest: BTreeMap<String, serde_json::Value>,
    /// The top-level numbers exactly as written ([`exact_numbers`]: a row holds the very figure vLLM wrote).
    #[serde(skip)]
    exact: BTreeMap<String, f64>,
}

impl VllmResult {
    /// One of vLLM's summary figures (`median_ttft_ms`, `p99_itl_ms`), if the file has it.
    pub fn stat(&self, key: &str) -> Option<f64> {
        let parsed = || self.rest.get(key).and_then(serde_json::Value::as_f64);
        self.exact.get(key).copied().or_else(parsed)
    }

    /// The request rate, `None` for `"inf"`.
    fn rate(&self) -> Option<f64> {
        self.request_rate.as_f64().filter(|r| r.is_finite())
    }
}

/// One `vllm bench serve` file to import (the name the CLI and tests have long used).
pub type VllmFile = ImportFile;

/// How vLLM's definitions differ from METHOD.md's, for every imported run's notes (the same
/// list is `docs/import.md`'s table).
pub const VLLM_DEFINITIONS: [&str; 8] = [
    "TTFT: vLLM's (send to first streamed content) is METHOD.md's; p50/p99/mean are vLLM's own figures",
    "TPOT: vLLM's is (E2E - TTFT) / (output tokens - 1) per request, the first token excluded as METHOD.md's; it ends at the response's end, not at the last token",
    "ITL (tbt_ms): vLLM's gaps are per streamed chunk; METHOD.md splits a chunk of k tokens into k gaps (the same where every chunk holds one token)",
    "output tok/s (total_tok_per_s) and measured_s: vLLM's output_throughput over its duration, which starts before the first send (METHOD.md: last end - first send)",
    "requests: vLLM's request_throughput (completed / duration) is not METHOD.md's achieved request rate ((sent - 1) / send span): achieved_request_rate is null",
    "E2E: vLLM's latency (send to end) is METHOD.md's; vLLM saves no e2el figures unless asked (--percentile-metrics), so the summary is of its per-request latencies",
    "decode rows (request rate inf): vLLM sent every prompt at once, at most max_concurrency in flight, until all were done: a finite batch whose duration includes the drain, not METHOD.md's window of N streams kept in flight",
    "summaries' n/min/p90/max are computed from vLLM's per-request samples (--save-detailed), numpy-linear like vLLM's own percentiles; p90 is vLLM's where it saved one",
];

/// What an imported row cannot say, for every imported run's notes.
pub const VLLM_UNJUDGED: &str = "not judged from vLLM's file: server queueing (no queue gauge: Requests queued cannot be told from Valid), prompt lengths against the server's count, repetition loops, the server's token counters; per-user tok/s, achieved rate, pacing and SLO figures are null";

/// Parses one `vllm bench serve` result file.
pub fn parse_vllm_result(file: &str, bytes: &[u8]) -> Result<VllmResult, ImportError> {
    let bad = |detail: String| ImportError::BadFile {
        file: file.to_string(),
        what: "a vllm bench serve result file",
        detail,
    };
    let mut r: VllmResult = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    // vLLM's figures are members of the outer object: their paths are their names.
    r.exact = exact_numbers(bytes);
    for (key, field) in [
        ("duration", &mut r.duration),
        ("request_throughput", &mut r.request_throughput),
        ("output_throughput", &mut r.output_throughput),
    ] {
        *field = r.exact.get(key).copied().unwrap_or(*field);
    }
    if r.rate().is_none() && r.request_rate.as_str() != Some("inf") {
        return Err(bad(format!(
            "request_rate {} is neither a positive number nor \"inf\"",
            r.request_rate
        )));
    }
    if r.rate().is_some_and(|x| x <= 0.0) || !(r.duration.is_finite() && r.duration > 0.0) {
        return Err(bad("request_rate and duration must be positive".into()));
    }
    Ok(r)
}

/// The row of one file: a rate cell at its finite request rate (vLLM sent on a schedule), or
/// a decode cell at its concurrency cap when the rate was `inf` (vLLM sent every prompt at once,
/// at most `max_concurrency` in flight: a closed loop over a finite batch).
pub fn vllm_cell(r: &VllmResult) -> CellResult {
    let (context, label) = context_of(r);
    let (status, reason) = status_of(r);
    let row = match r.rate() {
        Some(rate) => {
            let mut row = CellResult::empty(Phase::Rate, context, &label, 0, status);
            row.request_rate = Some(rate);
            row.achieved_request_rate = Some(None);
            row.failed_requests = Some(r.failed);
            row.slo_attainment = Some(None);
            row.goodput_rps = Some(None);
            row.goodput_tok_per_s = Some(None);
            if status.has_figures() {
                row.rate = rate_figures(r).map(Box::new);
            }
            row
        }
        None => {
            let n = r.max_concurrency.unwrap_or(r.num_prompts as u32);
            CellResult::empty(Phase::Decode, context, &label, n, status)
        }
    };
    with_common(row, r, reason)
}

/// The figures both kinds of row take from the file.
fn with_common(mut row: CellResult, r: &VllmResult, reason: Option<String>) -> CellResult {
    let samples = Samples::of(r);
    row.status_reason = reason;
    row.requests_sent = Some(r.failed.map_or(r.num_prompts, |f| r.completed + f));
    row.completed_requests = Some(r.completed);
    row.token_count_note = Some(format!(
        "{VLLM_BENCH}: output tokens as vLLM counted them (the server's usage, or its tokenizer); ITL per streamed chunk"
    ));
    if let Some(f) = r.failed.filter(|f| *f > 0) {
        row.errors.insert(VLLM_ERROR_KIND.to_string(), f);
        let first = r.errors.iter().flatten().find(|e| !e.is_empty());
        row.first_error = first.cloned();
    }
    if !row.status.has_figures() {
        return row;
    }
    row.output_tokens = Some(r.total_output_tokens);
    row.total_tok_per_s = Some(r.output_throughput);
    row.measured_s = Some(r.duration);
    row.ttft_ms_p50 = r.stat("median_ttft_ms");
    row.tbt_ms_p50 = r.stat("median_itl_ms");
    row.ttft_ms = samples.as_ref().and_then(|s| summary(r, "ttft", &s.ttft));
    row.tbt_ms = samples.as_ref().and_then(|s| summary(r, "itl", &s.itl));
    row
}

/// The cell's context: vLLM's mean prompt length of its completed requests, rounded; labelled
/// `≈` unless every request's prompt had exactly that length.
fn context_of(r: &VllmResult) -> (u64, String) {
    let c = if r.completed > 0 {
        (r.total_input_tokens as f64 / r.completed as f64).round() as u64
    } else {
        let lens = r.input_lens.as_deref().unwrap_or(&[]);
        (lens.iter().sum::<u64>() as f64 / lens.len().max(1) as f64).round() as u64
    };
    let exact = r
        .input_lens
        .as_ref()
        .is_some_and(|l| !l.is_empty() && l.iter().all(|x| *x == c));
    let label = format_tokens(c);
    (c, if exact { label } else { format!("≈{label}") })
}

/// METHOD.md's status as far as the file tells: Failed when no request completed or any
/// failed (the first error's text is the row's), Valid otherwise. Queueing cannot be told.
fn status_of(r: &VllmResult) -> (CellStatus, Option<String>) {
    match r.failed {
        _ if r.completed == 0 => (
            CellStatus::Failed,
            Some(format!("{VLLM_BENCH}: no request completed")),
        ),
        Some(f) if f > 0 => (
            CellStatus::Failed,
            Some(format!(
                "{VLLM_BENCH}: {f} of {} requests failed",
                r.completed + f
            )),
        ),
        Some(_) => (CellStatus::Valid, None),
        None => (
            CellStatus::Valid,
            Some(format!(
                "{VLLM_BENCH}: the file does not count failed requests (older vLLM)"
            )),
        ),
    }
}

/// vLLM's per-request samples of its successful requests, seconds, where the file has them
/// (`--save-detailed`), with the same selection as vLLM's own `calculate_metrics`.
struct Samples {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    itl: Vec<f64>,
    e2e: Vec<f64>,
    /// (send, end) of each successful request, when the file has start times.
    spans: Vec<(f64, f64)>,
}

impl Samples {
    fn of(r: &VllmResult) -> Option<Samples> {
        let (ttfts, itls, lats) = (r.ttfts.as_ref()?, r.itls.as_ref()?, r.latencies.as_ref()?);
        let (outs, errs) = (r.output_lens.as_ref()?, r.errors.as_ref()?);
        let n = ttfts.len();
        if [itls.len(), lats.len(), outs.len(), errs.len()] != [n; 4] {
            return None;
        }
        let starts = r.start_times.as_ref().filter(|s| s.len() == n);
        let mut s = Samples {
            ttft: Vec::new(),
            tpot: Vec::new(),
            itl: Vec::new(),
            e2e: Vec::new(),
            spans: Vec::new(),
        };
        for i in (0..n).filter(|i| errs[*i].is_empty()) {
            s.ttft.push(ttfts[i]);
            // vLLM: a request of one output token has no TPOT.
            if outs[i] > 1 {
                s.tpot.push((lats[i] - ttfts[i]) / (outs[i] - 1) as f64);
            }
            s.itl.extend_from_slice(&itls[i]);
            s.e2e.push(lats[i]);
            if let Some(st) = starts {
                s.spans.push((st[i], st[i] + lats[i]));
            }
        }
        Some(s)
    }

    /// Most requests in flight at once, from the sends and ends (an end before a send at the
    /// same instant). vLLM's own `max_concurrent_requests` counts requests active in the same
    /// one-second bucket, a different figure, so it is not used.
    fn max_in_flight(&self) -> Option<u64> {
        if self.spans.is_empty() {
            return None;
        }
        let mut events: Vec<(f64, i64)> = self
            .spans
            .iter()
            .flat_map(|(a, b)| [(*a, 1), (*b, -1)])
            .collect();
        events.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
        let (mut now, mut most) = (0i64, 0i64);
        for (_, d) in events {
            now += d;
            most = most.max(now);
        }
        Some(most as u64)
    }
}

/// A summary of vLLM's samples (seconds) in ms, its mean, median, p90, p99 and std replaced by the
/// figures vLLM saved for `metric` where it saved them, so the row holds vLLM's own values.
fn summary(r: &VllmResult, metric: &str, seconds: &[f64]) -> Option<Summary> {
    let mut ms: Vec<f64> = seconds.iter().map(|s| s * 1000.0).collect();
    let mut s = Summary::of_vec(&mut ms)?;
    let reported = |k: &str| r.stat(&format!("{k}_{metric}_ms"));
    s.mean = reported("mean").unwrap_or(s.mean);
    s.p50 = reported("median").unwrap_or(s.p50);
    s.p90 = reported("p90").unwrap_or(s.p90);
    s.p99 = reported("p99").unwrap_or(s.p99);
    s.std = reported("std").or(s.std);
    s.percentiles = reported_percentiles(r, metric);
    Some(s)
}

/// The percentiles vLLM saved for `metric` beyond p50, p90 and p99 (`--metric-percentiles`:
/// `p99.9_ttft_ms`, `p75_ttft_ms`), ascending; vLLM's own values, as the fixed ones.
fn reported_percentiles(r: &VllmResult, metric: &str) -> Vec<crate::stats::Percentile> {
    let suffix = format!("_{metric}_ms");
    let mut out: Vec<crate::stats::Percentile> = r
        .rest
        .keys()
        .filter_map(|k| {
            let word = k.strip_prefix('p')?.strip_suffix(suffix.as_str())?;
            let p: f64 = word.parse().ok()?;
            let extra = p > 0.0 && p < 100.0 && !crate::stats::FIXED_PERCENTILES.contains(&p);
            let value = r.stat(k).filter(|v| v.is_finite())?;
            extra.then_some(crate::stats::Percentile { p, value })
        })
        .collect();
    out.sort_by(|a, b| a.p.total_cmp(&b.p));
    out
}

/// A rate row's own figures, where the file has per-request samples (without them a rate
/// row's summaries cannot be filled, and `rate` stays null).
fn rate_figures(r: &VllmResult) -> Option<RateFigures> {
    let s = Samples::of(r)?;
    let arrival = match r.burstiness {
        Some(1.0) => "poisson".to_string(),
        Some(b) => format!("gamma:{b}"),
        None => "unknown".to_string(),
    };
    // vLLM's own input_throughput and total_token_throughput: its totals over its duration.
    let per_s = |n: u64| (r.duration > 0.0).then(|| n as f64 / r.duration);
    Some(RateFigures {
        arrival,
        scheduled: r.num_prompts,
        schedule_rate: None,
        max_concurrency: r.max_concurrency,
        max_in_flight: s.max_in_flight()?,
        // vLLM waits for every request: none is cut or left unsent.
        unfinished_requests: 0,
        never_sent: 0,
        output_tok_per_s: Some(r.output_throughput),
        input_tok_per_s: per_s(r.total_input_tokens),
        input_output_tok_per_s: per_s(r.total_input_tokens + r.total_output_tokens),
        // The same buckets as this tool's (`rate.peak_output_tok_per_s`), but vLLM counts a
        // token per streamed chunk: equal where each chunk carries one token.
        peak_output_tok_per_s: r.max_output_tokens_per_s,
        span_s: Some(r.duration),
        ttft_ms: summary(r, "ttft", &s.ttft),
        tpot_ms: summary(r, "tpot", &s.tpot),
        itl_ms: summary(r, "itl", &s.itl),
        e2e_ms: summary(r, "e2el", &s.e2e),
        per_user_tok_per_s: None,
        queue_ms: None,
        pacing_error_us: None,
        pacing_warning: None,
        slo: None,
        workload: None,
        stop_reason: None,
    })
}

/// vLLM's `date` (`20261206-202356`) as RFC 3339, read as UTC: the file names no zone.
fn date_rfc3339(date: &str) -> String {
    let d: Vec<char> = date.chars().collect();
    let ok = d.len() == 15
        && d[8] == '-'
        && d.iter()
            .enumerate()
            .all(|(i, c)| i == 8 || c.is_ascii_digit());
    if !ok {
        return String::new();
    }
    let s = |a: usize, b: usize| d[a..b].iter().collect::<String>();
    format!(
        "{}-{}-{}T{}:{}:{}Z",
        s(0, 4),
        s(4, 6),
        s(6, 8),
        s(9, 11),
        s(11, 13),
        s(13, 15)
    )
}

/// Imports `files` as one run: one row per file, every file of one model, no two files of
/// one cell. Rows come in the plan's order (contexts ascending, decode before rate, N and R
/// ascending).
pub fn import_vllm(files: &[VllmFile]) -> Result<ImportedRun, ImportError> {
    let first = files.first().ok_or(ImportError::NoFiles)?;
    let mut parsed: Vec<(&VllmFile, VllmResult, CellResult)> = Vec::new();
    let mut model: Option<String> = None;
    for f in files {
        let r = parse_vllm_result(&f.name, &f.bytes)?;
        if let Some(m) = model.as_ref().filter(|m| **m != r.model_id) {
            return Err(ImportError::ModelsDiffer {
                file: f.name.clone(),
                model: r.model_id,
                first_file: first.name.clone(),
                first_model: m.clone(),
            });
        }
        model = Some(r.model_id.clone());
        let row = vllm_cell(&r);
        if let Some((g, _, _)) = parsed.iter().find(|(_, _, c)| c.key() == row.key()) {
            return Err(ImportError::SameCell {
                file: f.name.clone(),
                cell: cell_words(&row),
                first_file: g.name.clone(),
            });
        }
        parsed.push((f, r, row));
    }
    parsed.sort_by_key(|(_, _, c)| c.key());
    let info = run_info(&parsed);
    Ok(ImportedRun {
        info,
        cells: parsed.into_iter().map(|(_, _, c)| c).collect(),
    })
}

/// `run.json` of the imported rows: vLLM as the tool, the model, and notes naming each file.
fn run_info(parsed: &[(&VllmFile, VllmResult, CellResult)]) -> RunInfo {
    let first = &parsed[0].1;
    let dates: Vec<String> = parsed
        .iter()
        .map(|(_, r, _)| date_rfc3339(&r.date))
        .collect();
    let mut notes = vec![imported_note(VLLM_BENCH, "result files")];
    for (f, r, row) in parsed {
        notes.push(format!(
            "{}: sha256 {}, {VLLM_BENCH} backend {}, date {} (vLLM's local time, no zone; read as UTC), tokenizer {}, {} prompts, request rate {}, burstiness {}, max concurrency {}, request_throughput {} req/s -> {}",
            f.name,
            f.sha256,
            r.backend.as_deref().unwrap_or("unknown"),
            r.date,
            r.tokenizer_id.as_deref().unwrap_or("unknown"),
            r.num_prompts,
            r.request_rate,
            r.burstiness.map_or("unknown".into(), |b| b.to_string()),
            r.max_concurrency.map_or("none".into(), |c| c.to_string()),
            r.request_throughput,
            cell_words(row)
        ));
    }
    notes.extend(VLLM_DEFINITIONS.iter().map(|d| format!("definitions: {d}")));
    notes.push(VLLM_UNJUDGED.to_string());
    let rows: Vec<CellResult> = parsed.iter().map(|(_, _, c)| c.clone()).collect();
    let meta = ImportedMeta {
        tool: VLLM_BENCH,
        // vLLM's result file does not record vLLM's version.
        version: "unknown".to_string(),
        model: first.model_id.clone(),
        started_at: dates.iter().min().cloned().unwrap_or_default(),
        finished_at: dates.iter().max().cloned(),
        notes,
        engine_extra: first
            .backend
            .iter()
            .map(|b| ("vllm_bench_backend".to_string(), b.clone()))
            .collect(),
        // The longest vLLM duration as the window; the longest output vLLM received as the
        // max output (vLLM's file does not record what it asked for).
        duration_s: parsed
            .iter()
            .map(|(_, r, _)| r.duration)
            .fold(0.0, f64::max),
        max_output: parsed
            .iter()
            .filter_map(|(_, r, _)| r.output_lens.as_ref()?.iter().max().copied())
            .max(),
    };
    imported_run_info(meta, &rows)
}

#[cfg(test)]
#[path = "tests/import_vllm.rs"]
mod tests;
