//! What one stream publishes while it runs, for live views: its first-token flag, its running
//! token count, and — only while a viewer watches the stream — the latest text it received. The
//! request executor (`stream`) writes it with one relaxed atomic per read; a window
//! (`LiveWindow`, in the progress room) holds one per stream and reads them.
//!
//! The text ([`LiveText`]) costs a stream nothing it would notice: unwatched, one relaxed load
//! per read; watched, the read's bytes go through a second SSE decoder into two bounded rings
//! (content and reasoning apart, [`TEXT_RING_BYTES`] each, the oldest bytes overwritten), under
//! a lock the stream only ever tries: a viewer that holds it costs the viewer that read's
//! text, never the stream a wait.

use crate::wire::chunk::StreamItem;
use crate::wire::events::parse_event_of;
use crate::wire::sse::SseDecoder;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError, TryLockError};

/// Bytes of a stream's latest text kept for a viewer, for content and for reasoning each.
pub const TEXT_RING_BYTES: usize = 8 * 1024;

/// The longest partial line the viewer's decoder keeps: a runaway line (which the stream's own
/// decoder judges) is dropped here rather than held twice.
const VIEW_PENDING_MAX: usize = 64 * 1024;

/// One stream's live state.
#[derive(Debug, Default)]
pub struct StreamLive {
    /// Set by the stream's first content chunk of the measured phase (readiness reads it).
    pub first_token: AtomicBool,
    /// Content tokens received so far over all of this stream's requests.
    pub tokens: AtomicU64,
    /// The latest text, kept only while a viewer watches this stream.
    pub text: LiveText,
}

/// A stream's latest text for a viewer: written by the stream only while [`LiveText::watch`]
/// is on, read by the viewer with [`LiveText::snapshot`].
#[derive(Debug, Default)]
pub struct LiveText {
    watched: AtomicBool,
    /// Reads whose text was lost because the viewer held the lock.
    missed: AtomicU64,
    state: Mutex<TextState>,
}

/// The writer's side under the lock: the rings and the decoder that feeds them.
#[derive(Debug, Default)]
struct TextState {
    rings: TextRings,
    decoder: SseDecoder,
    /// The send instant of the request being read: a new one starts a new request.
    request_sent_ns: Option<u64>,
}

/// What a viewer reads of one stream: its content and reasoning rings, and how many of its
/// requests were seen while it was watched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextRings {
    /// The answer's text.
    pub content: TextRing,
    /// The reasoning text (a thinking model's `reasoning_content`), apart from the answer.
    pub reasoning: TextRing,
    /// Requests of this stream seen while watched (the last one is the one being read).
    pub requests: u64,
}

impl LiveText {
    /// Starts (`true`) or stops keeping the text. A stream starts decoding at its next read,
    /// mid-event if the event is split: that event is skipped.
    pub fn watch(&self, on: bool) {
        self.watched.store(on, Ordering::Relaxed);
    }

    /// Whether a viewer watches this stream.
    pub fn watched(&self) -> bool {
        self.watched.load(Ordering::Relaxed)
    }

    /// Reads whose text a viewer's lock cost (the viewer shows the gap, the stream never
    /// waits).
    pub fn missed(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }

    /// The rings as they are now (a copy: at most twice [`TEXT_RING_BYTES`]).
    pub fn snapshot(&self) -> TextRings {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .rings
            .clone()
    }

    /// The stream's hook, once per read: `bytes` is the read's body, `sent_ns` the send
    /// instant of the request it belongs to. Unwatched: one relaxed load.
    pub fn offer(&self, sent_ns: u64, bytes: &[u8]) {
        if !self.watched.load(Ordering::Relaxed) {
            return;
        }
        let mut state = match self.state.try_lock() {
            Ok(s) => s,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                self.missed.fetch_add(1, Ordering::Relaxed);
                return;
            }
        };
        state.take(sent_ns, bytes);
    }
}

impl TextState {
    /// Decodes `bytes` of the request sent at `sent_ns` into the rings.
    fn take(&mut self, sent_ns: u64, bytes: &[u8]) {
        if self.request_sent_ns != Some(sent_ns) {
            // A new request: its stream starts afresh, and the rings say where.
            self.request_sent_ns = Some(sent_ns);
            self.decoder = SseDecoder::new();
            self.rings.requests += 1;
            let mark = format!("\n── request {} ──\n", self.rings.requests);
            for ring in [&mut self.rings.content, &mut self.rings.reasoning] {
                if !ring.is_empty() {
                    ring.push(&mark);
                }
            }
        }
        self.decoder.push(bytes);
        while let Some(ev) = self.decoder.next_event() {
            // The stream's own decoder judges errors; the viewer skips what it cannot read.
            // The viewer is not told the route: the event's name says which API sent it.
            let parsed = ev.map(|ev| parse_event_of(crate::wire::agent_events::api_of(&ev), &ev));
            let Ok(Ok(StreamItem::Chunk(c))) = parsed else {
                continue;
            };
            if let Some(r) = c.reasoning.as_deref() {
                self.rings.reasoning.push(r);
            }
            if let Some(t) = c.content.as_deref() {
                self.rings.content.push(t);
            }
        }
        if self.decoder.pending_bytes() > VIEW_PENDING_MAX {
            self.decoder = SseDecoder::new();
        }
    }
}

