//! Imports GuideLLM's benchmarks report (the JSON `guidellm run --output kind=json` writes) as a
//! run of this tool: one row per benchmark of the report (a sweep gives several), holding the
//! figures GuideLLM reported under GuideLLM's own definitions. Where GuideLLM's metric means
//! what METHOD.md's does (TTFT, its inter-token latency which is METHOD.md's per-request TPOT,
//! output tok/s over last end − first send) it takes GuideLLM's value; where the definitions
//! differ (token-weighted distributions, GuideLLM's own percentile rule) the run's notes say
//! how; where GuideLLM has no equivalent (per-gap ITL, per-user tok/s) the field is null.
//! Pure: the caller reads the file (`docs/import.md` has the mapping).

use crate::cell::{CellResult, CellStatus, Phase, RateFigures};
use crate::import_common::{
    ImportError, ImportFile, ImportedMeta, ImportedRun, cell_words, check_new_cell, epoch_rfc3339,
    exact_numbers, imported_note, imported_run_info,
};
use crate::size::format_tokens;
use crate::stats::Summary;
use serde_json::Value;
use std::collections::BTreeMap;

/// The tool whose results are imported, as rows and notes name it.
pub const GUIDELLM: &str = "GuideLLM";

/// The kind under which a row counts the requests GuideLLM reported errored.
pub const GUIDELLM_ERROR_KIND: &str = "guidellm_request_error";

/// What the refusals call a file that is not GuideLLM's report.
const WHAT: &str = "a GuideLLM benchmarks report (JSON)";

/// How GuideLLM's definitions differ from METHOD.md's, for every imported run's notes (the same
/// list is `docs/import.md`'s table).
pub const GUIDELLM_DEFINITIONS: [&str; 8] = [
    "TTFT: GuideLLM's time_to_first_token_ms (request start to the first token iteration) is METHOD.md's; figures of its successful requests",
    "TPOT (rate.tpot_ms): GuideLLM's inter_token_latency_ms is (last token - first token) / (output tokens - 1) per request, METHOD.md's TPOT; but its distribution weights each request by its output tokens (n counts tokens, not requests)",
    "percentiles: GuideLLM's own rule (the first sample whose cumulative weight reaches the quantile, no interpolation), not numpy-linear as this tool's; p50 is GuideLLM's median",
    "output tok/s (total_tok_per_s) and measured_s: GuideLLM's output_tokens_per_second mean over all its requests (output tokens / its duration, last end - first start: METHOD.md's span for rate rows); for a concurrent or synchronous benchmark (decode row) the duration holds the ramp and the drain, not METHOD.md's window",
    "requests: GuideLLM's requests_per_second is completed requests over time, not METHOD.md's achieved request rate ((sent - 1) / send span): achieved_request_rate is null",
    "ITL per gap (tbt_ms, rate.itl_ms): GuideLLM keeps none (its inter-token latency is per request), so they are null; time_per_output_token_ms (which includes the TTFT) is not imported",
    "decode rows (GuideLLM concurrent streams=N, synchronous N=1, throughput at its max_concurrency, or all its requests when unlimited): a finite benchmark whose duration includes the drain, not METHOD.md's window of N streams kept in flight for D seconds",
    "E2E (rate.e2e_ms): GuideLLM's request_latency (request start to end) in seconds, multiplied by 1000",
];

/// What an imported row cannot say, for every imported run's notes.
pub const GUIDELLM_UNJUDGED: &str = "not judged from GuideLLM's file: server queueing (no queue gauge: Requests queued cannot be told from Valid), prompt lengths against the server's count, repetition loops, the server's token counters; per-gap ITL, per-user tok/s, achieved rate, pacing, client queue time and SLO figures are null";

/// One benchmark of a report, as the import reads it.
#[derive(Debug, Clone)]
pub struct GuidellmBenchmark {
    /// Its index in the report's `benchmarks`.
    pub index: usize,
    /// The strategy's type: `constant`, `poisson`, `concurrent`, `synchronous`, `throughput`.
    pub strategy: String,
    /// Requests per second (constant, poisson).
    pub rate: Option<f64>,
    /// Streams (concurrent), the cap on requests in flight (asked, or throughput's; all its
    /// requests for an unlimited throughput benchmark).
    pub concurrency: Option<u32>,
    /// Whether `concurrency` is a cap on a rate (asked with the profile).
    pub capped: bool,
    /// The model named in requests.
    pub model: String,
}

