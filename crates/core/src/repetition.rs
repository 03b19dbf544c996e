//! The repetition (loop) guard: whether a stream's visible text has fallen into an exact loop.
//!
//! A model stuck in a loop decodes faster than it should (a speculative drafter guesses every
//! token right) and makes a cell look good, so a request that loops fails its cell. The rule is
//! the seed tool's, stated in bytes: the text **ends** (at a check) with at least
//! [`LOOP_MIN_CYCLES`] identical back-to-back cycles that together span at least
//! [`LOOP_MIN_SPAN`] bytes, the cycle at most [`LOOP_MAX_CYCLE`] bytes. Bytes, not characters:
//! identical text is identical bytes, and a byte test needs no decoding on the hot path (a
//! cycle of multi-byte characters reaches the span in fewer characters, never later).
//!
//! Memory is bounded per stream: the detector keeps the last [`TAIL_CAP`] bytes (at most twice
//! that between compactions) and a scratch table of as many `u16`s, allocated only when a text
//! first looks periodic. The scan is amortised: every [`CHECK_EVERY`] new bytes and once at the
//! end, a SIMD search for the tail's last 32 bytes earlier in the tail (a loop must repeat
//! them) and, only where they recur, one linear pass (a prefix function over the reversed
//! tail) that finds the longest looping suffix, so a loop is always
//! caught once it spans `LOOP_MIN_SPAN + CHECK_EVERY` bytes (a shorter one only if a check
//! falls inside it). Content and reasoning get a detector each: one loop must not be pieced
//! together from two channels.

use serde::{Deserialize, Serialize};

/// Fewest identical cycles that make a loop.
pub const LOOP_MIN_CYCLES: usize = 4;
/// Fewest bytes the repeated cycles must span together.
pub const LOOP_MIN_SPAN: usize = 4096;
/// Longest cycle looked for, in bytes.
pub const LOOP_MAX_CYCLE: usize = 2048;
/// Bytes of the text's tail the detector keeps: enough for the longest loop it looks for.
pub const TAIL_CAP: usize = LOOP_MIN_CYCLES * LOOP_MAX_CYCLE;
/// New bytes between two scans.
pub const CHECK_EVERY: usize = 1024;
/// Characters of the repeated cycle kept as evidence.
const SAMPLE_CHARS: usize = 120;
/// Bytes of the tail's end the filter looks for earlier in the tail.
const KEY: usize = 32;

/// Which part of the answer looped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TextChannel {
    /// The answer's content.
    Content,
    /// The reasoning (`reasoning_content`, `reasoning`).
    Reasoning,
}

/// Bounded evidence of one loop: where it started, its cycle and a sample of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopFinding {
    /// Content or reasoning.
    pub channel: TextChannel,
    /// Bytes of one cycle.
    pub cycle_bytes: u32,
    /// Byte offset in the channel's text where the repetition starts (at a check).
    pub start_byte: u64,
    /// Bytes the repetition spanned when it was caught.
    pub span_bytes: u32,
    /// The start of one cycle (at most 120 characters, lossy UTF-8).
    pub sample: String,
}

/// Watches one channel of one request's text for an exact loop.
#[derive(Debug, Clone)]
pub struct LoopDetector {
    channel: TextChannel,
    tail: Vec<u8>,
    /// Bytes seen in all (the tail's end is at this offset).
    total: u64,
    since_check: usize,
    found: Option<LoopFinding>,
    scratch: Vec<u16>,
}

impl LoopDetector {
    /// A detector for `channel`, holding nothing yet.
    pub fn new(channel: TextChannel) -> Self {
        LoopDetector {
            channel,
            tail: Vec::new(),
            total: 0,
            since_check: 0,
            found: None,
            scratch: Vec::new(),
        }
    }

    /// Adds `text`; scans when enough new bytes have come. Free once a loop is found.
    pub fn push(&mut self, text: &str) {
        if self.found.is_some() || text.is_empty() {
            return;
        }
        self.tail.extend_from_slice(text.as_bytes());
        self.total += text.len() as u64;
        self.since_check += text.len();
        // Compact only at twice the cap, so the copy costs one byte per byte pushed.
        if self.tail.len() > 2 * TAIL_CAP {
            let cut = self.tail.len() - TAIL_CAP;
            self.tail.drain(..cut);
        }
        if self.since_check >= CHECK_EVERY {
            self.check();
        }
    }

    /// The last scan, when the text has ended.
    pub fn finish(&mut self) -> Option<&LoopFinding> {
        if self.found.is_none() && self.since_check > 0 {
            self.check();
        }
        self.found.as_ref()
    }

