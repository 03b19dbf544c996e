//! The way out of a cell: its records finished (error and answer texts redacted, saved to
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
    redact_records(&mut records, &m.engine.secrets());
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

/// Replaces every secret in the records' error texts and answer texts with `<redacted>`: a
/// server's error can quote the key it was sent, and a model can echo what it was given.
fn redact_records(records: &mut [RequestRecord], secrets: &[&str]) {
    for r in records {
        if let Outcome::Error { message, .. } = &mut r.outcome {
            *message = redact_text(message, secrets);
        }
        if let Some(text) = &mut r.text {
            *text = redact_text(text, secrets);
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_in_error_and_answer_texts_are_redacted() {
        let mut failed = RequestRecord::never_sent(0, 0);
        failed.outcome = Outcome::Error {
            kind: "http_500".into(),
            message: "bad key sk-live-123 given".into(),
        };
        let mut answered = RequestRecord::never_sent(1, 0);
        answered.outcome = Outcome::Finished {
            reason: "length".into(),
        };
        answered.text = Some("you said sk-live-123 and pass:w0rd".into());
        let mut records = vec![failed, answered];
        redact_records(&mut records, &["sk-live-123", "pass:w0rd", ""]);
        let Outcome::Error { message, .. } = &records[0].outcome else {
            panic!("still an error")
        };
        assert_eq!(message, "bad key <redacted> given");
        assert_eq!(
            records[1].text.as_deref(),
            Some("you said <redacted> and <redacted>")
        );
    }
}
