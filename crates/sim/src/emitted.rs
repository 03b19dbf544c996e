//! What the simulator actually emitted inside a window, computed from its chunk stamps: the
//! oracle a client's figures are judged against (never the nominal step time, which a loaded
//! host does not keep).
//!
//! The figures follow METHOD.md's definitions, written again here on purpose: the simulator
//! shares no code with the client, so a bug in the client's figures cannot hide in its oracle.
//! - output tokens: the `completion_tokens` increments of chunks stamped inside `[start, end]`;
//! - per-request tok/s: per request, tokens after its first in-window chunk over the span from
//!   that chunk to its last in-window chunk; the median over requests;
//! - time between tokens: gaps between consecutive in-window chunks of one request, a chunk of
//!   k tokens counting as k gaps of gap/k; the median over tokens.
//!
//! Under open load the oracle is per request instead ([`served_requests`]): when each request
//! reached the engine, its first and last chunk, its tokens, whether it finished and the prompt
//! tokens the engine served it from its prefix cache, from which a test recomputes TTFT, TPOT, end to end and an SLO's attainment and goodput itself.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::stamps::{ArrivalStamp, ChunkStamp};

/// One request as the simulator served it, from its arrival stamp and its chunk stamps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServedRequest {
    /// The engine's id of the request.
    pub request: u64,
    /// Its reported prompt tokens.
    pub prompt_tokens: u64,
    /// When it reached the engine.
    pub arrival: Instant,
    /// Its first content chunk (`None`: it emitted nothing, or it was not streamed: only
    /// streamed chunks are stamped).
    pub first_chunk: Option<Instant>,
    /// Its last content chunk.
    pub last_chunk: Option<Instant>,
    /// Output tokens emitted (the last chunk's cumulative count).
    pub tokens: u32,
    /// Its last chunk ended it normally (a `finish_reason`); false for a stream that was cut.
    pub finished: bool,
    /// Prompt tokens the engine served it from the prefix cache (whole blocks cached when it
    /// was admitted), as its chunks reported them; 0 when it emitted no stamped chunk.
    pub cached_tokens: u64,
    /// The LoRA adapter that served it (`None`: the base model).
    pub adapter: Option<String>,
}

impl ServedRequest {
    /// First chunk − arrival.
    pub fn ttft(&self) -> Option<Duration> {
        Some(self.first_chunk?.saturating_duration_since(self.arrival))
    }

    /// (last chunk − first chunk) / (tokens − 1); `None` with fewer than two tokens.
    pub fn tpot(&self) -> Option<Duration> {
        let span = self
            .last_chunk?
            .saturating_duration_since(self.first_chunk?);
        (self.tokens >= 2).then(|| span / (self.tokens - 1))
    }

    /// Last chunk − arrival.
    pub fn e2e(&self) -> Option<Duration> {
        Some(self.last_chunk?.saturating_duration_since(self.arrival))
    }
}

/// Every stamped request, in arrival order, with what it emitted. `arrivals` and `chunks` are
/// a server's logs (`SimHandle::take_arrival_stamps`, `take_chunk_stamps`); chunks of a request
/// without an arrival stamp (taken before the logs were drained) are ignored.
pub fn served_requests(arrivals: &[ArrivalStamp], chunks: &[ChunkStamp]) -> Vec<ServedRequest> {
    let mut by_id: HashMap<u64, ServedRequest> = arrivals
        .iter()
        .map(|a| {
            let r = ServedRequest {
                request: a.request,
                prompt_tokens: a.prompt_tokens,
                arrival: a.at,
                first_chunk: None,
                last_chunk: None,
                tokens: 0,
                finished: false,
                cached_tokens: 0,
                adapter: a.adapter.clone(),
            };
            (a.request, r)
        })
        .collect();
    for c in chunks {
        let Some(r) = by_id.get_mut(&c.request) else {
            continue;
        };
        // Stamps are logged in order per request; min/max keep this right even if not.
        r.first_chunk = Some(r.first_chunk.map_or(c.at, |f| f.min(c.at)));
        r.last_chunk = Some(r.last_chunk.map_or(c.at, |l| l.max(c.at)));
        r.tokens = r.tokens.max(c.completion_tokens);
        r.finished |= c.finished;
        r.cached_tokens = r.cached_tokens.max(c.cached_tokens);
    }
    let mut out: Vec<ServedRequest> = by_id.into_values().collect();
    out.sort_by_key(|r| (r.arrival, r.request));
    out
}

