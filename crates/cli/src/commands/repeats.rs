//! `run --num-runs K`: the same plan measured K times, one after another, each run a results
//! directory of its own (`DIR/run-1` … `DIR/run-K`, each a whole run with its reports), then
//! per cell the spread of its headline figures over the runs (`llmib_core::repeated_cells`)
//! in `DIR/repeats.json` and `DIR/repeats.md`, the table also printed. vLLM's `--num-runs`
//! repeats its benchmark the same way; here each run also gets prompts of its own (a fresh
//! prompt seed), so no run is served from another's prefix cache.

use crate::commands::run::{self, Exit};
use crate::config::RunArgs;
use anyhow::{Context, Result, bail};
use clap::Args;
use llmib_core::{RunDir, repeated_cells};
use std::path::{Path, PathBuf};

/// The summary's file names in the parent directory.
pub const REPEATS_JSON: &str = "repeats.json";
/// The summary table.
pub const REPEATS_MD: &str = "repeats.md";

/// The `run` flag that repeats it (per call, as `--upload`: not a config-file key).
#[derive(Debug, Clone, Default, Args)]
pub struct RepeatArgs {
    /// Run the whole plan K times, each run into DIR/run-I (DIR: --output), then write each
    /// cell's mean, standard deviation, min, max and coefficient of variation over the runs
    /// to DIR/repeats.json and DIR/repeats.md.
    #[arg(long, value_name = "K")]
    pub num_runs: Option<u32>,
}

/// What `--num-runs` cannot go with, in one line each; `None` where it can run.
fn refusal(args: &RunArgs, k: u32, upload: bool) -> Option<String> {
    if k == 0 {
        return Some("--num-runs takes at least 1 run".into());
    }
    if args.resume.is_some() {
        return Some(
            "--num-runs starts K new runs: resume one of them on its own (`run --resume DIR/run-I`), then `report DIR` rebuilds the runs' summary".into(),
        );
    }
    if args.sharding.shard.is_some() {
        return Some(
            "--num-runs cannot repeat a shard (every shard must run the one timetable): repeat the whole sharded run instead".into(),
        );
    }
    if upload {
        return Some(
            "--num-runs with --upload: upload the runs afterwards with `llm-inference-bench upload DIR/run-*`".into(),
        );
    }
    None
}

/// Runs the plan `k` times into `--output`'s `run-I`, then writes and prints the summary.
/// Stops early where a run was interrupted or lost its server (the summary covers the runs
/// done); the exit is the first run's that did not end well, else success.
pub async fn run_repeated(args: RunArgs, k: u32, upload: bool) -> Result<Exit> {
    let mut args = args.merge_file()?;
    if let Some(why) = refusal(&args, k, upload) {
        bail!("{why}");
    }
    let parent = args
        .output
        .take()
        .unwrap_or_else(|| run::default_output("runs"));
    std::fs::create_dir_all(&parent).with_context(|| {
        format!(
            "cannot create {} for --num-runs: give a writable --output",
            parent.display()
        )
    })?;
    let mut done = Vec::new();
    let mut exit = Exit::Ok;
    for i in 1..=k {
        let dir = parent.join(format!("run-{i}"));
        errln!("run {i} of {k}: {}", dir.display());
        let mut a = args.clone();
        a.output = Some(dir.clone());
        let ended = run::run(a).await;
        if dir.join(llmib_core::RUN_FILE).exists() {
            done.push(dir);
        }
        let e = match ended {
            Ok(e) => e,
            Err(err) => {
                write_summary(&parent, &done, k)?;
                return Err(err);
            }
        };
        if exit == Exit::Ok {
            exit = e;
        }
        if matches!(e, Exit::Interrupted | Exit::ServerGone) {
            break;
        }
    }
    let table = write_summary(&parent, &done, k)?;
    outln!("{table}");
    errln!("repeats: {}", parent.join(REPEATS_MD).display());
    Ok(exit)
}

/// The runs of a `--num-runs` directory (`run-1`, `run-2`, … holding a `run.json`, by their
/// number), or `None` where `dir` is a run itself or holds no such runs.
pub fn repeated_dirs(dir: &Path) -> Option<Vec<PathBuf>> {
    if dir.join(llmib_core::RUN_FILE).exists() {
        return None;
    }
    let mut runs: Vec<(u32, PathBuf)> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| {
            let p = e.ok()?.path();
            let i = p
                .file_name()?
                .to_str()?
                .strip_prefix("run-")?
                .parse()
                .ok()?;
            p.join(llmib_core::RUN_FILE).exists().then_some((i, p))
        })
        .collect();
    runs.sort();
    (!runs.is_empty()).then(|| runs.into_iter().map(|(_, p)| p).collect())
}

/// `report DIR` on a `--num-runs` directory: the summary written again from its runs as they
/// are now (one resumed since, say), for the runs it planned (its `repeats.json`, else as many
/// as it holds).
pub fn rewrite_summary(parent: &Path, runs: &[PathBuf]) -> Result<()> {
    let planned = std::fs::read(parent.join(REPEATS_JSON))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["planned_runs"].as_u64())
        .and_then(|k| u32::try_from(k).ok())
        .unwrap_or(runs.len() as u32);
    write_summary(parent, runs, planned.max(runs.len() as u32)).map(|_| ())
}

/// Reads the runs in `dirs`, writes `repeats.json` and `repeats.md` into `parent`, and
/// returns the table.
pub fn write_summary(parent: &Path, dirs: &[PathBuf], k: u32) -> Result<String> {
    let mut rows = Vec::new();
    for d in dirs {
        rows.push(RunDir::open(d)?.load()?.cells);
    }
    let cells = repeated_cells(&rows);
    let names: Vec<String> = dirs
        .iter()
        .map(|d| {
            d.file_name()
                .map_or(String::new(), |n| n.to_string_lossy().into())
        })
        .collect();
    let json = serde_json::json!({ "planned_runs": k, "runs": names, "cells": cells });
    let path = parent.join(REPEATS_JSON);
    std::fs::write(&path, serde_json::to_vec_pretty(&json)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let table = llmib_report::repeats_markdown(&cells, dirs.len(), k);
    let path = parent.join(REPEATS_MD);
    std::fs::write(&path, &table).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_cannot_be_repeated_is_refused_in_one_line() {
        let args = RunArgs::default();
        assert_eq!(refusal(&args, 3, false), None);
        assert!(refusal(&args, 0, false).is_some_and(|r| r.contains("at least 1")));
        assert!(refusal(&args, 2, true).is_some_and(|r| r.contains("upload DIR/run-*")));
        let resumed = RunArgs {
            resume: Some(PathBuf::from("r")),
            ..RunArgs::default()
        };
        assert!(refusal(&resumed, 2, false).is_some_and(|r| r.contains("--resume DIR/run-I")));
        let mut sharded = RunArgs::default();
        sharded.sharding.shard = Some(llmib_core::ShardArg::Auto);
        assert!(refusal(&sharded, 2, false).is_some_and(|r| r.contains("cannot repeat a shard")));
    }
}
