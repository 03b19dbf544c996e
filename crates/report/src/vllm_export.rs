//! `report --format vllm`: each open-load (rate) cell written as a `vllm bench serve
//! --save-result` file, so that vLLM's own plotting and comparison scripts (and anything else
//! that reads those files) can read this tool's runs. It is the inverse of `import vllm:`
//! (`llmib_core::import_vllm`, `docs/import.md`): each of vLLM's fields takes this tool's figure
//! where the definitions agree (or where the import maps them, with the difference it notes), and
//! is left out where this tool does not measure it under vLLM's definition — never computed from
//! something else to fill the gap. Decode cells are not exported: a window of N streams kept in
//! flight is not vLLM's finite batch at `request_rate inf`, whose duration includes the drain.
//!
//! With the run's per-request records (`requests.jsonl`, `--save-requests`) each file also holds
//! vLLM's `--save-detailed` lists and the standard deviations, and vLLM's per-chunk ITL is
//! computed from the chunks exactly as vLLM defines it.

use crate::error::ReportError;
use crate::exporter::Exporter;
use crate::format::Format;
use crate::model::Report;
use llmib_core::{
    Api, CellKey, CellResult, Outcome, Phase, RateFigures, RequestRecord, RunDir, RunInfo, Summary,
    percentile_word,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// One `vllm bench serve --save-result` file, with the field names vLLM writes. An absent
/// figure is left out of the file (vLLM's readers treat a missing key as unknown).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VllmBenchResult {
    /// When the cell finished, `%Y%m%d-%H%M%S` in UTC (vLLM writes its local time).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    /// vLLM's name of the request dialect (`openai`, `openai-chat`), else this tool's API name.
    pub backend: String,
    /// The same, under vLLM's older name for it.
    pub endpoint_type: String,
    /// The model named in requests.
    pub model_id: String,
    /// The tokenizer that counted tokens, where the run names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokenizer_id: Option<String>,
    /// Requests in the schedule.
    pub num_prompts: u64,
    /// The asked-for request rate, requests per second.
    pub request_rate: f64,
    /// The gamma shape of the arrivals: 1 for Poisson, B for `gamma:B`; null for a constant
    /// schedule (vLLM's `inf`, which JSON cannot hold) or another pattern.
    pub burstiness: Option<f64>,
    /// The cap on requests in flight; null without one, as vLLM writes it.
    pub max_concurrency: Option<u32>,
    /// METHOD.md's span (last end − first send), seconds: vLLM's starts before its first send.
    pub duration: f64,
    /// Requests that succeeded.
    pub completed: u64,
    /// Requests that failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<u64>,
    /// Prompt tokens of the completed requests, where known (see [`vllm_result`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_input_tokens: Option<u64>,
    /// Output tokens of the completed requests.
    pub total_output_tokens: u64,
    /// `completed / duration`, vLLM's formula over METHOD.md's span.
    pub request_throughput: f64,
    /// `total_output_tokens / duration`: the cell's output tok/s.
    pub output_throughput: f64,
    /// `(total_input_tokens + total_output_tokens) / duration`, where the input is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_token_throughput: Option<f64>,
    /// The most output tokens in one one-second bucket from the first send: the row's
    /// `rate.peak_output_tok_per_s`, vLLM's own definition (tokens, where vLLM counts chunks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output_tokens_per_s: Option<f64>,
    /// `mean_/median_/std_/p90_/p99_` of `ttft`, `tpot`, `itl`, `e2el`, in ms, and the run's
    /// `--percentiles` beyond them (`p99.9_ttft_ms`).
    #[serde(flatten)]
    pub stats: BTreeMap<String, f64>,
    /// vLLM's `--save-detailed` lists, from the run's per-request records.
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub detail: Option<VllmDetail>,
}

/// vLLM's per-request lists (`--save-detailed`), one entry per request in send order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VllmDetail {
    /// Prompt tokens: the server's count, else the cell's exact context; left out where some
    /// request's is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_lens: Option<Vec<u64>>,
    /// Output tokens, 0 for a failed request (as vLLM).
    pub output_lens: Vec<u64>,
    /// Send to first content, seconds (0 where none came).
    pub ttfts: Vec<f64>,
    /// Gaps between consecutive content chunks, seconds.
    pub itls: Vec<Vec<f64>>,
    /// Send to end, seconds (0 for a failed request, as vLLM).
    pub latencies: Vec<f64>,
    /// The send instants, seconds on the cell's clock.
    pub start_times: Vec<f64>,
    /// The error text, empty for a success.
    pub errors: Vec<String>,
    /// The generated texts (empty for a request without one), where the run kept them
    /// (`run --save-texts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generated_texts: Option<Vec<String>>,
}

