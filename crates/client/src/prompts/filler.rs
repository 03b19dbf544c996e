//! The text of the exact-length prompts ([`crate::prompts::prompt`]): a tag unique per (run,
//! context, stream), then deterministic filler words seeded from the same three. Its own file
//! because it is pure text (no server call), and its word list is a long constant that would
//! otherwise stand between the builder's types and its methods.

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

/// Appends `words` filler words to `out`, seeded by (run `seed`, context, stream), with a
/// sentence break every thirteen words.
pub(crate) fn words(seed: u64, context: u64, stream: u32, words: usize, out: &mut String) {
    let mut rng = Rng(seed ^ context.rotate_left(17) ^ u64::from(stream).rotate_left(41));
    out.reserve(words * 7);
    for i in 0..words {
        let w = WORDS[(rng.next() % WORDS.len() as u64) as usize];
        out.push_str(w);
        // Sentence breaks every dozen words or so, as real text has.
        if i % 13 == 12 {
            out.push_str(". ");
        } else {
            out.push(' ');
        }
    }
}
