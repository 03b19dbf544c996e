//! Sweeps in the hub: the runs of one `sweep` kept as one group. Each run names its sweep and
//! combination in its own `run.json` (stored in `runs.sweep_key` and `runs.combination` at
//! upload); the sweep's `sweep.json` (the spec and every combination's record, measured or not
//! and why) is stored apart, checked and redacted like a run, and replaced by a later upload of
//! the same sweep, since the file grows as the sweep goes on. Runs and the sweep file may come
//! in any order: the group is whatever is stored when a page is asked for.
//!
//! The ranking of a model's configurations is a pure function ([`rank_configurations`]) over
//! the stored runs' headline figures.

use crate::error::{StoreError, UploadError};
use crate::query::{RunSummary, SUMMARY_COLUMNS, summary};
use crate::sql::{SqlValue, int_of};
use crate::{Store, hex_sha256};
use llmib_core::{SWEEP_FILE, SWEEP_SCHEMA_VERSION, SweepFile};

/// A stored sweep: its file and the newest run of each combination that has one.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSweep {
    /// Its row id.
    pub id: i64,
    /// Its key (the sweep's own identity, [`SweepFile::id`]).
    pub key: String,
    /// When its file was last uploaded (RFC 3339).
    pub uploaded_at: String,
    /// sha256 of the stored file.
    pub sha256: String,
    /// The file, as stored (redacted).
    pub file: SweepFile,
    /// The stored run of each combination, in the sweep's order (combinations with no
    /// stored run are absent; a combination uploaded twice has its newest upload).
    pub runs: Vec<RunSummary>,
}

/// A stored sweep in the list of sweeps.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSummary {
    /// Its key.
    pub key: String,
    /// When its file was last uploaded.
    pub uploaded_at: String,
    /// When the sweep started.
    pub started_at: Option<String>,
    /// Combinations in its file.
    pub combination_count: u64,
    /// Runs stored for it.
    pub run_count: u64,
}

/// What an upload of a sweep file did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweepUploaded {
    /// The sweep's row id.
    pub id: i64,
    /// Its key (its page is `/sweeps/KEY`).
    pub key: String,
    /// Whether an earlier upload of the same sweep was replaced.
    pub replaced: bool,
}

/// One configuration of a model in a ranking: a combination of a sweep and its run's
/// headline figures.
#[derive(Debug, Clone, PartialEq)]
pub struct RankedConfiguration {
    /// The run.
    pub run: RunSummary,
    /// Its best Valid decode tok/s per GPU (per server where the GPU count is unknown).
    pub tok_per_s_per_gpu: Option<f64>,
    /// Whether the figure is per GPU.
    pub per_gpu: bool,
}

/// Ranks a model's configurations (runs measured by sweeps) by their best Valid decode tok/s
/// per GPU, best first. Where no run knows its GPU count, they rank by tok/s per server; where
/// some do, a run without one is not ranked (the two figures do not compare) and comes last,
/// as do runs with no Valid decode cell. Ties keep the older upload first.
pub fn rank_configurations(runs: Vec<RunSummary>) -> Vec<RankedConfiguration> {
    let gpus = |r: &RunSummary| r.gpu_count.filter(|g| *g > 0);
    let any_known = runs.iter().any(|r| gpus(r).is_some());
    let mut ranked: Vec<RankedConfiguration> = runs
        .into_iter()
        .map(|run| {
            let (figure, per_gpu) = match gpus(&run) {
                Some(g) => (run.best_decode_tok_per_s.map(|t| t / f64::from(g)), true),
                None if any_known => (None, false),
                None => (run.best_decode_tok_per_s, false),
            };
            RankedConfiguration {
                run,
                tok_per_s_per_gpu: figure,
                per_gpu,
            }
        })
        .collect();
    ranked.sort_by(|a, b| {
        let key = |c: &RankedConfiguration| c.tok_per_s_per_gpu.unwrap_or(f64::NEG_INFINITY);
        key(b)
            .total_cmp(&key(a))
            .then_with(|| a.run.id.cmp(&b.run.id))
    });
    ranked
}

/// The sweep file checked (its schema, its identity) and redacted again: a server command or
/// a run flag may hold a secret the tool's rules remove. Returns the bytes to store.
fn prepare_sweep(bytes: &[u8], limit: u64) -> Result<(SweepFile, Vec<u8>), UploadError> {
    let size = bytes.len() as u64;
    if size > limit {
        return Err(UploadError::TooLarge { bytes: size, limit });
    }
    let malformed = |detail: String| UploadError::Malformed {
        file: SWEEP_FILE,
        detail,
    };
    let mut value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| malformed(crate::upload::one_line(e)))?;
    let version = value.get("schema_version").and_then(|v| v.as_u64());
    if version.is_some_and(|v| v > u64::from(SWEEP_SCHEMA_VERSION)) {
        return Err(malformed(format!(
            "schema_version {} is newer than this hub's {SWEEP_SCHEMA_VERSION}: upgrade the hub",
            version.unwrap_or_default()
        )));
    }
    llmib_core::redact_strings(&mut value, &[]);
    let file: SweepFile =
        serde_json::from_value(value).map_err(|e| malformed(crate::upload::one_line(e)))?;
    if file.id.is_empty() {
        return Err(malformed(
            "no sweep id (written by an older llm-inference-bench: `sweep --resume` it with this version to give it one)".into(),
        ));
    }
    // The key is a path segment of the sweep's page: kept to what needs no escaping there.
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-".contains(c);
    if file.id.len() > 100 || !file.id.chars().all(plain) {
        return Err(malformed(
            "the sweep id must be at most 100 letters, digits, `.`, `_` or `-`".into(),
        ));
    }
    let stored = serde_json::to_vec_pretty(&file).map_err(|e| malformed(e.to_string()))?;
    Ok((file, stored))
}

