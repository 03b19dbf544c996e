//! What every import of another tool's results shares (`import_vllm`, `import_aiperf`,
//! `import_guidellm`): the file as read, the run it becomes, the refusals, numbers read exactly
//! as the other tool wrote them, and the `run.json` and plan built around the imported rows. The
//! tool-specific mapping of fields stays in each tool's module; this one knows no tool.

use crate::cell::{CellResult, Phase};
use crate::meta::{EngineInfo, HardwareInfo, ModelInfo};
use crate::plan::{Plan, PlannedCell, PlannedContext, Settings};
use crate::run::{RunInfo, RunState, SCHEMA_VERSION, ToolInfo};
use crate::size::ContextSpec;
use std::collections::BTreeMap;

/// Why files cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Not JSON, or not the result the tool's prefix promised.
    #[error("{file}: not {what}: {detail}")]
    BadFile {
        /// The file as given.
        file: String,
        /// What it should have been (`a vllm bench serve result file`).
        what: &'static str,
        /// What is wrong, in words.
        detail: String,
    },
    /// Two files measured different models: one results directory holds one model.
    #[error(
        "{file}: model {model} differs from {first_file}'s {first_model}: import each model into its own directory"
    )]
    ModelsDiffer {
        /// The file with the other model.
        file: String,
        /// Its model.
        model: String,
        /// The first file.
        first_file: String,
        /// The first file's model.
        first_model: String,
    },
    /// Two files (or two benchmarks of one file) map to one cell.
    #[error("{file}: its cell {cell} was already imported from {first_file}")]
    SameCell {
        /// The second file.
        file: String,
        /// The cell, in words.
        cell: String,
        /// The file that gave it first.
        first_file: String,
    },
    /// Nothing to import.
    #[error("no file to import")]
    NoFiles,
}

/// One file to import: its name as given, its sha256 and its bytes.
#[derive(Debug, Clone)]
pub struct ImportFile {
    /// The path as the user gave it (named in notes and errors).
    pub name: String,
    /// Lower-case hex sha256 of `bytes`, kept in the run's notes.
    pub sha256: String,
    /// The file's contents.
    pub bytes: Vec<u8>,
}

/// A run made of imported rows: `run.json`'s contents and `cells.jsonl`'s rows.
#[derive(Debug, Clone, PartialEq)]
pub struct ImportedRun {
    /// `run.json`.
    pub info: RunInfo,
    /// The rows, in the plan's order.
    pub cells: Vec<CellResult>,
}

/// Every number of a JSON document, keyed by its path of member names and array indices
/// joined by `.` (`time_to_first_token.p50`, `benchmarks.0.duration`), each parsed by the
/// standard library (correctly rounded): serde_json without its `float_roundtrip` feature may
/// read a decimal one unit in the last place off, and a row must hold the very figure the other
/// tool wrote. `bytes` is valid JSON (it was parsed first), so only strings, nesting, commas and
/// number tokens need telling apart.
pub fn exact_numbers(bytes: &[u8]) -> BTreeMap<String, f64> {
    // One entry per open object (the member being read) or array (the element's index).
    let mut path: Vec<PathStep> = Vec::new();
    let (mut out, mut i) = (BTreeMap::new(), 0usize);
    let mut last_string: Option<(usize, usize)> = None;
    let text = |a: usize, b: usize| std::str::from_utf8(&bytes[a..b]).ok();
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    // An escaped character (a quote among them) is skipped with its backslash.
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                last_string = Some((start, i.min(bytes.len())));
            }
            b'{' => path.push(PathStep::Member(String::new())),
            b'[' => path.push(PathStep::Element(0)),
            b'}' | b']' => {
                path.pop();
            }
            b',' => {
                if let Some(PathStep::Element(n)) = path.last_mut() {
                    *n += 1;
                }
            }
            b':' => {
                let key = last_string.take().and_then(|(a, b)| text(a, b));
                if let (Some(PathStep::Member(slot)), Some(k)) = (path.last_mut(), key) {
                    *slot = k.to_string();
                }
            }
            c if c == b'-' || c.is_ascii_digit() => {
                let start = i;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                if let Some(x) = text(start, i).and_then(|t| t.parse::<f64>().ok()) {
                    let names: Vec<String> = path.iter().map(PathStep::to_string).collect();
                    out.insert(names.join("."), x);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// One step of a path into a JSON document ([`exact_numbers`]).
enum PathStep {
    /// Inside an object: the member's name.
    Member(String),
    /// Inside an array: the element's index.
    Element(usize),
}

impl std::fmt::Display for PathStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathStep::Member(name) => f.write_str(name),
            PathStep::Element(n) => write!(f, "{n}"),
        }
    }
}

/// The cell of a row, in words (`rate 10/s at ≈64`, `decode ≈64 × 4`).
pub fn cell_words(row: &CellResult) -> String {
    match row.request_rate {
        Some(rate) => format!("rate {rate}/s at {}", row.context_label),
        None => format!("decode {} × {}", row.context_label, row.concurrency),
    }
}

