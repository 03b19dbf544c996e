//! Imports AIPerf's `profile_export_aiperf.json` (the summary `aiperf profile` writes into its
//! artifacts directory) as a run of this tool: one row per file, holding the figures AIPerf
//! reported under AIPerf's own definitions. Where AIPerf's metric means what METHOD.md's does
//! (TTFT, E2E, output tok/s over last end − first send) it takes AIPerf's value; where the
//! definitions differ (AIPerf's "inter token latency" is a per-request TPOT that ends at the
//! response's end, its inter-chunk latency is per streamed chunk) the row still carries
//! AIPerf's value and the run's notes say how it differs; where AIPerf has no equivalent the
//! field is null. Pure: the caller reads the files (`docs/import.md` has the mapping).

use crate::cell::{CellResult, CellStatus, Phase, RateFigures};
use crate::import_common::{
    ImportError, ImportFile, ImportedMeta, ImportedRun, cell_words, check_new_cell, exact_numbers,
    imported_note, imported_run_info,
};
use crate::size::format_tokens;
use crate::stats::Summary;
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

/// The tool whose results are imported, as rows and notes name it.
pub const AIPERF: &str = "AIPerf";

/// The kind under which a row counts the requests AIPerf reported failed.
pub const AIPERF_ERROR_KIND: &str = "aiperf_request_error";

/// What the refusals call a file that is not AIPerf's summary.
const WHAT: &str = "an AIPerf profile_export_aiperf.json";

/// How AIPerf's definitions differ from METHOD.md's, for every imported run's notes (the same
/// list is `docs/import.md`'s table).
pub const AIPERF_DEFINITIONS: [&str; 8] = [
    "TTFT: AIPerf's time_to_first_token (request start to the first content response) is METHOD.md's; every summary figure is AIPerf's own (numpy-linear percentiles, as this tool's)",
    "TPOT (rate.tpot_ms): AIPerf's inter_token_latency is (request latency - TTFT) / (output tokens - 1) per request, the first token excluded as METHOD.md's; it ends at the last response, not at the last token",
    "ITL (tbt_ms, rate.itl_ms): AIPerf's inter_chunk_latency is the gap between streamed content chunks; METHOD.md splits a chunk of k tokens into k gaps (the same where every chunk holds one token)",
    "output tok/s (total_tok_per_s) and measured_s: AIPerf's output_token_throughput over its benchmark_duration (last response - first request: METHOD.md's span for rate rows); for a concurrency run (decode row) the duration holds the ramp and the drain, not METHOD.md's window of N streams",
    "requests: AIPerf's request_throughput (completed / duration) is not METHOD.md's achieved request rate ((sent - 1) / send span): achieved_request_rate is null",
    "per request tok/s and per-user tok/s: AIPerf's output_token_throughput_per_user, 1 / its inter_token_latency per request (METHOD.md: 1 / TPOT)",
    "decode rows (AIPerf --concurrency without a rate): AIPerf kept N requests in flight until the request count was sent and answered: a finite batch whose duration includes the drain, not METHOD.md's window of N streams kept in flight for D seconds",
    "token counts: AIPerf's, from the server's usage with --use-server-token-count, otherwise from AIPerf's own tokenizer (the notes say which)",
];

/// What an imported row cannot say, for every imported run's notes.
pub const AIPERF_UNJUDGED: &str = "not judged from AIPerf's file: server queueing (no queue gauge: Requests queued cannot be told from Valid), prompt lengths against the server's count, repetition loops, the server's token counters; achieved rate, pacing, client queue time and SLO figures are null";

/// The parts of a `profile_export_aiperf.json` the import reads: the run's settings and state;
/// every metric (`{"unit", "avg", "p50", ...}` objects) is read from the exact numbers.
#[derive(Debug, Clone, Deserialize)]
pub struct AiperfExport {
    /// AIPerf's version.
    pub aiperf_version: String,
    /// AIPerf's id of the benchmark.
    #[serde(default)]
    pub benchmark_id: Option<String>,
    /// The settings AIPerf ran with (models, endpoint, datasets, phases).
    pub input_config: Value,
    /// Whether the user or a limit cancelled the run.
    #[serde(default)]
    pub was_cancelled: bool,
    /// Whether every request of the run was accounted for.
    #[serde(default)]
    pub is_complete: Option<bool>,
    /// Why not, where it was not.
    #[serde(default)]
    pub incomplete_reason: Option<String>,
    /// The errors, each `{"error_details": {...}, "count": n}`.
    #[serde(default)]
    pub error_summary: Vec<Value>,
    /// First request, AIPerf's machine's local time (ISO 8601, no zone).
    #[serde(default)]
    pub start_time: Option<String>,
    /// Last response, as `start_time`.
    #[serde(default)]
    pub end_time: Option<String>,
    /// Every number of the file as written, by path ([`exact_numbers`]).
    #[serde(skip)]
    exact: BTreeMap<String, f64>,
    /// Each metric's unit (`time_to_first_token` → `ms`).
    #[serde(skip)]
    units: BTreeMap<String, String>,
}