/// A parsed GuideLLM report: its version, its benchmarks, every number as written.
#[derive(Debug, Clone)]
pub struct GuidellmReport {
    /// GuideLLM's version.
    pub version: String,
    /// The benchmarks, in the report's order.
    pub benchmarks: Vec<GuidellmBenchmark>,
    /// Every number of the file as written, by path ([`exact_numbers`]).
    exact: BTreeMap<String, f64>,
}

impl GuidellmReport {
    /// A number of benchmark `b` at `path` (`metrics.request_totals.successful`).
    pub fn num(&self, b: usize, path: &str) -> Option<f64> {
        self.exact.get(&format!("benchmarks.{b}.{path}")).copied()
    }

    /// One statistic of one metric of benchmark `b` over requests of `status` (`successful`,
    /// `total`): `mean`, `median`, `min`, `max`, `count`, `total_sum`, or a percentile (`p99`).
    pub fn stat(&self, b: usize, metric: &str, status: &str, stat: &str) -> Option<f64> {
        let base = format!("metrics.{metric}.{status}");
        match stat {
            p if p.starts_with('p') => self.num(b, &format!("{base}.percentiles.{p}")),
            s => self.num(b, &format!("{base}.{s}")),
        }
    }

    /// Request counts of benchmark `b`: (successful, errored, incomplete, total).
    fn totals(&self, b: usize) -> (u64, u64, u64, u64) {
        let n = |k: &str| {
            self.num(b, &format!("metrics.request_totals.{k}"))
                .map_or(0, |x| x as u64)
        };
        (n("successful"), n("errored"), n("incomplete"), n("total"))
    }
}

/// Parses one GuideLLM benchmarks report.
pub fn parse_guidellm_report(file: &str, bytes: &[u8]) -> Result<GuidellmReport, ImportError> {
    let bad = |detail: String| ImportError::BadFile {
        file: file.to_string(),
        what: WHAT,
        detail,
    };
    let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let version = v["metadata"]["guidellm_version"]
        .as_str()
        .ok_or_else(|| bad("no metadata.guidellm_version".into()))?
        .to_string();
    let list = v["benchmarks"]
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| bad("no benchmarks".into()))?;
    let spec_model = v["config"]["spec"]["backend"]["model"].as_str();
    let mut benchmarks = Vec::new();
    for (index, b) in list.iter().enumerate() {
        let strategy = &b["config"]["strategy"];
        let kind = strategy["type_"].as_str().unwrap_or("unknown").to_string();
        let asked_cap = b["config"]["profile"]["max_concurrency"].as_u64();
        let (rate, concurrency, capped) = match kind.as_str() {
            "constant" | "poisson" => (strategy["rate"].as_f64(), asked_cap, asked_cap.is_some()),
            "concurrent" => (None, strategy["streams"].as_u64(), false),
            "synchronous" => (None, Some(1), false),
            // Unlimited: every request at once, as vLLM's `inf` without a cap.
            "throughput" => {
                let all = b["metrics"]["request_totals"]["total"].as_u64();
                (None, strategy["max_concurrency"].as_u64().or(all), false)
            }
            other => {
                return Err(bad(format!(
                    "benchmark {index}: strategy {other:?} is not imported"
                )));
            }
        };
        if rate.is_none() && concurrency.is_none() {
            return Err(bad(format!(
                "benchmark {index}: {kind} has no rate or concurrency"
            )));
        }
        let model = b["config"]["backend"]["model"].as_str().or(spec_model);
        benchmarks.push(GuidellmBenchmark {
            index,
            strategy: kind,
            rate: rate.filter(|r| r.is_finite() && *r > 0.0),
            concurrency: concurrency.map(|c| c.min(u32::MAX as u64) as u32),
            capped,
            model: model.unwrap_or("unknown").to_string(),
        });
    }
    Ok(GuidellmReport {
        version,
        benchmarks,
        exact: exact_numbers(bytes),
    })
}

/// A summary of one metric (ms) of benchmark `b`'s successful requests, every figure GuideLLM's
/// own, times `scale` (1000 for a metric in seconds).
fn summary(r: &GuidellmReport, b: usize, metric: &str, scale: f64) -> Option<Summary> {
    let s = |k: &str| r.stat(b, metric, "successful", k);
    let n = s("count")? as u64;
    if n == 0 {
        return None;
    }
    Some(Summary {
        n,
        min: s("min")? * scale,
        p50: s("p50")? * scale,
        p90: s("p90")? * scale,
        p99: s("p99")? * scale,
        max: s("max")? * scale,
        mean: s("mean")? * scale,
        std: s("std_dev").map(|x| x * scale),
        percentiles: Vec::new(),
    })
}

