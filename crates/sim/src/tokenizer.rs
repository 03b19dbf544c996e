//! The simulator's own deterministic tokenizer.
//!
//! It is deliberately *not* one token per character, so that a client has to calibrate its
//! prompts through `/tokenize` the way it must against a real engine:
//! - a word (a run of ASCII letters and digits, with the one space before it) of L bytes is
//!   `ceil(L / 4)` tokens;
//! - every other printable ASCII character (punctuation, extra spaces) is one token;
//! - every other byte (newlines, non-ASCII UTF-8) is one byte token;
//! - string prompts get a BOS token first when the profile says so (`add_bos`).
//!
//! Ids: 0-255 are byte tokens, 256 is BOS, 257 is EOS, and 258 + a base-96 packing of up to
//! four printable characters for everything else, so decoding needs no vocabulary table and
//! `decode(encode(s)) == s` for every string.

/// Id of the beginning-of-sequence token.
pub(crate) const BOS: u32 = 256;
/// Id of the end-of-sequence token.
pub(crate) const EOS: u32 = 257;
const PACKED_BASE: u32 = 258;
const RADIX: u32 = 96;
/// Ids at or above this are outside the vocabulary (decoded as nothing).
pub(crate) const VOCAB_SIZE: u32 = PACKED_BASE + RADIX * RADIX * RADIX * RADIX;

const BOS_TEXT: &str = "<|bos|>";
const EOS_TEXT: &str = "<|eos|>";

/// Tokenizes `text`; `add_special_tokens` prepends BOS when the engine uses one.
pub(crate) fn encode(text: &str, add_bos: bool) -> Vec<u32> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len() / 3 + 2);
    if add_bos {
        out.push(BOS);
    }
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let starts_word = b.is_ascii_alphanumeric()
            || (b == b' ' && bytes.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric()));
        if starts_word {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j].is_ascii_alphanumeric() {
                j += 1;
            }
            for chunk in bytes[i..j].chunks(4) {
                out.push(pack(chunk));
            }
            i = j;
        } else if (0x20..0x7f).contains(&b) {
            out.push(pack(&bytes[i..=i]));
            i += 1;
        } else {
            out.push(u32::from(b));
            i += 1;
        }
    }
    out
}

/// Packs 1-4 printable ASCII bytes into one id.
fn pack(chunk: &[u8]) -> u32 {
    let mut v = 0u32;
    let mut mul = 1u32;
    for &c in chunk {
        v += (u32::from(c) - 0x20 + 1) * mul;
        mul *= RADIX;
    }
    PACKED_BASE + v
}

/// Appends the bytes of one token to `out`.
fn push_token(id: u32, skip_special: bool, out: &mut Vec<u8>) {
    match id {
        0..=255 => out.push(id as u8),
        BOS if !skip_special => out.extend_from_slice(BOS_TEXT.as_bytes()),
        EOS if !skip_special => out.extend_from_slice(EOS_TEXT.as_bytes()),
        BOS | EOS => {}
        _ if id >= VOCAB_SIZE => {}
        _ => {
            let mut v = id - PACKED_BASE;
            while v > 0 {
                let d = v % RADIX;
                if d == 0 {
                    break;
                }
                out.push((d - 1 + 0x20) as u8);
                v /= RADIX;
            }
        }
    }
}

