//! Burst / E2E cells: a finite batch of R requests with at most N in flight, timed from the
//! first send to the last end, as a client that sends a batch experiences it (the seed tool's
//! "Burst / E2E" mode). Apart from sustained decode: nothing is clipped to a window, every
//! request runs to its end, and the throughput includes the ramp and the tail.
//!
//! Figures (pure functions over the requests' records):
//! - throughput = Σ completion tokens / wall time, requests/s = R / wall time;
//! - E2E latency (send to end), TTFT, TTST (first to second token) and TBT (per token between
//!   consecutive chunks of a request) as distributions;
//! - max-token hits: requests that ended on the length limit;
//! - the steady-state sub-window (`crate::burst_steady`): the figures of the span in which at
//!   least 95 % of N were in flight, without the ramp and the tail.
//!
//! Completion tokens come from the server's final usage where a request reported it, else from
//! the request's counted chunks.

use crate::cell::{BurstFigures, CellResult, CellStatus};
use crate::plan::PlannedCell;
use crate::record::{Outcome, RequestRecord};
use crate::stats::{Summary, weighted_summary};
use crate::verdict::{ErrorTally, bare_result, prompt_check, tally_mismatch};

const NS_PER_MS: f64 = 1e6;

/// The burst figures of `records` (all on one clock); `None` when there are none.
pub fn burst_figures(records: &[RequestRecord]) -> Option<BurstFigures> {
    let first = records.iter().map(|r| r.sent_ns).min()?;
    let last = records.iter().map(|r| r.end_ns).max()?;
    let wall_s = last.saturating_sub(first) as f64 / 1e9;
    let (mut e2e, mut ttft, mut ttst, mut gaps) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut tokens, mut completed, mut hits, mut usage) = (0u64, 0u64, 0u64, 0u64);
    for r in records {
        e2e.push(r.end_ns.saturating_sub(r.sent_ns) as f64 / NS_PER_MS);
        if let Some(t) = r.ttft_ns() {
            ttft.push(t as f64 / NS_PER_MS);
        }
        if let [a, b, ..] = r.chunks.as_slice() {
            ttst.push(b.t_ns.saturating_sub(a.t_ns) as f64 / NS_PER_MS);
        }
        for w in r.chunks.windows(2) {
            let k = u64::from(w[1].tokens.max(1));
            gaps.push((
                w[1].t_ns.saturating_sub(w[0].t_ns) as f64 / NS_PER_MS / k as f64,
                k,
            ));
        }
        match r.completion_tokens_reported {
            Some(n) => {
                tokens += n;
                usage += 1;
            }
            None => tokens += r.tokens(),
        }
        if let Outcome::Finished { reason } = &r.outcome {
            completed += 1;
            if reason == "length" {
                hits += 1;
            }
        }
    }
    let n = records.len() as u64;
    let per_s = |x: f64| if wall_s > 0.0 { x / wall_s } else { 0.0 };
    Some(BurstFigures {
        requests: n,
        completed,
        output_tokens: tokens,
        wall_s,
        tok_per_s: per_s(tokens as f64),
        requests_per_s: per_s(n as f64),
        e2e_ms: Summary::of_vec(&mut e2e),
        ttft_ms: Summary::of_vec(&mut ttft),
        ttst_ms: Summary::of_vec(&mut ttst),
        tbt_ms: weighted_summary(&mut gaps),
        max_token_hits: hits,
        usage_counted: usage,
        steady: None,
    })
}

