//! The figures of METHOD.md, as pure functions over [`RequestRecord`]s. Each definition lives
//! here once; the report only formats what this module computed.
//!
//! Refinements beyond METHOD.md (also in docs/method-notes.md):
//! - **Per request tok/s** counts the tokens after the first *chunk* over the time from the first
//!   to the last chunk. With one token per chunk this is METHOD's (tokens − 1) / (last − first);
//!   with k-token chunks it stays unbiased (k·(n−1) tokens over (n−1) steps).
//! - Only what happened inside the window counts: tokens, gaps and activity are clipped to
//!   `[window_start, window_end]`; TTFT is taken for every measured request sent before the window
//!   closed (the first wave, sent just before the window opens, included, since at high
//!   concurrency no other request starts inside a 30 s window).

use crate::record::{Outcome, RequestRecord};
use crate::stats::{Summary, weighted_summary_at};
use serde::{Deserialize, Serialize};

const NS_PER_MS: f64 = 1e6;
const NS_PER_S: f64 = 1e9;

/// The measurement window of a decode cell, ns from the cell origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    /// When the window opened.
    pub start_ns: u64,
    /// When it closed.
    pub end_ns: u64,
}

impl Window {
    /// Length in seconds.
    pub fn secs(&self) -> f64 {
        self.end_ns.saturating_sub(self.start_ns) as f64 / NS_PER_S
    }

    /// Whether instant `t` (ns from the cell origin) is inside the window, both ends included.
    pub fn contains(&self, t: u64) -> bool {
        t >= self.start_ns && t <= self.end_ns
    }
}

/// Content tokens per streamed chunk inside the window: above 1 where a chunk carries a
/// speculative step's tokens. `None` when no chunk arrived inside.
pub fn tokens_per_chunk(records: &[RequestRecord], w: Window) -> Option<f64> {
    let (mut tokens, mut chunks) = (0u64, 0u64);
    for c in records
        .iter()
        .flat_map(|r| &r.chunks)
        .filter(|c| w.contains(c.t_ns))
    {
        tokens += u64::from(c.tokens);
        chunks += 1;
    }
    (chunks > 0).then(|| tokens as f64 / chunks as f64)
}

/// The decode figures of one cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DecodeFigures {
    /// Content tokens that arrived inside the window.
    pub output_tokens: u64,
    /// output_tokens / measured seconds.
    pub total_tok_per_s: f64,
    /// Per-request decode rate distribution (tok/s).
    pub per_request_tok_per_s: Option<Summary>,
    /// Time to first token (ms), over requests sent before the window closed.
    pub ttft_ms: Option<Summary>,
    /// Time between tokens (ms), a k-token chunk counting as k gaps of gap/k.
    pub tbt_ms: Option<Summary>,
    /// Time-weighted mean of requests between first token and end.
    pub avg_active_requests: f64,
    /// Requests that finished (any finish reason) inside the window.
    pub completed_requests: u64,
    /// Requests sent (measured phase), including those cancelled at window end.
    pub requests_sent: u64,
    /// Requests sent that never produced a token before the window closed.
    pub requests_without_token: u64,
    /// The window's measured length, seconds.
    pub measured_s: f64,
}

/// Computes the decode figures of a cell from its measured requests and window.
pub fn decode_figures(records: &[RequestRecord], w: Window) -> DecodeFigures {
    decode_figures_at(records, w, &[])
}

