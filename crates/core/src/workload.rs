//! Real workloads on the open-loop path (issue 20): a file of requests, each with its prompt and
//! output length (and, for traces, its arrival instant), read into one [`Workload`]. Three
//! formats of lengths, named `kind:PATH` ([`WorkloadSpec`]), and two of texts, `prompts:FILE`
//! (the user's own prompts, sent as they are: [`UserPrompts`], module `prompts`) and
//! `sharegpt-text:FILE` (ShareGPT's first human messages sent with their words, each asking as
//! many tokens as its recorded reply has: [`UserPrompts::parse_texts`]):
//!
//! - `sharegpt:FILE`: ShareGPT JSON, an array of `{"id", "conversations": [{"from", "value"}]}`.
//!   A request is the first human turn (`from` = `human` or `user`) and the turn right after it,
//!   which must be the model's (`gpt`, `assistant` or `chatgpt`): input = the human text's
//!   tokens, output = the reply's tokens. Conversations without such a pair, or with an empty
//!   side, are skipped and counted ([`Workload::skipped`]). No timestamps: sent at a rate.
//!   Lengths are in tokens and the core has no tokenizer, so the caller passes a token counter
//!   (the client passes the server tokenizer's count, so lengths are the server's own).
//! - `mooncake:FILE`: Mooncake's JSONL trace, one object a line: `timestamp` (ms from the trace's
//!   start), `input_length` and `output_length` (tokens), `hash_ids` (the prompt's blocks, in
//!   order: two requests with the same id at the same position share that block's text). In
//!   Mooncake's convention a block is 512 tokens ([`MOONCAKE_BLOCK_TOKENS`]); the last block of
//!   a prompt holds the remainder.
//! - `azure:FILE`: Azure's LLM inference trace, CSV with the header
//!   `TIMESTAMP,ContextTokens,GeneratedTokens` (any column order, names case-insensitive) and
//!   rows like `2023-11-16 18:15:46.6805900,4808,10`; the timestamp is a UTC date and time with
//!   any number of fraction digits, read without a date crate.
//!
//! Every request keeps its file `line` (1-based; for ShareGPT the line where the conversation's
//! object starts), and every error names the file and line. Arrival instants are seconds from
//! the first row; a trace whose timestamps go backwards is refused (sort it first), never
//! silently reordered, since its order is the order the requests were sent.
//! Nothing here panics on any input: a bad row is an error naming it.

mod azure;
mod error;
mod mooncake;
mod prompts;
mod request;
mod sharegpt;
mod trace;

pub use error::{PromptLineFault, WorkloadError};
pub use prompts::{PromptBody, PromptsSource, UserPrompt, UserPrompts};
pub use request::WorkloadRequest;
pub use trace::{PrefixPrediction, TimeScaleSpec, predicted_cached_tokens, trace_offsets};

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// Tokens per `hash_ids` block in Mooncake's traces.
pub const MOONCAKE_BLOCK_TOKENS: u64 = 512;

/// The format of a workload file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    /// ShareGPT conversations (JSON array): lengths only (filler of each human message's
    /// length); replayed as sessions, the recorded words.
    ShareGpt,
    /// ShareGPT conversations (JSON array) sent with their words: each request is the first
    /// human message as recorded, asking as many tokens as the reply after it had
    /// ([`UserPrompts::parse_texts`]).
    ShareGptText,
    /// Mooncake trace (JSONL): timestamps, lengths and prefix blocks.
    Mooncake,
    /// Azure LLM inference trace (CSV): timestamps and lengths.
    Azure,
    /// A session trace (JSONL): conversations turn by turn, replayed as sessions
    /// (`crate::parse_session_trace`), never as open load.
    Sessions,
    /// Weka agentic coding traces (JSON, one object per conversation), imported as a session
    /// trace (`crate::parse_weka_trace`) and replayed as one.
    Weka,
    /// The user's own prompts (JSONL), sent as they are at a rate ([`UserPrompts`]).
    Prompts,
}

impl WorkloadKind {
    /// The name in a `kind:PATH` spec.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadKind::ShareGpt => "sharegpt",
            WorkloadKind::ShareGptText => "sharegpt-text",
            WorkloadKind::Mooncake => "mooncake",
            WorkloadKind::Azure => "azure",
            WorkloadKind::Sessions => "sessions",
            WorkloadKind::Weka => "weka",
            WorkloadKind::Prompts => "prompts",
        }
    }

    /// Whether it is an open-load trace that brings its own arrivals (Mooncake, Azure); the
    /// others are sent at a rate (or, for sessions, replayed as sessions).
    pub fn is_trace(self) -> bool {
        matches!(self, WorkloadKind::Mooncake | WorkloadKind::Azure)
    }

    /// Whether it replays as a session trace (`sessions:FILE`, `weka:FILE`): sessions turn by
    /// turn, never open load.
    pub fn is_session_trace(self) -> bool {
        matches!(self, WorkloadKind::Sessions | WorkloadKind::Weka)
    }

    /// Whether its requests are texts sent as they are ([`UserPrompts`]: `prompts:FILE`,
    /// `sharegpt-text:FILE`), counted by the server once sent, rather than lengths to build.
    pub fn is_texts(self) -> bool {
        matches!(self, WorkloadKind::Prompts | WorkloadKind::ShareGptText)
    }
}

