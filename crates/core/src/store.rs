//! The results directory: `run.json` (replaced atomically: temp file, fsync, rename),
//! `cells.jsonl` (one row per measurement, appended and fsynced after every cell, so a crash
//! loses at most the cell in progress), and optionally `requests.jsonl` (per-request records).

use crate::cell::{CellKey, CellResult};
use crate::record::RequestRecord;
use crate::run::RunInfo;
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

/// `run.json`.
pub const RUN_FILE: &str = "run.json";
/// `cells.jsonl`.
pub const CELLS_FILE: &str = "cells.jsonl";
/// `requests.jsonl` (with `--save-requests`).
pub const REQUESTS_FILE: &str = "requests.jsonl";

/// Errors of the results store; each says which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read or written.
    #[error("{path}: {source} (check the output directory's permissions and free space)")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not what this tool writes.
    #[error("{path}: not a results file of this tool ({detail})")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A results directory.
#[derive(Debug, Clone)]
pub struct RunDir {
    root: PathBuf,
}

/// A run read back from disk.
#[derive(Debug, Clone)]
pub struct LoadedRun {
    /// `run.json`.
    pub info: RunInfo,
    /// `cells.jsonl`, one row per measurement; a later row for the same cell replaces an
    /// earlier one (a resumed run re-measures Not run cells).
    pub cells: Vec<CellResult>,
    /// Lines of `cells.jsonl` that could not be read (a torn last line after a kill).
    pub skipped_lines: usize,
}

impl RunDir {
    /// Creates (or reuses, for resume) the directory.
    pub fn create(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io(&root))?;
        Ok(RunDir { root })
    }

    /// Opens an existing results directory without creating anything.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, StoreError> {
        let root = root.into();
        let run = root.join(RUN_FILE);
        if !run.is_file() {
            return Err(StoreError::Io {
                path: run,
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no run.json here; pass a directory written by `llm-inference-bench run`",
                ),
            });
        }
        Ok(RunDir { root })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// Writes `run.json` atomically.
    pub fn write_info(&self, info: &RunInfo) -> Result<(), StoreError> {
        write_atomic(&self.root.join(RUN_FILE), info)
    }

    /// Appends one row to `cells.jsonl` and fsyncs it.
    pub fn append_cell(&self, cell: &CellResult) -> Result<(), StoreError> {
        append_line(&self.root.join(CELLS_FILE), cell)
    }

    /// Appends per-request records of one cell to `requests.jsonl`.
    pub fn append_requests(
        &self,
        key: CellKey,
        records: &[RequestRecord],
    ) -> Result<(), StoreError> {
        #[derive(Serialize)]
        struct Row<'a> {
            cell: CellKey,
            #[serde(flatten)]
            record: &'a RequestRecord,
        }
        let path = self.root.join(REQUESTS_FILE);
        let mut buf = Vec::new();
        for r in records {
            serde_json::to_writer(
                &mut buf,
                &Row {
                    cell: key,
                    record: r,
                },
            )
            .map_err(|e| StoreError::Parse {
                path: path.clone(),
                detail: e.to_string(),
            })?;
            buf.push(b'\n');
        }
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        f.write_all(&buf).map_err(io(&path))?;
        f.sync_data().map_err(io(&path))
    }

    /// Reads the run back.
    pub fn load(&self) -> Result<LoadedRun, StoreError> {
        let run_path = self.root.join(RUN_FILE);
        let text = fs::read_to_string(&run_path).map_err(io(&run_path))?;
        let info: RunInfo = serde_json::from_str(&text).map_err(|e| StoreError::Parse {
            path: run_path.clone(),
            detail: e.to_string(),
        })?;
        let (cells, skipped_lines) = self.load_cells()?;
        Ok(LoadedRun {
            info,
            cells,
            skipped_lines,
        })
    }

    /// Reads `cells.jsonl`, keeping the last row per cell in first-seen order, and counting
    /// lines that do not parse (a torn write) instead of failing on them.
    pub fn load_cells(&self) -> Result<(Vec<CellResult>, usize), StoreError> {
        let path = self.root.join(CELLS_FILE);
        let f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
            Err(e) => return Err(io(&path)(e)),
        };
        let mut cells: Vec<CellResult> = Vec::new();
        let mut skipped = 0;
        for line in BufReader::new(f).lines() {
            let line = line.map_err(io(&path))?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str::<CellResult>(&line) {
                Ok(c) => {
                    if let Some(old) = cells.iter_mut().find(|o| o.key() == c.key()) {
                        *old = c;
                    } else {
                        cells.push(c);
                    }
                }
                Err(_) => skipped += 1,
            }
        }
        Ok((cells, skipped))
    }
}

fn write_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let json = serde_json::to_vec_pretty(value).map_err(|e| StoreError::Parse {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    {
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&json).map_err(io(&tmp))?;
        f.write_all(b"\n").map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    fs::rename(&tmp, path).map_err(io(path))?;
    // Make the rename itself durable.
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

fn append_line<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let mut line = serde_json::to_vec(value).map_err(|e| StoreError::Parse {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    line.push(b'\n');
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io(path))?;
    // One write call per row, so a crash tears at most this row, which `load_cells` skips.
    f.write_all(&line).map_err(io(path))?;
    f.sync_data().map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{CellStatus, Phase};

    #[test]
    fn cells_survive_a_torn_last_line_and_later_rows_win() {
        let dir = std::env::temp_dir().join(format!("llmib-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let rd = RunDir::create(&dir).expect("create");
        let a = CellResult::empty(Phase::Decode, 8192, "8K", 1, CellStatus::NotRun);
        let mut b = a.clone();
        b.status = CellStatus::Valid;
        b.total_tok_per_s = Some(190.7);
        let c = CellResult::empty(Phase::Prefill, 8192, "8K", 1, CellStatus::Valid);
        rd.append_cell(&a).expect("append");
        rd.append_cell(&c).expect("append");
        rd.append_cell(&b).expect("append");
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.join(CELLS_FILE))
            .expect("open");
        f.write_all(b"{\"phase\":\"dec").expect("torn");
        let (cells, skipped) = rd.load_cells().expect("load");
        assert_eq!(skipped, 1);
        assert_eq!(cells.len(), 2);
        assert_eq!(cells[0].status, CellStatus::Valid);
        assert_eq!(cells[0].total_tok_per_s, Some(190.7));
        // Null, not 0, for figures that don't apply.
        let line = serde_json::to_string(&c).expect("json");
        assert!(line.contains("\"total_tok_per_s\":null"), "{line}");
        let _ = fs::remove_dir_all(&dir);
    }
}