/// The simulator's own figures for one window.
#[derive(Debug, Clone, PartialEq)]
pub struct EmittedFigures {
    /// Tokens emitted inside the window.
    pub output_tokens: u64,
    /// `output_tokens` over the window's length.
    pub total_tok_per_s: f64,
    /// Median per-request decode rate (`None`: no request had two chunks inside).
    pub per_request_tok_per_s_p50: Option<f64>,
    /// Median time between tokens, ms (`None`: no gap inside).
    pub tbt_ms_p50: Option<f64>,
    /// Distinct requests that emitted inside the window.
    pub requests: usize,
}

/// Linear-interpolation percentile over the expansion of sorted `(value, weight)` pairs.
fn weighted_median(mut v: Vec<(f64, u64)>) -> Option<f64> {
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total: u64 = v.iter().map(|x| x.1).sum();
    if total == 0 {
        return None;
    }
    let nth = |i: u64| {
        let mut acc = 0;
        v.iter()
            .find(|x| {
                acc += x.1;
                i < acc
            })
            .map(|x| x.0)
    };
    let rank = (total - 1) as f64 / 2.0;
    let (lo, hi) = (nth(rank.floor() as u64)?, nth(rank.ceil() as u64)?);
    Some(lo + (hi - lo) * (rank - rank.floor()))
}

