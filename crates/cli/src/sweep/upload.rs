//! `upload DIR…`: each directory in turn, a results directory as one run (`commands/upload.rs`) and
//! a sweep directory as one group. Each combination that
//! wrote a results directory is uploaded as a run (its `run.json` names the sweep and the
//! combination, which is how the hub groups them); a run the hub holds already is kept, so a
//! sweep uploaded again as it goes on sends only what is new. Then `sweep.json` (every
//! combination's record, measured or not and why) goes to `POST /api/sweeps`, which replaces
//! the sweep's earlier file. A run that is refused is said and the rest go on; the sweep's
//! page is printed at the end.

use crate::commands::run::Exit;
use crate::commands::upload::{Failure, How, Hub, UploadArgs};
use anyhow::Result;
use llmib_core::{ComboState, SWEEP_FILE, SweepFile};
use serde::Deserialize;
use std::path::Path;

/// What the hub answered to a stored sweep file.
#[derive(Debug, Deserialize)]
struct SweepStored {
    /// The sweep's page, relative to the hub (`/sweeps/KEY`).
    url: String,
}

/// What one sweep's upload did.
#[derive(Debug, Default)]
pub struct SweepUpload {
    /// Runs stored now.
    pub stored: usize,
    /// Runs the hub held already.
    pub kept: usize,
    /// Runs refused (each said on stderr).
    pub refused: usize,
    /// The sweep's page.
    pub page: String,
}

/// Whether `dir` is a sweep directory (it has `sweep.json`).
pub fn is_sweep(dir: &Path) -> bool {
    dir.join(SWEEP_FILE).is_file()
}

/// The sweep's file, refused when it cannot be read or has no identity.
fn read_sweep(dir: &Path) -> Result<(SweepFile, String), Failure> {
    let path = dir.join(SWEEP_FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| Failure::Refused(format!("{}: {e}", path.display())))?;
    let file: SweepFile = serde_json::from_str(&text).map_err(|e| {
        Failure::Refused(format!(
            "{} is not a sweep file ({e}): upload a directory written by `llm-inference-bench sweep`",
            path.display()
        ))
    })?;
    if file.id.is_empty() {
        return Err(Failure::Refused(format!(
            "{} has no sweep id (written by an older llm-inference-bench): run `llm-inference-bench sweep --resume {}` once with this version, then upload again",
            path.display(),
            dir.display()
        )));
    }
    Ok((file, text))
}

/// Uploads the sweep in `dir`: its runs, then its file. Fails only when the sweep file is
/// refused or the hub cannot be reached; a refused run is counted and said.
pub async fn upload_sweep(hub: &Hub, dir: &Path, how: How) -> Result<SweepUpload, Failure> {
    let (file, text) = read_sweep(dir)?;
    let mut done = SweepUpload::default();
    for c in &file.combinations {
        let run = dir.join(&c.name);
        // A combination that wrote results (measured, or cut by its server's death) has a run.
        if c.state == ComboState::Pending || !run.join(llmib_core::RUN_FILE).is_file() {
            continue;
        }
        match hub.upload(&run, how).await {
            Ok(u) => {
                done.stored += 1;
                outln!("  {} → {}", c.name, hub.page(&u));
            }
            Err(Failure::AlreadyStored(_)) => done.kept += 1,
            Err(e @ Failure::Unreachable(_)) => return Err(e),
            Err(e) => {
                done.refused += 1;
                errln!("error: {}: {e}", run.display());
            }
        }
    }
    let body = serde_json::json!({ "files": { SWEEP_FILE: text } });
    let stored: SweepStored = hub.post("/api/sweeps", &body).await?;
    done.page = hub.page_at(&stored.url);
    Ok(done)
}

/// `upload`: each directory in turn; a refused one is reported and the next one tried. An
/// unreachable hub ends the command (the rest would fail the same way).
pub async fn upload(a: UploadArgs) -> Result<Exit> {
    let hub = Hub::new(&a.hub, a.token, "--hub", "--token")?;
    let mut failed = 0usize;
    for (i, dir) in a.dirs.iter().enumerate() {
        let how = How {
            replace: a.replace,
            skip_requests: a.skip_requests,
        };
        let done = if is_sweep(dir) {
            sweep(&hub, dir, how).await
        } else {
            hub.upload(dir, how).await.map(|u| {
                outln!(
                    "uploaded {} → {}{}",
                    dir.display(),
                    hub.page(&u),
                    if u.replaced { " (replaced)" } else { "" }
                );
            })
        };
        match done {
            Ok(()) => {}
            Err(e) => {
                failed += 1;
                errln!("error: {}: {e}", dir.display());
                if let Failure::Unreachable(_) = e {
                    failed += not_tried(a.dirs.len() - i - 1);
                    break;
                }
            }
        }
    }
    if failed > 0 {
        errln!(
            "{failed} of {} director{} not uploaded",
            a.dirs.len(),
            plural_y(a.dirs.len())
        );
        return Ok(Exit::UploadFailed);
    }
    Ok(Exit::Ok)
}

/// Says how many directories an unreachable hub left untried; returns the count.
fn not_tried(rest: usize) -> usize {
    if rest > 0 {
        errln!("{rest} more director{} not tried", plural_y(rest));
    }
    rest
}

/// One sweep directory: its runs and its file, with a line for the sweep's page. A refused
/// run fails the sweep's upload (the sweep file is still sent, so the page shows the rest).
async fn sweep(hub: &Hub, dir: &Path, how: How) -> Result<(), Failure> {
    let done = upload_sweep(hub, dir, how).await?;
    outln!(
        "uploaded sweep {} → {} ({} run{} stored, {} already there)",
        dir.display(),
        done.page,
        done.stored,
        if done.stored == 1 { "" } else { "s" },
        done.kept
    );
    if done.refused > 0 {
        return Err(Failure::Refused(format!(
            "{} run{} of the sweep refused (said above)",
            done.refused,
            if done.refused == 1 { "" } else { "s" }
        )));
    }
    Ok(())
}

fn plural_y(n: usize) -> &'static str {
    if n == 1 { "y" } else { "ies" }
}