impl Store {
    /// Stores a sweep's `sweep.json`, as the holder of `token`, replacing an earlier upload of
    /// the same sweep (its id kept). Refuses (storing nothing) a bad token, a file over the
    /// upload limit, and one that is not a sweep file with an identity.
    pub fn upload_sweep(
        &mut self,
        bytes: &[u8],
        token: Option<&str>,
    ) -> Result<SweepUploaded, UploadError> {
        let token_id = self.check_token(token)??;
        let (file, stored) = prepare_sweep(bytes, self.settings.max_upload_bytes)?;
        let mut tx = self.db_mut().transaction()?;
        let key = file.id.clone();
        let existing = tx.query(
            "SELECT id FROM sweeps WHERE sweep_key = ?",
            &[key.as_str().into()],
        )?;
        let existing = existing.first().map(|r| r.i64(0)).transpose()?;
        let values = vec![
            llmib_core::now_rfc3339().into(),
            SqlValue::Int(token_id),
            Some(file.started_at.clone())
                .filter(|s| !s.is_empty())
                .into(),
            int_of(file.combinations.len()),
            SqlValue::Blob(stored),
        ];
        let id = match existing {
            Some(id) => {
                let mut v = values;
                v.push(SqlValue::Int(id));
                tx.execute(
                    "UPDATE sweeps SET uploaded_at = ?, uploaded_by = ?, started_at = ?,
                        combination_count = ?, sweep_json = ? WHERE id = ?",
                    &v,
                )?;
                id
            }
            None => {
                let mut v = vec![key.as_str().into()];
                v.extend(values);
                let rows = tx.query(
                    "INSERT INTO sweeps (sweep_key, uploaded_at, uploaded_by, started_at,
                        combination_count, sweep_json) VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                    &v,
                )?;
                rows.first()
                    .ok_or_else(|| StoreError::Column {
                        column: 0,
                        detail: "INSERT … RETURNING id gave no row".into(),
                    })?
                    .i64(0)?
            }
        };
        tx.commit()?;
        Ok(SweepUploaded {
            id,
            key,
            replaced: existing.is_some(),
        })
    }

    /// A stored sweep with its runs.
    pub fn sweep(&self, key: &str) -> Result<StoredSweep, StoreError> {
        let db = self.db();
        let rows = db.query(
            "SELECT id, uploaded_at, sweep_json FROM sweeps WHERE sweep_key = ?",
            &[key.into()],
        )?;
        let row = rows
            .first()
            .ok_or_else(|| StoreError::NoSuchSweep(llmib_core::sanitize_terminal(key)))?;
        let bytes = row.blob(2)?;
        let file: SweepFile = serde_json::from_slice(&bytes).map_err(|e| StoreError::Column {
            column: 2,
            detail: format!("the stored sweep.json does not read: {e}"),
        })?;
        let stored = self.sweep_runs(key)?;
        // The newest upload of each combination, in the sweep's order.
        let runs = file
            .combinations
            .iter()
            .filter_map(|c| {
                stored
                    .iter()
                    .rfind(|r| r.combination.as_deref() == Some(c.name.as_str()))
                    .cloned()
            })
            .collect();
        Ok(StoredSweep {
            id: row.i64(0)?,
            key: key.to_string(),
            uploaded_at: row.text(1)?,
            sha256: hex_sha256(&bytes),
            file,
            runs,
        })
    }

    /// Every stored run that names sweep `key`, oldest upload first (a sweep's run uploaded
    /// before its file is here too).
    pub fn sweep_runs(&self, key: &str) -> Result<Vec<RunSummary>, StoreError> {
        self.db()
            .query(
                &format!("SELECT {SUMMARY_COLUMNS} FROM runs WHERE sweep_key = ? ORDER BY id"),
                &[key.into()],
            )?
            .iter()
            .map(summary)
            .collect()
    }

    /// The stored sweeps, newest upload first.
    pub fn sweeps(&self) -> Result<Vec<SweepSummary>, StoreError> {
        self.db()
            .query(
                "SELECT s.sweep_key, s.uploaded_at, s.started_at, s.combination_count,
                    (SELECT COUNT(*) FROM runs r WHERE r.sweep_key = s.sweep_key)
                 FROM sweeps s ORDER BY s.uploaded_at DESC, s.id DESC",
                &[],
            )?
            .iter()
            .map(|r| {
                Ok(SweepSummary {
                    key: r.text(0)?,
                    uploaded_at: r.text(1)?,
                    started_at: r.opt_text(2)?,
                    combination_count: r.int(3)?,
                    run_count: r.int(4)?,
                })
            })
            .collect()
    }

    /// The runs of `model` that sweeps measured, ranked ([`rank_configurations`]).
    pub fn configurations_of(&self, model: &str) -> Result<Vec<RankedConfiguration>, StoreError> {
        let runs = self
            .db()
            .query(
                &format!(
                    "SELECT {SUMMARY_COLUMNS} FROM runs
                     WHERE model = ? AND sweep_key IS NOT NULL ORDER BY id"
                ),
                &[model.into()],
            )?
            .iter()
            .map(summary)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rank_configurations(runs))
    }
}