/// Which workload file to read, and as what (`mooncake:traces/conv.jsonl`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadSpec {
    /// The file's format.
    pub kind: WorkloadKind,
    /// The file, as written (relative paths are the caller's to resolve).
    pub path: PathBuf,
}

impl FromStr for WorkloadSpec {
    type Err = WorkloadError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let unknown = || WorkloadError::UnknownKind(s.to_string());
        let (kind, path) = s.trim().split_once(':').ok_or_else(unknown)?;
        let kind = match kind.trim().to_ascii_lowercase().as_str() {
            "sharegpt" => WorkloadKind::ShareGpt,
            "sharegpt-text" => WorkloadKind::ShareGptText,
            "mooncake" => WorkloadKind::Mooncake,
            "azure" => WorkloadKind::Azure,
            "sessions" => WorkloadKind::Sessions,
            "weka" => WorkloadKind::Weka,
            "prompts" => WorkloadKind::Prompts,
            _ => return Err(unknown()),
        };
        if path.trim().is_empty() {
            return Err(unknown());
        }
        Ok(WorkloadSpec {
            kind,
            path: PathBuf::from(path.trim()),
        })
    }
}

impl fmt::Display for WorkloadSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind.name(), self.path.display())
    }
}

/// A workload file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Where it came from.
    pub source: WorkloadSpec,
    /// Its requests, in file order (which is send order for a trace).
    pub requests: Vec<WorkloadRequest>,
    /// Entries left out (ShareGPT conversations without a human→model pair or with an empty
    /// side); 0 for traces, where a bad row is an error instead.
    pub skipped: usize,
}

impl Workload {
    /// Reads `spec`'s file and parses it ([`Workload::parse`]).
    pub fn load(
        spec: &WorkloadSpec,
        count_tokens: &dyn Fn(&str) -> u64,
    ) -> Result<Workload, WorkloadError> {
        let text = std::fs::read_to_string(&spec.path).map_err(|e| WorkloadError::Read {
            file: spec.path.display().to_string(),
            error: e.to_string(),
        })?;
        Workload::parse(spec, &text, count_tokens)
    }

    /// Parses a workload file's `text` as `spec`'s format. `count_tokens` gives a text's length
    /// in the server's tokens; only ShareGPT, whose rows are texts, calls it (traces carry
    /// their lengths). Errors name `spec.path` and the line.
    pub fn parse(
        spec: &WorkloadSpec,
        text: &str,
        count_tokens: &dyn Fn(&str) -> u64,
    ) -> Result<Workload, WorkloadError> {
        let file = spec.path.display().to_string();
        let (requests, skipped) = match spec.kind {
            WorkloadKind::ShareGpt => sharegpt::parse(&file, text, count_tokens)?,
            WorkloadKind::Mooncake => (mooncake::parse(&file, text)?, 0),
            WorkloadKind::Azure => (azure::parse(&file, text)?, 0),
            WorkloadKind::Sessions | WorkloadKind::Weka => {
                return Err(WorkloadError::SessionsOnly { file });
            }
            WorkloadKind::Prompts | WorkloadKind::ShareGptText => {
                return Err(WorkloadError::PromptsOnly { file });
            }
        };
        if requests.is_empty() {
            return Err(WorkloadError::Empty { file, skipped });
        }
        Ok(Workload {
            source: spec.clone(),
            requests,
            skipped,
        })
    }

    /// `Ok` when every request fits a server context of `context_tokens` (input + output);
    /// otherwise the first row that does not, by line.
    pub fn check_fits(&self, context_tokens: u64) -> Result<(), WorkloadError> {
        let Some(r) = self
            .requests
            .iter()
            .find(|r| r.input_tokens.saturating_add(r.output_tokens) > context_tokens)
        else {
            return Ok(());
        };
        Err(WorkloadError::TooLong {
            file: self.source.path.display().to_string(),
            line: r.line,
            input: r.input_tokens,
            output: r.output_tokens,
            context: context_tokens,
        })
    }
}

#[cfg(test)]
#[path = "tests/workload.rs"]
mod tests;
