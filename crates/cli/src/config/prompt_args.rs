//! How the prompts are made, flattened into `RunArgs` and its config file: their length
//! (`--token-targeting`) and their text (`--prompt-text FILE`: the exact-length prompts cut
//! from the file's text instead of the filler words; docs/method-notes.md, "Prompts"). The
//! file is read and checked here, with the other flags, so a missing, unreadable, empty or
//! non-UTF-8 file is refused in one line before the server is contacted; a resumed run must be
//! given the same file again (its text is never saved, only its name, size and sha256).

use super::de;
use anyhow::{Result, bail};
use clap::Args;
use llmib_core::PromptTextSource;
use serde::Deserialize;
use std::path::PathBuf;

/// The prompt flags of `run` (and keys of its config file), flattened into `RunArgs`.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct PromptArgs {
    /// How prompts are made C tokens long: `exact` (the server's tokenizer), `estimate` (from
    /// the server's `usage.prompt_tokens` of probe requests, within 0.5%; for endpoints
    /// without a tokenizer; contexts show as `≈`), `ids` (token-id prompts, exact by
    /// construction and built without a server call each: completions on vLLM, SGLang or
    /// llama.cpp), or `auto` (the default): exact where a tokenizer exists.
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub token_targeting: Option<TargetingArg>,
    /// Cut every exact-length prompt from this UTF-8 text file (prose, code) instead of the
    /// filler words, each stream from its own offset, the file repeated when shorter than a
    /// prompt; each prompt keeps its unique tag. run.json records the file's name, size and
    /// sha256, never its text. A relative path is from the working directory.
    #[arg(long, value_name = "FILE")]
    pub prompt_text: Option<PathBuf>,
}

/// `--token-targeting`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetingArg {
    /// Exact where the server has a tokenizer, estimated otherwise.
    #[default]
    Auto,
    /// With the server's tokenizer.
    Exact,
    /// From the server's usage.
    Estimate,
    /// Token ids, exact by construction.
    Ids,
}

impl TargetingArg {
    /// The targeting asked for; `None` lets the probe choose by the tokenizer it finds.
    pub fn choice(self) -> Option<llmib_core::Targeting> {
        use llmib_core::Targeting;
        match self {
            TargetingArg::Exact => Some(Targeting::Exact),
            TargetingArg::Estimate => Some(Targeting::Estimate),
            TargetingArg::Ids => Some(Targeting::Ids),
            TargetingArg::Auto => None,
        }
    }
}

impl PromptArgs {
    /// Field-wise merge, as `RunArgs::or`: every value set here wins over `lower`'s.
    pub fn or(self, lower: PromptArgs) -> PromptArgs {
        PromptArgs {
            token_targeting: self.token_targeting.or(lower.token_targeting),
            prompt_text: self.prompt_text.or(lower.prompt_text),
        }
    }

    /// Reads and checks the file into the run's prompt-text source (with its text, for this
    /// process); `None` without the flag: the filler.
    pub fn source(&self) -> Result<Option<PromptTextSource>> {
        let Some(path) = &self.prompt_text else {
            return Ok(None);
        };
        let shown = path.display().to_string();
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => bail!(
                "--prompt-text {shown}: cannot read it ({e}); give the path of a UTF-8 text file (relative to the working directory)"
            ),
        };
        let sha256 = llmib_core::hex_sha256(&bytes);
        Ok(Some(PromptTextSource::of(&shown, bytes, sha256)?))
    }
}

/// The prompt text a resumed run goes on with: the file given now (`given`, read and checked),
/// which must be the text the saved run cut its prompts from (`saved`), since the resumed
/// cells must measure what the saved ones did. Neither: the filler, as before.
pub fn resumed(
    given: Option<PromptTextSource>,
    saved: Option<&PromptTextSource>,
) -> Result<Option<PromptTextSource>> {
    match (given, saved) {
        (None, None) => Ok(None),
        (Some(g), Some(s)) if g.same_text(s) => Ok(Some(g)),
        (Some(g), Some(s)) => bail!(
            "--prompt-text {} (sha256 {}) is not the text the resumed run used ({}, sha256 {}): give that file again, or start a new run",
            g.name,
            g.sha256,
            s.name,
            s.sha256
        ),
        (None, Some(s)) => bail!(
            "the resumed run cut its prompts from {} ({} bytes, sha256 {}): pass --prompt-text with that file again (its text is not saved)",
            s.name,
            s.bytes,
            s.sha256
        ),
        (Some(g), None) => bail!(
            "--prompt-text {}: the resumed run used the filler text; resume without --prompt-text, or start a new run",
            g.name
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(bytes: &[u8]) -> PromptTextSource {
        PromptTextSource::of("p.txt", bytes.to_vec(), llmib_core::hex_sha256(bytes)).expect("text")
    }

    /// A file read through the flag: its name, size, sha256 and text; a missing file is
    /// refused in one line that names it.
    #[test]
    fn the_file_is_read_and_checked() {
        let dir = std::env::temp_dir().join(format!("llmib-prompt-text-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("prose.txt");
        std::fs::write(&file, "abc").expect("write");
        let a = PromptArgs {
            prompt_text: Some(file.clone()),
            ..PromptArgs::default()
        };
        let s = a.source().expect("read").expect("a source");
        assert_eq!((s.name.as_str(), s.bytes), ("prose.txt", 3));
        // FIPS 180-2's example: sha256("abc").
        assert_eq!(
            s.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(s.text.as_deref(), Some("abc"));
        let missing = PromptArgs {
            prompt_text: Some(dir.join("missing.txt")),
            ..PromptArgs::default()
        };
        let e = format!("{:#}", missing.source().expect_err("refused"));
        assert!(e.contains("missing.txt") && !e.contains('\n'), "{e}");
        assert_eq!(PromptArgs::default().source().expect("none"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// On resume the same text goes on; another, a missing one, or a new one is refused.
    #[test]
    fn a_resumed_run_keeps_its_text() {
        let (a, b) = (source(b"one text"), source(b"another text"));
        let kept = resumed(Some(a.clone()), Some(&a)).expect("same");
        assert_eq!(kept.and_then(|k| k.text), a.text.clone());
        assert_eq!(resumed(None, None).expect("filler"), None);
        for (given, saved, says) in [
            (Some(b.clone()), Some(&a), "is not the text"),
            (None, Some(&a), "pass --prompt-text"),
            (Some(b.clone()), None, "used the filler"),
        ] {
            let e = resumed(given, saved).expect_err("refused").to_string();
            assert!(e.contains(says), "{e}");
        }
    }
}
