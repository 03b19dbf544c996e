//! An incremental Server-Sent Events decoder, fed whatever byte slices the socket delivers.
//!
//! Inference servers differ in small ways that a strict decoder would trip on: `data:` with or
//! without the space (TGI writes none), `:` keep-alive comments, CRLF/LF/CR line ends, trailing
//! spaces after `[DONE]`, and llama.cpp's non-standard `error:` field. The decoder handles all of
//! them. It works on bytes and converts to UTF-8 only when an event is complete, so a multi-byte
//! character split across two TCP reads is never a problem.
//!
//! It is built for the client's cost target (≥1M tokens/s ingested per core): events borrow the
//! decoder's reusable buffers ([`SseDecoder::next_event`] is a lending iterator), so the steady
//! state allocates nothing per event.
//!
//! The decoder does not decide whether a stream ended properly: it reports each event (the
//! caller looks for [`SseEvent::is_done`]) and, at end of input, [`SseDecoder::finish`] flushes a
//! final event that lacked its blank line. A stream that ends without `[DONE]` is therefore
//! visible to the caller, which counts it as a failure.

use memchr::memchr2;
use thiserror::Error;

/// One dispatched event. It borrows the decoder; copy what you keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` field, or `""` when the event had none (the SSE default type "message").
    /// llama.cpp's non-standard `error: {...}` line is reported with `event == "error"`.
    pub event: &'a str,
    /// The data lines joined with `\n`, with trailing spaces and tabs of each line removed.
    pub data: &'a str,
}

impl SseEvent<'_> {
    /// True for the OpenAI end-of-stream sentinel `[DONE]` (surrounding whitespace ignored).
    pub fn is_done(&self) -> bool {
        self.data.trim() == "[DONE]"
    }

    /// True when the server marked this event as an error (an `event: error` or llama.cpp's
    /// `error:` field). Errors sent as `data: {"error": …}` are found by the chunk parser instead.
    pub fn is_error_event(&self) -> bool {
        self.event == "error"
    }

    /// An owned copy, for tests and for keeping an event past the next call.
    pub fn to_owned_event(&self) -> OwnedSseEvent {
        OwnedSseEvent {
            event: self.event.to_owned(),
            data: self.data.to_owned(),
        }
    }
}

/// An owned [`SseEvent`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedSseEvent {
    /// See [`SseEvent::event`].
    pub event: String,
    /// See [`SseEvent::data`].
    pub data: String,
}

/// What can go wrong while decoding.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SseError {
    /// The event's data was not valid UTF-8.
    #[error("the server sent an event that is not valid UTF-8")]
    InvalidUtf8,
    /// A single line grew past the limit without a line end: not an event stream.
    #[error(
        "the server sent a line longer than {limit} bytes without a line end; is this an event stream?"
    )]
    LineTooLong {
        /// The limit that was exceeded.
        limit: usize,
    },
}

/// Longest line accepted (64 MiB): far above any real chunk, low enough to stop a runaway body.
const MAX_LINE: usize = 64 << 20;

/// The incremental decoder. Feed bytes with [`push`](Self::push), then drain events with
/// [`next_event`](Self::next_event) until it returns `None`; at end of input call
/// [`finish`](Self::finish).
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// Bytes received but not yet consumed (at most one partial line after a drain).
    buf: Vec<u8>,
    /// Start of the unconsumed part of `buf`.
    pos: usize,
    /// The previous line ended with `\r` at the very end of a push: a `\n` that starts the next
    /// push belongs to that line end (CRLF split across reads), not a blank line.
    skip_lf: bool,
    /// Data of the event being assembled.
    data: Vec<u8>,
    /// Whether the event being assembled has at least one data line (an empty `data:` counts).
    has_data: bool,
    /// `event:` field of the event being assembled.
    event: Vec<u8>,
    /// Event type of the last dispatched event (kept so the returned `&str` can borrow it).
    out_event: Vec<u8>,
    /// Data of the last dispatched event.
    out_data: Vec<u8>,
    /// Comment lines seen (keep-alives).
    comments: u64,
    /// Events dispatched.
    events: u64,
}

