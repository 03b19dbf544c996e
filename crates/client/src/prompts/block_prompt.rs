//! Prompts that share a trace's prefix blocks (Mooncake `hash_ids`), still exact by the
//! server's tokenizer: the same block id is the same 512 tokens in every prompt, so the
//! server's prefix cache sees the trace's real sharing.
//!
//! A block's tokens are the first 512 ids of a text made from the run's seed and the block id
//! alone (a tag word, then filler words, each with its space before it), tokenized without
//! special tokens. A prompt is its blocks' ids in order, cut where its length ends (a prompt
//! that ends inside a block sends that block's start), then, where its `hash_ids` do not cover
//! its length, ids of a text of its own; the whole is detokenized once and counted by the
//! server as the request will be (`PromptBuilder::prompt_count`). Every block text starts with
//! a space-led word, so a join between blocks tokenizes as the blocks did apart; where a join
//! merges anyway (or BOS and a chat template add tokens), the content is stepped by the
//! difference and counted again. What the server adds around the content is learned on the
//! first prompt and reused.
//!
//! Workload loading lives here too ([`load_workload`]): ShareGPT lengths are the server
//! tokenizer's counts of each turn; and of texts ([`load_texts`]): `sharegpt-text:FILE`'s
//! replies counted the same way.

use crate::prompts::prompt::{BuiltPrompt, PromptBuilder, PromptError};
use crate::server::engine::{Engine, PromptInput};
use llmib_core::{
    MOONCAKE_BLOCK_TOKENS, UserPrompts, Workload, WorkloadError, WorkloadKind, WorkloadSpec,
};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

/// Filler words: each one or two tokens in common vocabularies, and a token in the simulator's.
const WORDS: &[&str] = &[
    "river", "stone", "light", "paper", "north", "table", "green", "music", "field", "glass",
    "house", "cloud", "water", "storm", "plant", "bread",
];

/// Builds the prompts of one trace replay.
pub(crate) struct BlockPrompts {
    engine: Arc<Engine>,
    seed: u64,
    /// Block id → its tokens (content ids, no special tokens).
    blocks: HashMap<u64, Vec<u32>>,
    /// Tokens the server adds around a prompt's content (BOS, a chat template), once known.
    overhead: Option<i64>,
}

/// Seeded filler: `words` words after `tag`, each with its space before it.
fn text_of(tag: &str, seed: u64, words: usize) -> String {
    let mut x = seed;
    let mut out = format!(" {tag}");
    for _ in 0..words {
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.push(' ');
        out.push_str(WORDS[((z ^ (z >> 31)) % WORDS.len() as u64) as usize]);
    }
    out
}

impl BlockPrompts {
    /// A builder for the replay of one run (`seed`: the run's prompt seed).
    pub(crate) fn new(engine: Arc<Engine>, seed: u64) -> Self {
        BlockPrompts {
            engine,
            seed,
            blocks: HashMap::new(),
            overhead: None,
        }
    }

    /// At least `want` content ids of the text `tag` seeded by `seed`.
    async fn ids_of(&self, tag: &str, seed: u64, want: u64) -> Result<Vec<u32>, PromptError> {
        let mut words = want as usize + 8;
        for _ in 0..6 {
            let ids = self
                .engine
                .tokenize(&text_of(tag, seed, words), false)
                .await
                .map_err(|e| tokenize_error(want, e))?;
            if ids.len() as u64 >= want {
                return Ok(ids);
            }
            words *= 2;
        }
        Err(PromptError::Inexact {
            context: want,
            closest: 0,
        })
    }

    /// The tokens of block `id`.
    async fn block(&mut self, id: u64) -> Result<Vec<u32>, PromptError> {
        if let Some(b) = self.blocks.get(&id) {
            return Ok(b.clone());
        }
        let tag = format!("blk{:x}x{id}", self.seed);
        let mut ids = self
            .ids_of(&tag, self.seed ^ id.rotate_left(23), MOONCAKE_BLOCK_TOKENS)
            .await?;
        ids.truncate(MOONCAKE_BLOCK_TOKENS as usize);
        self.blocks.insert(id, ids.clone());
        Ok(ids)
    }

    /// `content` ids: the blocks in order, then the request's own text (`unique`).
    async fn content(
        &mut self,
        content: u64,
        blocks: &[u64],
        unique: u32,
    ) -> Result<Vec<u32>, PromptError> {
        let mut ids: Vec<u32> = Vec::with_capacity(content as usize);
        for b in blocks {
            if ids.len() as u64 >= content {
                break;
            }
            let block = self.block(*b).await?;
            let room = (content - ids.len() as u64).min(block.len() as u64) as usize;
            ids.extend_from_slice(&block[..room]);
        }
        let rest = content.saturating_sub(ids.len() as u64);
        if rest > 0 {
            let tag = format!("req{:x}x{unique}", self.seed);
            let own = self
                .ids_of(&tag, !self.seed ^ u64::from(unique), rest)
                .await?;
            ids.extend_from_slice(&own[..rest as usize]);
        }
        Ok(ids)
    }

