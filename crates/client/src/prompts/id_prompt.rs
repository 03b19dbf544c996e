//! Token-id prompts (`--token-targeting ids`, `llmib_core::Targeting::Ids`): exactly C tokens
//! by construction, with no server call per prompt.
//!
//! The text prompts cost a tokenize, a detokenize and a verifying tokenize each (0.65 ms a
//! prompt against the simulator, 6.5 s for an open-load cell of 10,000 requests). Here the
//! server's tokenizer is asked once per run how it spells each of the filler's words after a
//! space (and the sentence break, and the BOS a string prompt gets); a prompt is then the same
//! seeded word sequence the text filler writes ([`filler::word_indices`]), spelled in those
//! ids and cut at C. A sequence of words rather than random ids: the prompt stays text a model
//! reads as words, and a long one holds no repeated passage for a prompt-lookup drafter to find
//! (random windows of one tokenized text would). No two prompts share a prefix: the word
//! sequence is seeded by (run seed, context, stream), so two prompts share their first k words
//! with chance 1 in 114^k.

use crate::prompts::filler;
use crate::server::engine::{Engine, EngineError};
use futures_util::StreamExt;

/// The word before each spelled word: a word no tokenizer merges with what follows a space,
/// so the ids after its own are the next word's as it is spelled mid-text.
const ANCHOR: &str = "the";

/// Tokenize calls in flight while learning the words (115 calls in all).
const LEARN_IN_FLIGHT: usize = 16;

/// The filler's words in the server tokenizer's ids, learned once per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdWords {
    /// What the server puts before a string prompt's text (BOS; empty where it adds nothing),
    /// sent first so that an id prompt reads as a string prompt would.
    bos: Vec<u32>,
    /// Filler word `i`'s ids after a space (never empty).
    words: Vec<Vec<u32>>,
    /// The sentence break's ids after a word (`.`).
    stop: Vec<u32>,
}

/// Why the words' ids could not be learned.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LearnError {
    /// A tokenize call failed.
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The tokenizer spelled a word only together with the word before it.
    #[error(
        "the server's tokenizer spells the filler word {0:?} only together with the word before it, so its ids cannot be learned apart; use --token-targeting exact"
    )]
    Merged(String),
}

impl IdWords {
    /// The words from their spellings: `bos`, word `i`'s ids, the break's. `None` where a word
    /// has no ids (the prompt could not grow on it).
    pub(crate) fn new(bos: Vec<u32>, words: Vec<Vec<u32>>, stop: Vec<u32>) -> Option<IdWords> {
        (words.len() == filler::WORD_COUNT && words.iter().all(|w| !w.is_empty()))
            .then_some(IdWords { bos, words, stop })
    }

    /// Asks the server's tokenizer how it spells each filler word: `ANCHOR` alone, then
    /// `ANCHOR` and the word, whose ids after `ANCHOR`'s are the word's; the same for the
    /// sentence break; and `ANCHOR` with the special tokens a string prompt gets, whose ids
    /// before `ANCHOR`'s are the BOS.
    pub(crate) async fn learn(engine: &Engine) -> Result<IdWords, LearnError> {
        let anchor = engine.tokenize(ANCHOR, false).await?;
        let bos = if engine.prompt_adds_bos() {
            let with = engine.tokenize(ANCHOR, true).await?;
            leading_special(&with, &anchor)
        } else {
            Vec::new()
        };
        let texts: Vec<String> = (0..filler::WORD_COUNT)
            .map(|i| format!(" {}", filler::word(i)))
            .chain(std::iter::once(".".to_string()))
            .collect();
        let spelled: Vec<Result<Vec<u32>, LearnError>> = futures_util::stream::iter(&texts)
            .map(|t| {
                let anchor = &anchor;
                async move {
                    let ids = engine.tokenize(&format!("{ANCHOR}{t}"), false).await?;
                    after(anchor, ids).ok_or_else(|| LearnError::Merged(t.trim().to_string()))
                }
            })
            .buffered(LEARN_IN_FLIGHT)
            .collect()
            .await;
        let mut spelled = spelled.into_iter().collect::<Result<Vec<_>, _>>()?;
        let stop = spelled.pop().unwrap_or_default();
        IdWords::new(bos, spelled, stop)
            .ok_or_else(|| LearnError::Merged(filler::word(0).to_string()))
    }

    /// The prompt of (run `seed`, context, stream) in exactly `context` ids: the BOS, then the
    /// filler's words for it with a break every [`filler::SENTENCE_WORDS`] words, cut at
    /// `context`. `None` where `context` leaves no room after the BOS.
    pub(crate) fn prompt(&self, seed: u64, context: u64, stream: u32) -> Option<Vec<u32>> {
        let want = usize::try_from(context).ok()?;
        if want <= self.bos.len() {
            return None;
        }
        let mut ids = Vec::with_capacity(want + 8);
        ids.extend_from_slice(&self.bos);
        let indices = filler::word_indices(seed, context, stream);
        for (i, w) in indices.enumerate() {
            if ids.len() >= want {
                break;
            }
            ids.extend_from_slice(&self.words[w]);
            if i % filler::SENTENCE_WORDS == filler::SENTENCE_WORDS - 1 {
                ids.extend_from_slice(&self.stop);
            }
        }
        ids.truncate(want);
        Some(ids)
    }