/// The row of a burst cell. Any request error (warm-up included) or prompt mismatch fails it,
/// as in sustained decode; a burst without a token fails too.
pub fn burst_result(
    cell: &PlannedCell,
    records: &[RequestRecord],
    warmup_errors: ErrorTally,
    expected_prompt_tokens: u64,
    prompt_tolerance: u64,
) -> CellResult {
    let mut errors = warmup_errors;
    errors.add_records(records, "");
    let pc = prompt_check(expected_prompt_tokens, prompt_tolerance, records);
    tally_mismatch(&mut errors, &pc, "");
    let f = burst_figures(records).map(|mut f| {
        f.steady = crate::burst_steady::steady_figures(records, cell.key.concurrency);
        f
    });
    let failed = !errors.by_kind.is_empty() || f.as_ref().is_none_or(|f| f.output_tokens == 0);
    let mut row = if failed {
        let mut r = bare_result(cell, CellStatus::Failed, None);
        if errors.first.is_none() {
            errors.first = Some("the burst produced no token".into());
        }
        r.requests_sent = Some(records.len() as u64);
        r
    } else {
        bare_result(cell, CellStatus::Valid, None)
    };
    if let (false, Some(f)) = (failed, f) {
        row.total_tok_per_s = Some(f.tok_per_s);
        row.ttft_ms_p50 = f.ttft_ms.as_ref().map(|s| s.p50);
        row.tbt_ms_p50 = f.tbt_ms.as_ref().map(|s| s.p50);
        row.ttft_ms = f.ttft_ms.clone();
        row.tbt_ms = f.tbt_ms.clone();
        row.completed_requests = Some(f.completed);
        row.output_tokens = Some(f.output_tokens);
        row.measured_s = Some(f.wall_s);
        row.requests_sent = Some(f.requests);
        row.token_count_source = Some(if f.usage_counted == f.requests {
            crate::meta::TokenCountSource::ServerUsageFinalTokenizerChunks
        } else {
            crate::meta::TokenCountSource::ChunkCount
        });
        row.burst = Some(f);
        // Requests the model ended before max-output (`--respect-eos`): every request counts.
        let all = crate::figures::Window {
            start_ns: 0,
            end_ns: u64::MAX,
        };
        row.requests_stopped_early = crate::verdict::stopped_early(records, all);
    }
    row.errors = errors.by_kind;
    row.first_error = errors.first;
    row.prompt_check = Some(pc);
    crate::loop_row::guard_loops(row, records)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Chunk;

    fn rec(sent_ms: u64, chunk_ms: &[u64], usage: Option<u64>, reason: &str) -> RequestRecord {
        let ms = 1_000_000;
        RequestRecord {
            stream: 0,
            sent_ns: sent_ms * ms,
            headers_ns: None,
            chunks: chunk_ms
                .iter()
                .map(|t| Chunk {
                    t_ns: t * ms,
                    tokens: 1,
                })
                .collect(),
            end_ns: chunk_ms.last().copied().unwrap_or(sent_ms) * ms,
            outcome: Outcome::Finished {
                reason: reason.into(),
            },
            prompt_tokens_reported: Some(100),
            completion_tokens_reported: usage,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        }
    }

    /// Two requests at once, then a third: 0–40 ms, 0–50 ms, 40–100 ms.
    #[test]
    fn known_answers() {
        let rs = [
            rec(0, &[10, 20, 30, 40], Some(4), "length"),
            rec(0, &[20, 30, 40, 50], Some(4), "length"),
            rec(40, &[60, 80, 100], None, "stop"),
        ];
        let f = burst_figures(&rs).expect("figures");
        assert_eq!((f.requests, f.completed, f.max_token_hits), (3, 3, 2));
        assert_eq!(
            (f.output_tokens, f.usage_counted),
            (11, 2),
            "usage, then chunks"
        );
        assert!((f.wall_s - 0.1).abs() < 1e-12);
        assert!((f.tok_per_s - 110.0).abs() < 1e-9);
        assert!((f.requests_per_s - 30.0).abs() < 1e-9);
        let e2e = f.e2e_ms.expect("e2e");
        assert_eq!((e2e.min, e2e.p50, e2e.max), (40.0, 50.0, 60.0));
        let ttft = f.ttft_ms.expect("ttft");
        assert_eq!((ttft.min, ttft.p50, ttft.max), (10.0, 20.0, 20.0));
        let ttst = f.ttst_ms.expect("ttst");
        assert_eq!((ttst.min, ttst.max), (10.0, 20.0));
        assert_eq!(f.tbt_ms.expect("tbt").p50, 10.0);
        assert_eq!(burst_figures(&[]), None);
    }

    #[test]
    fn a_burst_row_fails_on_any_error() {
        use crate::cell::{CellKey, Phase};
        let cell = PlannedCell {
            key: CellKey {
                phase: Phase::Burst,
                context_tokens: 100,
                concurrency: 2,
                rate_mrps: 0,
            },
            label: "100".into(),
            over_capacity: false,
        };
        let ok = [rec(0, &[10, 20], Some(2), "length")];
        let row = burst_result(&cell, &ok, ErrorTally::default(), 100, 0);
        assert_eq!(row.status, CellStatus::Valid);
        assert_eq!(row.output_tokens, Some(2));
        assert!(row.burst.is_some());
        let mut bad = ok.clone();
        bad[0].outcome = Outcome::Error {
            kind: "http_500".into(),
            message: "boom".into(),
        };
        let row = burst_result(&cell, &bad, ErrorTally::default(), 100, 0);
        assert_eq!(row.status, CellStatus::Failed);
        assert_eq!(row.first_error.as_deref(), Some("boom"));
        assert!(row.total_tok_per_s.is_none(), "a failed row has no figures");
    }
}
