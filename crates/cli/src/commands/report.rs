//! `report` and `compare`: thin wrappers over `llmib_report`. All formatting lives in the
//! library so that `run` and `demo` write exactly the same files when they finish.

use anyhow::{Context, bail};
use clap::Args;
use llmib_report::{Comparison, Format, write_file, write_reports};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes a run's report (HTML page, Markdown, CSV, JSON) from its results directory.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Results directory written by `run` or `demo` (holds run.json and cells.jsonl).
    #[arg(value_name = "RUN_DIR")]
    pub run_dir: PathBuf,

    /// Formats to write, comma-separated: html, md, csv, json [default: all four]; vllm (each
    /// rate cell as a `vllm bench serve` result file, in a folder) only when named.
    #[arg(long, short, value_name = "FORMATS", value_delimiter = ',')]
    pub format: Vec<Format>,

    /// Where to write. Default: inside RUN_DIR (report.html, report.md, cells.csv,
    /// results.json, vllm/). A folder (existing, or ending in `/`) gets those names; with one
    /// format, a file name (for vllm alone, the folder of its files); `-` prints that one format
    /// to standard output (vllm: every cell's result in one JSON list).
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// A closed standard output (`… | head`) is the reader's choice, not an error.
fn quiet_broken_pipe(r: std::io::Result<()>) -> anyhow::Result<()> {
    match r {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to standard output"),
    }
}

/// Writes the reports and lists the files written, one per line. An eval directory gets its
/// accuracy pages (`eval.md`, `eval.html`) written again.
pub fn run(args: ReportArgs) -> anyhow::Result<()> {
    if crate::commands::eval::is_eval_dir(&args.run_dir) {
        if args.output.is_some() || !args.format.is_empty() {
            bail!(
                "an eval directory's pages are eval.md and eval.html, written inside it: drop --output and --format"
            );
        }
        let list: String = crate::commands::eval::rewrite_reports(&args.run_dir)?
            .iter()
            .map(|p| format!("{}\n", p.display()))
            .collect();
        return quiet_broken_pipe(std::io::stdout().lock().write_all(list.as_bytes()));
    }
    if args.output.as_deref() == Some(Path::new("-")) {
        let format = match args.format.as_slice() {
            [one] => *one,
            _ => bail!("`--output -` prints one format: add e.g. `--format md`"),
        };
        let text = llmib_report::render(&args.run_dir, format)?;
        return quiet_broken_pipe(std::io::stdout().lock().write_all(text.as_bytes()));
    }
    if let Some(runs) = crate::commands::repeats::repeated_dirs(&args.run_dir) {
        if args.output.is_some() || !args.format.is_empty() {
            bail!(
                "a --num-runs directory's summary is repeats.md and repeats.json, written inside it (each run-I has its own reports): drop --output and --format"
            );
        }
        crate::commands::repeats::rewrite_summary(&args.run_dir, &runs)?;
        let list = [
            crate::commands::repeats::REPEATS_JSON,
            crate::commands::repeats::REPEATS_MD,
        ]
        .map(|f| format!("{}\n", args.run_dir.join(f).display()))
        .concat();
        return quiet_broken_pipe(std::io::stdout().lock().write_all(list.as_bytes()));
    }
    let written = write_reports(&args.run_dir, &args.format, args.output.as_deref())?;
    let list: String = written
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    quiet_broken_pipe(std::io::stdout().lock().write_all(list.as_bytes()))
}

/// Compares runs side by side, each measurement with its ratio to the first run.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Results directories to compare; the first is the baseline every ratio refers to. A
    /// sweep's directory stands for its measured combinations, in run order, and a
    /// `run --num-runs` directory for its runs.
    #[arg(value_name = "RUN_DIR", num_args = 1.., required = true)]
    pub runs: Vec<PathBuf>,

    /// Also write the comparison as a self-contained HTML page to this file.
    #[arg(long, short, value_name = "PATH")]
    pub output: Option<PathBuf>,
}

/// Prints the comparison table, and writes the HTML page when asked.
pub fn run_compare(args: CompareArgs) -> anyhow::Result<()> {
    let runs: Vec<PathBuf> = args
        .runs
        .iter()
        .flat_map(|d| {
            llmib_report::sweep_runs(d)
                .or_else(|| crate::commands::repeats::repeated_dirs(d))
                .unwrap_or_else(|| vec![d.clone()])
        })
        .collect();
    if runs.len() < 2 {
        bail!(
            "compare needs at least two results directories (a sweep counts its measured combinations, a --num-runs directory its runs)"
        );
    }
    let dirs: Vec<&Path> = runs.iter().map(PathBuf::as_path).collect();
    if dirs.iter().all(|d| crate::commands::eval::is_eval_dir(d)) {
        let [a, b] = dirs.as_slice() else {
            bail!("eval runs are compared in pairs: give two directories");
        };
        let text = crate::commands::eval::compare(a, b)?;
        return quiet_broken_pipe(std::io::stdout().lock().write_all(text.as_bytes()));
    }
    let cmp = Comparison::load(&dirs)?;
    // Write the page first: a closed pipe on the table must not lose the file.
    // The runs' titles are their servers' model names: a runaway one is cut on the terminal
    // (the HTML page keeps it whole).
    let mut text: String = cmp
        .to_text()
        .lines()
        .map(|l| llmib_core::terminal_line(l) + "\n")
        .collect();
    if let Some(path) = &args.output {
        write_file(path, &cmp.to_html()?)?;
        text.push_str(&format!("\nWrote {}\n", path.display()));
    }
    quiet_broken_pipe(std::io::stdout().lock().write_all(text.as_bytes()))
}
