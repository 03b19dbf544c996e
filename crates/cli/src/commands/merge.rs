//! `merge`: one results directory from the shard directories of a run spread over several
//! client machines (`run --shard I/N`). The checks and the figures are `llmib_core`'s
//! (`merge_shards`); this module reads the shards, writes the merged run and its reports.

use anyhow::{Context, bail};
use clap::Args;
use llmib_core::{
    CELLS_FILE, CellResult, JsonLines, MergedShard, Phase, REQUESTS_FILE, RUN_FILE, RunDir,
    ShardResults, merge_shards, records_by_cell,
};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Merges shard results into one run.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The shards' results directories (every shard of the run, each once).
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// The merged results directory to write (it must not exist, unless --force).
    #[arg(long, short, value_name = "OUT")]
    pub output: PathBuf,
    /// Replace OUT if it exists.
    #[arg(long)]
    pub force: bool,
}

/// Merges `args.dirs` into `args.output` and lists the files written, one per line.
pub fn run(args: MergeArgs) -> anyhow::Result<()> {
    let written = merge(&args.dirs, &args.output, args.force)?;
    let rows = RunDir::open(&args.output)?.load()?.cells;
    if let Some(note) = prep_note(&rows) {
        errln!("{note}");
    }
    let list: String = written
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    match std::io::stdout().lock().write_all(list.as_bytes()) {
        // A closed standard output (`… | head`) is the reader's choice, not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("writing to standard output"),
    }
}

/// What `merge` says of the slots' preparation: the shard's part that used the most of its
/// slot's (where the shards recorded it), the figure to size the next run's
/// `--shard-prefill-rate` by. `None` where no part recorded its preparation.
fn prep_note(rows: &[CellResult]) -> Option<String> {
    let share = |s: &MergedShard| Some(s.prep_ms? / s.prep_budget_ms.filter(|b| *b > 0.0)?);
    let (row, part, used) = rows
        .iter()
        .flat_map(|r| {
            r.merged
                .iter()
                .flat_map(move |m| m.shards.iter().map(move |s| (r, s)))
        })
        .filter_map(|(r, s)| Some((r, s, share(s)?)))
        .max_by(|a, b| a.2.total_cmp(&b.2))?;
    let cell = match row.phase {
        Phase::Rate => format!(
            "{} at {}/s",
            row.context_label,
            row.request_rate.unwrap_or(0.0)
        ),
        Phase::Decode => format!("{} × {}", row.context_label, row.concurrency),
        Phase::Session => match (row.session.session_rate.flatten(), row.concurrency) {
            (Some(r), _) => format!("{} at {r} sessions/s", row.context_label),
            (None, 0) => row.context_label.clone(),
            (None, s) => format!("{} × {s} sessions", row.context_label),
        },
        _ => row.context_label.clone(),
    };
    let secs = |ms: Option<f64>| ms.unwrap_or(0.0) / 1e3;
    Some(format!(
        "slots: the fullest preparation was shard {}'s of the {} {cell} cell, {:.1} s of its slot's {:.1} s ({:.0} %; above 100 % the shard was late: lower --shard-prefill-rate)",
        part.index,
        row.phase.label().to_lowercase(),
        secs(part.prep_ms),
        secs(part.prep_budget_ms),
        used * 100.0
    ))
}

/// Checks a JSON-lines file read back: a torn last line (a shard killed mid-write lost only
/// the cell in progress, whose row it then lacks) is a warning; any other unreadable line is
/// a damaged file, refused rather than merged into figures that would silently lack it.
fn check_lines<T>(file: &Path, lines: &JsonLines<T>) -> anyhow::Result<()> {
    if !lines.only_torn_tail() {
        bail!(
            "{}: line {} cannot be read (the file is damaged; copy it again from the shard's machine)",
            file.display(),
            lines.bad_lines.first().copied().unwrap_or(0)
        );
    }
    if let Some(l) = lines.bad_lines.first() {
        errln!(
            "warning: {}: its last line ({l}) was cut short and is skipped",
            file.display()
        );
    }
    Ok(())
}

/// Reads one shard's directory: `run.json`, its rows, its records and its schedules.
fn load_shard(dir: &Path) -> anyhow::Result<ShardResults> {
    let rd = RunDir::open(dir)?;
    let run = rd.load()?;
    if run.skipped_lines > 0 {
        errln!(
            "warning: {}: {} lines could not be read and are skipped",
            dir.join(CELLS_FILE).display(),
            run.skipped_lines
        );
    }
    let requests = rd.load_requests()?;
    check_lines(&dir.join(REQUESTS_FILE), &requests)?;
    let schedules = rd.load_schedules()?;
    check_lines(&dir.join(llmib_core::SCHEDULES_FILE), &schedules)?;
    Ok(ShardResults {
        dir: dir.display().to_string(),
        info: run.info,
        cells: run.cells,
        requests: records_by_cell(requests.rows),
        schedules: schedules.rows,
    })
}

/// Whether `out` is one of the shard directories (`--force` would delete its files).
fn is_a_shard(out: &Path, dirs: &[PathBuf]) -> bool {
    let Ok(out) = out.canonicalize() else {
        return false;
    };
    dirs.iter()
        .any(|d| d.canonicalize().is_ok_and(|d| d == out))
}

/// Merges the shard directories `dirs` into `out` (replaced with `force`): run.json, the
/// merged rows, the union of records, then the reports. Returns the files written.
pub fn merge(dirs: &[PathBuf], out: &Path, force: bool) -> anyhow::Result<Vec<PathBuf>> {
    let shards = dirs
        .iter()
        .map(|d| load_shard(d))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let merged = merge_shards(&shards)?;
    if is_a_shard(out, dirs) {
        bail!(
            "{} is one of the shards: write the merged run to another directory",
            out.display()
        );
    }
    let rd = RunDir::create_new(out, force)?;
    rd.write_info(&merged.info)?;
    for c in &merged.cells {
        rd.append_cell(&c.row)?;
    }
    let mut written = vec![out.join(RUN_FILE), out.join(CELLS_FILE)];
    for c in merged.cells.iter().filter(|c| !c.records.is_empty()) {
        rd.append_requests(c.row.key(), &c.records)?;
    }
    if merged.cells.iter().any(|c| !c.records.is_empty()) {
        written.push(out.join(REQUESTS_FILE));
    }
    written.extend(llmib_report::write_reports(out, &[], None)?);
    Ok(written)
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
