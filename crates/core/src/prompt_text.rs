//! The text a run's exact-length prompts are cut from (`run --prompt-text FILE`), instead of
//! the filler words: what `run.json` records of it (the file's name, size and sha256, never
//! the text: a prompt file may be private, and its hash identifies it), and the checks that
//! refuse a file no prompt can be cut from before anything is sent. The cutting itself is the
//! client's (`client/prompts/text.rs`): it needs the server's tokenizer.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The source of the prompts' text, as `run.json` records it (`plan.settings.prompt_text`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptTextSource {
    /// The file's name, without its directory (where it lay on the client machine says
    /// nothing of what was measured, and may name a user).
    pub name: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// The sha256 of its bytes, lower-case hex: two runs on the same text have the same one.
    pub sha256: String,
    /// The text itself, for this process only: never saved (a run read back has `None`, and a
    /// resumed run is given the file again).
    #[serde(skip)]
    pub text: Option<Arc<str>>,
}

/// Why a file cannot be the prompts' text. Each message names the file and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptTextError {
    /// The file holds no bytes, or only white space.
    #[error(
        "--prompt-text {file}: the file has no text; give a file of the prose or code the prompts should be cut from"
    )]
    Empty {
        /// The file, as given.
        file: String,
    },
    /// The bytes are not UTF-8.
    #[error(
        "--prompt-text {file}: not UTF-8 text (invalid byte at offset {offset}); convert it to UTF-8 (e.g. iconv -t UTF-8) or give another file"
    )]
    NotUtf8 {
        /// The file, as given.
        file: String,
        /// The offset of the first byte that is not UTF-8.
        offset: usize,
    },
}

impl PromptTextSource {
    /// Checks the bytes of `file` (the path as given, for messages) into a source with its
    /// text: UTF-8, and at least one word. `sha256` is the hash of `bytes`, computed by the
    /// caller (core has no hash function of its own to keep).
    pub fn of(file: &str, bytes: Vec<u8>, sha256: String) -> Result<Self, PromptTextError> {
        let size = bytes.len() as u64;
        let text = String::from_utf8(bytes).map_err(|e| PromptTextError::NotUtf8 {
            file: file.to_string(),
            offset: e.utf8_error().valid_up_to(),
        })?;
        if text.trim().is_empty() {
            return Err(PromptTextError::Empty {
                file: file.to_string(),
            });
        }
        let name = std::path::Path::new(file)
            .file_name()
            .map_or_else(|| file.to_string(), |n| n.to_string_lossy().into_owned());
        Ok(PromptTextSource {
            name,
            bytes: size,
            sha256,
            text: Some(Arc::from(text)),
        })
    }

    /// Whether `other` is the same text (same bytes by their hash): a resumed run must cut
    /// its prompts from the text the saved run used.
    pub fn same_text(&self, other: &PromptTextSource) -> bool {
        self.sha256 == other.sha256 && self.bytes == other.bytes
    }
}

#[cfg(test)]
#[path = "tests/prompt_text.rs"]
mod tests;