/// [`decode_figures`] with the run's extra percentiles (`--percentiles`) in TTFT and TBT.
pub fn decode_figures_at(records: &[RequestRecord], w: Window, ps: &[f64]) -> DecodeFigures {
    let mut output_tokens = 0u64;
    let mut ttft = Vec::new();
    let mut gaps: Vec<(f64, u64)> = Vec::new();
    let mut per_req = Vec::new();
    let mut active_ns: u128 = 0;
    let mut completed = 0u64;
    let mut without_token = 0u64;
    let mut sent = 0u64;

    for r in records {
        if r.sent_ns > w.end_ns {
            continue;
        }
        sent += 1;
        match r.first_token_ns() {
            Some(first) if first <= w.end_ns => {
                ttft.push(first.saturating_sub(r.sent_ns) as f64 / NS_PER_MS)
            }
            _ => without_token += 1,
        }
        let (tokens, rate) = tokens_in_window(r, w, &mut gaps);
        output_tokens += tokens;
        per_req.extend(rate);
        active_ns += active_in_window_ns(r, w);
        if matches!(r.outcome, Outcome::Finished { .. }) && w.contains(r.end_ns) {
            completed += 1;
        }
    }

    let d_ns = w.end_ns.saturating_sub(w.start_ns);
    let measured_s = w.secs();
    DecodeFigures {
        output_tokens,
        total_tok_per_s: if measured_s > 0.0 {
            output_tokens as f64 / measured_s
        } else {
            0.0
        },
        per_request_tok_per_s: Summary::of_vec(&mut per_req),
        ttft_ms: Summary::of_vec_at(&mut ttft, ps),
        tbt_ms: weighted_summary_at(&mut gaps, ps),
        avg_active_requests: if d_ns > 0 {
            active_ns as f64 / d_ns as f64
        } else {
            0.0
        },
        completed_requests: completed,
        requests_sent: sent,
        requests_without_token: without_token,
        measured_s,
    }
}

/// The tokens of `r` that landed inside `w`, with the request's own rate from its first chunk
/// inside to its last (None: fewer than two chunks inside, or no time between them); pushes the in-window
/// gaps, each per token and weighted by its token count, to `gaps`.
fn tokens_in_window(
    r: &RequestRecord,
    w: Window,
    gaps: &mut Vec<(f64, u64)>,
) -> (u64, Option<f64>) {
    let mut tokens = 0u64;
    let mut first_in: Option<(u64, u32)> = None;
    let mut last_in: Option<u64> = None;
    let mut after_first_tokens = 0u64;
    for c in r.chunks.iter().filter(|c| w.contains(c.t_ns)) {
        tokens += u64::from(c.tokens);
        match first_in {
            None => first_in = Some((c.t_ns, c.tokens)),
            Some(_) => after_first_tokens += u64::from(c.tokens),
        }
        // A gap counts only when both its ends are inside the window: the one before the
        // first chunk inside is either TTFT or began before the window opened.
        if let Some(p) = last_in {
            let k = u64::from(c.tokens.max(1));
            gaps.push(((c.t_ns - p) as f64 / NS_PER_MS / k as f64, k));
        }
        last_in = Some(c.t_ns);
    }
    let rate = match (first_in, last_in) {
        (Some((t0, _)), Some(t1)) if t1 > t0 && after_first_tokens > 0 => {
            Some(after_first_tokens as f64 / ((t1 - t0) as f64 / NS_PER_S))
        }
        _ => None,
    };
    (tokens, rate)
}

/// How long `r` was active (between its first token and its end), clipped to `w`, ns.
fn active_in_window_ns(r: &RequestRecord, w: Window) -> u128 {
    if let Some(first) = r.first_token_ns() {
        let a = first.max(w.start_ns);
        let b = r.end_ns.min(w.end_ns);
        if b > a {
            return u128::from(b - a);
        }
    }
    0
}

/// The prefill figures of one context: a single fresh prompt sent with `max_tokens = 1`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrefillFigures {
    /// Time to first token, ms.
    pub ttft_ms: f64,
    /// Prompt tokens / TTFT.
    pub prompt_tok_per_s: f64,
}

/// Computes prefill figures: C / TTFT. `None` if the request produced no token.
pub fn prefill_figures(context_tokens: u64, record: &RequestRecord) -> Option<PrefillFigures> {
    let ttft_ns = record.ttft_ns()?;
    if ttft_ns == 0 {
        return None;
    }
    Some(PrefillFigures {
        ttft_ms: ttft_ns as f64 / NS_PER_MS,
        prompt_tok_per_s: context_tokens as f64 / (ttft_ns as f64 / NS_PER_S),
    })
}