impl SseDecoder {
    /// A new decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends received bytes. Call [`next_event`](Self::next_event) until `None` afterwards.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            // Drop consumed bytes; what remains is at most one partial line, so this move is
            // small, and the buffer's capacity is reused (no allocation in the steady state).
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete event, if the bytes pushed so far contain one.
    pub fn next_event(&mut self) -> Option<Result<SseEvent<'_>, SseError>> {
        loop {
            if self.skip_lf && self.pos < self.buf.len() {
                if self.buf[self.pos] == b'\n' {
                    self.pos += 1;
                }
                self.skip_lf = false;
            }
            let rest = &self.buf[self.pos..];
            let Some(i) = memchr2(b'\n', b'\r', rest) else {
                if rest.len() > MAX_LINE {
                    self.pos = self.buf.len();
                    return Some(Err(SseError::LineTooLong { limit: MAX_LINE }));
                }
                return None;
            };
            let line_start = self.pos;
            let line_end = self.pos + i;
            let term = rest[i];
            self.pos = line_end + 1;
            if term == b'\r' {
                if self.pos < self.buf.len() {
                    if self.buf[self.pos] == b'\n' {
                        self.pos += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            if self.process_line(line_start, line_end) {
                return Some(self.dispatch());
            }
        }
    }

    /// End of input: processes a last line that had no line end and dispatches an event that
    /// lacked its closing blank line (lenient: a strict decoder would drop it). Returns `None`
    /// when nothing was pending. The decoder is reset afterwards.
    pub fn finish(&mut self) -> Option<Result<SseEvent<'_>, SseError>> {
        let end = self.buf.len();
        let start = self.pos;
        self.pos = end;
        self.skip_lf = false;
        let mut ready = false;
        if start < end {
            ready = self.process_line(start, end);
        }
        if !ready && self.has_data {
            ready = true;
        }
        if ready {
            let r = self.dispatch();
            // `dispatch` cleared the assembly state; the returned event borrows `out_*`.
            return Some(r);
        }
        self.event.clear();
        None
    }

    /// Keep-alive comment lines seen so far.
    pub fn comments_seen(&self) -> u64 {
        self.comments
    }

    /// Events dispatched so far.
    pub fn events_seen(&self) -> u64 {
        self.events
    }

    /// Bytes received that are not yet part of a complete line.
    pub fn pending_bytes(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Convenience for tests and slow paths: pushes `bytes` and collects owned events.
    pub fn push_collect(&mut self, bytes: &[u8]) -> Result<Vec<OwnedSseEvent>, SseError> {
        self.push(bytes);
        let mut out = Vec::new();
        while let Some(ev) = self.next_event() {
            out.push(ev?.to_owned_event());
        }
        Ok(out)
    }

    /// Handles one line (without its terminator). Returns true when it completes an event.
    fn process_line(&mut self, start: usize, end: usize) -> bool {
        let line = &self.buf[start..end];
        if line.is_empty() {
            return self.has_data;
        }
        if line[0] == b':' {
            self.comments += 1;
            return false;
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(c) => {
                let v = &line[c + 1..];
                // One leading space is part of the syntax ("data: x"); "data:x" is also valid.
                let v = v.strip_prefix(b" ").unwrap_or(v);
                (&line[..c], v)
            }
            None => (line, &line[line.len()..]),
        };
        let value = trim_end_spaces(value);
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
            }
            // llama.cpp (older builds) ends a failed stream with `error: {json}` and a blank
            // line. Standard decoders ignore unknown fields and would lose the message.
            b"error" => {
                self.event.clear();
                self.event.extend_from_slice(b"error");
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            // `id`, `retry` and unknown fields carry nothing the benchmark needs.
            _ => {}
        }
        false
    }

    /// Moves the assembled event to the output buffers and returns it.
    fn dispatch(&mut self) -> Result<SseEvent<'_>, SseError> {
        std::mem::swap(&mut self.out_data, &mut self.data);
        std::mem::swap(&mut self.out_event, &mut self.event);
        self.data.clear();
        self.event.clear();
        self.has_data = false;
        self.events += 1;
        let data = std::str::from_utf8(&self.out_data).map_err(|_| SseError::InvalidUtf8)?;
        let event = std::str::from_utf8(&self.out_event).map_err(|_| SseError::InvalidUtf8)?;
        Ok(SseEvent { event, data })
    }
}

