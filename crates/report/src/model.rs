//! The report model: one run read back from disk, with its rows in table order and everything the
//! page says derived from it (title, summary line, cards, the decode matrix, footnotes). Exporters
//! only format what is here, so the HTML page, the Markdown and the CSV cannot disagree. The
//! notes under the tables are derived from it too, in `notes.rs`.
//!
//! Nothing is invented: a fact the run does not know is `None` here and printed as "unknown".

use crate::number;
use llmib_core::RunInfo;
use llmib_core::format_tokens;
use llmib_core::{CellResult, CellStatus, Phase};
use llmib_core::{CellTelemetry, LoadedRun, RunDir};
use std::collections::BTreeSet;
use std::path::Path;

/// What a card prints for a fact the run does not know.
pub const UNKNOWN: &str = "unknown";

/// A run, ready to be exported.
#[derive(Debug, Clone)]
pub struct Report {
    /// `run.json`.
    pub info: RunInfo,
    /// Every measurement in table order: prefill rows by context, then decode rows by context and
    /// N. Planned cells without a row in `cells.jsonl` appear as Not run (the run stopped before
    /// them), marked by their `status_reason`.
    pub cells: Vec<CellResult>,
    /// Lines of `cells.jsonl` that could not be read.
    pub skipped_lines: usize,
    /// Each measured cell's series (`telemetry.jsonl`); empty for a run without one.
    pub telemetry: Vec<CellTelemetry>,
}

/// One labelled fact of a card.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Field {
    /// Label (`GPU count`).
    pub label: &'static str,
    /// Value, or [`UNKNOWN`].
    pub value: String,
}

/// One of the Hardware, Engine and Run cards.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Card {
    /// `Hardware`, `Engine` or `Run`.
    pub title: &'static str,
    /// Its facts, in the seed's order.
    pub fields: Vec<Field>,
}

/// The decode matrix: rows are contexts, columns are concurrency levels.
#[derive(Debug, Clone)]
pub struct Matrix<'a> {
    /// Row contexts: exact tokens and label, ascending.
    pub contexts: Vec<(u64, String)>,
    /// Column concurrency levels, ascending.
    pub concurrency: Vec<u32>,
    /// `cells[row][col]`; `None` where the run has no such measurement.
    pub cells: Vec<Vec<Option<&'a CellResult>>>,
}

/// The status reason given to planned cells that have no row in `cells.jsonl`.
pub const MISSING_ROW_REASON: &str = "planned, but the run recorded no result for it";

/// Why a status is not Valid, in the seed's words (legend and footnotes).
pub fn status_explanation(status: CellStatus) -> &'static str {
    match status {
        CellStatus::Valid => "ran as designed.",
        CellStatus::RequestsQueued => {
            "the server could not run all requests at once, so some waited in a queue."
        }
        CellStatus::OverCapacity => {
            "not run because this many requests at this context would exceed the server's KV cache."
        }
        CellStatus::NotRun => {
            "the benchmark skipped this measurement during the run, or the run stopped early."
        }
        CellStatus::Failed => "requests errored or streams broke; see the cell's first error.",
    }
}

/// Legend order of the non-Valid statuses (the seed's order, then Failed).
pub const LEGEND_ORDER: [CellStatus; 4] = [
    CellStatus::RequestsQueued,
    CellStatus::OverCapacity,
    CellStatus::NotRun,
    CellStatus::Failed,
];

fn known(v: Option<impl ToString>) -> String {
    v.map(|s| s.to_string())
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| UNKNOWN.to_string())
}

impl Report {
    /// Reads a results directory (`run.json` + `cells.jsonl`, and `telemetry.jsonl` where the
    /// run wrote one).
    pub fn load(run_dir: &Path) -> Result<Report, crate::ReportError> {
        let dir = RunDir::open(run_dir)?;
        let mut report = Report::from_loaded(dir.load()?);
        // The series only draw the Telemetry section: lines that do not parse are left out.
        report.telemetry = dir.load_telemetry()?.0;
        Ok(report)
    }

