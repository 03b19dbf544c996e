//! A fast path for the chunk every engine streams most: an OpenAI-style completion or chat
//! chunk whose kept strings have no escapes. At 64 streams the `serde` parse of each chunk was
//! the largest item of the client's own CPU (12 % of it, `docs/peers.md`); this reads the same
//! few fields in one pass over the bytes and skips the rest.
//!
//! It answers only where it is sure to agree with the `serde` path
//! ([`crate::wire::chunk::parse_data`]'s): anything else is `None`, and `serde` decides. That
//! covers an escape in a kept string or in a key, a duplicate of a field `serde` reads, an error
//! shape (`error`, `object: "error"`, `message`, `type`, `code`), llama.cpp's `timings`, tool
//! calls, a number `serde` would refuse (a sign, a fraction, past `u64`), nesting past
//! [`MAX_DEPTH`], and any text that is not strict JSON. The tests compare both paths on every
//! recorded chunk and on random ones.

use crate::wire::chunk_fields::{Chunk, Usage};
use std::borrow::Cow;

/// Nesting a skipped value may have (serde_json allows 128): deeper is left to `serde`.
const MAX_DEPTH: u32 = 32;

/// The chunk `data` holds (trimmed JSON text), where the fast path is sure of it.
pub(crate) fn chunk(data: &str) -> Option<Chunk<'_>> {
    let mut s = Scan { src: data, i: 0 };
    let mut chunk = Chunk::default();
    let mut seen = Seen::default();
    s.ws();
    // `null` is not a chunk (`fields` would take it for an absent object).
    if s.peek()? != b'{' {
        return None;
    }
    s.fields(|s, key| {
        match key {
            "choices" => {
                seen.once(Seen::CHOICES)?;
                let usage = chunk.usage.take();
                chunk = Chunk {
                    usage,
                    ..s.choices()?
                };
            }
            "usage" => {
                seen.once(Seen::USAGE)?;
                chunk.usage = s.usage()?;
            }
            "object" => {
                seen.once(Seen::OBJECT)?;
                if s.optional_string()?.as_deref() == Some("error") {
                    return None;
                }
            }
            "error" | "message" | "type" | "code" | "timings" => return None,
            _ => s.skip_value(0)?,
        }
        Some(())
    })?;
    s.ws();
    (s.i == s.src.len()).then_some(chunk)
}

/// The fields of one object read so far (a duplicate is `serde`'s error to give).
#[derive(Default)]
struct Seen(u32);

impl Seen {
    const CHOICES: u32 = 1;
    const USAGE: u32 = 2;
    const OBJECT: u32 = 4;
    const TEXT: u32 = 8;
    const DELTA: u32 = 16;
    const FINISH: u32 = 32;
    const CONTENT: u32 = 64;
    const REASONING_CONTENT: u32 = 128;
    const REASONING: u32 = 256;
    const PROMPT: u32 = 512;
    const COMPLETION: u32 = 1024;
    const TOTAL: u32 = 2048;
    const DETAILS: u32 = 4096;
    const CACHED: u32 = 8192;