/// METHOD.md's status as far as the file tells: Failed when no request succeeded or any
/// errored; Valid otherwise (requests cut at the end of a timed benchmark are its unfinished
/// requests, as this tool's rate cells count them).
fn status_of(r: &GuidellmReport, b: usize) -> (CellStatus, Option<String>) {
    let (ok, errored, _, total) = r.totals(b);
    if ok == 0 {
        (
            CellStatus::Failed,
            Some(format!("{GUIDELLM}: no request succeeded")),
        )
    } else if errored > 0 {
        let why = format!("{GUIDELLM}: {errored} of {total} requests errored");
        (CellStatus::Failed, Some(why))
    } else {
        (CellStatus::Valid, None)
    }
}

/// The cell's context: GuideLLM's mean prompt tokens of its successful requests, rounded;
/// labelled `≈` unless every one had exactly that many.
fn context_of(r: &GuidellmReport, b: usize) -> (u64, String) {
    let s = |k: &str| r.stat(b, "prompt_token_count", "successful", k);
    let c = s("mean").unwrap_or(0.0).round().max(0.0) as u64;
    let exact = s("min") == Some(c as f64) && s("max") == Some(c as f64);
    let label = format_tokens(c);
    (c, if exact { label } else { format!("≈{label}") })
}

/// The row of one benchmark: a rate row for a constant or Poisson schedule, a decode row at N
/// for N concurrent streams (synchronous: 1; throughput: its max concurrency).
pub fn guidellm_cell(r: &GuidellmReport, bench: &GuidellmBenchmark) -> CellResult {
    let b = bench.index;
    let (context, label) = context_of(r, b);
    let (status, reason) = status_of(r, b);
    let (ok, errored, incomplete, total) = r.totals(b);
    let mut row = match bench.rate {
        Some(rate) => {
            let mut row = CellResult::empty(Phase::Rate, context, &label, 0, status);
            row.request_rate = Some(rate);
            row.achieved_request_rate = Some(None);
            row.failed_requests = Some(Some(errored));
            row.slo_attainment = Some(None);
            row.goodput_rps = Some(None);
            row.goodput_tok_per_s = Some(None);
            if status.has_figures() {
                row.rate = Some(Box::new(rate_figures(r, bench, incomplete, total)));
            }
            row
        }
        None => {
            let n = bench.concurrency.unwrap_or(1);
            CellResult::empty(Phase::Decode, context, &label, n, status)
        }
    };
    row.status_reason = reason;
    row.requests_sent = Some(total);
    row.completed_requests = Some(ok);
    row.token_count_note = Some(format!(
        "{GUIDELLM}: output tokens as GuideLLM counted them (the server's usage, else one per streamed iteration)"
    ));
    if errored > 0 {
        row.errors.insert(GUIDELLM_ERROR_KIND.to_string(), errored);
    }
    if !row.status.has_figures() {
        return row;
    }
    row.output_tokens = r
        .stat(b, "output_token_count", "total", "total_sum")
        .map(|t| t as u64);
    row.total_tok_per_s = r.stat(b, "output_tokens_per_second", "total", "mean");
    row.measured_s = r.num(b, "duration");
    row.ttft_ms_p50 = r.stat(b, "time_to_first_token_ms", "successful", "p50");
    row.ttft_ms = summary(r, b, "time_to_first_token_ms", 1.0);
    row
}

/// A rate row's own figures.
fn rate_figures(
    r: &GuidellmReport,
    bench: &GuidellmBenchmark,
    unfinished: u64,
    total: u64,
) -> RateFigures {
    let b = bench.index;
    RateFigures {
        arrival: bench.strategy.clone(),
        scheduled: total,
        schedule_rate: None,
        max_concurrency: bench.concurrency.filter(|_| bench.capped),
        // GuideLLM's time-weighted concurrency of all its requests: its maximum is the most
        // in flight at once.
        max_in_flight: r
            .stat(b, "request_concurrency", "total", "max")
            .map_or(0, |m| m.round() as u64),
        unfinished_requests: unfinished,
        never_sent: 0,
        output_tok_per_s: r.stat(b, "output_tokens_per_second", "total", "mean"),
        // Its per-second token rates are a mean over the run, not totals over a span.
        input_tok_per_s: None,
        input_output_tok_per_s: None,
        // GuideLLM's report has no one-second peak.
        peak_output_tok_per_s: None,
        span_s: r.num(b, "duration"),
        ttft_ms: summary(r, b, "time_to_first_token_ms", 1.0),
        tpot_ms: summary(r, b, "inter_token_latency_ms", 1.0),
        itl_ms: None,
        e2e_ms: summary(r, b, "request_latency", 1000.0),
        per_user_tok_per_s: None,
        queue_ms: None,
        pacing_error_us: None,
        pacing_warning: None,
        slo: None,
        workload: None,
        stop_reason: None,
    }
}

