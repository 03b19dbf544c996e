//! An upload: the files of one results directory, checked, redacted again and hashed, then
//! stored in one transaction.
//!
//! Checks, in order, each a refusal that stores nothing: the token; the size (before anything
//! is parsed); the file names (run.json and cells.jsonl required, nothing but results files);
//! the results schema version (a newer one is named as such, not as a parse error); every file
//! parsed with `llmib_core`'s own loaders (a torn last line, as a kill leaves, is allowed).
//! Redaction runs again because a run written by an older version may have kept a secret.

use crate::error::UploadError;
use crate::{RunId, Store, hex_sha256};
use llmib_core::{
    CELLS_FILE, REQUESTS_FILE, RUN_FILE, SCHEDULES_FILE, SCHEMA_VERSION, TELEMETRY_FILE,
};
use serde_json::Value;
use std::io::Read;
use std::path::Path;

mod insert;
mod prepared;
mod redaction;

use prepared::Prepared;
pub(crate) use prepared::one_line;

/// The files a results directory may hold (the first two are required).
pub const ALLOWED_FILES: [&str; 5] = [
    RUN_FILE,
    CELLS_FILE,
    REQUESTS_FILE,
    SCHEDULES_FILE,
    TELEMETRY_FILE,
];

/// The files of one upload, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UploadFiles {
    files: Vec<(String, Vec<u8>)>,
}

impl UploadFiles {
    /// No files yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a file (a name from [`ALLOWED_FILES`]; others are refused at upload).
    pub fn add(&mut self, name: impl Into<String>, bytes: Vec<u8>) -> &mut Self {
        self.files.push((name.into(), bytes));
        self
    }

    /// The files, by name, as added.
    pub fn files(&self) -> &[(String, Vec<u8>)] {
        &self.files
    }

    /// The files, by name, as added, taken out.
    pub fn into_files(self) -> Vec<(String, Vec<u8>)> {
        self.files
    }

    /// All bytes together.
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// Reads a results directory's files (those of [`ALLOWED_FILES`] that are there; a
    /// `.torn` side file or anything else is not part of the run). Stops reading past
    /// `max_bytes` in all, with [`UploadError::TooLarge`].
    pub fn from_dir(dir: &Path, max_bytes: u64) -> Result<Self, UploadError> {
        Self::from_dir_except(dir, max_bytes, &[])
    }

    /// [`UploadFiles::from_dir`] without the files named in `skip`, which are not read at all
    /// (`upload --skip-requests`: requests.jsonl can be the largest file by far). A path that
    /// is not a directory is [`UploadError::NoDirectory`], not a missing run.json.
    pub fn from_dir_except(dir: &Path, max_bytes: u64, skip: &[&str]) -> Result<Self, UploadError> {
        if !dir.is_dir() {
            return Err(UploadError::NoDirectory(dir.to_path_buf()));
        }
        let mut out = UploadFiles::new();
        let mut total = 0u64;
        for name in ALLOWED_FILES.into_iter().filter(|n| !skip.contains(n)) {
            let path = dir.join(name);
            let file = match std::fs::File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(source) => return Err(UploadError::Io { path, source }),
            };
            let mut bytes = Vec::new();
            // One byte past the room left tells "over" without reading a huge file whole.
            let room = max_bytes.saturating_sub(total).saturating_add(1);
            file.take(room)
                .read_to_end(&mut bytes)
                .map_err(|source| UploadError::Io { path, source })?;
            total += bytes.len() as u64;
            if total > max_bytes {
                return Err(UploadError::TooLarge {
                    bytes: total,
                    limit: max_bytes,
                });
            }
            out.add(name, bytes);
        }
        Ok(out)
    }
}

/// The results schema version `run.json` claims, before its typed parse: a newer version must
/// be named as such, not reported as whatever field it renamed.
fn check_schema_version(run: &Value) -> Result<(), UploadError> {
    let found = run
        .get("schema_version")
        .and_then(Value::as_u64)
        .ok_or_else(|| UploadError::Malformed {
            file: RUN_FILE,
            detail: "no schema_version number".into(),
        })?;
    if found > u64::from(SCHEMA_VERSION) {
        return Err(UploadError::FutureSchema {
            found,
            supported: SCHEMA_VERSION,
        });
    }
    Ok(())
}

/// Whether JSON-lines bytes parsed but for at most a torn last line (no newline after it, as a
/// kill mid-write leaves): `skipped` is how many lines did not parse.
fn only_torn_tail(bytes: &[u8], skipped: usize) -> bool {
    skipped == 0 || (skipped == 1 && !bytes.ends_with(b"\n"))
}

