//! Prompts of an exact token count: built with the server's tokenizer and template (`prompt`)
//! from a tagged filler text (`filler`) or a file's text (`text`, `--prompt-text`), the
//! filler's words as token ids (`id_prompt`, `--token-targeting ids`), and a workload's
//! block-structured prompts (`block_prompt`).
//!
//! May import: `server` (the tokenizer) and `wire`. Never `progress` or `cells`.

pub(crate) mod block_prompt;
pub(crate) mod conversation;
pub(crate) mod filler;
pub(crate) mod id_prompt;
pub(crate) mod prompt;
pub(crate) mod text;