fn trim_end_spaces(mut v: &[u8]) -> &[u8] {
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const SGLANG: &str = include_str!("../../fixtures/transcripts/sglang/completions_stream.sse");
    const SGLANG_CHAT: &str = include_str!("../../fixtures/transcripts/sglang/chat_stream.sse");
    const VLLM: &str = include_str!("../../fixtures/transcripts/vllm/completions_stream.sse");
    const TGI: &str = include_str!("../../fixtures/transcripts/tgi/completions_stream.sse");
    const TGI_ERR: &str = include_str!("../../fixtures/transcripts/tgi/error_in_stream.sse");
    const TRT: &str = include_str!("../../fixtures/transcripts/trtllm/completions_stream.sse");
    const OLLAMA: &str = include_str!("../../fixtures/transcripts/ollama/completions_stream.sse");
    const OPENAI_CRLF: &str =
        include_str!("../../fixtures/transcripts/generic/chat_stream_crlf.sse");
    const TRUNCATED_CR: &str = include_str!("../../fixtures/transcripts/generic/truncated_cr.sse");
    const LLAMA: &str = include_str!("../../fixtures/transcripts/llamacpp/completions_stream.sse");
    const LLAMA_CHAT: &str =
        include_str!("../../fixtures/transcripts/llamacpp/chat_stream_usage.sse");
    const LLAMA_LONG: &str =
        include_str!("../../fixtures/transcripts/llamacpp/completions_stream_queued.sse");

    /// Decodes `parts` pushed one after another, then finishes.
    fn decode(parts: &[&[u8]]) -> (Vec<OwnedSseEvent>, Option<OwnedSseEvent>) {
        let mut d = SseDecoder::new();
        let mut out = Vec::new();
        for p in parts {
            out.extend(d.push_collect(p).expect("valid"));
        }
        let last = d.finish().map(|r| r.expect("valid").to_owned_event());
        (out, last)
    }

    fn all_fixtures() -> Vec<&'static str> {
        vec![
            SGLANG,
            SGLANG_CHAT,
            VLLM,
            TGI,
            TGI_ERR,
            TRT,
            OLLAMA,
            OPENAI_CRLF,
            TRUNCATED_CR,
            LLAMA,
            LLAMA_CHAT,
        ]
    }

    #[test]
    fn every_byte_split_gives_the_same_events() {
        for fx in all_fixtures() {
            let b = fx.as_bytes();
            let whole = decode(&[b]);
            assert!(!whole.0.is_empty());
            for k in 0..=b.len() {
                assert_eq!(decode(&[&b[..k], &b[k..]]), whole, "split at {k}");
            }
            let bytes: Vec<&[u8]> = b.chunks(1).collect();
            assert_eq!(decode(&bytes), whole, "byte at a time");
        }
    }

    #[test]
    fn long_recorded_stream_at_sampled_splits() {
        // 61 KB, 256 events: every 61st split point keeps the test fast in debug builds.
        let b = LLAMA_LONG.as_bytes();
        let whole = decode(&[b]);
        assert_eq!(whole.0.len(), 258);
        assert_eq!(whole.0.last().map(|e| e.data.as_str()), Some("[DONE]"));
        for k in (0..=b.len()).step_by(61) {
            assert_eq!(decode(&[&b[..k], &b[k..]]), whole, "split at {k}");
        }
    }

    #[test]
    fn three_way_splits_of_a_small_stream() {
        let b = TGI_ERR.as_bytes();
        let whole = decode(&[b]);
        for i in 0..=b.len() {
            for j in i..=b.len() {
                assert_eq!(decode(&[&b[..i], &b[i..j], &b[j..]]), whole);
            }
        }
    }

    #[test]
    fn sglang_stream_events_and_done() {
        let (ev, last) = decode(&[SGLANG.as_bytes()]);
        assert_eq!(ev.len(), 6);
        assert!(last.is_none());
        assert!(ev[0].data.starts_with("{\"id\""));
        assert_eq!(ev[5].data, "[DONE]");
        assert!(ev.iter().all(|e| e.event.is_empty()));
        // UTF-8 (em dash, umlaut, emoji) survives every split (tested above) and decodes here.
        assert!(ev[2].data.contains("über"));
        assert!(ev[3].data.contains('🦊'));
    }

    #[test]
    fn data_without_space_and_bare_comment() {
        let mut d = SseDecoder::new();
        let ev = d.push_collect(TGI.as_bytes()).expect("valid");
        assert_eq!(ev.len(), 4);
        assert!(ev[0].data.starts_with('{'));
        assert_eq!(ev[3].data, "[DONE]");
        assert_eq!(d.comments_seen(), 1);
    }

    #[test]
    fn crlf_keepalive_and_trailing_spaces() {
        let mut d = SseDecoder::new();
        let ev = d.push_collect(OPENAI_CRLF.as_bytes()).expect("valid");
        assert_eq!(ev.len(), 5);
        assert_eq!(d.comments_seen(), 1);
        assert_eq!(ev[4].data, "[DONE]");
        let e = SseEvent {
            event: "",
            data: "[DONE]  ",
        };
        assert!(e.is_done());
    }

    #[test]
    fn cr_only_line_ends_and_missing_done_is_visible() {
        let (ev, last) = decode(&[TRUNCATED_CR.as_bytes()]);
        assert_eq!(ev.len(), 2);
        assert!(last.is_none());
        assert!(!ev.iter().any(|e| e.data == "[DONE]"));
    }

    #[test]
    fn finish_flushes_an_event_without_blank_line() {
        let (ev, last) = decode(&[b"data: {\"a\":1}\n\ndata: [DONE]"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(last.expect("flushed").data, "[DONE]");
        let (ev, last) = decode(&[b"data: {\"a\":1}\n"]);
        assert!(ev.is_empty());
        assert_eq!(last.expect("flushed").data, "{\"a\":1}");
    }

    #[test]
    fn multi_line_data_and_event_field() {
        let (ev, _) = decode(&[b"event: message\ndata: line one\ndata:line two\ndata\n\n"]);
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].event, "message");
        assert_eq!(ev[0].data, "line one\nline two\n");
        // The event type does not leak into the next event.
        let (ev, _) = decode(&[b"event: ping\ndata: 1\n\ndata: 2\n\n"]);
        assert_eq!(ev[1].event, "");
    }

    #[test]
    fn llama_cpp_error_field_is_an_error_event() {
        let (ev, _) =
            decode(&[b"data: {\"x\":1}\n\nerror: {\"code\":500,\"message\":\"boom\"}\n\n"]);
        assert_eq!(ev.len(), 2);
        assert!(ev[1].event == "error");
        assert!(ev[1].data.contains("boom"));
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        let (ev, last) = decode(&[b"\n\n\r\n: ping\n\nid: 7\nretry: 10\n\n"]);
        assert!(ev.is_empty());
        assert!(last.is_none());
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_panic() {
        let mut d = SseDecoder::new();
        d.push(b"data: \xff\xfe\n\n");
        assert_eq!(d.next_event(), Some(Err(SseError::InvalidUtf8)));
        d.push(b"data: ok\n\n");
        assert_eq!(
            d.next_event().and_then(|r| r.ok()).map(|e| e.data),
            Some("ok")
        );
    }

    #[test]
    fn split_multibyte_character() {
        let s = "data: {\"t\":\"é🦊\"}\n\n".as_bytes();
        for k in 0..s.len() {
            let (ev, _) = decode(&[&s[..k], &s[k..]]);
            assert_eq!(ev[0].data, "{\"t\":\"é🦊\"}");
        }
    }
}
