//! A tokenizer file given by `--tokenizer tokenizer.json` (the Hugging Face `tokenizers`
//! format), for servers without a tokenize endpoint: deferred token counting counts chunk texts
//! with it instead of falling back to one token per chunk. The row says so
//! (`token_count_note`).

/// Why a tokenizer file could not be loaded or used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenizerError {
    /// The file is missing or not a `tokenizer.json`.
    #[error("--tokenizer {path}: not a readable tokenizer.json ({detail})")]
    Load {
        /// The file given.
        path: String,
        /// What the tokenizers library said.
        detail: String,
    },
    /// Encoding a text failed.
    #[error("the local tokenizer failed: {0}")]
    Encode(String),
}

/// A loaded `tokenizer.json`.
pub struct LocalTokenizer {
    inner: tokenizers::Tokenizer,
    path: String,
}

impl std::fmt::Debug for LocalTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalTokenizer")
            .field("path", &self.path)
            .finish()
    }
}

impl LocalTokenizer {
    /// Loads `path`; the error says what is wrong with the file in one line.
    pub fn load(path: &str) -> Result<LocalTokenizer, TokenizerError> {
        let inner = tokenizers::Tokenizer::from_file(path).map_err(|e| TokenizerError::Load {
            path: path.to_string(),
            detail: e.to_string(),
        })?;
        Ok(LocalTokenizer {
            inner,
            path: path.to_string(),
        })
    }

    /// Tokens in `text`, without special tokens (a chunk of generated text).
    pub fn count(&self, text: &str) -> Result<u32, TokenizerError> {
        self.inner
            .encode(text, false)
            .map(|e| e.len() as u32)
            .map_err(|e| TokenizerError::Encode(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word-level tokenizer written here, so no model hub is needed.
    pub(crate) const WORD_LEVEL: &str = r#"{"version":"1.0","truncation":null,"padding":null,
        "added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"Whitespace"},
        "post_processor":null,"decoder":null,
        "model":{"type":"WordLevel","vocab":{"[UNK]":0,"the":1,"cat":2},"unk_token":"[UNK]"}}"#;

    #[test]
    fn a_written_tokenizer_counts_words_and_a_bad_file_is_one_line() {
        let dir = std::env::temp_dir().join(format!("llmib-tok-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("tokenizer.json");
        std::fs::write(&p, WORD_LEVEL).expect("write");
        let t = LocalTokenizer::load(p.to_str().unwrap_or_default()).expect("loads");
        assert_eq!(
            t.count(" the cat sat, down"),
            Ok(5),
            "words and punctuation"
        );
        assert_eq!(t.count(""), Ok(0));
        std::fs::write(&p, "{not json").expect("write");
        let e = LocalTokenizer::load(p.to_str().unwrap_or_default())
            .expect_err("bad file")
            .to_string();
        assert!(e.starts_with("--tokenizer ") && !e.contains('\n'), "{e}");
    }
}