    /// The loop found so far.
    pub fn found(&self) -> Option<&LoopFinding> {
        self.found.as_ref()
    }

    fn check(&mut self) {
        self.since_check = 0;
        let start = self.tail.len().saturating_sub(TAIL_CAP);
        let tail = &self.tail[start..];
        if tail.len() < LOOP_MIN_SPAN {
            return;
        }
        let found = match candidates(tail) {
            Candidates::None => None,
            Candidates::Few(found) => found,
            Candidates::Many => periodic_suffix(tail, &mut self.scratch),
        };
        if let Some((span, cycle)) = found {
            let begin = tail.len() - span;
            let sample = String::from_utf8_lossy(&tail[begin..begin + cycle]);
            self.found = Some(LoopFinding {
                channel: self.channel,
                cycle_bytes: cycle as u32,
                start_byte: self.total - span as u64,
                span_bytes: span as u32,
                sample: sample.chars().take(SAMPLE_CHARS).collect(),
            });
        }
    }
}

/// Candidate distances checked directly before the scan's full pass takes over.
const MAX_CANDIDATES: usize = 16;

/// What the filter found.
enum Candidates {
    /// The tail's last bytes recur nowhere within a cycle's reach: no loop.
    None,
    /// Every distance where they recur was checked: the loop, if one of them is.
    Few(Option<(usize, usize)>),
    /// They recur at too many distances to check one by one: the full pass decides.
    Many,
}

/// The filter before the scan: a loop of period `p` ≤ [`LOOP_MAX_CYCLE`] that ends the tail
/// repeats the tail's last [`KEY`] bytes `p` bytes earlier (its span is far longer than
/// `p + KEY`), so the distances where they recur are the only candidate periods. Nearest
/// first, each is checked by comparing the tail with itself shifted by it; the first that
/// makes a loop is the smallest period that does. One SIMD search, and a few comparisons
/// where text repeats, instead of the full pass.
fn candidates(tail: &[u8]) -> Candidates {
    let n = tail.len();
    let key = &tail[n - KEY..];
    let from = n.saturating_sub(LOOP_MAX_CYCLE + KEY);
    // Up to the byte before the end: the key's own place is not a recurrence.
    let hay = &tail[from..n - 1];
    let mut seen = 0;
    for pos in memchr::memmem::rfind_iter(hay, key) {
        seen += 1;
        if seen > MAX_CANDIDATES {
            return Candidates::Many;
        }
        let p = n - KEY - (from + pos);
        let span = periodic_run(tail, p) + p;
        if span >= LOOP_MIN_SPAN && span >= LOOP_MIN_CYCLES * p {
            return Candidates::Few(Some((span, p)));
        }
    }
    if seen == 0 {
        Candidates::None
    } else {
        Candidates::Few(None)
    }
}

/// Bytes at the tail's end that equal the bytes `p` before them (the suffix of this length
/// plus `p` has period `p`), compared in blocks of 64 and then byte by byte.
fn periodic_run(tail: &[u8], p: usize) -> usize {
    const BLOCK: usize = 64;
    let n = tail.len();
    let mut run = 0;
    while n - run >= p + BLOCK
        && tail[n - run - BLOCK..n - run] == tail[n - run - BLOCK - p..n - run - p]
    {
        run += BLOCK;
    }
    while n - run > p && tail[n - run - 1] == tail[n - run - 1 - p] {
        run += 1;
    }
    run
}

/// The longest suffix of `tail` that is a loop by the rule, as (span, cycle) bytes.
///
/// The prefix function of the reversed tail gives, for every suffix length `s`, the suffix's
/// smallest period `s − π[s−1]`: one linear pass answers every candidate span at once.
fn periodic_suffix(tail: &[u8], pi: &mut Vec<u16>) -> Option<(usize, usize)> {
    let n = tail.len();
    let at = |i: usize| tail[n - 1 - i];
    pi.clear();
    pi.resize(n, 0);
    for i in 1..n {
        let mut k = pi[i - 1] as usize;
        while k > 0 && at(i) != at(k) {
            k = pi[k - 1] as usize;
        }
        if at(i) == at(k) {
            k += 1;
        }
        pi[i] = k as u16;
    }
    (LOOP_MIN_SPAN..=n).rev().find_map(|s| {
        let p = s - pi[s - 1] as usize;
        (p <= LOOP_MAX_CYCLE && s >= LOOP_MIN_CYCLES * p).then_some((s, p))
    })
}

/// The two detectors of one request (content and reasoning), or none when the guard is off.
#[derive(Debug, Clone)]
pub struct LoopGuard {
    content: LoopDetector,
    reasoning: LoopDetector,
}

