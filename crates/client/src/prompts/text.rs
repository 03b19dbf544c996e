//! What an exact-length prompt is made of after its tag ([`Body`]): the filler words (the
//! default, `crate::prompts::filler`) or a file's own text (`run --prompt-text FILE`), so that
//! speculative decoding and caches are measured on prose or code. Pure text, no server call:
//! the builder (`crate::prompts::prompt`) cuts what this gives at the server's token
//! boundaries, as it cuts the filler.
//!
//! The file is read as words: a word is a run of non-space characters with the white space
//! after it, so a prompt keeps the file's line breaks and indentation. A prompt's words start
//! at an offset of its own (see [`PromptText::offset`]) and run on through the file; where the
//! file ends before the prompt does, they go on from its start, and after each whole pass (a
//! lap) the next lap begins at a new offset, so a long prompt is not one passage repeated
//! in step.

use crate::prompts::filler;
use std::sync::Arc;

/// What follows a prompt's tag.
#[derive(Debug, Clone, Default)]
pub(crate) enum Body {
    /// Seeded filler words (`crate::prompts::filler::words`).
    #[default]
    Filler,
    /// A file's text, cut into words.
    Text(Arc<PromptText>),
}

impl Body {
    /// Appends `words` words of this body for a (run `seed`, context, stream) prompt to `out`.
    pub(crate) fn words(
        &self,
        seed: u64,
        context: u64,
        stream: u32,
        words: usize,
        out: &mut String,
    ) {
        match self {
            Body::Filler => filler::words(seed, context, stream, words, out),
            Body::Text(t) => t.words(context, stream, words, out),
        }
    }
}

/// A file's text, cut into words.
#[derive(Debug)]
pub(crate) struct PromptText {
    text: Arc<str>,
    /// Byte offset of each word's start; the word runs to the next start (the last to the
    /// end of the text).
    starts: Vec<usize>,
    /// How far apart (in words) two consecutive streams start: near n / φ and prime to n, so
    /// the first n streams of a context start at n different words, spread over the file.
    stream_step: usize,
    /// How far each lap starts from the one before: near n / φ², prime to n.
    lap_step: usize,
}

impl PromptText {
    /// The words of `text`; `None` when it has none (only white space): the caller refused
    /// such a file already (`llmib_core::PromptTextSource::of`).
    pub(crate) fn new(text: Arc<str>) -> Option<PromptText> {
        let mut starts = Vec::new();
        let mut in_space = true;
        for (i, c) in text.char_indices() {
            let space = c.is_whitespace();
            if in_space && !space {
                starts.push(i);
            }
            in_space = space;
        }
        let n = starts.len();
        (n > 0).then(|| PromptText {
            text,
            starts,
            stream_step: step_prime_to(n, 0.618_034),
            lap_step: step_prime_to(n, 0.381_966),
        })
    }

    /// The file's words.
    pub(crate) fn len(&self) -> usize {
        self.starts.len()
    }

    /// Word `i` (with the white space after it).
    fn word(&self, i: usize) -> &str {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        &self.text[self.starts[i]..end]
    }

    /// The word a (context, stream) prompt starts at: the context (in tokens) modulo the
    /// file's words, moved on by the stream's number of stream steps. Streams of one context
    /// thus read different passages (the first n of them n different words), and the run seed
    /// plays no part: two runs on the same file measure the same passages, while the tag
    /// before them still makes every prompt unique.
    pub(crate) fn offset(&self, context: u64, stream: u32) -> usize {
        let n = self.len() as u128;
        let at = u128::from(context) + u128::from(stream) * self.stream_step as u128;
        (at % n) as usize
    }

    /// Appends `words` words of the (context, stream) prompt to `out`: from its offset on,
    /// through the file's end to its start; after each whole lap, on from `lap_step` words
    /// further than that lap began. The file's last word, when no white space ends it, gets a
    /// space, so it does not run into the next lap's first.
    pub(crate) fn words(&self, context: u64, stream: u32, words: usize, out: &mut String) {
        let n = self.len();
        let mut lap_start = self.offset(context, stream);
        let mut k = 0;
        for _ in 0..words {
            let w = self.word((lap_start + k) % n);
            out.push_str(w);
            if !w.ends_with(char::is_whitespace) {
                out.push(' ');
            }
            k += 1;
            if k == n {
                k = 0;
                lap_start = (lap_start + self.lap_step) % n;
            }
        }
    }
}

/// The step nearest `n × share` (at least 1) that has no factor in common with `n`, reduced
/// modulo `n`: stepping by it from any word visits all `n` words before any twice.
fn step_prime_to(n: usize, share: f64) -> usize {
    let mut s = ((n as f64 * share).round() as usize).max(1);
    while gcd(s, n) != 1 {
        s += 1;
    }
    s % n.max(1)
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