/// The server's own prefill rate between two readings of its cumulative counters (prompt
/// tokens, prefill seconds): Δ tokens / Δ seconds; `None` when either did not advance.
pub fn server_prefill_rate(before: (f64, f64), after: (f64, f64)) -> Option<f64> {
    let (dt, ds) = (after.0 - before.0, after.1 - before.1);
    (dt > 0.0 && ds > 0.0 && dt.is_finite() && ds.is_finite()).then(|| dt / ds)
}

#[cfg(test)]
mod tests {
    #[test]
    fn tokens_per_chunk_counts_only_the_windows_chunks() {
        // Chunks at 10, 20 and 30 ms of one token each, then the last two made 3 each.
        let mut r = req(0, 0, 10, 3, 1, 10, true);
        r.chunks[1].tokens = 3;
        r.chunks[2].tokens = 3;
        let w = |a: u64, b: u64| Window {
            start_ns: a * MS,
            end_ns: b * MS,
        };
        assert_eq!(
            tokens_per_chunk(std::slice::from_ref(&r), w(15, 40)),
            Some(3.0)
        );
        assert_eq!(
            tokens_per_chunk(std::slice::from_ref(&r), w(0, 40)),
            Some(7.0 / 3.0)
        );
        assert_eq!(tokens_per_chunk(&[r], w(50, 60)), None);
    }

    #[test]
    fn the_servers_prefill_rate_from_its_counters() {
        use super::server_prefill_rate;
        assert_eq!(
            server_prefill_rate((100.0, 2.0), (1124.0, 2.5)),
            Some(2048.0)
        );
        assert_eq!(
            server_prefill_rate((100.0, 2.0), (100.0, 2.5)),
            None,
            "no tokens"
        );
        assert_eq!(
            server_prefill_rate((100.0, 2.0), (900.0, 2.0)),
            None,
            "no time"
        );
    }

    use super::*;
    use crate::record::Chunk;

    const MS: u64 = 1_000_000;

    /// A request sent at `sent`, first token after `ttft`, then `n` chunks of `k` tokens every
    /// `step` ms.
    fn req(
        stream: u32,
        sent: u64,
        ttft: u64,
        n: u64,
        k: u32,
        step: u64,
        finished: bool,
    ) -> RequestRecord {
        let chunks: Vec<Chunk> = (0..n)
            .map(|i| Chunk {
                t_ns: (sent + ttft + i * step) * MS,
                tokens: k,
            })
            .collect();
        let end = chunks.last().map(|c| c.t_ns).unwrap_or(sent * MS);
        RequestRecord {
            stream,
            sent_ns: sent * MS,
            headers_ns: None,
            chunks,
            end_ns: end,
            outcome: if finished {
                Outcome::Finished {
                    reason: "length".into(),
                }
            } else {
                Outcome::Cancelled
            },
            prompt_tokens_reported: None,
            completion_tokens_reported: None,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        }
    }

    #[test]
    fn one_steady_stream_matches_the_seed_relation() {
        // 5 ms per token: per-request tok/s = 1000 / TBT-in-ms = 200.
        let r = req(0, 0, 100, 1000, 1, 5, false);
        let f = decode_figures(
            &[r],
            Window {
                start_ns: 0,
                end_ns: 2000 * MS,
            },
        );
        let tbt = f.tbt_ms.expect("gaps");
        assert!((tbt.p50 - 5.0).abs() < 1e-9);
        let pr = f.per_request_tok_per_s.expect("rate");
        assert!((pr.p50 - 200.0).abs() < 1e-6, "{}", pr.p50);
        // Chunks at 100, 105, …, 2000 ms inside the window: 381 tokens.
        assert_eq!(f.output_tokens, 381);
        assert!((f.total_tok_per_s - 190.5).abs() < 1e-9);
        assert!((f.ttft_ms.expect("ttft").p50 - 100.0).abs() < 1e-9);
        // Active from 100 ms to 2000 ms of a 2000 ms window.
        assert!((f.avg_active_requests - 0.95).abs() < 1e-9);
        assert_eq!(f.completed_requests, 0);
    }

