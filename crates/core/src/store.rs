//! The results directory: `run.json` (replaced atomically: temp file, fsync, rename),
//! `cells.jsonl` (one row per measurement, appended and fsynced after every cell, so a crash
//! loses at most the cell in progress), optionally `requests.jsonl` (per-request records), and
//! `telemetry.jsonl` (each measured cell's hardware and server series, one line per cell).
//!
//! Rows are never lost or mixed: before a line is appended, a torn last line (a crash or a full
//! disk mid-write) is cut from the file and kept aside in `<file>.torn`, so the new row starts
//! on a line of its own; a row that does not parse (torn, or invalid UTF-8) is skipped and
//! counted, never fatal to the whole run; and a new run refuses a directory that already holds
//! one ([`RunDir::create_new`]).

use crate::cell::{CellKey, CellResult};
use crate::record::RequestRecord;
use crate::run::RunInfo;
use crate::telemetry::CellTelemetry;
use crate::timetable::ShardSchedule;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// `run.json`.
pub const RUN_FILE: &str = "run.json";
/// `cells.jsonl`.
pub const CELLS_FILE: &str = "cells.jsonl";
/// `requests.jsonl` (with `--save-requests`).
pub const REQUESTS_FILE: &str = "requests.jsonl";
/// `schedules.jsonl` (a shard's rate-cell schedules, for `merge`).
pub const SCHEDULES_FILE: &str = "schedules.jsonl";
/// `telemetry.jsonl` (each measured cell's hardware and server series, one line per cell).
pub const TELEMETRY_FILE: &str = "telemetry.jsonl";

/// Errors of the results store; each says which file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file could not be read or written.
    #[error("{path}: {source}{}", io_advice(source))]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A new run was pointed at a directory that holds another run.
    #[error(
        "{0} already holds a run: pass --resume {0} to finish it, --force to replace it, or another --output"
    )]
    Occupied(PathBuf),
    /// A file is not what this tool writes.
    #[error("{path}: not a results file of this tool ({detail})")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        detail: String,
    },
}

/// What to do about an I/O error, by its kind: only advice that fits it (a missing directory
/// was told to check free space).
fn io_advice(e: &std::io::Error) -> &'static str {
    use std::io::ErrorKind as K;
    match e.kind() {
        K::NotFound => " (check the path: no such results directory or file)",
        K::PermissionDenied | K::ReadOnlyFilesystem => " (check the directory's permissions)",
        K::StorageFull | K::QuotaExceeded | K::WriteZero => {
            " (free some disk space, then --resume)"
        }
        _ => "",
    }
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
    /// Creates the directory of a new run. A directory that already holds a run (`run.json` or
    /// `cells.jsonl`) is refused, since appending would mix two runs under one header, unless
    /// `replace`: then that run's files are removed first.
    pub fn create_new(root: impl Into<PathBuf>, replace: bool) -> Result<Self, StoreError> {
        let root = root.into();
        let files = [
            RUN_FILE,
            CELLS_FILE,
            REQUESTS_FILE,
            SCHEDULES_FILE,
            TELEMETRY_FILE,
        ];
        let held = files.iter().any(|f| root.join(f).exists());
        if held && !replace {
            return Err(StoreError::Occupied(root));
        }
        if held {
            for f in files {
                let p = root.join(f);
                if p.exists() {
                    fs::remove_file(&p).map_err(io(&p))?;
                }
            }
        }
        Self::create(root)
    }

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
        let _whole = WRITES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        write_atomic(&self.root.join(RUN_FILE), info)
    }

    /// Writes `run.json` and ends the process with `code` (a forced quit: the second Ctrl-C),
    /// holding the lock every `run.json` write takes until the process is gone, so no other
    /// thread's write of it is cut halfway (which left `run.json.tmp` behind).
    pub fn write_info_and_exit(&self, info: &RunInfo, code: i32) -> ! {
        let _whole = WRITES
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = write_atomic(&self.root.join(RUN_FILE), info);
        std::process::exit(code)
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
        cut_torn_tail(&path)?;
        append_synced(&path, &buf)
    }

    /// Appends a rate cell's schedule (a shard's, for `merge`) to `schedules.jsonl`.
    pub fn append_schedule(
        &self,
        line: &crate::timetable::ShardSchedule,
    ) -> Result<(), StoreError> {
        append_line(&self.root.join(SCHEDULES_FILE), line)
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
        let mut bytes = Vec::new();
        BufReader::new(f)
            .read_to_end(&mut bytes)
            .map_err(io(&path))?;
        Ok(parse_cells(&bytes))
    }
}