/// Checks a JSON-lines file with its `llmib_core` loader.
fn check_lines(name: &'static str, bytes: &[u8]) -> Result<(), UploadError> {
    let ok = match name {
        REQUESTS_FILE => llmib_core::parse_requests(bytes).only_torn_tail(),
        SCHEDULES_FILE => llmib_core::parse_schedules(bytes).only_torn_tail(),
        TELEMETRY_FILE => only_torn_tail(bytes, llmib_core::parse_telemetry(bytes).1),
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(UploadError::Malformed {
            file: name,
            detail: "a line other than a torn last one is not a row of this file".into(),
        })
    }
}

/// An upload's first checks, in order, each refusal one clear line: the size (before anything
/// is parsed), the file names (only results files, each once, `run.json` and `cells.jsonl`
/// present) and the results schema version `run.json` claims. Returns `run.json` parsed.
/// `Store::upload` makes them first; a caller that does more before the store (the web layer
/// builds `results.json` to check it against the schema) makes them first too, so its
/// refusals read as the store's.
pub fn precheck(files: &UploadFiles, limit: u64) -> Result<Value, UploadError> {
    let bytes = files.total_bytes();
    if bytes > limit {
        return Err(UploadError::TooLarge { bytes, limit });
    }
    let mut seen: Vec<&str> = Vec::new();
    for (name, _) in &files.files {
        let Some(known) = ALLOWED_FILES.iter().find(|k| **k == name.as_str()) else {
            return Err(UploadError::UnknownFile(llmib_core::sanitize_terminal(
                name,
            )));
        };
        if seen.contains(known) {
            return Err(UploadError::DuplicateFile(name.clone()));
        }
        seen.push(known);
    }
    for required in [RUN_FILE, CELLS_FILE] {
        if !seen.contains(&required) {
            return Err(UploadError::Missing(required));
        }
    }
    let run_bytes = files
        .files
        .iter()
        .find(|(n, _)| n == RUN_FILE)
        .map_or(&[][..], |f| f.1.as_slice());
    let run_value: Value =
        serde_json::from_slice(run_bytes).map_err(|e| UploadError::Malformed {
            file: RUN_FILE,
            detail: one_line(e),
        })?;
    check_schema_version(&run_value)?;
    Ok(run_value)
}

/// Every check of an upload but the token's, and its redaction and hashes.
pub(crate) fn prepare(files: UploadFiles, limit: u64) -> Result<Prepared, UploadError> {
    let run_value = precheck(&files, limit)?;
    // Every name is a known one now: take the allowed list's `'static` spelling of each.
    let files: Vec<(&'static str, Vec<u8>)> = files
        .files
        .into_iter()
        .filter_map(|(name, bytes)| {
            ALLOWED_FILES
                .iter()
                .find(|k| **k == name)
                .map(|k| (*k, bytes))
        })
        .collect();
    let secrets = redaction::secrets_of(&run_value);
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
    let mut stored = Vec::with_capacity(files.len());
    let mut info = None;
    let mut cells = Vec::new();
    for (name, raw) in files {
        let bytes = if name == RUN_FILE {
            let (bytes, parsed) = redaction::redact_run(&raw, run_value.clone(), &secrets)?;
            info = Some(parsed);
            bytes
        } else {
            redaction::redact_lines(raw, &secrets)
        };
        if name == CELLS_FILE {
            let (rows, skipped) = llmib_core::parse_cells(&bytes);
            if !only_torn_tail(&bytes, skipped) {
                return Err(UploadError::Malformed {
                    file: CELLS_FILE,
                    detail: format!("{skipped} lines are not cell rows"),
                });
            }
            cells = rows;
        } else {
            check_lines(name, &bytes)?;
        }
        let sha = hex_sha256(&bytes);
        stored.push((name, bytes, sha));
    }
    let info = info.ok_or(UploadError::Missing(RUN_FILE))?;
    let run_key = stored
        .iter()
        .find(|(n, ..)| *n == RUN_FILE)
        .map(|(.., sha)| sha.clone())
        .unwrap_or_default();
    Ok(Prepared {
        info,
        cells,
        files: stored,
        run_key,
    })
}

impl Store {
    /// Stores one results directory's files, as the holder of `token`. Refuses (storing
    /// nothing) a bad token, an upload over the size limit, a directory that is not a results
    /// directory or does not match the results schema, and a run already stored unless
    /// `replace` (then the stored one is replaced, keeping its id).
    pub fn upload(
        &mut self,
        files: UploadFiles,
        token: Option<&str>,
        replace: bool,
    ) -> Result<RunId, UploadError> {
        let token_id = self.check_token(token)??;
        let prepared = prepare(files, self.settings.max_upload_bytes)?;
        insert::insert_run(self.db_mut(), &prepared, token_id, replace)
    }

    /// [`Store::upload`] of a results directory on disk.
    pub fn upload_dir(
        &mut self,
        dir: &Path,
        token: Option<&str>,
        replace: bool,
    ) -> Result<RunId, UploadError> {
        // The token first: a stranger learns nothing about the limit or the files.
        self.check_token(token)??;
        let files = UploadFiles::from_dir(dir, self.settings.max_upload_bytes)?;
        self.upload(files, token, replace)
    }
}