/// Fails with [`ImportError::SameCell`] when `row`'s cell is among `seen` (each with the file
/// it came from); otherwise records it.
pub fn check_new_cell(
    seen: &mut Vec<(String, CellResult)>,
    file: &str,
    row: CellResult,
) -> Result<(), ImportError> {
    if let Some((first, _)) = seen.iter().find(|(_, c)| c.key() == row.key()) {
        return Err(ImportError::SameCell {
            file: file.to_string(),
            cell: cell_words(&row),
            first_file: first.clone(),
        });
    }
    seen.push((file.to_string(), row));
    Ok(())
}

/// What `run.json` of imported rows says beyond the rows themselves.
#[derive(Debug, Clone)]
pub struct ImportedMeta {
    /// The other tool, as rows and notes name it (`vllm bench serve`).
    pub tool: &'static str,
    /// Its version where its files record it, `unknown` otherwise.
    pub version: String,
    /// The model its requests named.
    pub model: String,
    /// When it started and finished, RFC 3339 (empty where unknown).
    pub started_at: String,
    /// See `started_at`.
    pub finished_at: Option<String>,
    /// The run's notes: the files, their sha256 and the definitions that differ.
    pub notes: Vec<String>,
    /// Extra engine facts (`imported_from` is always set to `tool`).
    pub engine_extra: Vec<(String, String)>,
    /// The longest window among the imported benchmarks, seconds (the plan's duration).
    pub duration_s: f64,
    /// The plan's max output: what was asked, or the longest output received.
    pub max_output: Option<u64>,
}

/// `run.json` of imported `rows` (in the plan's order): the other tool as the tool, the run
/// Completed, the plan the rows make.
pub fn imported_run_info(meta: ImportedMeta, rows: &[CellResult]) -> RunInfo {
    let mut engine = EngineInfo::default();
    engine
        .extra
        .insert("imported_from".into(), meta.tool.to_string().into());
    for (k, v) in meta.engine_extra {
        engine.extra.insert(k, v.into());
    }
    RunInfo {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: meta.tool.to_string(),
            version: meta.version,
        },
        state: RunState::Completed,
        started_at: meta.started_at,
        finished_at: meta.finished_at,
        url: String::new(),
        engine,
        model: ModelInfo {
            served_model: meta.model,
            model_path: None,
            revision: None,
        },
        hardware: HardwareInfo::default(),
        launch_command: None,
        launch_command_source: None,
        plan: imported_plan(meta.tool, rows, meta.duration_s, meta.max_output),
        notes: meta.notes,
        diagnostics: None,
        sweep: None,
    }
}

/// The first note of every imported run: nothing was sent, whose figures the rows hold.
pub fn imported_note(tool: &str, files: &str) -> String {
    format!(
        "imported from {tool} {files} by {}: no request was sent by this tool; the rows hold {tool}'s figures under {tool}'s definitions",
        ToolInfo::current().label()
    )
}

/// The plan imported rows make: their contexts and cells, no prefill, `duration_s` as the
/// window and `max_output` as the max output.
fn imported_plan(
    tool: &str,
    rows: &[CellResult],
    duration_s: f64,
    max_output: Option<u64>,
) -> Plan {
    let mut contexts: Vec<PlannedContext> = Vec::new();
    for row in rows {
        let decode = row.phase == Phase::Decode;
        match contexts.iter_mut().find(|c| c.tokens == row.context_tokens) {
            Some(c) => c.decode |= decode,
            None => contexts.push(PlannedContext {
                tokens: row.context_tokens,
                label: row.context_label.clone(),
                decode,
                spec: ContextSpec::Tokens(row.context_tokens),
            }),
        }
    }
    let mut concurrency: Vec<u32> = rows
        .iter()
        .filter(|r| r.phase == Phase::Decode)
        .map(|r| r.concurrency)
        .collect();
    concurrency.sort_unstable();
    concurrency.dedup();
    let settings = Settings {
        contexts: contexts.iter().map(|c| c.spec).collect(),
        concurrency,
        duration_s,
        max_output: max_output.map_or(0, |m| m.min(u64::from(u32::MAX)) as u32),
        skip_prefill: true,
        ..Settings::default()
    };
    Plan {
        settings,
        contexts,
        dropped_contexts: Vec::new(),
        decode_dropped: Vec::new(),
        kv_capacity_tokens: None,
        context_length: None,
        decode_test: format!("Imported from {tool}"),
        prefill_mode: "Not measured (imported)".to_string(),
        cells: rows
            .iter()
            .map(|r| PlannedCell {
                key: r.key(),
                label: r.context_label.clone(),
                over_capacity: false,
            })
            .collect(),
    }
}

/// Seconds since the Unix epoch as RFC 3339 UTC (empty for a negative or non-finite time).
pub fn epoch_rfc3339(secs: f64) -> String {
    if !(secs.is_finite() && secs >= 0.0) {
        return String::new();
    }
    crate::time::rfc3339(std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(secs))
}