/// The latest [`TEXT_RING_BYTES`] bytes of a text, the oldest overwritten: its memory never
/// grows past that, whatever a stream sends.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextRing {
    /// At most [`TEXT_RING_BYTES`]; once full, `head` is the oldest byte.
    buf: Vec<u8>,
    head: usize,
    written: u64,
}

impl TextRing {
    /// Appends `s`, overwriting the oldest bytes beyond the capacity.
    pub fn push(&mut self, s: &str) {
        self.written += s.len() as u64;
        let mut b = s.as_bytes();
        if b.len() > TEXT_RING_BYTES {
            b = &b[b.len() - TEXT_RING_BYTES..];
        }
        if self.buf.capacity() == 0 && !b.is_empty() {
            self.buf.reserve_exact(TEXT_RING_BYTES);
        }
        let room = TEXT_RING_BYTES - self.buf.len();
        let fill = room.min(b.len());
        self.buf.extend_from_slice(&b[..fill]);
        b = &b[fill..];
        // Full: overwrite from the oldest byte on, wrapping at most once.
        while !b.is_empty() {
            let n = (TEXT_RING_BYTES - self.head).min(b.len());
            self.buf[self.head..self.head + n].copy_from_slice(&b[..n]);
            self.head = (self.head + n) % TEXT_RING_BYTES;
            b = &b[n..];
        }
    }

    /// Bytes kept now (at most [`TEXT_RING_BYTES`]).
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// Nothing written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes ever written, kept or overwritten.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The kept text, oldest first. A character the overwriting cut at the start is dropped, so
    /// the text is what the server sent from a character boundary on.
    pub fn text(&self) -> String {
        let (old, new) = self.buf.split_at(self.head);
        let mut v = Vec::with_capacity(self.buf.len());
        v.extend_from_slice(new);
        v.extend_from_slice(old);
        let start = v.iter().position(|b| b & 0xC0 != 0x80).unwrap_or(v.len());
        String::from_utf8_lossy(&v[start..]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat_chunk(content: Option<&str>, reasoning: Option<&str>) -> String {
        let delta = serde_json::json!({"content": content, "reasoning_content": reasoning});
        format!(
            "data: {}\n\n",
            serde_json::json!({"choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    }

    #[test]
    fn a_megabyte_leaves_at_most_the_capacity() {
        let mut r = TextRing::default();
        let line = "0123456789abcdef".repeat(64);
        for _ in 0..1024 {
            r.push(&line);
        }
        assert_eq!(r.written(), 1 << 20);
        assert_eq!(r.len(), TEXT_RING_BYTES);
        assert!(
            r.buf.capacity() <= 2 * TEXT_RING_BYTES,
            "{}",
            r.buf.capacity()
        );
        let t = r.text();
        assert_eq!(t.len(), TEXT_RING_BYTES);
        assert!(t.ends_with("abcdef"));
        // One push larger than the ring keeps its tail.
        let mut big = TextRing::default();
        big.push(&format!("{}END", "x".repeat(1 << 20)));
        assert_eq!(big.len(), TEXT_RING_BYTES);
        assert!(big.text().ends_with("xEND"));
    }

    #[test]
    fn the_ring_keeps_order_across_the_wrap_and_whole_characters() {
        let mut r = TextRing::default();
        // Two-byte characters, then one byte more: the overwrite cuts the oldest `é` in two.
        r.push(&"é".repeat(TEXT_RING_BYTES / 2));
        r.push("z");
        let t = r.text();
        assert_eq!(
            t.len(),
            TEXT_RING_BYTES - 1,
            "the half character is dropped"
        );
        assert!(t.starts_with('é') && t.ends_with("éz"));
        assert!(!t.contains('\u{fffd}'));
    }

    #[test]
    fn text_is_kept_only_while_watched_content_and_reasoning_apart() {
        let live = StreamLive::default();
        live.text
            .offer(1, chat_chunk(Some("unseen"), None).as_bytes());
        assert_eq!(live.text.snapshot(), TextRings::default());
        live.text.watch(true);
        let both = chat_chunk(None, Some("think ")) + &chat_chunk(Some("Hello"), None);
        // Split mid-event, as reads split them.
        let (a, b) = both.as_bytes().split_at(30);
        live.text.offer(1, a);
        live.text.offer(1, b);
        live.text
            .offer(1, chat_chunk(Some(", world"), Some("more")).as_bytes());
        let s = live.text.snapshot();
        assert_eq!(s.content.text(), "Hello, world");
        assert_eq!(s.reasoning.text(), "think more");
        assert_eq!(s.requests, 1);
        // The next request is marked where it starts.
        live.text
            .offer(2, chat_chunk(Some("Again"), None).as_bytes());
        let s = live.text.snapshot();
        assert_eq!(s.content.text(), "Hello, world\n── request 2 ──\nAgain");
        assert_eq!(s.requests, 2);
        live.text.watch(false);
        live.text
            .offer(2, chat_chunk(Some("later"), None).as_bytes());
        assert_eq!(live.text.snapshot().content.text(), s.content.text());
    }

    #[test]
    fn a_held_lock_costs_the_viewer_a_read_never_the_stream_a_wait() {
        let live = StreamLive::default();
        live.text.watch(true);
        let held = live.text.state.lock().expect("lock");
        live.text
            .offer(1, chat_chunk(Some("lost"), None).as_bytes());
        drop(held);
        assert_eq!(live.text.missed(), 1);
        assert!(live.text.snapshot().content.is_empty());
    }
}