/// Parses the bytes of a `cells.jsonl`: the last row per cell in first-seen order, and how many
/// non-blank lines did not parse (torn, invalid UTF-8, not a row). Never fails: any bytes give
/// an answer (a fuzz target holds it to that).
pub fn parse_cells(bytes: &[u8]) -> (Vec<CellResult>, usize) {
    let mut cells: Vec<CellResult> = Vec::new();
    let mut skipped = 0;
    // Bytes, not `lines()`: one invalid UTF-8 byte must skip its row, not the whole run.
    for line in bytes.split(|&b| b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<CellResult>(line) {
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
    (cells, skipped)
}

/// The rows of a JSON-lines file read back, and the lines that did not parse.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonLines<T> {
    /// The rows that parsed, in file order.
    pub rows: Vec<T>,
    /// 1-based numbers of the non-blank lines that did not parse.
    pub bad_lines: Vec<usize>,
    /// Lines in the file (the last one's number).
    pub lines: usize,
}

impl<T> JsonLines<T> {
    /// Whether every line parsed but, at most, the file's last one: a write torn by a kill,
    /// which lost only the cell in progress (anything else is a damaged file).
    pub fn only_torn_tail(&self) -> bool {
        self.bad_lines.iter().all(|l| *l == self.lines)
    }
}

/// Parses JSON lines of `T`; never fails (each line that does not parse is numbered instead).
fn parse_lines<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> JsonLines<T> {
    let mut out = JsonLines {
        rows: Vec::new(),
        bad_lines: Vec::new(),
        lines: 0,
    };
    // Bytes, not `lines()`: one invalid UTF-8 byte must cost its own line only.
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.lines = i + 1;
        match serde_json::from_slice::<T>(line) {
            Ok(row) => out.rows.push(row),
            Err(_) => out.bad_lines.push(i + 1),
        }
    }
    out
}

/// Parses the bytes of a `requests.jsonl`: each record with the cell it belongs to.
pub fn parse_requests(bytes: &[u8]) -> JsonLines<(CellKey, RequestRecord)> {
    #[derive(serde::Deserialize)]
    struct Row {
        cell: CellKey,
        #[serde(flatten)]
        record: RequestRecord,
    }
    let rows = parse_lines::<Row>(bytes);
    JsonLines {
        rows: rows.rows.into_iter().map(|r| (r.cell, r.record)).collect(),
        bad_lines: rows.bad_lines,
        lines: rows.lines,
    }
}

/// Parses the bytes of a shard's `schedules.jsonl`.
pub fn parse_schedules(bytes: &[u8]) -> JsonLines<ShardSchedule> {
    parse_lines(bytes)
}

/// Records grouped by their cell, each cell's in file order.
pub fn records_by_cell(
    rows: Vec<(CellKey, RequestRecord)>,
) -> BTreeMap<CellKey, Vec<RequestRecord>> {
    let mut by: BTreeMap<CellKey, Vec<RequestRecord>> = BTreeMap::new();
    for (k, r) in rows {
        by.entry(k).or_default().push(r);
    }
    by
}

/// A file's bytes; none when it does not exist (a run without `--save-requests`, a shard
/// without rate cells).
fn read_optional(path: &Path) -> Result<Vec<u8>, StoreError> {
    match fs::read(path) {
        Ok(b) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(path)(e)),
    }
}

impl RunDir {
    /// Reads `requests.jsonl` (empty when there is none), each record with its cell.
    pub fn load_requests(&self) -> Result<JsonLines<(CellKey, RequestRecord)>, StoreError> {
        Ok(parse_requests(&read_optional(
            &self.root.join(REQUESTS_FILE),
        )?))
    }

