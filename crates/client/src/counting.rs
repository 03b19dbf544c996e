//! Deferred token counting, for engines that do not stream `usage` on every chunk: after the
//! window, each request's chunks get their token counts from the server's final usage and the
//! server's tokenizer. Never from the chunk count alone, unless nothing else exists, and then
//! the cell says so ([`TokenCountSource::ChunkCount`]).
//!
//! Rules per request:
//! 1. Final `usage.completion_tokens` equal to the number of content chunks: the server itself
//!    says one token per chunk.
//! 2. Final usage differs: each chunk's text is tokenized, and the counts are scaled (largest
//!    remainder, at least one per chunk) so they sum to the server's figure.
//! 3. No final usage (a request cancelled at window end): each chunk's text is tokenized.
//!
//! Tokenize results are cached by text: streams repeat many short texts, and the work happens
//! after the window, off the measurement's hot path.

use crate::engine::Engine;
use crate::stream::Measured;
use llmib_core::meta::TokenCountSource;
use std::collections::HashMap;

/// Counts tokens per chunk for every record that needs it and returns the weakest source used.
pub async fn count_deferred(engine: &Engine, records: &mut [Measured]) -> TokenCountSource {
    let mut cache: HashMap<String, u32> = HashMap::new();
    let mut weakest = TokenCountSource::ServerUsageFinalTokenizerChunks;
    let tokenizer = engine.has_tokenizer();
    for m in records.iter_mut() {
        let Some(texts) = m.texts.take() else {
            continue;
        };
        let chunks = &mut m.record.chunks;
        if chunks.is_empty() {
            continue;
        }
        let reported = m.record.completion_tokens_reported;
        if reported == Some(chunks.len() as u64) {
            chunks.iter_mut().for_each(|c| c.tokens = 1);
            continue;
        }
        if !tokenizer {
            weakest = weaker(weakest, TokenCountSource::ChunkCount);
            continue;
        }
        let mut counts = Vec::with_capacity(texts.len());
        for t in &texts {
            let n = match cache.get(t) {
                Some(n) => *n,
                None => {
                    let n = engine
                        .tokenize(t, false)
                        .await
                        .map(|v| v.len() as u32)
                        .unwrap_or(1);
                    cache.insert(t.clone(), n);
                    n
                }
            };
            counts.push(n.max(1));
        }
        match reported {
            Some(total) if total >= chunks.len() as u64 => {
                let scaled = scale_to_total(&counts, total);
                for (c, k) in chunks.iter_mut().zip(scaled) {
                    c.tokens = k;
                }
            }
            _ => {
                weakest = weaker(weakest, TokenCountSource::Tokenizer);
                for (c, k) in chunks.iter_mut().zip(counts) {
                    c.tokens = k;
                }
            }
        }
    }
    weakest
}

fn rank(s: TokenCountSource) -> u8 {
    match s {
        TokenCountSource::ServerUsagePerChunk => 0,
        TokenCountSource::ServerUsageFinalTokenizerChunks => 1,
        TokenCountSource::Tokenizer => 2,
        TokenCountSource::ChunkCount => 3,
    }
}

fn weaker(a: TokenCountSource, b: TokenCountSource) -> TokenCountSource {
    if rank(b) > rank(a) { b } else { a }
}

/// Scales `counts` to sum to `total` by largest remainder, keeping at least 1 per entry.
/// Requires `total >= counts.len()`.
pub fn scale_to_total(counts: &[u32], total: u64) -> Vec<u32> {
    let n = counts.len() as u64;
    if n == 0 {
        return Vec::new();
    }
    let sum: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    // Every chunk keeps one token; the rest is shared in proportion to (count − 1), or evenly
    // when all counts are 1.
    let extra_total = total.saturating_sub(n);
    let weights: Vec<u64> = if sum > n {
        counts.iter().map(|&c| u64::from(c) - 1).collect()
    } else {
        vec![1; counts.len()]
    };
    let wsum: u64 = weights.iter().sum::<u64>().max(1);
    let mut out: Vec<u64> = weights.iter().map(|w| 1 + extra_total * w / wsum).collect();
    let mut rem: Vec<(u64, usize)> = weights
        .iter()
        .enumerate()
        .map(|(i, w)| ((extra_total * w) % wsum, i))
        .collect();
    rem.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut left = total.saturating_sub(out.iter().sum());
    for (_, i) in rem {
        if left == 0 {
            break;
        }
        out[i] += 1;
        left -= 1;
    }
    out.into_iter()
        .map(|v| v.min(u64::from(u32::MAX)) as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_keeps_the_server_total() {
        assert_eq!(scale_to_total(&[1, 1, 1], 3), vec![1, 1, 1]);
        assert_eq!(scale_to_total(&[1, 3, 1], 5), vec![1, 3, 1]);
        let s = scale_to_total(&[1, 1, 1, 1], 6);
        assert_eq!(s.iter().sum::<u32>(), 6);
        assert!(s.iter().all(|&x| x >= 1));
        let s = scale_to_total(&[2, 5, 1], 11);
        assert_eq!(s.iter().sum::<u32>(), 11);
    }
}
