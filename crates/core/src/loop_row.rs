//! A cell whose requests looped: the row is **Failed: loop**, its throughput left empty, with
//! bounded evidence (which request, its cycle, where the loop started). A loop makes decode
//! faster than it should be (a speculative drafter guesses every token), so no figure of the
//! cell is kept as the server's speed; the row keeps its identity, errors, queue and prompt
//! checks so the report can say what ran.

use crate::cell::{CellResult, CellStatus, Phase};
use crate::record::RequestRecord;
use crate::repetition::LoopEvidence;

/// Error kind a looping request is counted under in the row's `errors`.
pub const LOOP_ERROR_KIND: &str = "loop";

/// The first looping request of `records` (in send order), with how many looped; `None`
/// when none did.
pub fn loop_evidence<'a>(
    records: impl IntoIterator<Item = &'a RequestRecord>,
) -> Option<LoopEvidence> {
    let mut looped: Vec<&RequestRecord> = records
        .into_iter()
        .filter(|r| r.repetition.is_some())
        .collect();
    looped.sort_by_key(|r| (r.sent_ns, r.stream));
    let first = looped.first()?;
    Some(LoopEvidence {
        requests_looped: looped.len() as u64,
        stream: first.stream,
        sent_ns: first.sent_ns,
        finding: first.repetition.clone()?,
    })
}

/// `row` as a Failed: loop row: identity, errors (with the loops counted), queue, prompt check,
/// times, hardware and shard kept; every figure dropped.
pub fn fail_on_loop(row: CellResult, ev: LoopEvidence) -> CellResult {
    let mut out = CellResult::empty(
        row.phase,
        row.context_tokens,
        &row.context_label,
        row.concurrency,
        CellStatus::Failed,
    );
    out.request_rate = row.request_rate;
    if row.phase == Phase::Session {
        out.session = crate::session::SessionColumns::bare();
        out.session.session_rate = row.session.session_rate;
    }
    out.errors = row.errors;
    *out.errors.entry(LOOP_ERROR_KIND.to_string()).or_default() += ev.requests_looped;
    out.first_error = row.first_error;
    out.queue = row.queue;
    out.prompt_check = row.prompt_check;
    out.requests_sent = row.requests_sent;
    out.started_at = row.started_at;
    out.finished_at = row.finished_at;
    out.hardware = row.hardware;
    out.shard = row.shard;
    out.capacity_limited = row.capacity_limited;
    out.status_reason = Some(ev.reason());
    out.loop_guard = Some(ev);
    out
}

/// `row`, failed for the first loop among `records` if any request looped.
pub fn guard_loops<'a>(
    row: CellResult,
    records: impl IntoIterator<Item = &'a RequestRecord>,
) -> CellResult {
    match loop_evidence(records) {
        Some(ev) => fail_on_loop(row, ev),
        None => row,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Outcome;
    use crate::repetition::{LoopFinding, TextChannel};

    fn rec(stream: u32, sent_ns: u64, cycle: Option<u32>) -> RequestRecord {
        RequestRecord {
            stream,
            sent_ns,
            headers_ns: None,
            chunks: Vec::new(),
            end_ns: sent_ns + 10,
            outcome: Outcome::Cancelled,
            prompt_tokens_reported: None,
            completion_tokens_reported: None,
            cached_tokens_reported: None,
            repetition: cycle.map(|c| LoopFinding {
                channel: TextChannel::Content,
                cycle_bytes: c,
                start_byte: 300,
                span_bytes: 4160,
                sample: "The quick brown fox".into(),
            }),
            structured: None,
            text: None,
        }
    }

    fn valid_row() -> CellResult {
        let mut r = CellResult::empty(Phase::Decode, 8192, "8K", 2, CellStatus::Valid);
        r.total_tok_per_s = Some(1215.0);
        r.per_request_tok_per_s = Some(607.0);
        r.tbt_ms_p50 = Some(1.6);
        r.output_tokens = Some(12_150);
        r.requests_sent = Some(2);
        r.errors.insert("http_500".into(), 1);
        r
    }

    #[test]
    fn no_loop_keeps_the_row() {
        let row = guard_loops(valid_row(), &[rec(0, 5, None), rec(1, 6, None)]);
        assert_eq!(row, valid_row());
    }

    #[test]
    fn a_looping_request_fails_the_cell_and_drops_its_throughput() {
        let records = [rec(1, 9, Some(64)), rec(0, 5, Some(32)), rec(2, 1, None)];
        let row = guard_loops(valid_row(), &records);
        assert_eq!(row.status, CellStatus::Failed);
        assert_eq!(row.total_tok_per_s, None);
        assert_eq!(row.per_request_tok_per_s, None);
        assert_eq!(row.tbt_ms_p50, None);
        assert_eq!(row.output_tokens, None);
        assert_eq!(row.requests_sent, Some(2));
        assert_eq!(row.errors.get("loop"), Some(&2));
        assert_eq!(row.errors.get("http_500"), Some(&1));
        let ev = row.loop_guard.as_ref().expect("evidence");
        // The first sent of the looping requests.
        assert_eq!((ev.stream, ev.sent_ns, ev.finding.cycle_bytes), (0, 5, 32));
        let reason = row.status_reason.as_deref().expect("a reason");
        assert!(
            reason
                .starts_with("loop: stream 0's content repeats a 32-byte cycle 130× from byte 300"),
            "{reason}"
        );
        assert!(reason.contains("1 more request(s)"), "{reason}");
    }

    #[test]
    fn a_session_row_keeps_its_rate_identity() {
        let mut row = CellResult::empty(Phase::Session, 8192, "8K", 0, CellStatus::Valid);
        row.session.session_rate = Some(Some(0.5));
        let failed = guard_loops(row.clone(), &[rec(0, 1, Some(64))]);
        assert_eq!(failed.key(), row.key());
        assert_eq!(failed.status, CellStatus::Failed);
    }
}