/// The vLLM export: the run's per-request records by cell (empty without `requests.jsonl`).
#[derive(Debug, Clone, Default)]
pub struct VllmExporter {
    records: BTreeMap<CellKey, Vec<RequestRecord>>,
}

impl VllmExporter {
    /// The exporter of the run in `run_dir`, with its `requests.jsonl` where it has one.
    pub fn load(run_dir: &Path) -> Result<VllmExporter, ReportError> {
        let rows = RunDir::open(run_dir)?.load_requests()?.rows;
        Ok(VllmExporter {
            records: llmib_core::records_by_cell(rows),
        })
    }

    /// Each exported cell's file name and result.
    pub fn results(&self, report: &Report) -> Vec<(String, VllmBenchResult)> {
        report
            .cells
            .iter()
            .filter_map(|c| {
                let records = self.records.get(&c.key()).map(Vec::as_slice);
                Some((vllm_file_name(c), vllm_result(&report.info, c, records)?))
            })
            .collect()
    }

    /// Each exported cell's file name and text (the caller writes them into a folder).
    pub fn files(&self, report: &Report) -> Result<Vec<(String, String)>, ReportError> {
        self.results(report)
            .into_iter()
            .map(|(name, r)| Ok((name, serde_json::to_string_pretty(&r)? + "\n")))
            .collect()
    }
}

impl Exporter for VllmExporter {
    fn format(&self) -> Format {
        Format::Vllm
    }

    /// Every exported cell's result in one JSON list, the shape of the `summary.json` that
    /// `vllm bench sweep plot` reads.
    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let all: Vec<VllmBenchResult> = self.results(report).into_iter().map(|r| r.1).collect();
        Ok(serde_json::to_string_pretty(&all)? + "\n")
    }
}

/// The file a cell is written to: `vllm-{context}-{rate}qps[-concurrency{N}].json`, vLLM's
/// default name less the model and date (one run has one model) and with the context, which
/// tells a run's rate cells apart.
pub fn vllm_file_name(cell: &CellResult) -> String {
    let cap = cell
        .rate
        .as_ref()
        .and_then(|r| r.max_concurrency)
        .map_or_else(String::new, |n| format!("-concurrency{n}"));
    format!(
        "vllm-{}-{}qps{cap}.json",
        cell.context_tokens,
        cell.request_rate.unwrap_or(0.0)
    )
}

/// vLLM's result of one cell; `None` for a cell that is not an open-load cell with figures
/// (decode, prefill and burst cells, and cells Failed, Not run or Over capacity).
pub fn vllm_result(
    info: &RunInfo,
    cell: &CellResult,
    records: Option<&[RequestRecord]>,
) -> Option<VllmBenchResult> {
    let rate = cell.rate.as_deref()?;
    if cell.phase != Phase::Rate || !cell.status.has_figures() {
        return None;
    }
    let (duration, output_throughput) = (rate.span_s?, rate.output_tok_per_s?);
    let (completed, output) = (cell.completed_requests?, cell.output_tokens?);
    let exact_prompts = rate.workload.is_none() && info.plan.settings.token_targeting.is_exact();
    let detail = records.map(|r| detail_of(r, cell.context_tokens, exact_prompts));
    let total_input = match &detail {
        Some(VllmDetail {
            input_lens: Some(lens),
            errors,
            ..
        }) => Some(
            (lens.iter().zip(errors))
                .filter(|(_, e)| e.is_empty())
                .map(|(l, _)| l)
                .sum(),
        ),
        _ => exact_prompts.then(|| cell.context_tokens * completed),
    };
    let backend = backend_name(info.plan.settings.api).to_string();
    Some(VllmBenchResult {
        date: cell
            .finished_at
            .as_deref()
            .or(info.finished_at.as_deref())
            .and_then(vllm_date),
        endpoint_type: backend.clone(),
        backend,
        model_id: info.model.served_model.clone(),
        tokenizer_id: info.plan.settings.tokenizer_file.clone(),
        num_prompts: rate.scheduled,
        request_rate: cell.request_rate?,
        burstiness: burstiness(&rate.arrival),
        max_concurrency: rate.max_concurrency,
        duration,
        completed,
        failed: cell.failed_requests.flatten(),
        total_input_tokens: total_input,
        total_output_tokens: output,
        request_throughput: completed as f64 / duration,
        output_throughput,
        total_token_throughput: total_input.map(|i| (i + output) as f64 / duration),
        max_output_tokens_per_s: rate.peak_output_tok_per_s,
        stats: stats_of(cell, rate, records),
        detail,
    })
}

