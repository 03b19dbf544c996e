//! Tokens per chunk, decided after the window from what the stream carried (usage, chunk texts)
//! and the server tokenizer's answers, which the client gathers first. Pure: the client does
//! the tokenize calls, this module decides the counts and the source a cell may claim.
//!
//! Rules per request:
//! 1. Usage streamed on every chunk: the counts were set while streaming
//!    ([`TokenCountSource::ServerUsagePerChunk`]).
//! 2. Final `usage.completion_tokens` equal to the number of content chunks: the server itself
//!    says one token per chunk.
//! 3. Final usage differs: each chunk's text is tokenized, and the counts are scaled (largest
//!    remainder, at least one per chunk) so they sum to the server's figure.
//! 4. No final usage (a request cancelled at window end): each chunk's text is tokenized.
//!
//! A tokenize call that failed, or a request with neither per-chunk usage nor kept texts,
//! leaves chunks counted as one token each; the request (and so the cell) then claims no more
//! than [`TokenCountSource::ChunkCount`], and the failures are counted: a figure never claims a
//! source it did not use.

use crate::meta::TokenCountSource;
use crate::record::RequestRecord;
use std::collections::HashMap;

/// The tokenizer's answer for one chunk text: its token count, or why it could not be had.
pub type Tokenized = HashMap<String, Result<u32, TokenizeError>>;

/// Why a chunk text has no token count: which tokenizer failed on it, and its error in its own
/// words (the row's note quotes them as they are).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizeError {
    /// The server's tokenize endpoint failed (after its retry).
    #[error("{0}")]
    Server(String),
    /// The local tokenizer file (`--tokenizer`) failed.
    #[error("{0}")]
    Local(String),
}

/// How a cell's tokens were counted, folded over its requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountReport {
    /// The weakest source any request needed (`None`: no request had a chunk).
    pub source: Option<TokenCountSource>,
    /// Chunk texts the tokenizer failed on (their chunks were counted as one token).
    pub tokenize_failures: u64,
    /// The first tokenizer error.
    pub first_failure: Option<String>,
    /// Chunk texts were counted with a local tokenizer file (`--tokenizer`), the server having
    /// none.
    pub local_tokenizer: bool,
}

impl CountReport {
    /// A report with nothing counted yet.
    pub fn new() -> Self {
        CountReport {
            source: None,
            tokenize_failures: 0,
            first_failure: None,
            local_tokenizer: false,
        }
    }

    /// The source of the cell: the weakest one used, or `nominal` when no request had a chunk.
    pub fn source_or(&self, nominal: TokenCountSource) -> TokenCountSource {
        self.source.unwrap_or(nominal)
    }

    fn used(&mut self, s: TokenCountSource) {
        self.source = Some(match self.source {
            Some(a) => a.weaker(s),
            None => s,
        });
    }

    /// A note for the row when the count is degraded, in words.
    pub fn note(&self) -> Option<String> {
        let local = self
            .local_tokenizer
            .then_some("chunk texts counted with the local tokenizer file (--tokenizer), the server having none");
        let failed = (self.tokenize_failures > 0).then(|| {
            format!(
                "the tokenizer failed on {} chunk texts (first: {}); those chunks count as one token each",
                self.tokenize_failures,
                self.first_failure.as_deref().unwrap_or("unknown error")
            )
        });
        match (local, failed) {
            (Some(l), Some(f)) => Some(format!("{l}; {f}")),
            (l, f) => f.or(l.map(str::to_string)),
        }
    }
}

impl Default for CountReport {
    fn default() -> Self {
        Self::new()
    }
}

/// Whether a request needs its chunk texts tokenized (rules 3 and 4).
pub fn needs_tokenizer(record: &RequestRecord, texts: Option<&[String]>) -> bool {
    texts.is_some()
        && !record.chunks.is_empty()
        && record.completion_tokens_reported != Some(record.chunks.len() as u64)
}

