//! One streamed completion request, measured: the instants of the protocol events (sent,
//! headers, each content chunk, end) as offsets from the cell's monotonic origin, and the tokens
//! each chunk carried.
//!
//! Timing rules (METHOD.md "Time"): the send instant is taken immediately before the request is
//! handed to the connection; a chunk's instant is taken when its bytes are read from the socket,
//! before any parsing, so parsing cost never shifts a timestamp. Several events that arrive in
//! one read share that read's instant: they did arrive together.

use crate::wire::body::Body;
use crate::wire::chunk::{StreamItem, error_body_message};
use crate::wire::error_kind::RequestErrorKind;
use crate::wire::events::parse_event_of;
use crate::wire::live::StreamLive;
use crate::wire::sse::SseDecoder;
use crate::wire::stream_end::{Silence, broken, end_outcome, error, messages_prompt, silent};
use bytes::Bytes;
use llmib_core::TokenCountSource;
use llmib_core::{Chunk, LoopGuard, Outcome, RequestRecord};
use std::sync::atomic::Ordering;
use std::time::Duration;
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

impl Counting {
    /// The source a row claims when no chunk was counted (nothing arrived to downgrade it).
    pub fn nominal_source(self) -> TokenCountSource {
        match self {
            Counting::UsagePerChunk => TokenCountSource::ServerUsagePerChunk,
            Counting::Deferred => TokenCountSource::ServerUsageFinalTokenizerChunks,
        }
    }
}

/// How long a stream may stay silent before it is given up as a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// From the send to the first content chunk (response headers included).
    pub first_token: Duration,
    /// Between two chunks once content has arrived.
    pub idle: Duration,
    /// Watch the text for an exact loop (`llmib_core::LoopGuard`); off with
    /// `--no-loop-detection`.
    pub loop_guard: bool,
}

impl Default for StreamLimits {
    /// The defaults of `Settings` (10 min to the first token, 2 min between chunks).
    fn default() -> Self {
        StreamLimits {
            first_token: Duration::from_secs(600),
            idle: Duration::from_secs(120),
            loop_guard: true,
        }
    }
}

/// One streamed request, built once and sent as many times as the closed loop needs: where it
/// goes, its bytes, and how its tokens are counted.
#[derive(Debug, Clone)]
pub struct RequestSpec {
    /// The completions endpoint.
    pub url: String,
    /// The serialised JSON body (`stream: true`); cloning shares the bytes.
    pub body: Bytes,
    /// How the stream tells tokens per chunk.
    pub counting: Counting,
    /// How long the stream may stay silent.
    pub limits: StreamLimits,
    /// The request's `max_tokens`, where the caller knows it: a server whose usage claims more
    /// completion tokens than that is not believed (the request fails with the reason).
    pub max_tokens: Option<u32>,
    /// The raw reader's target where the engine reads with it (`--http-reader raw`); `None`:
    /// the reqwest client.
    pub(crate) raw: Option<std::sync::Arc<crate::wire::rawhttp::RawTarget>>,
    /// Keep the answer's text ([`Measured::answer`]): a session's next turn sends it back.
    pub keep_answer: bool,
    /// Keep the answer's text in the record too (`RequestRecord::text`, `run --save-texts`).
    pub save_text: bool,
    /// The id the body gives the request (`rid`), where the engine can abort by it.
    pub rid: Option<std::sync::Arc<str>>,
    /// The route's API: which events the stream sends.
    pub api: llmib_core::Api,
    /// How the server means a Messages usage's `input_tokens` (the run's reading, learned by
    /// the calibration); unused by the other APIs.
    pub reading: llmib_core::InputReading,
    /// Check the answer against the run's schema or tools (`--response-format`, `--tools`):
    /// its text and tool calls are kept while it streams, and judged when it ends.
    pub structured: Option<std::sync::Arc<llmib_core::StructuredSpec>>,
}