    /// A run from the bytes of its files, as [`Report::load`] reads them from a directory (the
    /// hub keeps runs in a database, not on disk): `run.json` must parse; unreadable lines of
    /// `cells.jsonl` are counted in `skipped_lines` and those of `telemetry.jsonl` left out,
    /// exactly as a directory's are.
    pub fn from_files(
        run_json: &[u8],
        cells_jsonl: &[u8],
        telemetry_jsonl: Option<&[u8]>,
    ) -> Result<Report, crate::ReportError> {
        let info: RunInfo =
            serde_json::from_slice(run_json).map_err(|e| llmib_core::StoreError::Parse {
                path: llmib_core::RUN_FILE.into(),
                detail: e.to_string(),
            })?;
        // The directory loader's own parsers, so a stored run reads back as its directory did.
        let (cells, skipped_lines) = llmib_core::parse_cells(cells_jsonl);
        let mut report = Report::from_loaded(LoadedRun {
            info,
            cells,
            skipped_lines,
        });
        report.telemetry =
            telemetry_jsonl.map_or_else(Vec::new, |t| llmib_core::parse_telemetry(t).0);
        Ok(report)
    }

    /// Orders the rows and fills planned cells that have no row as Not run.
    pub(crate) fn from_loaded(run: LoadedRun) -> Report {
        let mut cells = run.cells;
        for planned in &run.info.plan.cells {
            if !cells.iter().any(|c| c.key() == planned.key) {
                let mut c = CellResult::empty(
                    planned.key.phase,
                    planned.key.context_tokens,
                    &planned.label,
                    planned.key.concurrency,
                    CellStatus::NotRun,
                );
                c.status_reason = Some(MISSING_ROW_REASON.to_string());
                // An open-loop cell: its rate is part of its identity.
                c.request_rate = planned.key.request_rate();
                // A session row writes its columns, null without figures, as the run does.
                if planned.key.phase == Phase::Session {
                    c.session = llmib_core::SessionColumns::bare();
                }
                cells.push(c);
            }
        }
        // Stable sort: the seed lists every prefill first, then decode by context and N; the
        // open-loop rows follow, rate cells by context and rate, then the capacity rows.
        cells.sort_by_key(|c| c.key());
        Report {
            info: run.info,
            cells,
            skipped_lines: run.skipped_lines,
            telemetry: Vec::new(),
        }
    }

    /// The label of a context: the row's own label, or the token count written like the seed.
    pub(crate) fn context_label(cell: &CellResult) -> String {
        if cell.context_label.trim().is_empty() {
            format_tokens(cell.context_tokens)
        } else {
            cell.context_label.clone()
        }
    }

    /// The model's short name for the title: the last path segment of a repository-style id
    /// (`zai-org/GLM-5.3-Flash` → `GLM-5.3-Flash`), as the seed's title shows it. Names that are
    /// not such an id (spaces, markup, …) are shown whole, so nothing is cut mid-word.
    pub(crate) fn model_short_name(&self) -> String {
        let served = self.info.model.served_model.trim();
        let id_like = served
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.:/@+".contains(c));
        let short = if id_like {
            served
                .trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(served)
        } else {
            served
        };
        if short.is_empty() {
            UNKNOWN.to_string()
        } else {
            short.to_string()
        }
    }

    /// What the title says the model ran on: `RTX PRO 6000 Blackwell Server Edition 96GB ×8`.
    pub(crate) fn hardware_label(&self) -> String {
        let hw = &self.info.hardware;
        let mut s = match (&hw.gpu_name, &hw.cpu) {
            (Some(gpu), _) if !gpu.trim().is_empty() => {
                let mut s = gpu.trim().to_string();
                if let Some(bytes) = hw.gpu_memory_bytes {
                    s.push_str(&format!(" {}GB", number::gpu_gb(bytes)));
                }
                s
            }
            (_, Some(cpu)) if !cpu.trim().is_empty() => cpu.trim().to_string(),
            // No GPU or CPU named (a simulator, a remote server): the device type if known.
            _ => hw
                .device_type
                .as_deref()
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .unwrap_or("unknown hardware")
                .to_string(),
        };
        if let (Some(n), Some(_)) = (hw.gpu_count, &hw.gpu_name) {
            s.push_str(&format!(" ×{n}"));
        }
        s
    }

    /// The page title: `GLM-5.3-Flash on RTX PRO 6000 Blackwell Server Edition 96GB ×8`.
    pub(crate) fn title(&self) -> String {
        format!("{} on {}", self.model_short_name(), self.hardware_label())
    }

    /// Prefill rows, ascending by context.
    pub(crate) fn prefill(&self) -> impl Iterator<Item = &CellResult> {
        self.cells.iter().filter(|c| c.phase == Phase::Prefill)
    }