/// How AIPerf sent its requests: the profiling phase of `input_config`.
#[derive(Debug, Clone, PartialEq)]
struct Load {
    /// `poisson`, `constant`, `gamma`, `concurrency`, ...
    kind: String,
    /// Requests per second, where a rate was asked.
    rate: Option<f64>,
    /// The cap on requests in flight, where one was asked.
    concurrency: Option<u32>,
    /// Requests in the phase.
    requests: Option<u64>,
}

impl AiperfExport {
    /// One figure of one metric (`("time_to_first_token", "p50")`), as AIPerf wrote it.
    pub fn stat(&self, metric: &str, stat: &str) -> Option<f64> {
        self.exact.get(&format!("{metric}.{stat}")).copied()
    }

    /// A metric's unit, as AIPerf wrote it.
    pub fn unit(&self, metric: &str) -> Option<&str> {
        self.units.get(metric).map(String::as_str)
    }

    /// The model named in requests (the first of `input_config.models`).
    pub fn model(&self) -> String {
        let items = &self.input_config["models"]["items"];
        items[0]["name"].as_str().unwrap_or("unknown").to_string()
    }

    /// The profiling phase's load.
    fn load(&self) -> Option<Load> {
        let phases = self.input_config["phases"].as_array()?;
        let p = phases
            .iter()
            .find(|p| p["kind"] == "profiling")
            .or(phases.last())?;
        Some(Load {
            kind: p["type"].as_str().unwrap_or("unknown").to_string(),
            rate: p["rate"].as_f64().filter(|r| r.is_finite() && *r > 0.0),
            concurrency: p["concurrency"]
                .as_u64()
                .map(|c| c.min(u32::MAX as u64) as u32),
            requests: p["requests"].as_u64(),
        })
    }

    /// Requests AIPerf counted failed: its `error_request_count`, else the error summary's.
    fn failed(&self) -> u64 {
        let summed: u64 = self
            .error_summary
            .iter()
            .filter_map(|e| e["count"].as_u64())
            .sum();
        self.stat("error_request_count", "avg")
            .map_or(summed, |c| c as u64)
    }

    /// Requests that succeeded (`request_count`, absent when none did).
    fn completed(&self) -> u64 {
        self.stat("request_count", "avg").map_or(0, |c| c as u64)
    }

    /// Whether AIPerf counted tokens with the server's usage.
    fn server_token_counts(&self) -> bool {
        self.input_config["endpoint"]["use_server_token_count"] == true
    }
}

/// Parses one `profile_export_aiperf.json`.
pub fn parse_aiperf_export(file: &str, bytes: &[u8]) -> Result<AiperfExport, ImportError> {
    let bad = |detail: String| ImportError::BadFile {
        file: file.to_string(),
        what: WHAT,
        detail,
    };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let mut r: AiperfExport =
        serde_json::from_value(value.clone()).map_err(|e| bad(e.to_string()))?;
    r.exact = exact_numbers(bytes);
    r.units = value
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.get("unit")?.as_str()?.to_string())))
        .collect();
    let load = r
        .load()
        .ok_or_else(|| bad("input_config has no profiling phase".into()))?;
    if load.rate.is_none() && load.concurrency.is_none() {
        return Err(bad(format!(
            "its {} phase has neither a request rate nor a concurrency",
            load.kind
        )));
    }
    for (metric, unit) in [("benchmark_duration", "sec"), ("time_to_first_token", "ms")] {
        if r.unit(metric).is_some_and(|u| u != unit) {
            return Err(bad(format!(
                "{metric} is in {:?}, not {unit}",
                r.unit(metric)
            )));
        }
    }
    Ok(r)
}