impl RequestSpec {
    /// Serialises `body` once. A body that cannot be serialised is an error, never an empty
    /// request: an empty body would be measured as a server's 4xx.
    pub fn new(
        url: String,
        body: &impl serde::Serialize,
        counting: Counting,
    ) -> Result<RequestSpec, BodyError> {
        let body = serde_json::to_vec(body).map_err(BodyError)?;
        Ok(RequestSpec {
            url,
            body: body.into(),
            counting,
            limits: StreamLimits::default(),
            max_tokens: None,
            raw: None,
            keep_answer: false,
            save_text: false,
            rid: None,
            api: llmib_core::Api::Completions,
            reading: llmib_core::InputReading::Exclusive,
            structured: None,
        })
    }
}

/// A request body that could not be serialised (never sent as an empty request).
#[derive(Debug, thiserror::Error)]
#[error("the request body could not be serialised: {0}")]
pub struct BodyError(#[source] serde_json::Error);

/// A measured request, with the texts of its content chunks when counting is deferred.
#[derive(Debug, Clone)]
pub struct Measured {
    /// The record (chunk token counts are provisional when `texts` is `Some`).
    pub record: RequestRecord,
    /// Chunk texts, for deferred counting.
    pub texts: Option<Vec<String>>,
    /// Whether the stream carried `usage` on content chunks (continuous usage seen).
    pub saw_usage_per_chunk: bool,
    /// The server's `Retry-After` on a refused request (429, 503), capped at 60 s: how long a
    /// closed loop should wait before sending again.
    pub retry_after: Option<Duration>,
    /// The answer's content text, where the spec asked to keep it (reasoning text is left
    /// out: a chat history carries the answer as the API returned it).
    pub answer: Option<String>,
    /// The repetition guard while the stream runs; its finding goes to the record's
    /// `repetition` when the stream ends.
    guard: Option<Box<LoopGuard>>,
    /// The answer's text and tool calls, kept where the spec checks them; judged into the
    /// record's `structured` when the stream ends.
    checked: Option<Box<llmib_core::AnswerText>>,
}

impl Measured {
    /// A request with nothing but its record (one never sent, say).
    pub fn of_record(record: RequestRecord) -> Measured {
        Measured {
            record,
            texts: None,
            saw_usage_per_chunk: false,
            retry_after: None,
            answer: None,
            guard: None,
            checked: None,
        }
    }
}

fn ns(origin: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(origin).as_nanos() as u64
}

/// Sends `spec` and measures the stream until it ends or `cancel` fires. Never fails: every error becomes an [`Outcome::Error`] in the record.
/// `live`, when given, gets the stream's first-token flag as soon as the first content chunk
/// arrives (readiness watches it) and its running token count (live views).
pub async fn measure(
    client: &reqwest::Client,
    spec: &RequestSpec,
    stream: u32,
    origin: Instant,
    cancel: &CancellationToken,
    live: Option<&StreamLive>,
) -> Measured {
    let counting = spec.counting;
    let mut m = Measured {
        record: RequestRecord {
            stream,
            sent_ns: 0,
            headers_ns: None,
            chunks: Vec::new(),
            end_ns: 0,
            outcome: Outcome::Cancelled,
            prompt_tokens_reported: None,
            completion_tokens_reported: None,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        },
        texts: (counting == Counting::Deferred).then(Vec::new),
        saw_usage_per_chunk: false,
        retry_after: None,
        answer: (spec.keep_answer || spec.save_text).then(String::new),
        guard: spec.limits.loop_guard.then(Box::default),
        checked: spec.structured.as_ref().map(|_| Box::default()),
    };
    let (end_ns, outcome) = drive(client, spec, origin, cancel, live, &mut m).await;
    m.record.end_ns = end_ns;
    m.record.outcome = outcome;
    // The last scan covers the text since the last periodic one (a cancelled stream too).
    m.record.repetition = m.guard.take().and_then(|g| g.finish());
    if let (Some(s), Some(a)) = (&spec.structured, m.checked.take()) {
        m.record.structured = crate::wire::structured::verdict(s, &a, &m.record.outcome);
    }
    if spec.save_text {
        m.record.text = if spec.keep_answer {
            m.answer.clone()
        } else {
            m.answer.take()
        };
    }
    if counting == Counting::UsagePerChunk {
        reconcile_zero_chunks(&mut m.record.chunks);
    }
    m
}

/// Runs the request, filling `m` as events arrive; returns when and how it ended. Phases: send
/// and check the status ([`send`]), read events and account each chunk ([`read_events`], [`account`]), then
/// judge how the stream ended ([`end_outcome`]).
async fn drive(
    client: &reqwest::Client,
    spec: &RequestSpec,
    origin: Instant,
    cancel: &CancellationToken,
    live: Option<&StreamLive>,
    m: &mut Measured,
) -> (u64, Outcome) {
    let now = || ns(origin, Instant::now());
    let mut body = match send(client, spec, origin, cancel, m).await {
        Ok(r) => r,
        Err(ended) => return ended,
    };
    let mut dec = SseDecoder::new();
    let mut seen = Seen {
        max_tokens: spec.max_tokens,
        ..Seen::default()
    };
    // Tokens of this request already added to the live count.
    let mut published = 0u64;
    // Silence: the first-token limit, then the idle limit ([`Silence`]).
    let timer = tokio::time::sleep_until(
        origin + Duration::from_nanos(m.record.sent_ns) + spec.limits.first_token,
    );
    // One cancellation future for the whole stream: a new one per read would join and leave
    // the token's waiter list (two locks of a mutex every stream shares) for every chunk.
    let cancelled = cancel.cancelled();
    tokio::pin!(timer, cancelled);
    let mut silence = Silence::new(timer, origin, spec.limits.idle);
    loop {
        let next = tokio::select! {
            biased;
            // Dropping the body closes the connection, so the server aborts the request and
            // frees its KV cache.
            _ = &mut cancelled => return (now(), Outcome::Cancelled),
            _ = &mut silence.timer => {
                if silence.expired() {
                    return (now(), silent(spec.limits.first_token, spec.limits.idle, m.record.chunks.len()));
                }
                continue;
            }
            n = body.next() => n,
        };
        let (bytes, at) = match next {
            Some(Ok(b)) => b,
            Some(Err(e)) => return (now(), broken(m.record.chunks.len(), &e)),
            None => break,
        };
        // The raw reader's instant (the kernel's receive time) where it gave one.
        let t = at.map_or_else(now, |at| ns(origin, at));
        let had_token = !m.record.chunks.is_empty();
        dec.push(&bytes);
        if let Err(ended) = read_events(&mut dec, m, t, spec, &mut seen) {
            return (t, ended);
        }
        silence.read(t, !m.record.chunks.is_empty());
        if let Some(live) = live {
            publish(
                live,
                m,
                &bytes,
                had_token,
                seen.last_completion,
                &mut published,
            );
        }
    }
    let end = now();
    if let Some(Ok(ev)) = dec.finish()
        && matches!(
            parse_event_of(spec.api, &ev),
            Ok(StreamItem::Done | StreamItem::Final(_))
        )
    {
        seen.done = true;
    }
    (end, ended_on_its_own(m, seen, spec))
}

/// How a stream that the server ended ended: its held-back token counted, a Messages stream's
/// prompt read from all its usage reports, then finished or failed by its end event.
fn ended_on_its_own(m: &mut Measured, seen: Seen, spec: &RequestSpec) -> Outcome {
    held_back_token(m, &seen, spec.counting);
    match messages_prompt(&seen.messages_usage, spec.reading) {
        Ok(Some(n)) => m.record.prompt_tokens_reported = Some(n),
        Ok(None) => {}
        Err(conflict) => return conflict,
    }
    end_outcome(spec.api, seen.done, seen.finish, m.record.chunks.len())
}

/// What the stream has said so far beyond its chunks.
#[derive(Default)]
struct Seen {
    /// The last cumulative completion-token count in a chunk's usage.
    last_completion: u64,
    /// The finish reason, once sent.
    finish: Option<String>,
    /// `[DONE]` arrived.
    done: bool,
    /// The request's `max_tokens`, where known.
    max_tokens: Option<u32>,
    /// When the first event with a finish reason or a completion count of at least one
    /// arrived: the instant of a token whose text never came (see [`held_back_token`]).
    ended_ns: Option<u64>,
    /// The Messages API's usage reports, in order (empty on the other APIs).
    messages_usage: Vec<llmib_core::MessagesUsage>,
}

/// Deferred counting keeps only chunks with text, so a stream whose every token was held back
/// by the server's detokenizer (llama.cpp withholds a partial UTF-8 character, and streams
/// nothing for a special token; at `max_tokens = 1` that is the whole output) would seem to
/// have produced nothing although the server finished it and counted its tokens. Such a
/// stream gets one chunk, at the instant the server said it finished, with an empty text (so
/// the texts stay aligned with the chunks); the final usage sets its count.
fn held_back_token(m: &mut Measured, seen: &Seen, counting: Counting) {
    let counted = m.record.completion_tokens_reported.is_some_and(|n| n >= 1);
    if counting != Counting::Deferred
        || !m.record.chunks.is_empty()
        || !seen.done
        || seen.finish.is_none()
        || !counted
    {
        return;
    }
    let Some(t_ns) = seen.ended_ns else { return };
    m.record.chunks.push(Chunk { t_ns, tokens: 1 });
    if let Some(v) = m.texts.as_mut() {
        v.push(String::new());
    }
}

/// Takes the events complete in `dec` after a read at `t`, accounting each chunk. `Err`: an
/// event ended the stream (an error inside it, or one that cannot be parsed), and how.
fn read_events(
    dec: &mut SseDecoder,
    m: &mut Measured,
    t: u64,
    spec: &RequestSpec,
    seen: &mut Seen,
) -> Result<(), Outcome> {
    let counting = spec.counting;
    while let Some(ev) = dec.next_event() {
        let c = match ev
            .map_err(|e| e.to_string())
            .and_then(|ev| parse_event_of(spec.api, &ev).map_err(|e| e.to_string()))
        {
            Ok(StreamItem::Done) => {
                seen.done = true;
                continue;
            }
            Ok(StreamItem::Final(c)) => {
                seen.done = true;
                c
            }
            Ok(StreamItem::Error(e)) => {
                return Err(error(
                    RequestErrorKind::StreamError,
                    format!("error inside the stream: {e}"),
                ));
            }
            Ok(StreamItem::Chunk(c)) => c,
            Err(e) => return Err(error(RequestErrorKind::Malformed, e)),
        };
        // A count above max_tokens cannot be true (the server was asked for at most that): it
        // is a disagreement to report, never a measurement.
        let claimed = c.usage.as_ref().and_then(|u| u.completion_tokens);
        if let (Some(max), Some(ct)) = (seen.max_tokens, claimed)
            && ct > u64::from(max)
        {
            return Err(error(
                RequestErrorKind::CountDisagreement,
                format!(
                    "the server's usage claims {ct} completion tokens for a request of at most {max} (max_tokens): no figure is taken from it"
                ),
            ));
        }
        if let Some(u) = c.messages_usage {
            seen.messages_usage.push(u);
        }
        account(m, &c, t, counting, &mut seen.last_completion);
        let counted = claimed.is_some_and(|n| n >= 1);
        if seen.ended_ns.is_none() && (c.finish_reason.is_some() || counted) {
            seen.ended_ns = Some(t);
        }
        if let Some(f) = c.finish_reason {
            seen.finish = Some(f.to_string());
        }
    }
    Ok(())
}

/// After a read: the stream's first-token flag and its live token count (the cumulative
/// completion count with per-chunk usage, chunks otherwise), one relaxed atomic each, only
/// when something changed; and the read's `bytes` for a viewer's text, which costs one relaxed
/// load while no viewer watches this stream (`LiveText::offer`).
fn publish(
    live: &StreamLive,
    m: &Measured,
    bytes: &[u8],
    had_token: bool,
    usage: u64,
    published: &mut u64,
) {
    live.text.offer(m.record.sent_ns, bytes);
    if m.record.chunks.is_empty() {
        return;
    }
    if !had_token {
        live.first_token.store(true, Ordering::Relaxed);
    }
    let now = if m.saw_usage_per_chunk {
        usage
    } else {
        m.record.chunks.len() as u64
    };
    if now > *published {
        live.tokens.fetch_add(now - *published, Ordering::Relaxed);
        *published = now;
    }
}

/// Sends the request and checks its status; `Err` holds when and how it ended instead.
async fn send(
    client: &reqwest::Client,
    spec: &RequestSpec,
    origin: Instant,
    cancel: &CancellationToken,
    m: &mut Measured,
) -> Result<Body, (u64, Outcome)> {
    if let Some(raw) = &spec.raw {
        return send_raw(raw, spec, origin, cancel, m).await;
    }
    let rec = &mut m.record;
    let url = spec.url.as_str();
    let now = || ns(origin, Instant::now());
    let req = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(spec.body.clone());
    rec.sent_ns = now();
    // A pooled connection the server already closed fails at once and is retried on another;
    // the send instant is the answered attempt's.
    let sent_ns = &mut rec.sent_ns;
    let limit = tokio::time::sleep(spec.limits.first_token);
    let resp = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err((now(), Outcome::Cancelled)),
        _ = limit => return Err((now(), silent(spec.limits.first_token, spec.limits.idle, 0))),
        r = crate::wire::http::send_fresh(req, || *sent_ns = now()) => r,
    };
    let resp = resp.map_err(|e| {
        let kind = if e.is_connect() {
            RequestErrorKind::Connect
        } else if e.is_timeout() {
            RequestErrorKind::Timeout
        } else {
            RequestErrorKind::Http
        };
        (
            now(),
            error(kind, crate::wire::http::describe_request_error(&e, url)),
        )
    })?;
    rec.headers_ns = Some(now());
    let status = resp.status();
    if !status.is_success() {
        m.retry_after = retry_after(resp.headers());
        let text = resp.text().await.unwrap_or_default();
        let msg = format!("HTTP {}: {}", status.as_u16(), error_body_message(&text));
        return Err((
            now(),
            error(RequestErrorKind::HttpStatus(status.as_u16()), msg),
        ));
    }
    Ok(Body::Reqwest(resp))
}

