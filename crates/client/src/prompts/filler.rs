//! The text of the exact-length prompts ([`crate::prompts::prompt`]): a tag unique per (run,
//! context, stream), then deterministic filler words seeded from the same three, whose word
//! sequence the token-id prompts spell too ([`crate::prompts::id_prompt`]); a chat message's
//! fixed ends ([`chat_message`]); and the texts of about a length made without the server
//! ([`TextMaker`]). Its own file because it is pure text
//! (no server call), and its word list is a long constant that would otherwise stand between
//! the builder's types and its methods.

/// Common English words: varied enough that tokenizers behave as on real text, and each a
/// stable token or two in every BPE/SentencePiece vocabulary.
const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "that",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "her",
    "an",
    "which",
    "or",
    "were",
    "are",
    "this",
    "be",
    "also",
    "had",
    "first",
    "one",
    "their",
    "its",
    "new",
    "after",
    "who",
    "they",
    "two",
    "has",
    "been",
    "other",
    "when",
    "there",
    "all",
    "during",
    "into",
    "school",
    "time",
    "may",
    "years",
    "more",
    "most",
    "only",
    "over",
    "city",
    "some",
    "world",
    "would",
    "where",
    "later",
    "up",
    "such",
    "used",
    "many",
    "can",
    "state",
    "about",
    "national",
    "out",
    "known",
    "university",
    "united",
    "then",
    "made",
    "river",
    "water",
    "music",
    "house",
    "north",
    "south",
    "between",
    "under",
    "while",
    "team",
    "season",
    "history",
    "early",
    "number",
    "system",
    "public",
    "series",
    "film",
    "life",
    "family",
    "group",
    "company",
    "century",
    "general",
    "several",
    "government",
    "including",
    "because",
    "however",
    "since",
    "church",
    "county",
    "began",
    "became",
    "through",
    "second",
    "game",
    "played",
    "area",
    "album",
    "station",
    "war",
    "built",
];

/// splitmix64 over a seed: the filler's word choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64: deterministic, fast, good enough to vary filler words.
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The tag a prompt starts with, unique per (run `seed`, context, stream): the prompt's very
/// first tokens differ, so no two prompts share a prefix. `salt` marks a prompt of another
/// kind (a calibration sample, a warm-up).
pub(crate) fn tag(seed: u64, context: u64, stream: u32, salt: &str) -> String {
    format!("[{salt}{seed:016x} C{context} S{stream}] ")
}

/// The filler's words, in order, of a (run `seed`, context, stream) prompt: indices into its
/// word list ([`word`]), the one sequence both the text and the token-id prompts spell.
pub(crate) fn word_indices(seed: u64, context: u64, stream: u32) -> impl Iterator<Item = usize> {
    let mut rng = Rng(seed ^ context.rotate_left(17) ^ u64::from(stream).rotate_left(41));
    std::iter::repeat_with(move || (rng.next() % WORDS.len() as u64) as usize)
}

/// Filler word `i` (of [`WORD_COUNT`]).
pub(crate) fn word(i: usize) -> &'static str {
    WORDS[i % WORDS.len()]
}

/// How many words the filler draws from.
pub(crate) const WORD_COUNT: usize = WORDS.len();

/// A sentence ends after this many words (the filler's `. `), as real text has breaks.
pub(crate) const SENTENCE_WORDS: usize = 13;

/// Appends `words` filler words to `out`, seeded by (run `seed`, context, stream), with a
/// sentence break every [`SENTENCE_WORDS`] words.
pub(crate) fn words(seed: u64, context: u64, stream: u32, words: usize, out: &mut String) {
    out.reserve(words * 7);
    for (i, w) in word_indices(seed, context, stream).take(words).enumerate() {
        out.push_str(WORDS[w]);
        if i % SENTENCE_WORDS == SENTENCE_WORDS - 1 {
            out.push_str(". ");
        } else {
            out.push(' ');
        }
    }
}

/// The last word of every chat message (see [`chat_message`]).
pub(crate) const CHAT_END: &str = " end.";

/// A chat message from a cut filler text: its ends fixed, so that the message's joins with
/// the chat template are the calibration sample's in every prompt, whatever the run seed.
///
/// Both ends matter where the template's tags are plain text to the tokenizer (a model whose
/// vocabulary lacks them, as the e2e suite's tiny llama): the message's last characters merge
/// with the closing tag's first (`.<` is one token, `..` then `<` are two), and its first with
/// what precedes it (`\n[` against `\n [`). A cut text's ends vary: the detokenizer adds a
/// leading space (SentencePiece's word prefix), and the cut may leave a trailing space or end
/// on a sentence's full stop, so the old fixed end of one `.` still joined the tag in three
/// ways (`word.<`, `word .<`, `..<`) and the template's measured overhead was one token off for
/// those prompts (511 for 512 by the server's count). Trimmed, the message starts with the
/// tag's `[` and ends with [`CHAT_END`]: a whole word after a space, which no filler character
/// before it can merge with.
pub(crate) fn chat_message(text: &str) -> String {
    format!("{}{CHAT_END}", text.trim())
}

/// Tagged filler texts of about a length, made without the server (`PromptBuilder::text_maker`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct TextMaker {
    seed: u64,
    per_word: f64,
}

impl TextMaker {
    /// Texts of this run (`seed`) at `per_word` tokens per filler word.
    pub(crate) fn new(seed: u64, per_word: f64) -> Self {
        TextMaker { seed, per_word }
    }

    /// A text of about `approx_tokens` tokens whose tag (`salt`, `key`, `index`) no other text
    /// of the run shares, so it shares no prefix with any other.
    pub(crate) fn text(&self, approx_tokens: u64, key: u64, index: u32, salt: &str) -> String {
        let mut text = tag(self.seed, key, index, salt);
        let n = (approx_tokens as f64 / self.per_word).round().max(1.0) as usize;
        words(self.seed, key, index, n, &mut text);
        text
    }
}