/// A summary of one of AIPerf's metrics in ms, every figure AIPerf's own (`count`, `min`, `p50`,
/// `p90`, `p99`, `max`, `avg`); `None` where the file lacks one or the unit is not `unit`.
fn summary(r: &AiperfExport, metric: &str, unit: &str) -> Option<Summary> {
    if r.unit(metric)? != unit {
        return None;
    }
    let s = |k: &str| r.stat(metric, k);
    Some(Summary {
        n: s("count")? as u64,
        min: s("min")?,
        p50: s("p50")?,
        p90: s("p90")?,
        p99: s("p99")?,
        max: s("max")?,
        mean: s("avg")?,
        std: s("std"),
        percentiles: Vec::new(),
    })
}

/// METHOD.md's status as far as the file tells: Failed when the run was cancelled or
/// incomplete, when no request completed, or when any failed; Valid otherwise.
fn status_of(r: &AiperfExport) -> (CellStatus, Option<String>) {
    let (failed, completed) = (r.failed(), r.completed());
    let why = if r.was_cancelled {
        Some("the run was cancelled".to_string())
    } else if r.is_complete == Some(false) {
        let reason = r.incomplete_reason.as_deref().unwrap_or("no reason given");
        Some(format!("the run is incomplete ({reason})"))
    } else if completed == 0 {
        Some("no request completed".to_string())
    } else if failed > 0 {
        Some(format!(
            "{failed} of {} requests failed",
            completed + failed
        ))
    } else {
        None
    };
    match why {
        Some(w) => (CellStatus::Failed, Some(format!("{AIPERF}: {w}"))),
        None => (CellStatus::Valid, None),
    }
}

/// The cell's context: AIPerf's mean input sequence length, rounded; labelled `≈` unless every
/// request's prompt had exactly that length.
fn context_of(r: &AiperfExport) -> (u64, String) {
    let s = |k: &str| r.stat("input_sequence_length", k);
    let c = s("avg").unwrap_or(0.0).round().max(0.0) as u64;
    let exact = s("min") == Some(c as f64) && s("max") == Some(c as f64);
    let label = format_tokens(c);
    (c, if exact { label } else { format!("≈{label}") })
}

/// The row of one file: a rate row where AIPerf sent at a request rate (Poisson, constant or
/// gamma arrivals, capped by `--concurrency` where given), a decode row at N where it kept N
/// requests in flight without a rate.
pub fn aiperf_cell(r: &AiperfExport) -> CellResult {
    let (context, label) = context_of(r);
    let (status, reason) = status_of(r);
    let load = r.load().unwrap_or(Load {
        kind: "unknown".into(),
        rate: None,
        concurrency: None,
        requests: None,
    });
    let mut row = match load.rate {
        Some(rate) => {
            let mut row = CellResult::empty(Phase::Rate, context, &label, 0, status);
            row.request_rate = Some(rate);
            row.achieved_request_rate = Some(None);
            row.failed_requests = Some(Some(r.failed()));
            row.slo_attainment = Some(None);
            row.goodput_rps = Some(None);
            row.goodput_tok_per_s = Some(None);
            if status.has_figures() {
                row.rate = Some(Box::new(rate_figures(r, &load)));
            }
            row
        }
        None => {
            let n = load.concurrency.unwrap_or(1);
            CellResult::empty(Phase::Decode, context, &label, n, status)
        }
    };
    row.status_reason = reason;
    with_common(row, r)
}

