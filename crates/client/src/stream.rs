//! One streamed completion request, measured: the instants of the protocol events (sent,
//! headers, each content chunk, end) as offsets from the cell's monotonic origin, and the tokens
//! each chunk carried.
//!
//! Timing rules (METHOD.md "Time"): the send instant is taken immediately before the request is
//! handed to the connection; a chunk's instant is taken when its bytes are read from the socket,
//! before any parsing, so parsing cost never shifts a timestamp. Several events that arrive in
//! one read share that read's instant: they did arrive together.

use crate::chunk::{StreamItem, error_body_message, parse_event};
use crate::sse::SseDecoder;
use bytes::Bytes;
use futures_util::StreamExt;
use llmib_core::record::{Chunk, Outcome, RequestRecord};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How the stream tells tokens per chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// The server streams cumulative `usage` on every chunk (`continuous_usage_stats`).
    UsagePerChunk,
    /// Only the final usage (or none): chunk texts are kept to be counted after the request.
    Deferred,
}

/// A measured request, with the texts of its content chunks when counting is deferred.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The record (chunk token counts are provisional when `texts` is `Some`).
    pub record: RequestRecord,
    /// Chunk texts, for deferred counting.
    pub texts: Option<Vec<String>>,
    /// Whether the stream carried `usage` on content chunks (continuous usage seen).
    pub saw_usage_per_chunk: bool,
}

fn ns(origin: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(origin).as_nanos() as u64
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("").trim();
    if line.chars().count() > 300 {
        line.chars().take(300).collect::<String>() + "…"
    } else {
        line.to_string()
    }
}