    /// The prompt of exactly `tokens` tokens (the server's count) made of `blocks`, then text
    /// of request `unique` where the blocks end first.
    pub(crate) async fn build(
        &mut self,
        builder: &mut PromptBuilder,
        tokens: u64,
        blocks: &[u64],
        unique: u32,
    ) -> Result<BuiltPrompt, PromptError> {
        if !self.engine.has_tokenizer() || !self.engine.has_detokenizer() {
            return Err(PromptError::NoTokenizer);
        }
        let mut overhead = self.overhead.unwrap_or(0);
        let mut closest = 0;
        for _ in 0..4 {
            let content = (tokens as i64 - overhead).max(1) as u64;
            let ids = self.content(content, blocks, unique).await?;
            let text = self
                .engine
                .detokenize(&ids)
                .await
                .map_err(|e| tokenize_error(tokens, e))?;
            let n = builder.prompt_count(&text).await?;
            if n == tokens {
                self.overhead = Some(overhead);
                return Ok(BuiltPrompt {
                    input: PromptInput::Text(text),
                    tokens,
                });
            }
            closest = n;
            overhead += n as i64 - tokens as i64;
        }
        Err(PromptError::Inexact {
            context: tokens,
            closest,
        })
    }
}

fn tokenize_error(context: u64, e: crate::server::engine::EngineError) -> PromptError {
    PromptError::Tokenize {
        context,
        detail: e.to_string(),
        transport: matches!(e, crate::server::engine::EngineError::Transport(_)),
    }
}

/// Reads a workload file. ShareGPT turns are counted by the server's tokenizer (each distinct
/// text once): the file is parsed a first time to collect its texts, which are then counted,
/// and parsed again with the counts, since the core's parser is synchronous and the tokenizer
/// is a server call. Every error names the file (and the line, where there is one).
pub async fn load_workload(
    engine: &Engine,
    spec: &WorkloadSpec,
) -> Result<Workload, WorkloadError> {
    let file = spec.path.display().to_string();
    let text = std::fs::read_to_string(&spec.path).map_err(|e| WorkloadError::Read {
        file: file.clone(),
        error: e.to_string(),
    })?;
    if spec.kind != WorkloadKind::ShareGpt {
        return Workload::parse(spec, &text, &|_| 0);
    }
    let texts = RefCell::new(Vec::new());
    Workload::parse(spec, &text, &|t| {
        texts.borrow_mut().push(t.to_string());
        1
    })?;
    let counts = count_texts(engine, &file, texts.into_inner()).await?;
    Workload::parse(spec, &text, &|t| counts.get(t).copied().unwrap_or(0))
}

/// Reads a workload of texts (`prompts:FILE`, `sharegpt-text:FILE`): a ShareGPT file's
/// recorded replies are counted by the server's tokenizer (each distinct text once), and each
/// request asks that many tokens (`llmib_core::UserPrompts::parse_texts`).
pub async fn load_texts(
    engine: &Engine,
    spec: &WorkloadSpec,
) -> Result<UserPrompts, WorkloadError> {
    let file = spec.path.display().to_string();
    let text = std::fs::read_to_string(&spec.path).map_err(|e| WorkloadError::Read {
        file: file.clone(),
        error: e.to_string(),
    })?;
    let replies = UserPrompts::replies(spec, &text)?;
    let counts = count_texts(engine, &file, replies).await?;
    UserPrompts::parse_texts(spec, &text, &|t| counts.get(t).copied().unwrap_or(0))
}

/// The server's token count of each distinct text of a workload file `file` (its turns or
/// replies), for a parser that is synchronous while the tokenizer is a server call.
pub(crate) async fn count_texts(
    engine: &Engine,
    file: &str,
    texts: Vec<String>,
) -> Result<HashMap<String, u64>, WorkloadError> {
    let mut counts: HashMap<String, u64> = HashMap::new();
    for t in texts {
        if counts.contains_key(&t) {
            continue;
        }
        let n = engine
            .tokenize(&t, false)
            .await
            .map_err(|e| WorkloadError::Read {
                file: file.to_string(),
                error: format!(
                    "counting its turns needs the server's tokenizer, which failed: {e}"
                ),
            })?
            .len() as u64;
        counts.insert(t, n);
    }
    Ok(counts)
}