/// The figures both kinds of row take from the file.
fn with_common(mut row: CellResult, r: &AiperfExport) -> CellResult {
    let (failed, completed) = (r.failed(), r.completed());
    row.requests_sent = Some(completed + failed);
    row.completed_requests = Some(completed);
    let counted = if r.server_token_counts() {
        "the server's usage (--use-server-token-count)"
    } else {
        "AIPerf's tokenizer"
    };
    row.token_count_note = Some(format!(
        "{AIPERF}: output tokens as AIPerf counted them ({counted}); ITL per streamed chunk"
    ));
    if failed > 0 {
        row.errors.insert(AIPERF_ERROR_KIND.to_string(), failed);
        let first = r.error_summary.iter().find_map(|e| {
            let d = &e["error_details"];
            d["message"].as_str().or(d["type"].as_str())
        });
        row.first_error = first.map(str::to_string);
    }
    if !row.status.has_figures() {
        return row;
    }
    row.output_tokens = r.stat("total_output_tokens", "avg").map(|t| t as u64);
    row.total_tok_per_s = r.stat("output_token_throughput", "avg");
    row.measured_s = r.stat("benchmark_duration", "avg");
    row.ttft_ms_p50 = r.stat("time_to_first_token", "p50");
    row.tbt_ms_p50 = r.stat("inter_chunk_latency", "p50");
    row.per_request_tok_per_s = r.stat("output_token_throughput_per_user", "p50");
    row.ttft_ms = summary(r, "time_to_first_token", "ms");
    row.tbt_ms = summary(r, "inter_chunk_latency", "ms");
    row.per_request_tok_per_s_summary =
        summary(r, "output_token_throughput_per_user", "tokens/sec/user");
    row
}

/// A rate row's own figures.
fn rate_figures(r: &AiperfExport, load: &Load) -> RateFigures {
    // Its token totals over its benchmark duration.
    let per_s = |total: &str| {
        let d = r.stat("benchmark_duration", "avg").filter(|d| *d > 0.0)?;
        Some(r.stat(total, "avg")? / d)
    };
    let arrival = match (load.kind.as_str(), r.input_config_smoothness()) {
        ("gamma", Some(s)) => format!("gamma:{s}"),
        (kind, _) => kind.to_string(),
    };
    RateFigures {
        arrival,
        scheduled: load.requests.unwrap_or(r.completed() + r.failed()),
        schedule_rate: None,
        max_concurrency: load.concurrency,
        // AIPerf's sweep line of requests in flight: its maximum is the most at once.
        max_in_flight: r
            .stat("effective_concurrency", "max")
            .map_or(0, |m| m.round() as u64),
        // AIPerf waits for every request of its count: none is cut or left unsent (a cancelled
        // run is Failed and has no figures).
        unfinished_requests: 0,
        never_sent: 0,
        output_tok_per_s: r.stat("output_token_throughput", "avg"),
        input_tok_per_s: per_s("total_isl"),
        input_output_tok_per_s: per_s("total_isl")
            .zip(per_s("total_osl"))
            .map(|(i, o)| i + o),
        // AIPerf's export has no one-second peak.
        peak_output_tok_per_s: None,
        span_s: r.stat("benchmark_duration", "avg"),
        ttft_ms: summary(r, "time_to_first_token", "ms"),
        tpot_ms: summary(r, "inter_token_latency", "ms"),
        itl_ms: summary(r, "inter_chunk_latency", "ms"),
        e2e_ms: summary(r, "request_latency", "ms"),
        per_user_tok_per_s: summary(r, "output_token_throughput_per_user", "tokens/sec/user"),
        queue_ms: None,
        pacing_error_us: None,
        pacing_warning: None,
        slo: None,
        workload: None,
        stop_reason: None,
    }
}

impl AiperfExport {
    /// The gamma shape of the arrivals, where the phase names one.
    fn input_config_smoothness(&self) -> Option<f64> {
        let phases = self.input_config["phases"].as_array()?;
        let p = phases.iter().find(|p| p["kind"] == "profiling")?;
        p["smoothness"]
            .as_f64()
            .or(p["arrival_smoothness"].as_f64())
    }
}

/// AIPerf's naive local time (`2026-12-06T21:00:20.832834`) as RFC 3339, read as UTC: the file
/// names no zone.
fn time_rfc3339(t: Option<&str>) -> Option<String> {
    let t = t?;
    let zoned = t.ends_with('Z') || t.get(19..).is_some_and(|s| s.contains(['+', '-']));
    let text = if zoned {
        t.to_string()
    } else {
        format!("{t}Z")
    };
    crate::time::parse_rfc3339_ns(&text).map(|_| text)
}

