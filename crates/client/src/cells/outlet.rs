//! The way out of a cell: its records finished (error texts redacted, saved to
//! `requests.jsonl` when asked), its errored requests reported, and its row saved to
//! `cells.jsonl` (texts redacted) and announced. The matrix and the open-load sections save a
//! row as soon as it is known, before the next cell starts.

use crate::cells::context::{DriverError, MatrixRun};
use crate::cells::window::into_records;
use crate::progress::events::{ProgressEvent, RequestErrors, Stage};
use crate::wire::stream::Measured;
use llmib_core::redact_text;
use llmib_core::{CellKey, CellResult, Outcome, RequestRecord};

/// The records of a cell's measured requests, error texts redacted, saved to
/// `requests.jsonl` when asked.
pub(crate) fn finished_records(
    m: &MatrixRun<'_>,
    key: CellKey,
    measured: Vec<Measured>,
) -> Vec<RequestRecord> {
    finished_records_as(m, key, measured, None)
}

/// [`finished_records`], saved with request k's `stream` as `ids[k]` (a shard's requests
/// by their index in the whole cell's schedule, so a merge joins them), returned as measured.
pub(crate) fn finished_records_as(
    m: &MatrixRun<'_>,
    key: CellKey,
    measured: Vec<Measured>,
    ids: Option<&[u32]>,
) -> Vec<RequestRecord> {
    let mut records = into_records(measured);
    let secrets = m.engine.secrets();
    for r in &mut records {
        if let Outcome::Error { message, .. } = &mut r.outcome {
            *message = redact_text(message, &secrets);
        }
    }
    if !m.plan.settings.save_requests {
        return records;
    }
    let saved = match ids {
        Some(ids) => m.store.append_requests(key, &with_ids(&records, ids)),
        None => m.store.append_requests(key, &records),
    };
    if let Err(e) = saved {
        m.progress.event(ProgressEvent::Note(format!(
            "could not save request records: {e}"
        )));
    }
    records
}

/// `records` with each `stream` k replaced by `ids[k]` (kept where `ids` has none).
fn with_ids(records: &[RequestRecord], ids: &[u32]) -> Vec<RequestRecord> {
    let mut out = records.to_vec();
    for r in &mut out {
        if let Some(id) = ids.get(r.stream as usize) {
            r.stream = *id;
        }
    }
    out
}

/// Reports the errored requests among `records` (a warm-up's or a burst's, once they are all
/// done: neither re-sends).
pub(crate) fn report_errors(m: &MatrixRun<'_>, stage: Stage, records: &[RequestRecord]) {
    let secrets = m.engine.secrets();
    let mut errors = RequestErrors::new(m.progress, stage);
    for r in records {
        if let Outcome::Error { kind, message } = &r.outcome {
            errors.report(
                r.stream,
                kind,
                || redact_text(message, &secrets),
                None,
                false,
            );
        }
    }
    errors.finish();
}

/// Saves a row (texts redacted) and tells the displays.
pub(crate) fn save(m: &MatrixRun<'_>, mut row: CellResult) -> Result<(), DriverError> {
    // Error texts come from the server, which may echo the key or a URL's password.
    let secrets = m.engine.secrets();
    for s in [
        &mut row.first_error,
        &mut row.status_reason,
        &mut row.token_count_note,
    ]
    .into_iter()
    .flatten()
    {
        *s = redact_text(s, &secrets);
    }
    m.store.append_cell(&row)?;
    m.progress.event(ProgressEvent::CellDone(Box::new(row)));
    Ok(())
}