    /// Decode rows, by context then N.
    pub(crate) fn decode(&self) -> impl Iterator<Item = &CellResult> {
        self.cells.iter().filter(|c| c.phase == Phase::Decode)
    }

    /// The decode matrix.
    pub(crate) fn matrix(&self) -> Matrix<'_> {
        self.phase_matrix(Phase::Decode)
    }

    /// The context × concurrency matrix of one phase's rows (decode: N requests at once;
    /// sessions: S concurrent sessions).
    pub(crate) fn phase_matrix(&self, phase: Phase) -> Matrix<'_> {
        let rows = || self.cells.iter().filter(move |c| c.phase == phase);
        let mut contexts: Vec<(u64, String)> = Vec::new();
        let mut conc = BTreeSet::new();
        for c in rows() {
            if !contexts.iter().any(|(t, _)| *t == c.context_tokens) {
                contexts.push((c.context_tokens, Self::context_label(c)));
            }
            conc.insert(c.concurrency);
        }
        contexts.sort_by_key(|(t, _)| *t);
        let concurrency: Vec<u32> = conc.into_iter().collect();
        let cells = contexts
            .iter()
            .map(|(t, _)| {
                concurrency
                    .iter()
                    .map(|n| rows().find(|c| c.context_tokens == *t && c.concurrency == *n))
                    .collect()
            })
            .collect();
        Matrix {
            contexts,
            concurrency,
            cells,
        }
    }

    /// The summary line under the title: `sglang · 0.5.6… · FP8 · 8 contexts (8K–1019K) ×
    /// 8 concurrency levels (1–128) · prefill at 8K, 16K, …`. Facts the run does not know are
    /// left out rather than printed as "unknown" mid-sentence.
    pub(crate) fn summary_line(&self) -> String {
        let e = &self.info.engine;
        let mut parts: Vec<String> = Vec::new();
        let name = e
            .name
            .clone()
            .or_else(|| e.kind.map(|k| k.name().to_string()));
        for v in [name, e.version.clone(), e.quantization.clone()]
            .into_iter()
            .flatten()
        {
            if !v.trim().is_empty() {
                parts.push(v);
            }
        }
        let m = self.matrix();
        if !m.contexts.is_empty() {
            let range = |first: String, last: String| {
                if first == last {
                    first
                } else {
                    format!("{first}–{last}")
                }
            };
            let ctx = range(
                m.contexts.first().map(|c| c.1.clone()).unwrap_or_default(),
                m.contexts.last().map(|c| c.1.clone()).unwrap_or_default(),
            );
            let conc = range(
                m.concurrency
                    .first()
                    .map(u32::to_string)
                    .unwrap_or_default(),
                m.concurrency.last().map(u32::to_string).unwrap_or_default(),
            );
            parts.push(format!(
                "{} {} ({ctx}) × {} {} ({conc})",
                m.contexts.len(),
                if m.contexts.len() == 1 {
                    "context"
                } else {
                    "contexts"
                },
                m.concurrency.len(),
                if m.concurrency.len() == 1 {
                    "concurrency level"
                } else {
                    "concurrency levels"
                },
            ));
        }
        let prefill: Vec<String> = self.prefill().map(Self::context_label).collect();
        if !prefill.is_empty() {
            parts.push(format!("prefill at {}", prefill.join(", ")));
        }
        parts.join(" · ")
    }

    /// The Hardware, Engine and Run cards with every field of the seed.
    pub(crate) fn cards(&self) -> Vec<Card> {
        let i = &self.info;
        let hw = &i.hardware;
        let e = &i.engine;
        let f = |label, value| Field { label, value };
        let vram = match (hw.gpu_memory_bytes, hw.gpu_count) {
            (Some(b), Some(n)) => {
                let gb = number::gpu_gb(b);
                format!(
                    "{} GB ({n} × {gb} GB)",
                    number::count(gb.saturating_mul(u64::from(n)))
                )
            }
            (Some(b), None) => format!("{} GB per GPU", number::gpu_gb(b)),
            _ => UNKNOWN.to_string(),
        };
        let engine_name = e
            .name
            .clone()
            .or_else(|| e.kind.map(|k| k.name().to_string()));
        let repository = e
            .repository
            .clone()
            .or_else(|| e.kind.and_then(|k| k.repository()).map(str::to_string));
        let s = &i.plan.settings;
        vec![
            Card {
                title: "Hardware",
                fields: vec![
                    f("Type", known(hw.device_type.as_ref())),
                    f("GPU", known(hw.gpu_name.as_ref())),
                    f("GPU count", known(hw.gpu_count)),
                    f("VRAM", vram),
                    f("OS", known(hw.os.as_ref())),
                ],
            },
            Card {
                title: "Engine",
                fields: vec![
                    f("Engine", known(engine_name)),
                    f("Version", known(e.version.as_ref())),
                    f("Quantization", known(e.quantization.as_ref())),
                    f("Backend", known(e.backend.as_ref())),
                    f("Repository", known(repository)),
                    f("Build", known(e.build.as_ref())),
                    f("Commit", known(e.commit.as_ref())),
                ],
            },
            Card {
                title: "Run",
                fields: vec![
                    f("Served model", known(Some(&i.model.served_model))),
                    f("Revision", known(i.model.revision.as_ref())),
                    f("Benchmark tool", i.tool.label()),
                    f("Decode test", known(Some(&i.plan.decode_test))),
                    f("Prefill mode", known(Some(&i.plan.prefill_mode))),
                    f(
                        "Time per measurement",
                        number::setting_seconds(s.duration_s),
                    ),
                    f("Max output", number::tokens(u64::from(s.max_output))),
                ]
                .into_iter()
                // The route measured, where it is not the default completions: a server can be
                // fast on one route and slow on the one its agents use.
                .chain(
                    (s.api != llmib_core::Api::Completions)
                        .then(|| f("API", format!("{} ({})", s.api.label(), s.api.path()))),
                )
                .chain(request_controls(&s.request).map(|t| f("Request controls", t)))
                // What the prompts were cut from, where not the filler words.
                .chain(s.prompt_text.as_ref().map(prompt_text))
                .collect(),
            },
        ]
    }

    /// The launch command, if the run knows it (already redacted by the runner).
    pub(crate) fn launch_command(&self) -> Option<&str> {
        self.info
            .launch_command
            .as_deref()
            .filter(|s| !s.trim().is_empty())
    }

    /// Non-Valid statuses present in the results, in legend order: the legend explains only
    /// what the page shows.
    pub(crate) fn statuses_present(&self) -> Vec<CellStatus> {
        LEGEND_ORDER
            .into_iter()
            .filter(|s| self.cells.iter().any(|c| c.status == *s))
            .collect()
    }

    /// The status legend, one sentence per status present: `Over capacity: not run because …`.
    pub(crate) fn legend(&self) -> Vec<String> {
        self.statuses_present()
            .into_iter()
            .map(|s| format!("{}: {}", s.label(), status_explanation(s)))
            .collect()
    }

    /// A cell's name in words: `1K × 4`, `1K at 2.5/s` (a rate cell), `1K` (prefill, capacity).
    pub(crate) fn cell_label(c: &CellResult) -> String {
        match c.phase {
            Phase::Rate => format!("{} at {}", Self::context_label(c), requested(c)),
            Phase::Prefill | Phase::Capacity => Self::context_label(c),
            Phase::Decode | Phase::Burst | Phase::Session => {
                format!("{} × {}", Self::context_label(c), c.concurrency)
            }
            // P injected into N streams.
            Phase::MixedPrefill => {
                format!("{} into {} streams", Self::context_label(c), c.concurrency)
            }
        }
    }
}