    /// The fewest ids a prompt can have: the BOS and one.
    pub(crate) fn shortest(&self) -> u64 {
        self.bos.len() as u64 + 1
    }
}

/// The ids of `with` before `plain` starts in it: the special tokens a tokenizer put before a
/// text (BOS). Empty where `plain` is not found whole (a tokenizer that changed the text's own
/// ids with its specials: the server's count of each request still checks the length).
fn leading_special(with: &[u32], plain: &[u32]) -> Vec<u32> {
    (0..=with.len().saturating_sub(plain.len()))
        .find(|&k| with[k..].starts_with(plain))
        .map(|k| with[..k].to_vec())
        .unwrap_or_default()
}

/// The ids of `ids` after `prefix`, where `ids` starts with it and goes on.
fn after(prefix: &[u32], ids: Vec<u32>) -> Option<Vec<u32>> {
    (ids.len() > prefix.len() && ids.starts_with(prefix)).then(|| ids[prefix.len()..].to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Word `i` spelled as one id, 1000 + i, except word 3 as two; `.` as 7; BOS 1.
    fn words(bos: &[u32]) -> IdWords {
        let spelled = (0..filler::WORD_COUNT as u32)
            .map(|i| match i {
                3 => vec![2003, 3003],
                i => vec![1000 + i],
            })
            .collect();
        IdWords::new(bos.to_vec(), spelled, vec![7]).expect("all spelled")
    }

    #[test]
    fn a_prompt_is_the_filler_words_in_ids_cut_at_exactly_c() {
        let w = words(&[1]);
        let p = w.prompt(42, 1024, 5).expect("room");
        assert_eq!(p.len(), 1024);
        assert_eq!(p[0], 1, "BOS first");
        // Rebuilt from the text filler's own word sequence: the same words, in order.
        let mut expect = vec![1];
        for (i, k) in filler::word_indices(42, 1024, 5).enumerate() {
            if expect.len() >= 1024 {
                break;
            }
            expect.extend(&w.words[k]);
            if i % filler::SENTENCE_WORDS == filler::SENTENCE_WORDS - 1 {
                expect.push(7);
            }
        }
        expect.truncate(1024);
        assert_eq!(p, expect);
        // A break after every 13th word: about 1023 / 14 of them.
        let breaks = p.iter().filter(|&&id| id == 7).count();
        assert!((60..=80).contains(&breaks), "{breaks} breaks");
        // Deterministic; another stream, context or run seed is another prompt from its
        // first ids on.
        assert_eq!(w.prompt(42, 1024, 5), Some(p.clone()));
        for other in [
            w.prompt(42, 1024, 6),
            w.prompt(42, 2048, 5),
            w.prompt(43, 1024, 5),
        ] {
            let other = other.expect("room");
            assert_ne!(other[1..9], p[1..9]);
        }
    }

    #[test]
    fn every_length_is_exact_and_no_room_after_the_bos_is_refused() {
        let w = words(&[1, 2]);
        assert_eq!(w.shortest(), 3);
        assert_eq!(w.prompt(1, 2, 0), None);
        for c in [3u64, 4, 5, 13, 100, 8191, 131_072] {
            assert_eq!(w.prompt(9, c, 3).expect("room").len() as u64, c);
        }
        let plain = words(&[]);
        assert_eq!(plain.prompt(9, 1, 0).map(|p| p.len()), Some(1));
        // Ten thousand streams of one context: no two share their first eight ids.
        let mut heads = std::collections::HashSet::new();
        for s in 0..10_000 {
            let p = plain.prompt(77, 1024, s).expect("room");
            assert!(heads.insert(p[..8].to_vec()), "stream {s} repeats a head");
        }
    }

    #[test]
    fn spellings_are_read_after_the_anchor_and_before_the_text() {
        assert_eq!(after(&[5], vec![5, 6, 7]), Some(vec![6, 7]));
        assert_eq!(after(&[5], vec![5]), None, "nothing after the anchor");
        assert_eq!(after(&[5], vec![9, 6]), None, "the anchor merged");
        assert_eq!(leading_special(&[1, 5], &[5]), vec![1]);
        assert_eq!(leading_special(&[1, 2, 5, 3], &[5]), vec![1, 2]);
        assert_eq!(leading_special(&[5], &[5]), Vec::<u32>::new());
        assert_eq!(leading_special(&[1, 9], &[5]), Vec::<u32>::new());
        assert_eq!(
            IdWords::new(vec![], vec![vec![1]], vec![]),
            None,
            "too few words"
        );
        let mut spelled = vec![vec![1]; filler::WORD_COUNT];
        spelled[4].clear();
        assert_eq!(
            IdWords::new(vec![], spelled, vec![]),
            None,
            "a word without ids"
        );
    }
}