/// Imports `files` (each a `profile_export_aiperf.json`) as one run: one row per file, every
/// file of one model, no two files of one cell. Rows come in the plan's order.
pub fn import_aiperf(files: &[ImportFile]) -> Result<ImportedRun, ImportError> {
    let first = files.first().ok_or(ImportError::NoFiles)?;
    let mut parsed: Vec<(&ImportFile, AiperfExport)> = Vec::new();
    let mut seen: Vec<(String, CellResult)> = Vec::new();
    for f in files {
        let r = parse_aiperf_export(&f.name, &f.bytes)?;
        if let Some((_, p)) = parsed.iter().find(|(_, p)| p.model() != r.model()) {
            return Err(ImportError::ModelsDiffer {
                file: f.name.clone(),
                model: r.model(),
                first_file: first.name.clone(),
                first_model: p.model(),
            });
        }
        check_new_cell(&mut seen, &f.name, aiperf_cell(&r))?;
        parsed.push((f, r));
    }
    let mut rows: Vec<(usize, CellResult)> = seen.into_iter().map(|(_, c)| c).enumerate().collect();
    rows.sort_by_key(|(_, c)| c.key());
    let notes = notes_of(&parsed, &rows);
    let first_r = &parsed[0].1;
    let starts: Vec<String> = parsed
        .iter()
        .filter_map(|(_, r)| time_rfc3339(r.start_time.as_deref()))
        .collect();
    let ends: Vec<String> = parsed
        .iter()
        .filter_map(|(_, r)| time_rfc3339(r.end_time.as_deref()))
        .collect();
    let meta = ImportedMeta {
        tool: AIPERF,
        version: first_r.aiperf_version.clone(),
        model: first_r.model(),
        started_at: starts.iter().min().cloned().unwrap_or_default(),
        finished_at: ends.iter().max().cloned(),
        notes,
        engine_extra: vec![(
            "aiperf_endpoint_type".to_string(),
            first_r.input_config["endpoint"]["type"]
                .as_str()
                .unwrap_or("unknown")
                .to_string(),
        )],
        duration_s: parsed
            .iter()
            .filter_map(|(_, r)| r.stat("benchmark_duration", "avg"))
            .fold(0.0, f64::max),
        // What AIPerf asked for where the file records it, else the longest output received.
        max_output: parsed
            .iter()
            .filter_map(|(_, r)| {
                let asked = r.input_config["datasets"][0]["prompts"]["osl"]["mean"].as_f64();
                asked.or(r.stat("output_sequence_length", "max"))
            })
            .map(|m| m.round() as u64)
            .max(),
    };
    let cells: Vec<CellResult> = rows.into_iter().map(|(_, c)| c).collect();
    Ok(ImportedRun {
        info: imported_run_info(meta, &cells),
        cells,
    })
}

/// The run's notes: what was imported, each file (sha256, settings, AIPerf's own figures that
/// have no field) and the definitions.
fn notes_of(parsed: &[(&ImportFile, AiperfExport)], rows: &[(usize, CellResult)]) -> Vec<String> {
    let mut notes = vec![imported_note(AIPERF, "profile exports")];
    for (i, (f, r)) in parsed.iter().enumerate() {
        let row = rows.iter().find(|(j, _)| *j == i).map(|(_, c)| c);
        let load = r.load();
        notes.push(format!(
            "{}: sha256 {}, {AIPERF} {} benchmark {}, start {} (AIPerf's local time, no zone; read as UTC), tokenizer {}, token counts from {}, load {} (rate {}, concurrency {}, {} requests), request_throughput {} req/s -> {}",
            f.name,
            f.sha256,
            r.aiperf_version,
            r.benchmark_id.as_deref().unwrap_or("unknown"),
            r.start_time.as_deref().unwrap_or("unknown"),
            r.input_config["tokenizer"]["name"].as_str().unwrap_or("unknown"),
            if r.server_token_counts() { "the server's usage" } else { "AIPerf's tokenizer" },
            load.as_ref().map_or("unknown", |l| l.kind.as_str()),
            load.as_ref().and_then(|l| l.rate).map_or("none".into(), |x| x.to_string()),
            load.as_ref().and_then(|l| l.concurrency).map_or("none".into(), |x| x.to_string()),
            load.as_ref().and_then(|l| l.requests).map_or("unknown".into(), |x| x.to_string()),
            r.stat("request_throughput", "avg").map_or("unknown".into(), |x| x.to_string()),
            row.map_or("?".into(), cell_words)
        ));
    }
    notes.extend(
        AIPERF_DEFINITIONS
            .iter()
            .map(|d| format!("definitions: {d}")),
    );
    notes.push(AIPERF_UNJUDGED.to_string());
    notes
}

#[cfg(test)]
#[path = "tests/import_aiperf.rs"]
mod tests;