/// Sets the token count of every chunk of `record` and folds the source used into `report`.
/// `texts` are the chunk texts kept for deferred counting (`None`: usage was streamed per chunk,
/// or should have been); `tokenized` holds the tokenizer's answers (missing texts: no tokenizer).
pub fn count_request(
    record: &mut RequestRecord,
    texts: Option<&[String]>,
    saw_usage_per_chunk: bool,
    tokenized: &Tokenized,
    report: &mut CountReport,
) {
    let n = record.chunks.len();
    if n == 0 {
        return;
    }
    let reported = record.completion_tokens_reported;
    let Some(texts) = texts else {
        if saw_usage_per_chunk {
            report.used(TokenCountSource::ServerUsagePerChunk);
        } else if reported == Some(n as u64) {
            record.chunks.iter_mut().for_each(|c| c.tokens = 1);
            report.used(TokenCountSource::ServerUsageFinalTokenizerChunks);
        } else {
            // Usage per chunk was asked for but never came, and no texts were kept.
            report.used(TokenCountSource::ChunkCount);
        }
        return;
    };
    if reported == Some(n as u64) {
        record.chunks.iter_mut().for_each(|c| c.tokens = 1);
        report.used(TokenCountSource::ServerUsageFinalTokenizerChunks);
        return;
    }
    let mut counts = Vec::with_capacity(n);
    let mut failed = false;
    let mut missing = false;
    for t in texts.iter().take(n) {
        match tokenized.get(t) {
            Some(Ok(k)) => counts.push((*k).max(1)),
            Some(Err(e)) => {
                failed = true;
                report.tokenize_failures += 1;
                report.first_failure.get_or_insert_with(|| e.to_string());
                counts.push(1);
            }
            None => {
                missing = true;
                counts.push(1);
            }
        }
    }
    counts.resize(n, 1);
    match reported {
        Some(total) if total >= n as u64 => {
            for (c, k) in record.chunks.iter_mut().zip(scale_to_total(&counts, total)) {
                c.tokens = k;
            }
            report.used(if failed || missing {
                TokenCountSource::ChunkCount
            } else {
                TokenCountSource::ServerUsageFinalTokenizerChunks
            });
        }
        _ => {
            for (c, k) in record.chunks.iter_mut().zip(counts) {
                c.tokens = k;
            }
            report.used(if failed || missing {
                TokenCountSource::ChunkCount
            } else {
                TokenCountSource::Tokenizer
            });
        }
    }
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
    use crate::record::{Chunk, Outcome};
    use TokenCountSource as S;

    fn rec(chunks: usize, reported: Option<u64>) -> RequestRecord {
        RequestRecord {
            stream: 0,
            sent_ns: 0,
            headers_ns: None,
            chunks: (0..chunks)
                .map(|i| Chunk {
                    t_ns: i as u64,
                    tokens: 1,
                })
                .collect(),
            end_ns: chunks as u64,
            outcome: Outcome::Cancelled,
            prompt_tokens_reported: None,
            completion_tokens_reported: reported,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        }
    }

    fn texts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

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

    #[test]
    fn known_answers() {
        let tok: Tokenized = [
            ("a".to_string(), Ok(1)),
            ("bcd".to_string(), Ok(3)),
            (
                "bad".to_string(),
                Err(TokenizeError::Server("HTTP 500: boom".to_string())),
            ),
        ]
        .into_iter()
        .collect();
        // (name, chunks, reported, texts, saw usage per chunk, expected counts, source, failures)
        type Case = (
            &'static str,
            usize,
            Option<u64>,
            Option<Vec<String>>,
            bool,
            Vec<u32>,
            S,
            u64,
        );
        let cases: Vec<Case> = vec![
            (
                "usage per chunk",
                2,
                Some(2),
                None,
                true,
                vec![1, 1],
                S::ServerUsagePerChunk,
                0,
            ),
            (
                "final usage = chunks",
                2,
                Some(2),
                Some(texts(&["a", "bcd"])),
                false,
                vec![1, 1],
                S::ServerUsageFinalTokenizerChunks,
                0,
            ),
            (
                "final usage split by the tokenizer",
                2,
                Some(4),
                Some(texts(&["a", "bcd"])),
                false,
                vec![1, 3],
                S::ServerUsageFinalTokenizerChunks,
                0,
            ),
            (
                "cancelled: tokenizer alone",
                2,
                None,
                Some(texts(&["a", "bcd"])),
                false,
                vec![1, 3],
                S::Tokenizer,
                0,
            ),
            (
                // Before: the failed chunk silently counted 1 while the row claimed the tokenizer.
                "a failed tokenize call downgrades to chunk count",
                2,
                None,
                Some(texts(&["bad", "bcd"])),
                false,
                vec![1, 3],
                S::ChunkCount,
                1,
            ),
            (
                "a failure under final usage keeps the total, not the source",
                2,
                Some(5),
                Some(texts(&["bad", "bcd"])),
                false,
                vec![1, 4],
                S::ChunkCount,
                1,
            ),
            (
                "no tokenizer answers at all",
                2,
                None,
                Some(texts(&["x", "y"])),
                false,
                vec![1, 1],
                S::ChunkCount,
                0,
            ),
            (
                "per-chunk usage asked but never came",
                3,
                Some(5),
                None,
                false,
                vec![1, 1, 1],
                S::ChunkCount,
                0,
            ),
        ];
        for (name, n, reported, tx, saw, want, source, failures) in cases {
            let mut r = rec(n, reported);
            let mut rep = CountReport::new();
            count_request(&mut r, tx.as_deref(), saw, &tok, &mut rep);
            let got: Vec<u32> = r.chunks.iter().map(|c| c.tokens).collect();
            assert_eq!(got, want, "{name}");
            assert_eq!(rep.source, Some(source), "{name}");
            assert_eq!(rep.tokenize_failures, failures, "{name}");
            assert_eq!(rep.note().is_some(), failures > 0, "{name}");
        }
    }

    #[test]
    fn the_weakest_source_wins_and_empty_requests_claim_nothing() {
        let tok: Tokenized = [("a".to_string(), Ok(1))].into_iter().collect();
        let mut rep = CountReport::new();
        count_request(&mut rec(0, None), None, false, &tok, &mut rep);
        assert_eq!(rep.source, None);
        assert_eq!(
            rep.source_or(S::ServerUsagePerChunk),
            S::ServerUsagePerChunk
        );
        count_request(&mut rec(1, Some(1)), None, true, &tok, &mut rep);
        count_request(
            &mut rec(1, None),
            Some(&texts(&["a"])),
            false,
            &tok,
            &mut rep,
        );
        assert_eq!(rep.source, Some(S::Tokenizer));
        assert!(needs_tokenizer(&rec(2, None), Some(&texts(&["a", "a"]))));
        assert!(!needs_tokenizer(
            &rec(2, Some(2)),
            Some(&texts(&["a", "a"]))
        ));
    }
}
