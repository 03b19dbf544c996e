//! `import`: another tool's results as a results directory of this tool, so `report`,
//! `compare` and the hub set them beside this tool's runs. Only `vllm bench serve` files
//! (`vllm:FILE`) so far; the mapping is `llmib_core::import_vllm`'s and `docs/import.md`'s. This
//! module reads the files, writes the directory with the store's own writer, then the reports.

use anyhow::{Context, bail};
use clap::Args;
use llmib_core::{CELLS_FILE, RUN_FILE, RunDir, VllmFile, import_vllm};
use std::path::{Path, PathBuf};

/// Imports another tool's result files as one run.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The files, each as `TOOL:FILE`: `vllm:FILE` is a `vllm bench serve --save-result` file
    /// (every file of one model; each becomes one row).
    #[arg(value_name = "TOOL:FILE", required = true, num_args = 1..)]
    pub files: Vec<String>,
    /// The results directory to write (it must not exist, unless --force).
    #[arg(long, short, value_name = "DIR")]
    pub output: PathBuf,
    /// Replace DIR if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Imports `args.files` into `args.output` and lists the files written, one per line.
pub fn run(args: ImportArgs) -> anyhow::Result<()> {
    let files = args
        .files
        .iter()
        .map(|f| read_source(f))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for p in import(&files, &args.output, args.force)? {
        outln!("{}", p.display());
    }
    Ok(())
}

/// Reads one `TOOL:FILE` argument: its bytes and their sha256.
fn read_source(arg: &str) -> anyhow::Result<VllmFile> {
    let Some((tool, path)) = arg.split_once(':') else {
        bail!("{arg}: name the tool that wrote it, as vllm:{arg}");
    };
    if tool != "vllm" {
        bail!("{arg}: unknown tool {tool:?}; only vllm:FILE (vllm bench serve) can be imported");
    }
    let bytes = std::fs::read(path).with_context(|| format!("reading {path}"))?;
    Ok(VllmFile {
        name: path.to_string(),
        sha256: llmib_hub::hex_sha256(&bytes),
        bytes,
    })
}

/// Writes the run of `files` to `out` (replaced with `force`): run.json, one row per file,
/// then the reports. Returns the files written. Nothing is written when a file is refused.
pub fn import(files: &[VllmFile], out: &Path, force: bool) -> anyhow::Result<Vec<PathBuf>> {
    let run = import_vllm(files)?;
    let rd = RunDir::create_new(out, force)?;
    rd.write_info(&run.info)?;
    for row in &run.cells {
        rd.append_cell(row)?;
    }
    let mut written = vec![out.join(RUN_FILE), out.join(CELLS_FILE)];
    written.extend(llmib_report::write_reports(out, &[], None)?);
    Ok(written)
}