/// vLLM's backend name for the API this tool spoke: vLLM's `openai` client posts to
/// `/v1/completions`, `openai-chat` to `/v1/chat/completions`; vLLM has no client for the other
/// two, which keep this tool's name.
fn backend_name(api: Api) -> &'static str {
    match api {
        Api::Completions => "openai",
        Api::Chat => "openai-chat",
        Api::Messages => "messages",
        Api::Responses => "responses",
    }
}

/// vLLM's `burstiness` of an arrival pattern: the gamma shape (Poisson is shape 1). A constant
/// schedule is vLLM's `inf`, which `json.dump` writes as `Infinity` (not JSON): null instead.
fn burstiness(arrival: &str) -> Option<f64> {
    match arrival {
        "poisson" => Some(1.0),
        a => a.strip_prefix("gamma:")?.parse().ok(),
    }
}

/// An RFC 3339 UTC instant (`2026-12-06T20:23:56.123Z`) as vLLM's `date` (`20261206-202356`).
fn vllm_date(rfc3339: &str) -> Option<String> {
    let b = rfc3339.as_bytes();
    let digits = |r: std::ops::Range<usize>| {
        let s = rfc3339.get(r)?;
        s.bytes().all(|c| c.is_ascii_digit()).then_some(s)
    };
    if b.len() < 19 || b[10] != b'T' {
        return None;
    }
    Some(format!(
        "{}{}{}-{}{}{}",
        digits(0..4)?,
        digits(5..7)?,
        digits(8..10)?,
        digits(11..13)?,
        digits(14..16)?,
        digits(17..19)?
    ))
}

/// vLLM's per-metric figures in ms. TTFT, TPOT and E2E are the cell's own (the definitions
/// agree: `docs/import.md`); ITL is vLLM's per-chunk gap, computed from the records, or the
/// cell's where every chunk held one token (then the two agree); the standard deviations need
/// the records. A figure that cannot be had under vLLM's definition is left out.
fn stats_of(
    cell: &CellResult,
    rate: &RateFigures,
    records: Option<&[RequestRecord]>,
) -> BTreeMap<String, f64> {
    let samples = records.map(Samples::of);
    let one_token_chunks = cell.tokens_per_chunk == Some(1.0);
    // The run's extra percentiles (`--percentiles`), as the cell's summaries carry them: vLLM
    // writes each as `p{p}_{metric}_ms`, ITL's from its own per-chunk gaps too.
    let ps: Vec<f64> = (rate.ttft_ms.iter().chain(&rate.itl_ms))
        .flat_map(|s| s.percentiles.iter().map(|x| x.p))
        .fold(Vec::new(), |mut v, p| {
            if !v.contains(&p) {
                v.push(p);
            }
            v
        });
    let itl = match &samples {
        Some(s) => Summary::of_vec_at(&mut s.itl.clone(), &ps),
        None => rate.itl_ms.clone().filter(|_| one_token_chunks),
    };
    let mut out = BTreeMap::new();
    for (metric, summary, std_of) in [
        (
            "ttft",
            rate.ttft_ms.as_ref(),
            samples.as_ref().map(|s| &s.ttft),
        ),
        (
            "tpot",
            rate.tpot_ms.as_ref(),
            samples.as_ref().map(|s| &s.tpot),
        ),
        ("itl", itl.as_ref(), samples.as_ref().map(|s| &s.itl)),
        (
            "e2el",
            rate.e2e_ms.as_ref(),
            samples.as_ref().map(|s| &s.e2e),
        ),
    ] {
        let Some(s) = summary else { continue };
        for (stat, v) in [
            ("mean", s.mean),
            ("median", s.p50),
            ("p90", s.p90),
            ("p99", s.p99),
        ] {
            out.insert(format!("{stat}_{metric}_ms"), v);
        }
        for x in &s.percentiles {
            out.insert(format!("p{}_{metric}_ms", percentile_word(x.p)), x.value);
        }
        if let Some(std) = std_of.and_then(|v| population_std(v)) {
            out.insert(format!("std_{metric}_ms"), std);
        }
    }
    out
}