    /// Marks `bit`; `None` when it was already there.
    fn once(&mut self, bit: u32) -> Option<()> {
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

/// A position in the JSON text.
struct Scan<'a> {
    src: &'a str,
    i: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.i).copied()
    }

    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }

    fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// A string without escapes, borrowed; `None` for any escape or control character.
    fn kept_string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        let n = self.to_quote_or_escape()?;
        if *self.src.as_bytes().get(start + n)? != b'"' {
            return None;
        }
        self.i = start + n + 1;
        // Both ends are ASCII quotes, so the slice is on character boundaries.
        self.src.get(start..start + n)
    }

    /// How far from here the next `"`, `\\` or control character is (`None`: none before the
    /// end): strings are most of a chunk's length ([`find_special`]).
    fn to_quote_or_escape(&self) -> Option<usize> {
        find_special(self.src.as_bytes().get(self.i..)?)
    }

    /// Whether the value here is `null` (read past if so); `None` at the end of the text.
    fn null(&mut self) -> Option<bool> {
        if self.peek()? != b'n' {
            return Some(false);
        }
        self.literal(b"null")?;
        Some(true)
    }

    /// A string kept as the chunk's (`null`: none).
    fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null()? {
            return Some(None);
        }
        Some(Some(Cow::Borrowed(self.kept_string()?)))
    }

    /// A string that is skipped: simple escapes are read past; `\u` is left to `serde`.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            self.i += self.to_quote_or_escape()?;
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    _ => return None,
                },
                _ => return None,
            }
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i.checked_add(word.len())?;
        (self.src.as_bytes().get(self.i..end)? == word).then(|| self.i = end)
    }

    /// A number by JSON's grammar: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`.
    fn skip_number(&mut self) -> Option<()> {
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        self.integer()?;
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    /// `0|[1-9][0-9]*`.
    fn integer(&mut self) -> Option<()> {
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        Some(())
    }

    fn digits(&mut self) {
        let rest = self.src.as_bytes().get(self.i..).unwrap_or_default();
        self.i += rest.iter().take_while(|b| b.is_ascii_digit()).count();
    }

    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// A count (`null`: none): digits only, as `u64` (a sign, a fraction or an exponent is
    /// `serde`'s to refuse).
    fn count(&mut self) -> Option<Option<u64>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.i;
        self.integer()?;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        // Digits only (checked above): their value, `None` past `u64` as `parse` gives.
        let mut v = 0u64;
        for &d in self.src.as_bytes().get(start..self.i)? {
            v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        }
        Some(Some(v))
    }

    /// Any value, skipped.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' | b'[' => self.skip_container(depth),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.skip_number(),
        }
    }

    /// An object or an array, skipped.
    fn skip_container(&mut self, depth: u32) -> Option<()> {
        if depth >= MAX_DEPTH {
            return None;
        }
        let close = if self.next()? == b'{' { b'}' } else { b']' };
        self.ws();
        if self.peek() == Some(close) {
            self.i += 1;
            return Some(());
        }
        loop {
            self.ws();
            if close == b'}' {
                self.skip_string()?;
                self.ws();
                self.eat(b':')?;
                self.ws();
            }
            self.skip_value(depth + 1)?;
            self.ws();
            match self.next()? {
                b',' => {}
                c if c == close => return Some(()),
                _ => return None,
            }
        }
    }

    /// Runs `field` on each key of an object (`null`: none, `Some(false)`).
    fn fields(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<bool> {
        if self.null()? {
            return Some(false);
        }
        self.eat(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Some(true);
        }
        loop {
            self.ws();
            let key = self.kept_string()?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            field(self, key)?;
            self.ws();
            match self.next()? {
                b',' => {}
                b'}' => return Some(true),
                _ => return None,
            }
        }
    }

    /// `choices`: how many (`null`: none), and the first one's fields.
    fn choices(&mut self) -> Option<Chunk<'a>> {
        if self.null()? {
            return Some(Chunk::default());
        }
        self.eat(b'[')?;
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Some(Chunk::default());
        }
        let mut first = self.choice()?;
        first.choices = 1;
        loop {
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(first),
                _ => return None,
            }
            self.ws();
            self.skip_value(1)?;
            first.choices += 1;
        }
    }

    /// One choice: its content (`text`, else `delta.content`), reasoning and finish reason.
    fn choice(&mut self) -> Option<Chunk<'a>> {
        if self.peek()? != b'{' {
            return None;
        }
        let (mut text, mut finish) = (None, None);
        let (mut content, mut reasoning_content, mut reasoning) = (None, None, None);
        let mut seen = Seen::default();
        self.fields(|s, key| {
            let (bit, slot) = match key {
                "text" => (Seen::TEXT, &mut text),
                "finish_reason" => (Seen::FINISH, &mut finish),
                "delta" => {
                    seen.once(Seen::DELTA)?;
                    let mut inner = Seen::default();
                    s.fields(|s, key| {
                        let (bit, slot) = match key {
                            "content" => (Seen::CONTENT, &mut content),
                            "reasoning_content" => {
                                (Seen::REASONING_CONTENT, &mut reasoning_content)
                            }
                            "reasoning" => (Seen::REASONING, &mut reasoning),
                            "tool_calls" => return None,
                            _ => return s.skip_value(2),
                        };
                        inner.once(bit)?;
                        *slot = s.optional_string()?;
                        Some(())
                    })?;
                    return Some(());
                }
                _ => return s.skip_value(1),
            };
            seen.once(bit)?;
            *slot = s.optional_string()?;
            Some(())
        })?;
        Some(Chunk {
            content: text.or(content),
            reasoning: reasoning_content.or(reasoning),
            finish_reason: finish,
            ..Chunk::default()
        })
    }

    /// `usage` (`null`: none).
    fn usage(&mut self) -> Option<Option<Usage>> {
        let mut u = Usage::default();
        let mut seen = Seen::default();
        let present = self.fields(|s, key| {
            let (bit, slot) = match key {
                "prompt_tokens" => (Seen::PROMPT, &mut u.prompt_tokens),
                "completion_tokens" => (Seen::COMPLETION, &mut u.completion_tokens),
                "total_tokens" => (Seen::TOTAL, &mut u.total_tokens),
                "prompt_tokens_details" => {
                    seen.once(Seen::DETAILS)?;
                    let mut inner = Seen::default();
                    let mut cached = None;
                    s.fields(|s, key| match key {
                        "cached_tokens" => {
                            inner.once(Seen::CACHED)?;
                            cached = s.count()?;
                            Some(())
                        }
                        _ => s.skip_value(3),
                    })?;
                    u.cached_tokens = cached;
                    return Some(());
                }
                _ => return s.skip_value(2),
            };
            seen.once(bit)?;
            *slot = s.count()?;
            Some(())
        })?;
        Some(present.then_some(u))
    }
}

/// The index of the first byte of `bytes` that ends or breaks a plain string: `"`, `\\` or a
/// control character (below 0x20). Eight bytes a step (SWAR): a byte loop paid a few
/// instructions and branches per byte, and strings are most of a chunk. The last few bytes
/// go through the same test as a word padded with a plain letter, so the rule is written once.
fn find_special(bytes: &[u8]) -> Option<usize> {
    let (words, rest) = bytes.as_chunks::<8>();
    for (k, w) in words.iter().enumerate() {
        if let Some(i) = special_in(*w) {
            return Some(k * 8 + i);
        }
    }
    let mut last = [b'a'; 8];
    last.get_mut(..rest.len())?.copy_from_slice(rest);
    special_in(last).map(|i| words.len() * 8 + i)
}

/// [`find_special`] within one word: the index of its first special byte. Each mask flags its
/// bytes exactly up to its first hit (a borrow can flag bytes only above a true one), so the
/// lowest flag of the three is the answer.
fn special_in(word: [u8; 8]) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let x = u64::from_le_bytes(word);
    let zero_in = |v: u64| v.wrapping_sub(ONES) & !v;
    let quote = zero_in(x ^ (ONES * u64::from(b'"')));
    let slash = zero_in(x ^ (ONES * u64::from(b'\\')));
    let control = x.wrapping_sub(ONES * 0x20) & !x;
    let hits = (quote | slash | control) & HIGH;
    (hits != 0).then(|| (hits.trailing_zeros() / 8) as usize)
}

#[cfg(test)]
#[path = "fastchunk_tests.rs"]
mod tests;