/// [`send`] through the raw reader: the same phases, limits and error kinds, the headers'
/// instant the kernel's receive time of the read that completed them.
async fn send_raw(
    raw: &std::sync::Arc<crate::wire::rawhttp::RawTarget>,
    spec: &RequestSpec,
    origin: Instant,
    cancel: &CancellationToken,
    m: &mut Measured,
) -> Result<Body, (u64, Outcome)> {
    use crate::wire::rawhttp::RawError;
    let now = || ns(origin, Instant::now());
    let rec = &mut m.record;
    rec.sent_ns = now();
    let sent_ns = &mut rec.sent_ns;
    let limit = tokio::time::sleep(spec.limits.first_token);
    let answer = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err((now(), Outcome::Cancelled)),
        _ = limit => return Err((now(), silent(spec.limits.first_token, spec.limits.idle, 0))),
        r = raw.send(&spec.body, || *sent_ns = now()) => r,
    };
    let (resp, head) = answer.map_err(|e| match e {
        RawError::Connect(msg) => (now(), error(RequestErrorKind::Connect, msg)),
        RawError::Http(msg) => (now(), error(RequestErrorKind::Http, msg)),
    })?;
    rec.headers_ns = Some(ns(origin, head.best()).max(rec.sent_ns));
    let status = resp.status();
    if (300..400).contains(&status) {
        // reqwest would follow it (a POST turned into a GET by a 301, 302 or 303); this reader
        // does not, so the message names the address to give instead.
        let to = resp
            .location()
            .unwrap_or("an address it did not give")
            .to_string();
        let msg = format!(
            "HTTP {status}: the server redirects generation requests to {to}: give that server's base address (without /v1/...) with --url"
        );
        return Err((now(), error(RequestErrorKind::HttpStatus(status), msg)));
    }
    if !(200..300).contains(&status) {
        m.retry_after = resp.retry_after();
        let text = resp.text().await;
        let msg = format!("HTTP {status}: {}", error_body_message(&text));
        return Err((now(), error(RequestErrorKind::HttpStatus(status), msg)));
    }
    Ok(Body::Raw(resp))
}

