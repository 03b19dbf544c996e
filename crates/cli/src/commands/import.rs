//! `import`: another tool's results as a results directory of this tool, so `report`,
//! `compare` and the hub set them beside this tool's runs. Three tools: `vllm bench serve`
//! (`vllm:FILE`), AIPerf (`aiperf:DIR`, its artifacts directory) and GuideLLM
//! (`guidellm:FILE`, its JSON report); the mappings are `llmib_core::import_vllm`'s,
//! `import_aiperf`'s and `import_guidellm`'s, and `docs/import.md`'s. This module reads the
//! files, writes the directory with the store's own writer, then the reports.

use anyhow::{Context, bail};
use clap::Args;
use llmib_core::{
    CELLS_FILE, ImportFile, ImportedRun, RUN_FILE, RunDir, import_aiperf, import_guidellm,
    import_vllm,
};
use std::path::{Path, PathBuf};

/// The file AIPerf writes its summary to, inside its artifacts directory.
pub const AIPERF_EXPORT: &str = "profile_export_aiperf.json";

/// Imports another tool's result files as one run.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The results, each as `TOOL:PATH`, all of one tool and one model: `vllm:FILE` is a `vllm
    /// bench serve --save-result` file (one row each); `aiperf:DIR` is an `aiperf profile`
    /// artifacts directory (its profile_export_aiperf.json; the file itself is taken too; one
    /// row each); `guidellm:FILE` is a `guidellm run` JSON report (one row per benchmark).
    #[arg(value_name = "TOOL:PATH", required = true, num_args = 1..)]
    pub files: Vec<String>,
    /// The results directory to write (it must not exist, unless --force).
    #[arg(long, short, value_name = "DIR")]
    pub output: PathBuf,
    /// Replace DIR if it exists.
    #[arg(long)]
    pub force: bool,
}

/// The tools whose results can be imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// `vllm bench serve`.
    Vllm,
    /// NVIDIA AIPerf.
    Aiperf,
    /// GuideLLM.
    Guidellm,
}

impl Tool {
    /// The prefix that names the tool on the command line.
    fn prefix(self) -> &'static str {
        match self {
            Tool::Vllm => "vllm",
            Tool::Aiperf => "aiperf",
            Tool::Guidellm => "guidellm",
        }
    }

    /// The tool of a prefix.
    fn of(prefix: &str) -> Option<Tool> {
        [Tool::Vllm, Tool::Aiperf, Tool::Guidellm]
            .into_iter()
            .find(|t| t.prefix() == prefix)
    }
}

/// Imports `args.files` into `args.output` and lists the files written, one per line.
pub fn run(args: ImportArgs) -> anyhow::Result<()> {
    let sources = args
        .files
        .iter()
        .map(|f| read_source(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let tool = sources[0].0;
    if let Some((other, f)) = sources.iter().find(|(t, _)| *t != tool) {
        bail!(
            "{}: a {} result among {} results: import each tool into its own directory",
            f.name,
            other.prefix(),
            tool.prefix()
        );
    }
    let files: Vec<ImportFile> = sources.into_iter().map(|(_, f)| f).collect();
    for p in import(tool, &files, &args.output, args.force)? {
        outln!("{}", p.display());
    }
    Ok(())
}

/// Reads one `TOOL:PATH` argument: its tool, bytes and their sha256 (for `aiperf:DIR`, those of
/// the directory's `profile_export_aiperf.json`).
fn read_source(arg: &str) -> anyhow::Result<(Tool, ImportFile)> {
    let Some((prefix, path)) = arg.split_once(':') else {
        bail!("{arg}: name the tool that wrote it, as vllm:{arg}, aiperf:{arg} or guidellm:{arg}");
    };
    let Some(tool) = Tool::of(prefix) else {
        bail!(
            "{arg}: unknown tool {prefix:?}; vllm:FILE (vllm bench serve), aiperf:DIR (AIPerf) and guidellm:FILE (GuideLLM) can be imported"
        );
    };
    let file = match tool {
        Tool::Aiperf if Path::new(path).is_dir() => Path::new(path).join(AIPERF_EXPORT),
        _ => PathBuf::from(path),
    };
    let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    Ok((
        tool,
        ImportFile {
            name: file.display().to_string(),
            sha256: llmib_core::hex_sha256(&bytes),
            bytes,
        },
    ))
}

/// Writes the run of `files` (all of `tool`) to `out` (replaced with `force`): run.json, the
/// rows, then the reports. Returns the files written. Nothing is written when a file is
/// refused.
pub fn import(
    tool: Tool,
    files: &[ImportFile],
    out: &Path,
    force: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let run: ImportedRun = match tool {
        Tool::Vllm => import_vllm(files)?,
        Tool::Aiperf => import_aiperf(files)?,
        Tool::Guidellm => import_guidellm(files)?,
    };
    let rd = RunDir::create_new(out, force)?;
    rd.write_info(&run.info)?;
    for row in &run.cells {
        rd.append_cell(row)?;
    }
    let mut written = vec![out.join(RUN_FILE), out.join(CELLS_FILE)];
    written.extend(llmib_report::write_reports(out, &[], None)?);
    Ok(written)
}
