//! `results.json`: one versioned document with the run's facts and every measurement, described
//! by `schemas/results.schema.json`. Field names carry their units (`duration_s`,
//! `ttft_ms_p50`). Cells are the rows of `cells.jsonl` unchanged (their field names are the
//! results contract of METHOD.md), in table order, with planned-but-missing cells as `not_run`.
//!
//! Compatibility: fields are only ever added; a rename or a change of meaning bumps
//! [`RESULTS_SCHEMA_VERSION`].

use crate::model::Report;
use crate::{Exporter, Format, ReportError};
use llmib_core::CellResult;
use llmib_core::Diagnostics;
use llmib_core::DroppedContext;
use llmib_core::LoadSettings;
use llmib_core::{EngineInfo, HardwareInfo, ModelInfo};
use llmib_core::{RunState, ToolInfo};
use serde::Serialize;

/// Version of the `results.json` schema.
pub const RESULTS_SCHEMA_VERSION: u32 = 1;

/// What `results.json` says it is, so a reader can tell it from other JSON.
pub const RESULTS_KIND: &str = "llm-inference-bench/results";

/// The JSON exporter.
#[derive(Debug, Clone, Copy, Default)]
pub struct JsonExporter;

/// The whole document.
#[derive(Debug, Serialize)]
pub struct ResultsDoc<'a> {
    /// [`RESULTS_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`RESULTS_KIND`].
    pub kind: &'static str,
    /// The page title (`GLM-5.3-Flash on … ×8`).
    pub title: String,
    /// The summary line under it.
    pub summary: String,
    /// Facts of the run.
    pub run: RunDoc<'a>,
    /// Every measurement.
    pub cells: &'a [CellResult],
}

/// One context of the matrix.
#[derive(Debug, Serialize)]
pub struct ContextDoc<'a> {
    /// Exact prompt tokens.
    pub tokens: u64,
    /// Label (`1019K`).
    pub label: &'a str,
    /// Whether decode cells run at it (the full context is prefill only).
    pub decode: bool,
}

/// The run's facts, flattened from `run.json` with units in the names.
#[derive(Debug, Serialize)]
pub struct RunDoc<'a> {
    /// The tool that measured.
    pub tool: &'a ToolInfo,
    /// `completed`, `interrupted`, …
    pub state: RunState,
    /// Wall-clock start (RFC 3339), null if unknown.
    pub started_at: Option<&'a str>,
    /// Wall-clock end, null if unknown or unfinished.
    pub finished_at: Option<&'a str>,
    /// Endpoint measured, null if unknown.
    pub url: Option<&'a str>,
    /// The served model.
    pub model: &'a ModelInfo,
    /// The Engine card's facts and more.
    pub engine: &'a EngineInfo,
    /// The Hardware card's facts.
    pub hardware: &'a HardwareInfo,
    /// Launch command, secrets redacted.
    pub launch_command: Option<&'a str>,
    /// Where it came from.
    pub launch_command_source: Option<&'a str>,
    /// `Fixed duration`.
    pub decode_test: &'a str,
    /// `Measured during decode warm-up`.
    pub prefill_mode: &'a str,
    /// Decode window length, seconds.
    pub duration_s: f64,
    /// `max_tokens` of decode requests.
    pub max_output_tokens: u32,
    /// Server context length, tokens.
    pub context_length_tokens: Option<u64>,
    /// KV capacity used to predict Over capacity, tokens.
    pub kv_capacity_tokens: Option<u64>,
    /// Contexts of the plan.
    pub contexts: Vec<ContextDoc<'a>>,
    /// Concurrency levels of the plan.
    pub concurrency: &'a [u32],
    /// Contexts asked for but dropped.
    pub dropped_contexts: &'a [DroppedContext],
    /// Notes for the reader (the page's footnotes beyond the seed's).
    pub notes: Vec<String>,
    /// Lines of `cells.jsonl` that could not be read.
    pub skipped_cell_lines: usize,
    /// What the open-loop section was asked to do (rates, arrivals, SLO, capacity search);
    /// absent when the run had none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<&'a LoadSettings>,
    /// The latency percentiles beyond p50, p90 and p99 (`--percentiles`), each row's summaries
    /// carrying them; absent without the flag.
    #[serde(skip_serializing_if = "<[f64]>::is_empty")]
    pub percentiles: &'a [f64],
    /// Startup diagnostics of the server's machine; absent when the run has none (a remote
    /// server).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diagnostics: Option<&'a Diagnostics>,
}

fn non_empty(s: &str) -> Option<&str> {
    Some(s).filter(|s| !s.trim().is_empty())
}

impl<'a> ResultsDoc<'a> {
    /// The document for `report`.
    pub fn new(report: &'a Report) -> Self {
        let i = &report.info;
        let p = &i.plan;
        ResultsDoc {
            schema_version: RESULTS_SCHEMA_VERSION,
            kind: RESULTS_KIND,
            title: report.title(),
            summary: report.summary_line(),
            run: RunDoc {
                tool: &i.tool,
                state: i.state,
                started_at: non_empty(&i.started_at),
                finished_at: i.finished_at.as_deref().and_then(non_empty),
                url: non_empty(&i.url),
                model: &i.model,
                engine: &i.engine,
                hardware: &i.hardware,
                launch_command: report.launch_command(),
                launch_command_source: i.launch_command_source.as_deref(),
                decode_test: &p.decode_test,
                prefill_mode: &p.prefill_mode,
                duration_s: p.settings.duration_s,
                max_output_tokens: p.settings.max_output,
                context_length_tokens: p.context_length,
                kv_capacity_tokens: p.kv_capacity_tokens,
                contexts: p
                    .contexts
                    .iter()
                    .map(|c| ContextDoc {
                        tokens: c.tokens,
                        label: &c.label,
                        decode: c.decode,
                    })
                    .collect(),
                concurrency: &p.settings.concurrency,
                dropped_contexts: &p.dropped_contexts,
                notes: report.notes(),
                skipped_cell_lines: report.skipped_lines,
                load: p.settings.load.as_ref(),
                percentiles: &p.settings.percentiles,
                diagnostics: i.diagnostics.as_ref(),
            },
            cells: &report.cells,
        }
    }
}

impl Exporter for JsonExporter {
    fn format(&self) -> Format {
        Format::Json
    }

    fn render(&self, report: &Report) -> Result<String, ReportError> {
        let mut s = serde_json::to_string_pretty(&ResultsDoc::new(report))?;
        s.push('\n');
        Ok(s)
    }
}