/// Imports `files` (each a GuideLLM benchmarks report) as one run: one row per benchmark, every
/// benchmark of one model, no two of one cell. Rows come in the plan's order.
pub fn import_guidellm(files: &[ImportFile]) -> Result<ImportedRun, ImportError> {
    let first = files.first().ok_or(ImportError::NoFiles)?;
    let mut parsed: Vec<(&ImportFile, GuidellmReport)> = Vec::new();
    let mut seen: Vec<(String, CellResult)> = Vec::new();
    let mut model: Option<String> = None;
    for f in files {
        let r = parse_guidellm_report(&f.name, &f.bytes)?;
        for bench in &r.benchmarks {
            if let Some(m) = model.as_ref().filter(|m| **m != bench.model) {
                return Err(ImportError::ModelsDiffer {
                    file: f.name.clone(),
                    model: bench.model.clone(),
                    first_file: first.name.clone(),
                    first_model: m.clone(),
                });
            }
            model = Some(bench.model.clone());
            check_new_cell(&mut seen, &f.name, guidellm_cell(&r, bench))?;
        }
        parsed.push((f, r));
    }
    let mut cells: Vec<CellResult> = seen.iter().map(|(_, c)| c.clone()).collect();
    cells.sort_by_key(CellResult::key);
    let times = |key: &str| -> Vec<String> {
        let each = parsed.iter().flat_map(|(_, r)| {
            r.benchmarks
                .iter()
                .filter_map(move |b| r.num(b.index, key).map(epoch_rfc3339))
        });
        each.filter(|t| !t.is_empty()).collect()
    };
    let meta = ImportedMeta {
        tool: GUIDELLM,
        version: parsed[0].1.version.clone(),
        model: model.unwrap_or_default(),
        started_at: times("start_time").into_iter().min().unwrap_or_default(),
        finished_at: times("end_time").into_iter().max(),
        notes: notes_of(&parsed, &seen),
        engine_extra: Vec::new(),
        duration_s: parsed
            .iter()
            .flat_map(|(_, r)| {
                r.benchmarks
                    .iter()
                    .filter_map(|b| r.num(b.index, "duration"))
            })
            .fold(0.0, f64::max),
        // The longest output received: the report keeps what was asked only in its data spec.
        max_output: parsed
            .iter()
            .flat_map(|(_, r)| {
                r.benchmarks
                    .iter()
                    .filter_map(|b| r.stat(b.index, "output_token_count", "total", "max"))
            })
            .map(|m| m.round() as u64)
            .max(),
    };
    Ok(ImportedRun {
        info: imported_run_info(meta, &cells),
        cells,
    })
}

/// The run's notes: what was imported, each benchmark (file, sha256, strategy, GuideLLM's own
/// figures that have no field) and the definitions.
fn notes_of(
    parsed: &[(&ImportFile, GuidellmReport)],
    rows: &[(String, CellResult)],
) -> Vec<String> {
    let mut notes = vec![imported_note(GUIDELLM, "benchmarks reports")];
    let mut row = rows.iter().map(|(_, c)| c);
    for (f, r) in parsed {
        for b in &r.benchmarks {
            let i = b.index;
            notes.push(format!(
                "{}: sha256 {}, {GUIDELLM} {} benchmark {i}: strategy {} (rate {}, concurrency {}), requests_per_second mean {} req/s -> {}",
                f.name,
                f.sha256,
                r.version,
                b.strategy,
                b.rate.map_or("none".into(), |x| x.to_string()),
                b.concurrency.map_or("none".into(), |x| x.to_string()),
                r.stat(i, "requests_per_second", "successful", "mean")
                    .map_or("unknown".into(), |x| x.to_string()),
                row.next().map_or("?".into(), cell_words)
            ));
        }
    }
    notes.extend(
        GUIDELLM_DEFINITIONS
            .iter()
            .map(|d| format!("definitions: {d}")),
    );
    notes.push(GUIDELLM_UNJUDGED.to_string());
    notes
}

#[cfg(test)]
#[path = "tests/import_guidellm.rs"]
mod tests;