    #[test]
    fn extra_percentiles_reach_ttft_and_tbt() {
        let w = Window {
            start_ns: 0,
            end_ns: 2000 * MS,
        };
        let rs = [
            req(0, 0, 100, 10, 1, 5, true),
            req(1, 0, 300, 10, 1, 5, true),
        ];
        let f = decode_figures_at(&rs, w, &[99.9]);
        // TTFT [100, 300] ms: rank 0.999 → 299.8; every gap is 5 ms.
        let ttft = f.ttft_ms.and_then(|s| s.at(99.9)).unwrap_or(0.0);
        assert!((ttft - 299.8).abs() < 1e-9, "{ttft}");
        assert_eq!(f.tbt_ms.and_then(|s| s.at(99.9)), Some(5.0));
        let plain = decode_figures(&rs, w);
        assert!(plain.ttft_ms.is_some_and(|s| s.percentiles.is_empty()));
    }

    #[test]
    fn speculative_chunks_are_not_counted_as_one_token() {
        // 3 tokens per chunk every 15 ms: TBT = 5 ms, per-request 200 tok/s, 3 tokens/chunk.
        let r = req(0, 0, 10, 100, 3, 15, true);
        let f = decode_figures(
            &[r],
            Window {
                start_ns: 0,
                end_ns: 10_000 * MS,
            },
        );
        assert_eq!(f.output_tokens, 300);
        assert!((f.tbt_ms.clone().expect("gaps").p50 - 5.0).abs() < 1e-9);
        assert_eq!(f.tbt_ms.expect("gaps").n, 99 * 3);
        assert!((f.per_request_tok_per_s.expect("rate").p50 - 200.0).abs() < 1e-6);
        assert_eq!(f.completed_requests, 1);
    }

    #[test]
    fn window_clips_tokens_activity_and_completions() {
        let a = req(0, 0, 10, 50, 1, 10, true); // tokens 10..500 ms, ends at 500 ms
        let b = req(1, 600, 10, 50, 1, 10, true); // starts after the window: ignored
        let w = Window {
            start_ns: 100 * MS,
            end_ns: 300 * MS,
        };
        let f = decode_figures(&[a, b], w);
        assert_eq!(f.output_tokens, 21); // 100, 110, …, 300
        assert_eq!(f.requests_sent, 1);
        assert_eq!(f.completed_requests, 0);
        assert!((f.avg_active_requests - 1.0).abs() < 1e-9);
        assert!((f.measured_s - 0.2).abs() < 1e-12);
    }

    #[test]
    fn a_gap_that_began_before_the_window_is_not_counted() {
        // Chunks at 0, 100 (a 100 ms stall), then every 10 ms; the window opens at 50 ms.
        let mut r = req(0, 0, 0, 1, 1, 1, false);
        r.chunks = [0u64, 100, 110, 120]
            .iter()
            .map(|&t| Chunk {
                t_ns: t * MS,
                tokens: 1,
            })
            .collect();
        r.end_ns = 130 * MS;
        let f = decode_figures(
            &[r],
            Window {
                start_ns: 50 * MS,
                end_ns: 130 * MS,
            },
        );
        let tbt = f.tbt_ms.expect("gaps");
        // Only 100→110 and 110→120: the 0→100 gap straddles the window start.
        assert_eq!(tbt.n, 2);
        assert!((tbt.max - 10.0).abs() < 1e-9, "{tbt:?}");
        assert_eq!(f.output_tokens, 3);
    }

    #[test]
    fn prefill_is_tokens_over_ttft() {
        let r = req(0, 0, 888, 1, 1, 1, true);
        let p = prefill_figures(8192, &r).expect("token");
        assert!((p.ttft_ms - 888.0).abs() < 1e-9);
        assert!((p.prompt_tok_per_s - 8192.0 / 0.888).abs() < 1e-6);
    }
}