/// Turns ids back into text (invalid UTF-8 from stray byte tokens is replaced, as HF does).
pub(crate) fn decode(ids: &[u32], skip_special: bool) -> String {
    let mut bytes = Vec::with_capacity(ids.len() * 4);
    for &id in ids {
        push_token(id, skip_special, &mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The text of each token on its own (vLLM's `token_strs`).
pub(crate) fn token_strs(ids: &[u32]) -> Vec<String> {
    ids.iter().map(|&id| decode(&[id], false)).collect()
}

/// Loop mode (`answer_loop`): the text of each token of `sentence`, in order, for an answer
/// that cycles through them. Refused when the sentence is empty or not ASCII (a lone byte of a
/// UTF-8 character is no text), or when two copies in a row tokenize otherwise than two single
/// copies (a word running on across the seam): the looped text, cut after any token, must
/// re-tokenize to exactly the tokens generated.
pub(crate) fn loop_tokens(sentence: &str) -> Result<Vec<String>, crate::SimError> {
    let bad = |s: String| Err(crate::SimError::Invalid(s));
    if sentence.is_empty() || !sentence.is_ascii() {
        return bad("answer_loop: give a non-empty ASCII sentence".into());
    }
    let ids = encode(sentence, false);
    let twice = encode(&format!("{sentence}{sentence}"), false);
    if twice.len() != 2 * ids.len()
        || twice[..ids.len()] != ids[..]
        || twice[ids.len()..] != ids[..]
    {
        return bad(format!(
            "answer_loop: two copies of {sentence:?} in a row tokenize differently from one \
             copy twice (a word runs on across the seam): end the sentence with punctuation \
             or start it with a space"
        ));
    }
    Ok(token_strs(&ids))
}

/// One chat message, reduced to what the template needs.
#[derive(Debug, Clone)]
pub(crate) struct ChatMessage {
    /// `system`, `user`, `assistant`, ...
    pub role: String,
    /// The text content (text parts joined).
    pub content: String,
}

/// Renders messages with the simulator's chat template (GLM-like role tags) and tokenizes
/// them; the template always starts with BOS, like real chat templates do.
pub(crate) fn encode_chat(messages: &[ChatMessage], add_generation_prompt: bool) -> Vec<u32> {
    let mut text = String::new();
    for m in messages {
        text.push_str("<|");
        text.push_str(&m.role);
        text.push_str("|>\n");
        text.push_str(&m.content);
    }
    if add_generation_prompt {
        text.push_str("<|assistant|>\n");
    }
    encode(&text, true)
}

/// Short words used as generated tokens: a space plus at most three letters is exactly one
/// token, so the generated text re-tokenizes to exactly `completion_tokens`.
const WORDS: &[&str] = &[
    "the", "of", "and", "to", "in", "is", "it", "for", "on", "as", "be", "at", "by", "we", "or",
    "an", "are", "was", "can", "not", "all", "new", "one", "two", "way", "use", "may", "day",
    "run", "set", "key", "map", "log", "sum", "per", "fit", "gpu", "kv", "tok", "bit",
];

/// The text of one generated token, drawn from `r`.
pub(crate) fn output_token(r: &mut crate::rng::Rng) -> (u32, &'static str) {
    let w = WORDS[r.below(WORDS.len() as u64) as usize];
    let mut chunk = [b' '; 4];
    chunk[1..=w.len()].copy_from_slice(w.as_bytes());
    (pack(&chunk[..=w.len()]), w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quarter_length_and_punctuation_separate() {
        assert_eq!(encode("hello", false).len(), 2); // "hell" "o"
        assert_eq!(encode(" hello world", false).len(), 4); // " hel" "lo" " wor" "ld"
        assert_eq!(encode("a, b.", false).len(), 4); // "a" "," " b" "."
        assert_eq!(encode("abc", true).len(), 2); // BOS "abc"
        assert_eq!(encode("\nx", false), vec![10, pack(b"x")]);
    }

    #[test]
    fn round_trips_any_text() {
        for s in [
            "Hello, world!  Twice\n\tand ünïcode ✓ 123456789",
            "",
            "   ",
            "a-b_c",
        ] {
            assert_eq!(decode(&encode(s, true), true), s);
        }
        assert_eq!(decode(&[BOS, EOS], false), "<|bos|><|eos|>");
        assert_eq!(decode(&[VOCAB_SIZE + 5], true), "");
    }

    /// The next turn of a chat quotes the answer after `<|assistant|>\n`: its prompt starts
    /// with the previous prompt's ids and then the answer's ids as generated, which is what
    /// lets the prefix cache serve a conversation's history.
    #[test]
    fn a_quoted_answer_re_tokenizes_to_its_generated_ids() {
        let msg = |role: &str, content: &str| ChatMessage {
            role: role.into(),
            content: content.into(),
        };
        let mut history = vec![msg("system", "Be brief."), msg("user", "Why, 2 times?")];
        let prompt = encode_chat(&history, true);
        let mut r = crate::rng::Rng::new(11);
        let (mut answer, mut ids) = (String::new(), Vec::new());
        for _ in 0..40 {
            let (id, w) = output_token(&mut r);
            answer.push(' ');
            answer.push_str(w);
            ids.push(id);
        }
        history.push(msg("assistant", &answer));
        history.push(msg("user", "More."));
        let next = encode_chat(&history, true);
        let expected: Vec<u32> = prompt.iter().chain(&ids).copied().collect();
        assert_eq!(next[..expected.len()], expected[..]);
        assert!(next.len() > expected.len());
    }

    #[test]
    fn loop_sentences_repeat_token_for_token() {
        let s = "The cache is warm and the batch is full, so we wait here, again.";
        let toks = loop_tokens(s).expect("a clean seam");
        assert_eq!(toks.concat(), s);
        // Three copies and a cut after any token re-tokenize to the tokens generated.
        let cycle: Vec<&String> = toks.iter().cycle().take(toks.len() * 3 + 5).collect();
        for cut in [1, toks.len(), toks.len() * 2 + 3, cycle.len()] {
            let text: String = cycle[..cut].iter().map(|t| t.as_str()).collect();
            assert_eq!(encode(&text, false).len(), cut, "{text:?}");
        }
        assert!(loop_tokens(" leading space works").is_ok());
        // "word" + "word" runs on into one word; a trailing space joins the next word.
        assert!(loop_tokens("runs on").is_err());
        assert!(loop_tokens("ends in a space. ").is_err());
        assert!(loop_tokens("").is_err());
        assert!(loop_tokens("caf\u{e9}.").is_err());
    }

    #[test]
    fn output_words_are_single_tokens() {
        let mut r = crate::rng::Rng::new(3);
        let mut text = String::new();
        let mut ids = Vec::new();
        for _ in 0..50 {
            let (id, w) = output_token(&mut r);
            text.push(' ');
            text.push_str(w);
            ids.push(id);
        }
        assert_eq!(encode(&text, false), ids);
    }
}
