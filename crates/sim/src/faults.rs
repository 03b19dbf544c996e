//! Fault decisions for one request, drawn up front from the seeded PRNG.
//!
//! Every request draws the same number of random values whatever the knobs say, so turning
//! one fault on does not reshuffle the decisions of the others, and a given seed and request
//! order always produce the same failures.

use std::time::Duration;

use crate::config::FaultConfig;
use crate::rng::Rng;

/// What goes wrong with one request (usually nothing).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FaultPlan {
    /// Answer HTTP 500 instead of running the request.
    pub http_error: bool,
    /// Hold the response headers back this long.
    pub slow_first_byte: Option<Duration>,
    /// After this many output tokens, send an error object in the stream and end it.
    pub stream_error_after: Option<u32>,
    /// After this many output tokens, drop the connection (no `[DONE]`).
    pub disconnect_after: Option<u32>,
    /// The drop comes half-way through an event's bytes.
    pub disconnect_mid_event: bool,
    /// The chunk that reaches this many output tokens is sent as truncated JSON.
    pub malformed_at: Option<u32>,
    /// After this many output tokens, send nothing more and keep the connection open.
    pub stall_after: Option<u32>,
}

/// Draws the faults of one request that asks for `max_tokens` tokens.
pub(crate) fn plan(cfg: &FaultConfig, rng: &mut Rng, max_tokens: u32) -> FaultPlan {
    // Fixed draw order and count: see the module comment.
    let draws: [f64; 6] = std::array::from_fn(|_| rng.next_f64());
    let span = u64::from(max_tokens.saturating_sub(1).max(1));
    let points: [u32; 4] = std::array::from_fn(|_| 1 + rng.below(span) as u32);
    FaultPlan {
        http_error: draws[0] < cfg.http_error_rate,
        slow_first_byte: (draws[1] < cfg.slow_first_byte_rate && cfg.slow_first_byte_ms > 0)
            .then(|| Duration::from_millis(cfg.slow_first_byte_ms)),
        stream_error_after: (draws[2] < cfg.stream_error_rate).then_some(points[0]),
        disconnect_after: (draws[3] < cfg.disconnect_rate).then_some(points[1]),
        disconnect_mid_event: cfg.disconnect_mid_event,
        malformed_at: (draws[4] < cfg.malformed_chunk_rate).then_some(points[2]),
        stall_after: (draws[5] < cfg.stall_rate).then_some(points[3]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_rate_bound() {
        let cfg = FaultConfig {
            http_error_rate: 0.3,
            disconnect_rate: 1.0,
            ..FaultConfig::default()
        };
        let run = || {
            let mut r = Rng::new(42);
            (0..200).map(|_| plan(&cfg, &mut r, 10)).collect::<Vec<_>>()
        };
        let a = run();
        assert_eq!(a, run());
        let errors = a.iter().filter(|p| p.http_error).count();
        assert!((30..90).contains(&errors), "{errors}");
        assert!(
            a.iter()
                .all(|p| p.disconnect_after.is_some_and(|n| (1..10).contains(&n)))
        );
        assert!(a.iter().all(|p| p.stream_error_after.is_none()));
    }
}