/// Sends `body` (a JSON completion request with `stream: true`) and measures the stream until it
/// ends or `cancel` fires. Never fails: every error becomes an [`Outcome::Error`] in the record.
pub async fn measure(
    client: &reqwest::Client,
    url: &str,
    body: Bytes,
    stream: u32,
    origin: Instant,
    counting: Counting,
    cancel: &CancellationToken,
) -> Measured {
    let mut rec = RequestRecord {
        stream,
        sent_ns: 0,
        headers_ns: None,
        chunks: Vec::new(),
        end_ns: 0,
        outcome: Outcome::Cancelled,
        prompt_tokens_reported: None,
        completion_tokens_reported: None,
        cached_tokens_reported: None,
    };
    let mut texts: Option<Vec<String>> = (counting == Counting::Deferred).then(Vec::new);
    let mut saw_usage_per_chunk = false;
    let err = |kind: &str, msg: String| Outcome::Error {
        kind: kind.to_string(),
        message: first_line(&msg),
    };

    let req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(body);
    let sent = Instant::now();
    rec.sent_ns = ns(origin, sent);
    let resp = tokio::select! {
        biased;
        _ = cancel.cancelled() => {
            rec.end_ns = ns(origin, Instant::now());
            return Measured { record: rec, texts, saw_usage_per_chunk };
        }
        r = req.send() => r,
    };
    let resp = match resp {
        Ok(r) => r,
        Err(e) => {
            rec.end_ns = ns(origin, Instant::now());
            let kind = if e.is_connect() {
                "connect"
            } else if e.is_timeout() {
                "timeout"
            } else {
                "http"
            };
            rec.outcome = err(kind, crate::http::describe_request_error(&e, url));
            return Measured {
                record: rec,
                texts,
                saw_usage_per_chunk,
            };
        }
    };
    rec.headers_ns = Some(ns(origin, Instant::now()));
    let status = resp.status();
    if !status.is_success() {
        let text = resp.text().await.unwrap_or_default();
        rec.end_ns = ns(origin, Instant::now());
        rec.outcome = err(
            &format!("http_{}", status.as_u16()),
            format!("HTTP {}: {}", status.as_u16(), error_body_message(&text)),
        );
        return Measured {
            record: rec,
            texts,
            saw_usage_per_chunk,
        };
    }

    let mut body = resp.bytes_stream();
    let mut dec = SseDecoder::new();
    let mut last_completion: u64 = 0;
    let mut finish: Option<String> = None;
    let mut done = false;
    loop {
        let next = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                // Dropping the body closes the connection, so the server aborts the request and
                // frees its KV cache.
                rec.end_ns = ns(origin, Instant::now());
                rec.outcome = Outcome::Cancelled;
                return Measured { record: rec, texts, saw_usage_per_chunk };
            }
            n = body.next() => n,
        };
        let bytes = match next {
            Some(Ok(b)) => b,
            Some(Err(e)) => {
                rec.end_ns = ns(origin, Instant::now());
                rec.outcome = err(
                    "stream_broken",
                    format!("the stream broke after {} chunks: {e}", rec.chunks.len()),
                );
                return Measured {
                    record: rec,
                    texts,
                    saw_usage_per_chunk,
                };
            }
            None => break,
        };
        let t = ns(origin, Instant::now());
        dec.push(&bytes);
        while let Some(ev) = dec.next_event() {
            let ev = match ev {
                Ok(ev) => ev,
                Err(e) => {
                    rec.end_ns = t;
                    rec.outcome = err("malformed", e.to_string());
                    return Measured {
                        record: rec,
                        texts,
                        saw_usage_per_chunk,
                    };
                }
            };
            let c = match parse_event(&ev) {
                Ok(StreamItem::Done) => {
                    done = true;
                    continue;
                }
                Ok(StreamItem::Error(e)) => {
                    rec.end_ns = t;
                    rec.outcome = err("stream_error", format!("error inside the stream: {e}"));
                    return Measured {
                        record: rec,
                        texts,
                        saw_usage_per_chunk,
                    };
                }
                Ok(StreamItem::Chunk(c)) => c,
                Err(e) => {
                    rec.end_ns = t;
                    rec.outcome = err("malformed", e.to_string());
                    return Measured {
                        record: rec,
                        texts,
                        saw_usage_per_chunk,
                    };
                }
            };
            let text_len = c.text_len();
            if let Some(u) = &c.usage {
                if u.prompt_tokens.is_some() {
                    rec.prompt_tokens_reported = u.prompt_tokens;
                }
                if u.cached_tokens.is_some() {
                    rec.cached_tokens_reported = u.cached_tokens;
                }
                if let Some(ct) = u.completion_tokens {
                    rec.completion_tokens_reported = Some(ct);
                }
            }
            match counting {
                Counting::UsagePerChunk => {
                    // Tokens in this chunk = growth of the cumulative completion count. A chunk
                    // whose count grew carries tokens even if its text is empty (a detokenizer
                    // holding back a partial character); a chunk with text but no growth
                    // (usage-less chunk) is counted when the usage next grows.
                    let ct = c.usage.as_ref().and_then(|u| u.completion_tokens);
                    match ct {
                        Some(ct) if ct > last_completion => {
                            if text_len > 0 || c.finish_reason.is_none() {
                                saw_usage_per_chunk = true;
                                rec.chunks.push(Chunk {
                                    t_ns: t,
                                    tokens: (ct - last_completion) as u32,
                                });
                            } else if let Some(last) = rec.chunks.last_mut() {
                                // Usage that only grew on the finish chunk belongs to the last
                                // content chunk (engines that report usage at the end).
                                last.tokens += (ct - last_completion) as u32;
                            } else {
                                rec.chunks.push(Chunk {
                                    t_ns: t,
                                    tokens: (ct - last_completion) as u32,
                                });
                            }
                            last_completion = ct;
                        }
                        _ if text_len > 0 && ct.is_none() => {
                            // No usage on this content chunk: counted provisionally as 0 and
                            // reconciled at the end against the next usage growth.
                            rec.chunks.push(Chunk { t_ns: t, tokens: 0 });
                        }
                        _ => {}
                    }
                }
                Counting::Deferred => {
                    if text_len > 0 {
                        rec.chunks.push(Chunk { t_ns: t, tokens: 1 });
                        if let (Some(v), Some(s)) = (texts.as_mut(), c.content.as_deref()) {
                            v.push(s.to_string());
                        }
                    }
                }
            }
            if c.finish_reason.is_some() {
                finish = c.finish_reason.map(|s| s.to_string());
            }
        }
    }
    rec.end_ns = ns(origin, Instant::now());
    if let Some(Ok(ev)) = dec.finish()
        && matches!(parse_event(&ev), Ok(StreamItem::Done))
    {
        done = true;
    }
    if counting == Counting::UsagePerChunk {
        reconcile_zero_chunks(&mut rec.chunks);
    }
    rec.outcome = match (done, finish) {
        (true, Some(reason)) => Outcome::Finished { reason },
        (true, None) => err(
            "no_finish_reason",
            "the stream ended with [DONE] but no finish_reason".to_string(),
        ),
        (false, _) => err(
            "no_done",
            format!(
                "the stream ended without [DONE] after {} chunks (server closed the connection)",
                rec.chunks.len()
            ),
        ),
    };
    Measured {
        record: rec,
        texts,
        saw_usage_per_chunk,
    }
}

/// Chunks that arrived without usage (count 0) take one token from the next chunk whose usage
/// grew by more than one; any that remain count as one token each. This keeps the sum equal to
/// the server's count whenever the server's count covers them.
fn reconcile_zero_chunks(chunks: &mut [Chunk]) {
    let mut pending = 0u32;
    for c in chunks.iter_mut() {
        if c.tokens == 0 {
            pending += 1;
        } else if pending > 0 {
            let give = pending.min(c.tokens - 1);
            c.tokens -= give;
            pending -= give;
        }
    }
    // Walk back and set the rest: each zero chunk that found no donor is one token.
    for c in chunks.iter_mut() {
        if c.tokens == 0 {
            c.tokens = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_chunks_take_tokens_from_the_next_grown_chunk() {
        let mut v = vec![
            Chunk { t_ns: 1, tokens: 0 },
            Chunk { t_ns: 2, tokens: 2 },
            Chunk { t_ns: 3, tokens: 1 },
        ];
        reconcile_zero_chunks(&mut v);
        assert_eq!(
            v.iter().map(|c| c.tokens).collect::<Vec<_>>(),
            vec![1, 1, 1]
        );
    }
}