impl Default for LoopGuard {
    fn default() -> Self {
        LoopGuard {
            content: LoopDetector::new(TextChannel::Content),
            reasoning: LoopDetector::new(TextChannel::Reasoning),
        }
    }
}

impl LoopGuard {
    /// Adds one chunk's texts.
    pub fn push(&mut self, content: Option<&str>, reasoning: Option<&str>) {
        if let Some(c) = content {
            self.content.push(c);
        }
        if let Some(r) = reasoning {
            self.reasoning.push(r);
        }
    }

    /// The last scans; the first loop found (content before reasoning).
    pub fn finish(mut self) -> Option<LoopFinding> {
        let c = self.content.finish().cloned();
        c.or_else(|| self.reasoning.finish().cloned())
    }
}

/// The evidence a looping cell's row carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopEvidence {
    /// Requests of the cell whose text looped.
    pub requests_looped: u64,
    /// The first looping request's stream.
    pub stream: u32,
    /// When it was sent, ns from the cell's origin (with `stream`, names the request in
    /// `requests.jsonl`).
    pub sent_ns: u64,
    /// What its loop was.
    pub finding: LoopFinding,
}

impl LoopEvidence {
    /// The status reason, in one line: the request, the cycle and where it started.
    pub fn reason(&self) -> String {
        let f = &self.finding;
        let channel = match f.channel {
            TextChannel::Content => "content",
            TextChannel::Reasoning => "reasoning",
        };
        let others = match self.requests_looped {
            0 | 1 => String::new(),
            n => format!(" ({} more request(s) looped too)", n - 1),
        };
        format!(
            "loop: stream {}'s {channel} repeats a {}-byte cycle {}× from byte {} ({:?}…){others}; \
             its figures are not kept (--no-loop-detection for a deliberately repetitive workload)",
            self.stream,
            f.cycle_bytes,
            f.span_bytes / f.cycle_bytes.max(1),
            f.start_byte,
            f.sample.chars().take(40).collect::<String>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SENTENCE: &str = "The quick brown fox jumps over the lazy dog near the riverbank. ";

    fn feed(d: &mut LoopDetector, text: &str, piece: usize) {
        let b = text.as_bytes();
        for c in b.chunks(piece) {
            d.push(std::str::from_utf8(c).expect("ASCII pieces"));
        }
    }

    /// Varied text with no long exact repetition (a counter in every line).
    fn prose(bytes: usize) -> String {
        let mut s = String::new();
        let mut i = 0u64;
        while s.len() < bytes {
            s.push_str(&format!("line {i} says {} things. ", i * 7919 % 1013));
            i += 1;
        }
        s
    }

    #[test]
    fn a_sentence_repeated_is_a_loop_with_its_start_and_cycle() {
        assert_eq!(SENTENCE.len(), 64);
        let head = prose(3000);
        let text = format!("{head}{}", SENTENCE.repeat(100));
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &text, 5);
        let f = d.finish().expect("a loop").clone();
        assert_eq!(f.cycle_bytes, 64);
        assert_eq!(f.channel, TextChannel::Content);
        // The repetition starts at the first copy (or up to one cycle earlier, where the
        // prose's last bytes happen to match the sentence's end).
        assert!(f.start_byte <= head.len() as u64 && f.start_byte + 64 > head.len() as u64);
        assert!(f.span_bytes as usize >= LOOP_MIN_SPAN);
        assert!(SENTENCE.contains(f.sample.trim()) || f.sample.len() == 64);
    }

    #[test]
    fn varied_text_is_not_a_loop() {
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &prose(200_000), 7);
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn a_repetition_shorter_than_the_span_is_not_a_loop() {
        // 60 copies of 64 bytes = 3,840 < 4,096, between varied text.
        let text = format!("{}{}{}", prose(2000), SENTENCE.repeat(60), prose(2000));
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &text, 3);
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn three_long_cycles_are_not_a_loop_four_are() {
        let cycle = prose(1500);
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &cycle.repeat(3), 11);
        assert_eq!(
            d.finish(),
            None,
            "3 × 1,500 spans 4,500 but has only 3 cycles"
        );
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &cycle.repeat(4), 11);
        let f = d.finish().expect("four cycles").clone();
        assert_eq!(f.cycle_bytes as usize, cycle.len());
        assert_eq!(f.start_byte, 0);
    }

    #[test]
    fn a_cycle_longer_than_the_limit_is_not_looked_for() {
        let cycle = prose(LOOP_MAX_CYCLE + 100);
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &cycle.repeat(6), 13);
        assert_eq!(d.finish(), None);
    }

    #[test]
    fn one_byte_repeated_is_a_loop() {
        let mut d = LoopDetector::new(TextChannel::Reasoning);
        let head = prose(100);
        feed(&mut d, &format!("{head}{}", "\n".repeat(5000)), 1);
        let f = d.finish().expect("newlines").clone();
        assert_eq!((f.cycle_bytes, f.start_byte), (1, head.len() as u64));
        assert_eq!(f.channel, TextChannel::Reasoning);
    }

    #[test]
    fn memory_stays_bounded_over_a_megabyte() {
        let mut d = LoopDetector::new(TextChannel::Content);
        let text = prose(1 << 20);
        for c in text.as_bytes().chunks(4) {
            d.push(std::str::from_utf8(c).expect("ASCII pieces"));
            assert!(d.tail.len() <= 2 * TAIL_CAP + 4);
        }
        assert!(d.scratch.capacity() <= 2 * TAIL_CAP);
        assert_eq!(d.total, text.len() as u64);
    }

    #[test]
    fn a_loop_that_ends_before_the_text_is_caught_if_it_ran_long_enough() {
        let loop_len = LOOP_MIN_SPAN + CHECK_EVERY;
        let text = format!(
            "{}{}{}",
            prose(500),
            SENTENCE.repeat(loop_len / 64 + 1),
            prose(20_000)
        );
        let mut d = LoopDetector::new(TextChannel::Content);
        feed(&mut d, &text, 4);
        assert_eq!(d.finish().map(|f| f.cycle_bytes), Some(64));
    }

    #[test]
    fn the_filter_misses_no_cycle_length() {
        let source = prose(LOOP_MAX_CYCLE + 10);
        for p in [1, 2, 7, 31, 32, 33, 100, 1000, 1024, 2047, LOOP_MAX_CYCLE] {
            let cycle = &source[..p];
            let copies = (LOOP_MIN_SPAN / p).max(LOOP_MIN_CYCLES) + 2;
            let head = format!("{}#", prose(700));
            let mut d = LoopDetector::new(TextChannel::Content);
            feed(&mut d, &format!("{head}{}", cycle.repeat(copies)), 9);
            let f = d
                .finish()
                .unwrap_or_else(|| panic!("cycle of {p} missed"))
                .clone();
            assert_eq!(f.cycle_bytes as usize, p);
        }
    }

    /// The direct check of the filter's candidates agrees with the full pass, on loops of
    /// many lengths, on text that repeats below the rule, and where the key recurs at too many
    /// distances (short periods: the pass decides).
    #[test]
    fn candidates_agree_with_the_full_pass() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |m: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % m
        };
        let source = prose(6000);
        let (mut many, mut loops) = (0, 0);
        for _ in 0..300 {
            let p = 1 + next(LOOP_MAX_CYCLE as u64 + 200) as usize;
            let start = next(3000) as usize;
            let cycle = &source[start..start + p.min(source.len() - start)];
            let copies = 1 + next(8) as usize;
            let head = &source[..next(3000) as usize];
            let text = format!(
                "{head}{}{}",
                cycle.repeat(copies),
                &cycle[..next(cycle.len() as u64) as usize]
            );
            let bytes = text.as_bytes();
            let tail = &bytes[bytes.len().saturating_sub(TAIL_CAP)..];
            if tail.len() < LOOP_MIN_SPAN {
                continue;
            }
            let pass = periodic_suffix(tail, &mut Vec::new());
            match candidates(tail) {
                Candidates::None | Candidates::Few(None) => assert_eq!(pass, None, "p {p}"),
                Candidates::Few(Some(found)) => {
                    assert_eq!(Some(found), pass, "p {p}");
                    loops += 1;
                }
                Candidates::Many => many += 1,
            }
        }
        let runs = "ab".repeat(1500) + &prose(200) + &"ab".repeat(900);
        assert!(matches!(candidates(runs.as_bytes()), Candidates::Many));
        assert!(
            many < 30,
            "the direct check decides most tails ({many} went to the pass)"
        );
        assert!(loops > 30, "the texts hold loops ({loops})");
    }

    #[test]
    fn the_guard_keeps_channels_apart() {
        // Half a loop in each channel is no loop.
        let mut g = LoopGuard::default();
        for _ in 0..40 {
            g.push(Some(SENTENCE), Some(SENTENCE));
        }
        assert_eq!(g.finish(), None);
        let mut g = LoopGuard::default();
        for i in 0..80 {
            g.push(Some(&format!("{i} ")), Some(SENTENCE));
        }
        assert_eq!(g.finish().map(|f| f.channel), Some(TextChannel::Reasoning));
    }
}