/// numpy's `np.std` (population, ddof 0), as vLLM computes its `std_*_ms`.
fn population_std(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    Some((v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt())
}

/// Per-request samples of the successful requests, ms: TTFT, TPOT and E2E as METHOD.md (and
/// the cell) define them; ITL as vLLM does, one gap per content chunk.
struct Samples {
    ttft: Vec<f64>,
    tpot: Vec<f64>,
    itl: Vec<f64>,
    e2e: Vec<f64>,
}

/// Nanoseconds to milliseconds.
fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

impl Samples {
    fn of(records: &[RequestRecord]) -> Samples {
        let mut s = Samples {
            ttft: Vec::new(),
            tpot: Vec::new(),
            itl: Vec::new(),
            e2e: Vec::new(),
        };
        for r in records.iter().filter(|r| succeeded(r)) {
            let (Some(first), Some(last)) = (r.chunks.first(), r.chunks.last()) else {
                continue;
            };
            s.ttft.push(ms(first.t_ns.saturating_sub(r.sent_ns)));
            let tokens = r.tokens();
            if tokens > 1 {
                s.tpot
                    .push(ms(last.t_ns - first.t_ns) / (tokens - 1) as f64);
            }
            s.itl.extend(chunk_gaps(r).iter().map(|g| g * 1000.0));
            s.e2e.push(ms(r.end_ns.saturating_sub(r.sent_ns)));
        }
        s
    }
}

/// Whether the server finished the request (vLLM's `success`).
fn succeeded(r: &RequestRecord) -> bool {
    matches!(r.outcome, Outcome::Finished { .. })
}

/// The gaps between consecutive content chunks, seconds: vLLM's `itl` of one request.
fn chunk_gaps(r: &RequestRecord) -> Vec<f64> {
    r.chunks
        .windows(2)
        .map(|w| w[1].t_ns.saturating_sub(w[0].t_ns) as f64 / 1e9)
        .collect()
}

/// vLLM's per-request lists, in send order. A prompt's length is the server's count, else the
/// cell's context where every prompt is exactly C tokens; where neither is known for some
/// request, `input_lens` is left out.
fn detail_of(records: &[RequestRecord], context: u64, exact_prompts: bool) -> VllmDetail {
    let mut sorted: Vec<&RequestRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.sent_ns);
    let input_lens: Option<Vec<u64>> = sorted
        .iter()
        .map(|r| {
            r.prompt_tokens_reported
                .or(exact_prompts.then_some(context))
        })
        .collect();
    let ok = |r: &RequestRecord, v: f64| if succeeded(r) { v } else { 0.0 };
    VllmDetail {
        input_lens,
        output_lens: sorted
            .iter()
            .map(|r| {
                let n = r.completion_tokens_reported.unwrap_or_else(|| r.tokens());
                if succeeded(r) { n } else { 0 }
            })
            .collect(),
        ttfts: sorted
            .iter()
            .map(|r| r.ttft_ns().map_or(0.0, |t| t as f64 / 1e9))
            .collect(),
        itls: sorted.iter().map(|r| chunk_gaps(r)).collect(),
        latencies: sorted
            .iter()
            .map(|r| ok(r, r.end_ns.saturating_sub(r.sent_ns) as f64 / 1e9))
            .collect(),
        start_times: sorted.iter().map(|r| r.sent_ns as f64 / 1e9).collect(),
        errors: sorted.iter().map(|r| error_text(&r.outcome)).collect(),
        generated_texts: sorted.iter().any(|r| r.text.is_some()).then(|| {
            sorted
                .iter()
                .map(|r| r.text.clone().unwrap_or_default())
                .collect()
        }),
    }
}

/// vLLM's `error` of a request: empty for a success.
fn error_text(o: &Outcome) -> String {
    match o {
        Outcome::Finished { .. } => String::new(),
        Outcome::Cancelled => "cancelled by the client at the drain limit".to_string(),
        Outcome::Error { kind, message } => format!("{kind}: {message}"),
    }
}

#[cfg(test)]
#[path = "tests/vllm_export.rs"]
mod tests;