/// `Retry-After` in seconds (the HTTP-date form is rare from inference servers and ignored),
/// capped at 60 s so a hostile value cannot park the run.
fn retry_after(h: &reqwest::header::HeaderMap) -> Option<Duration> {
    crate::wire::rawbody::retry_after_secs(h.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?)
}

/// Records one parsed chunk that arrived at `t`: its usage, and its tokens by `counting`.
fn account(
    m: &mut Measured,
    c: &crate::wire::chunk::Chunk<'_>,
    t: u64,
    counting: Counting,
    last_completion: &mut u64,
) {
    let rec = &mut m.record;
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
    // llama.cpp says what its slot's cache served in the final chunk's `timings.cache_n`.
    if c.cache_n.is_some() {
        rec.cached_tokens_reported = c.cache_n;
    }
    if let (Some(a), Some(text)) = (m.answer.as_mut(), c.content.as_deref()) {
        a.push_str(text);
    }
    if let Some(g) = m.guard.as_mut() {
        g.push(c.content.as_deref(), c.reasoning.as_deref());
    }
    if let Some(a) = m.checked.as_mut() {
        crate::wire::structured::collect(a, c);
    }
    match counting {
        Counting::UsagePerChunk => {
            // Tokens in this chunk = growth of the cumulative completion count. A chunk whose
            // count grew carries tokens even if its text is empty (a detokenizer holding back a
            // partial character); a chunk with text but no usage is counted when the usage
            // next grows (see `reconcile_zero_chunks`).
            let ct = c.usage.as_ref().and_then(|u| u.completion_tokens);
            match ct {
                Some(ct) if ct > *last_completion => {
                    let k = (ct - *last_completion) as u32;
                    if text_len > 0 || c.finish_reason.is_none() {
                        m.saw_usage_per_chunk = true;
                        rec.chunks.push(Chunk { t_ns: t, tokens: k });
                    } else if let Some(last) = rec.chunks.last_mut() {
                        // Usage that only grew on the finish chunk belongs to the last content
                        // chunk (engines that report usage at the end).
                        last.tokens += k;
                    } else {
                        rec.chunks.push(Chunk { t_ns: t, tokens: k });
                    }
                    *last_completion = ct;
                }
                None if text_len > 0 => rec.chunks.push(Chunk { t_ns: t, tokens: 0 }),
                _ => {}
            }
        }
        Counting::Deferred => {
            if text_len > 0 {
                // Provisional: `counting::count_tokens` sets the real counts.
                rec.chunks.push(Chunk { t_ns: t, tokens: 1 });
                if let Some(v) = m.texts.as_mut() {
                    // Reasoning text is generated tokens too.
                    let mut s = c.reasoning.as_deref().unwrap_or("").to_string();
                    s.push_str(c.content.as_deref().unwrap_or(""));
                    s.push_str(c.tool_args.as_deref().unwrap_or(""));
                    v.push(s);
                }
            }
        }
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
#[path = "stream_tests.rs"]
mod tests;