    /// Reads a shard's `schedules.jsonl` (empty when there is none).
    pub fn load_schedules(&self) -> Result<JsonLines<ShardSchedule>, StoreError> {
        Ok(parse_schedules(&read_optional(
            &self.root.join(SCHEDULES_FILE),
        )?))
    }

    /// Appends one cell's telemetry to `telemetry.jsonl` and fsyncs it.
    pub fn append_telemetry(&self, line: &CellTelemetry) -> Result<(), StoreError> {
        append_line(&self.root.join(TELEMETRY_FILE), line)
    }

    /// Reads `telemetry.jsonl` (empty for a run without one, such as an older run): the last
    /// line per cell (a resumed run measured it again), in first-seen order, and how many lines
    /// did not parse.
    pub fn load_telemetry(&self) -> Result<(Vec<CellTelemetry>, usize), StoreError> {
        Ok(parse_telemetry(&read_optional(
            &self.root.join(TELEMETRY_FILE),
        )?))
    }
}

/// Parses the bytes of a `telemetry.jsonl`: the last line per cell in first-seen order, and
/// how many non-blank lines did not parse. Never fails.
pub fn parse_telemetry(bytes: &[u8]) -> (Vec<CellTelemetry>, usize) {
    let lines = parse_lines::<CellTelemetry>(bytes);
    let mut out: Vec<CellTelemetry> = Vec::new();
    for t in lines.rows {
        match out.iter_mut().find(|o| o.cell == t.cell) {
            Some(old) => *old = t,
            None => out.push(t),
        }
    }
    (out, lines.bad_lines.len())
}

/// Held by every `run.json` write of this process (see [`RunDir::write_info_and_exit`]).
static WRITES: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn write_atomic<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let tmp = path.with_extension("json.tmp");
    let json = serde_json::to_vec_pretty(value).map_err(|e| StoreError::Parse {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    let written = (|| {
        let mut f = File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&json).map_err(io(&tmp))?;
        f.write_all(b"\n").map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
        fs::rename(&tmp, path).map_err(io(path))
    })();
    if let Err(e) = written {
        // A full disk left a 0-byte run.json.tmp beside the last good run.json: the old file
        // stays, the torn one goes.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    // Make the rename itself durable.
    if let Some(dir) = path.parent()
        && let Ok(d) = File::open(dir)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

/// If `path` does not end with a newline (a write torn by a crash or a full disk), moves the
/// bytes after its last newline to `<path>.torn` and truncates the file there, so the next row
/// starts on a line of its own. Returns how many bytes were cut.
pub fn cut_torn_tail(path: &Path) -> Result<u64, StoreError> {
    let mut f = match OpenOptions::new().read(true).write(true).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io(path)(e)),
    };
    let len = f.metadata().map_err(io(path))?.len();
    if len == 0 {
        return Ok(0);
    }
    let mut last = [0u8; 1];
    f.seek(SeekFrom::Start(len - 1)).map_err(io(path))?;
    f.read_exact(&mut last).map_err(io(path))?;
    if last[0] == b'\n' {
        return Ok(0);
    }
    // Find the last newline, reading back in blocks (rows are a few KB).
    let mut end = len;
    let mut keep = 0u64;
    let mut block = vec![0u8; 64 * 1024];
    'scan: while end > 0 {
        let start = end.saturating_sub(block.len() as u64);
        let n = (end - start) as usize;
        f.seek(SeekFrom::Start(start)).map_err(io(path))?;
        f.read_exact(&mut block[..n]).map_err(io(path))?;
        if let Some(i) = block[..n].iter().rposition(|&b| b == b'\n') {
            keep = start + i as u64 + 1;
            break 'scan;
        }
        end = start;
    }
    let mut torn = Vec::new();
    f.seek(SeekFrom::Start(keep)).map_err(io(path))?;
    f.read_to_end(&mut torn).map_err(io(path))?;
    torn.push(b'\n');
    append_synced(&path.with_extension("jsonl.torn"), &torn)?;
    f.set_len(keep).map_err(io(path))?;
    f.sync_data().map_err(io(path))?;
    Ok(len - keep)
}