impl EmittedFigures {
    /// The figures of the chunks in `stamps` (a server's whole log, in order) stamped inside
    /// `[start, end]`. Chunks before the window still matter: they set each request's count.
    pub fn within(stamps: &[ChunkStamp], start: Instant, end: Instant) -> EmittedFigures {
        // Per request: completion tokens so far, and (first in-window instant, tokens after
        // it, last in-window instant).
        let mut so_far: HashMap<u64, u32> = HashMap::new();
        let mut spans: HashMap<u64, (Instant, u64, Instant)> = HashMap::new();
        let mut gaps: Vec<(f64, u64)> = Vec::new();
        let mut output_tokens = 0u64;
        for s in stamps {
            let before = so_far.insert(s.request, s.completion_tokens).unwrap_or(0);
            let k = u64::from(s.completion_tokens.saturating_sub(before));
            if s.at < start || s.at > end {
                continue;
            }
            output_tokens += k;
            match spans.get_mut(&s.request) {
                None => {
                    spans.insert(s.request, (s.at, 0, s.at));
                }
                Some((_, after, last)) => {
                    let w = k.max(1);
                    let gap_ms = s.at.duration_since(*last).as_secs_f64() * 1e3;
                    gaps.push((gap_ms / w as f64, w));
                    *after += k;
                    *last = s.at;
                }
            }
        }
        let secs = end.saturating_duration_since(start).as_secs_f64();
        let rates: Vec<(f64, u64)> = spans
            .values()
            .filter(|(t0, after, t1)| *after > 0 && t1 > t0)
            .map(|(t0, after, t1)| (*after as f64 / t1.duration_since(*t0).as_secs_f64(), 1))
            .collect();
        EmittedFigures {
            output_tokens,
            total_tok_per_s: if secs > 0.0 {
                output_tokens as f64 / secs
            } else {
                0.0
            },
            per_request_tok_per_s_p50: weighted_median(rates),
            tbt_ms_p50: weighted_median(gaps),
            requests: spans.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn stamp(request: u64, completion_tokens: u32, at: Instant) -> ChunkStamp {
        ChunkStamp {
            request,
            prompt_tokens: 8,
            cached_tokens: 0,
            completion_tokens,
            at,
            finished: false,
        }
    }

    #[test]
    fn counts_increments_inside_the_window_only() {
        let t = Instant::now();
        let ms = |x: u64| t + Duration::from_millis(x);
        // Request 1: 1 token per chunk every 10 ms from 0 to 100 ms. Request 2: 3 tokens per
        // chunk every 30 ms from 5 ms.
        let mut log = Vec::new();
        for i in 0..=10u32 {
            log.push(stamp(1, i + 1, ms(u64::from(i) * 10)));
        }
        for i in 0..=3u32 {
            log.push(stamp(2, 3 * (i + 1), ms(5 + u64::from(i) * 30)));
        }
        log.sort_by_key(|s| s.at);
        // Window [20, 80] ms: request 1 has chunks at 20..=80 (7 chunks), request 2 at 35, 65.
        let f = EmittedFigures::within(&log, ms(20), ms(80));
        assert_eq!(f.output_tokens, 7 + 6);
        assert!((f.total_tok_per_s - 13.0 / 0.060).abs() < 1e-6);
        assert_eq!(f.requests, 2);
        // Rates: request 1 has 6 tokens over 60 ms = 100/s; request 2 has 3 over 30 ms = 100/s.
        let r = f.per_request_tok_per_s_p50.expect("rates");
        assert!((r - 100.0).abs() < 1e-6, "{r}");
        // Gaps: six 10 ms gaps (weight 1) and one 30 ms gap of 3 tokens = three of 10 ms.
        assert!((f.tbt_ms_p50.expect("gaps") - 10.0).abs() < 1e-6);
    }

    #[test]
    fn a_lone_chunk_gives_tokens_but_no_rate_or_gap() {
        let t = Instant::now();
        let log = vec![stamp(7, 1, t), stamp(7, 2, t + Duration::from_millis(50))];
        let f = EmittedFigures::within(
            &log,
            t + Duration::from_millis(10),
            t + Duration::from_millis(60),
        );
        assert_eq!(
            f.output_tokens, 1,
            "the chunk before the window sets the count only"
        );
        assert_eq!(f.per_request_tok_per_s_p50, None);
        assert_eq!(f.tbt_ms_p50, None);
        assert_eq!(weighted_median(vec![(1.0, 1), (3.0, 1)]), Some(2.0));
    }

    #[test]
    fn served_requests_pairs_arrivals_with_their_chunks() {
        let t = Instant::now();
        let ms = |x: u64| t + Duration::from_millis(x);
        let arrival = |request, at| ArrivalStamp {
            request,
            prompt_tokens: 8,
            at,
            adapter: None,
        };
        // Request 2 arrives first; request 1 emits 4 tokens in chunks of 1, 2, 1 and finishes;
        // request 2 emits 1 token and is cut; request 3 arrives but emits nothing; request 9
        // has chunks but no arrival (drained earlier).
        let arrivals = [arrival(2, ms(0)), arrival(1, ms(5)), arrival(3, ms(7))];
        // Request 1 was served 32 prompt tokens from cache (every chunk of it says so).
        let cached = |mut s: ChunkStamp| {
            s.cached_tokens = 32;
            s
        };
        let mut last = cached(stamp(1, 4, ms(50)));
        last.finished = true;
        let chunks = [
            cached(stamp(1, 1, ms(20))),
            stamp(2, 1, ms(22)),
            cached(stamp(1, 3, ms(30))),
            stamp(9, 1, ms(31)),
            last,
        ];
        let served = served_requests(&arrivals, &chunks);
        let ids: Vec<u64> = served.iter().map(|r| r.request).collect();
        assert_eq!(ids, vec![2, 1, 3], "arrival order, request 9 left out");
        let one = served[1].clone();
        assert_eq!((one.tokens, one.finished, one.cached_tokens), (4, true, 32));
        assert_eq!(one.ttft(), Some(Duration::from_millis(15)));
        assert_eq!(one.e2e(), Some(Duration::from_millis(45)));
        assert_eq!(
            one.tpot(),
            Some(Duration::from_millis(10)),
            "30 ms over 3 tokens"
        );
        let two = served[0].clone();
        assert_eq!((two.tokens, two.finished, two.cached_tokens), (1, false, 0));
        assert_eq!(two.ttft(), Some(Duration::from_millis(22)));
        assert_eq!(two.tpot(), None, "one token has no TPOT");
        let three = served[2].clone();
        assert_eq!(
            (three.tokens, three.first_chunk, three.ttft()),
            (0, None, None)
        );
    }
}