/// The prompts' source file (`--prompt-text`), where not the filler: speculative decoding and
/// caches behave on prose or code as they do not on filler words, so the card says which text:
/// `prose.txt (12,345 bytes, sha256 0123456789ab…)`.
fn prompt_text(p: &llmib_core::PromptTextSource) -> Field {
    let short: String = p.sha256.chars().take(12).collect();
    let size = number::count(p.bytes);
    Field {
        label: "Prompt text",
        value: format!("{} ({size} bytes, sha256 {short}…)", p.name),
    }
}

/// What every request carried beyond the tool's keys, in words (`None`: nothing).
fn request_controls(r: &llmib_core::RequestControls) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(t) = r.temperature {
        parts.push(format!("temperature {t}"));
    }
    if let Some(p) = r.top_p {
        parts.push(format!("top_p {p}"));
    }
    if let Some(seed) = r.seed {
        parts.push(format!("seed {seed}"));
    }
    if let Some(extra) = &r.extra_body {
        parts.push(serde_json::Value::Object(extra.clone()).to_string());
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// Whether a row belongs to the Load section (rate cells and capacity rows).
pub(crate) fn is_load(c: &CellResult) -> bool {
    matches!(c.phase, Phase::Rate | Phase::Capacity)
}

/// The requested rate of a rate row (`—` when the row has none).
pub(crate) fn requested(c: &CellResult) -> String {
    number::or_null(c.request_rate, number::req_rate)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use llmib_core::RunState;
    use std::path::PathBuf;

    /// The seed run of `testdata`, read back.
    pub(crate) fn golden() -> LoadedRun {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
        RunDir::open(dir)
            .and_then(|d| d.load())
            .expect("golden run")
    }

    #[test]
    fn a_hardware_summary_gets_its_table_in_markdown_and_html() {
        let mut run = golden();
        assert!(crate::table::Table::hardware(&Report::from_loaded(run.clone())).is_none());
        run.cells[1].hardware = Some(llmib_core::HwSummary {
            samples: 30,
            gpus: 8,
            source: "nvml".into(),
            gpu_util_pct_mean: Some(93.4),
            gpu_util_pct_max: Some(99.0),
            power_w_mean: Some(4321.0),
            vram_used_bytes_max: Some(3 << 40),
            ..Default::default()
        });
        let r = Report::from_loaded(run);
        let md = crate::Format::Markdown
            .exporter()
            .render(&r)
            .expect("markdown");
        assert!(md.contains("## Hardware during each cell"), "{md}");
        assert!(md.contains("| 93% | 99% | 4321 W |"), "{md}");
        let html = crate::Format::Html.exporter().render(&r).expect("html");
        assert!(html.contains("id=\"hardware-table\""));
        assert!(html.contains("3,072.0 GiB"));
    }

    #[test]
    fn from_files_reads_as_load_does() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
        let run = std::fs::read(dir.join("run.json")).expect("run.json");
        let cells = std::fs::read(dir.join("cells.jsonl")).expect("cells.jsonl");
        let a = Report::from_files(&run, &cells, None).expect("from files");
        let b = Report::load(&dir).expect("load");
        let json = |r: &Report| crate::Format::Json.exporter().render(r).expect("json");
        assert_eq!(json(&a), json(&b));
        assert!(Report::from_files(b"{", &cells, None).is_err());
    }

    #[test]
    fn planned_cells_without_a_row_show_as_not_run() {
        let mut run = golden();
        run.cells.retain(|c| c.context_label != "512K");
        run.info.state = RunState::Interrupted;
        let r = Report::from_loaded(run);
        assert_eq!(r.cells.len(), 73);
        let missing: Vec<&CellResult> = r
            .cells
            .iter()
            .filter(|c| c.status_reason.as_deref() == Some(MISSING_ROW_REASON))
            .collect();
        assert_eq!(missing.len(), 9);
        assert!(missing.iter().all(|c| c.status == CellStatus::NotRun));
        assert!(r.notes().iter().any(|n| n.contains("interrupted")));
    }

    #[test]
    fn unknown_facts_print_as_unknown_and_titles_do_not_guess() {
        let mut run = golden();
        run.info.hardware = Default::default();
        run.info.engine = Default::default();
        run.info.model.revision = None;
        let r = Report::from_loaded(run);
        assert_eq!(r.title(), "GLM-5.3-Flash on unknown hardware");
        let cards = r.cards();
        let value = |card: usize, label: &str| {
            cards[card]
                .fields
                .iter()
                .find(|f| f.label == label)
                .map(|f| f.value.clone())
        };
        assert_eq!(value(0, "GPU").as_deref(), Some(UNKNOWN));
        assert_eq!(value(0, "VRAM").as_deref(), Some(UNKNOWN));
        assert_eq!(value(1, "Version").as_deref(), Some(UNKNOWN));
        assert_eq!(value(2, "Revision").as_deref(), Some(UNKNOWN));
        // Unknown engine facts are left out of the summary line, not printed as "unknown".
        assert!(
            r.summary_line().starts_with("8 contexts (8K–1019K)"),
            "{}",
            r.summary_line()
        );
    }

    #[test]
    fn short_names_only_for_repository_ids() {
        let mut run = golden();
        run.info.model.served_model = "<b>x/y</b>".to_string();
        assert_eq!(Report::from_loaded(run).model_short_name(), "<b>x/y</b>");
        let mut run = golden();
        run.info.model.served_model = "qwen3:8b".to_string();
        assert_eq!(Report::from_loaded(run).model_short_name(), "qwen3:8b");
    }
}