fn append_line<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let mut line = serde_json::to_vec(value).map_err(|e| StoreError::Parse {
        path: path.to_path_buf(),
        detail: e.to_string(),
    })?;
    line.push(b'\n');
    cut_torn_tail(path)?;
    append_synced(path, &line)
}

/// Appends `bytes` in one write call (so a crash tears at most this write, which
/// [`cut_torn_tail`] and `parse_cells` handle) and fsyncs them.
fn append_synced(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    f.sync_data().map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write that fails leaves the last good file and no temporary one beside it.
    #[test]
    fn a_failed_write_leaves_no_temporary_file() {
        let root = std::env::temp_dir().join(format!("llmib-store-tmp-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("run.json")).expect("a directory where the file goes");
        let e = write_atomic(&root.join("run.json"), &serde_json::json!({"a": 1}));
        assert!(e.is_err(), "a rename onto a directory fails");
        assert!(
            !root.join("run.json.tmp").exists(),
            "the temporary file is removed"
        );
        let _ = fs::remove_dir_all(&root);
    }

    /// Each I/O error gets the advice that fits it, and only that.
    #[test]
    fn io_errors_give_advice_that_fits_them() {
        let e = |kind| {
            StoreError::Io {
                path: PathBuf::from("r/cells.jsonl"),
                source: std::io::Error::from(kind),
            }
            .to_string()
        };
        let missing = e(std::io::ErrorKind::NotFound);
        assert!(
            missing.contains("check the path") && !missing.contains("disk"),
            "{missing}"
        );
        assert!(e(std::io::ErrorKind::StorageFull).contains("free some disk space"));
        assert!(e(std::io::ErrorKind::PermissionDenied).contains("permissions"));
        let other = e(std::io::ErrorKind::InvalidData);
        assert!(!other.contains('('), "no advice that does not fit: {other}");
    }

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
        // The next row is not glued to the fragment: the fragment goes aside, the row lands.
        let d = CellResult::empty(Phase::Decode, 8192, "8K", 2, CellStatus::Valid);
        rd.append_cell(&d).expect("append after a torn line");
        let (cells, skipped) = rd.load_cells().expect("load");
        assert_eq!((cells.len(), skipped), (3, 0));
        let torn = fs::read_to_string(dir.join("cells.jsonl.torn")).expect("kept aside");
        assert_eq!(torn, "{\"phase\":\"dec\n");
        // Invalid UTF-8 in one row skips that row only.
        let mut f = OpenOptions::new()
            .append(true)
            .open(dir.join(CELLS_FILE))
            .expect("open");
        f.write_all(b"{\"phase\":\"\xff\xfe\"}\n")
            .expect("bad bytes");
        let (cells, skipped) = rd.load_cells().expect("a bad byte is not fatal");
        assert_eq!((cells.len(), skipped), (3, 1));
        assert_eq!(cells[0].status, CellStatus::Valid);
        assert_eq!(cells[0].total_tok_per_s, Some(190.7));
        // Null, not 0, for figures that don't apply.
        let line = serde_json::to_string(&c).expect("json");
        assert!(line.contains("\"total_tok_per_s\":null"), "{line}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_new_run_refuses_a_directory_holding_another() {
        let dir = std::env::temp_dir().join(format!("llmib-store-new-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let rd = RunDir::create_new(&dir, false).expect("empty is fine");
        let a = CellResult::empty(Phase::Decode, 8192, "8K", 1, CellStatus::NotRun);
        rd.append_cell(&a).expect("append");
        let e = RunDir::create_new(&dir, false).expect_err("occupied");
        assert!(e.to_string().contains("--resume"), "{e}");
        let rd = RunDir::create_new(&dir, true).expect("replaced");
        assert_eq!(
            rd.load_cells().expect("load").0.len(),
            0,
            "the old rows are gone"
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
