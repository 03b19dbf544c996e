//! `prompts:FILE` (issue 45): the user's own prompts, sent as they are on the open-loop path
//! instead of filler of the same length. A JSONL file, one request a line: an object with either
//! `prompt` (a string, for any API) or `messages` (an OpenAI chat `messages` array, each an
//! object with a string `role` and a `content` that is a string or an array of content parts),
//! and optionally `max_tokens` (a positive integer; `null` is the same as none). Other keys are
//! ignored (a log's ids and timestamps), blank lines skipped.
//!
//! Nothing here counts tokens: a prompt's length is the server's own count, read from its
//! usage when the request is sent. [`UserPrompt::approx_tokens`] (about 4 bytes a token) only
//! keys the section and sizes its limits before anything is sent. What `run.json` records of the
//! file is [`PromptsSource`]: its name, prompt count, size and sha256, never the text (a user's
//! prompts may be private).
//!
//! `sharegpt-text:FILE` is read into the same [`UserPrompts`] ([`UserPrompts::parse_texts`]):
//! each conversation's first human message is a `prompt`, sent with its recorded words (as
//! vLLM's and SGLang's ShareGPT benchmarks send it), and its `max_tokens` is the recorded
//! reply's length by the caller's count (the server's tokenizer), at least 1. A conversation
//! without a human message followed by the model's, or with a side of white space only, is
//! left out; which ones are read from the text alone, so the prompt count run.json records does
//! not depend on who counted the replies.

use super::error::{PromptLineFault as Fault, WorkloadError};
use super::{WorkloadKind, WorkloadSpec};
use crate::api::Api;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What a line's text is.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptBody {
    /// `prompt`: one text.
    Text(String),
    /// `messages`: the chat as given, each message an object with a string `role` and a string
    /// or array `content` (other keys kept: it is sent as written).
    Messages(Vec<Value>),
}

/// One line of a prompts file.
#[derive(Debug, Clone, PartialEq)]
pub struct UserPrompt {
    /// Its line in the file (1-based).
    pub line: usize,
    /// The prompt or the chat.
    pub body: PromptBody,
    /// Its own `max_tokens`; `None`: the run's output length rule (`--output-len`, else
    /// `--max-output`).
    pub max_tokens: Option<u32>,
    /// About how many tokens it is (its text's bytes / 4, at least 1): the section's key and
    /// the first-token limit's size only; the row's lengths are the server's counts.
    pub approx_tokens: u64,
}

/// A prompts file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct UserPrompts {
    /// Where it came from.
    pub source: WorkloadSpec,
    /// Its prompts, in file order.
    pub prompts: Vec<UserPrompt>,
    /// The file's size in bytes.
    pub bytes: u64,
}

/// What `run.json` records of a prompts file (`plan.settings.load.prompts`): enough to know
/// the same file again, nothing of its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptsSource {
    /// The file's name, without its directory.
    pub name: String,
    /// Its prompts (non-blank lines).
    pub lines: u64,
    /// Its size in bytes.
    pub bytes: u64,
    /// The sha256 of its bytes, lower-case hex (computed by the caller: core keeps no hash).
    pub sha256: String,
}

impl UserPrompts {
    /// Reads `spec`'s file and parses it ([`UserPrompts::parse`]).
    pub fn load(spec: &WorkloadSpec) -> Result<UserPrompts, WorkloadError> {
        let text = std::fs::read_to_string(&spec.path).map_err(|e| WorkloadError::Read {
            file: spec.path.display().to_string(),
            error: e.to_string(),
        })?;
        UserPrompts::parse(spec, &text)
    }

    /// Parses a prompts file's `text`: the first bad line is an error naming the file and the
    /// line; a file without a prompt is [`WorkloadError::Empty`].
    pub fn parse(spec: &WorkloadSpec, text: &str) -> Result<UserPrompts, WorkloadError> {
        let file = spec.path.display().to_string();
        let mut prompts = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            if raw.trim().is_empty() {
                continue;
            }
            let line = i + 1;
            let p = parse_line(raw, line).map_err(|what| WorkloadError::BadPrompt {
                file: file.clone(),
                line,
                what,
            })?;
            prompts.push(p);
        }
        if prompts.is_empty() {
            return Err(WorkloadError::Empty { file, skipped: 0 });
        }
        Ok(UserPrompts {
            source: spec.clone(),
            prompts,
            bytes: text.len() as u64,
        })
    }

    /// Parses `spec`'s `text` as texts of its kind: a prompts file line by line
    /// ([`UserPrompts::parse`]), or ShareGPT's first pairs (`sharegpt-text:FILE`, module docs),
    /// each asking `count_reply(reply)` tokens (at least 1). Any other kind is
    /// [`WorkloadError::LengthsOnly`].
    pub fn parse_texts(
        spec: &WorkloadSpec,
        text: &str,
        count_reply: &dyn Fn(&str) -> u64,
    ) -> Result<UserPrompts, WorkloadError> {
        let file = spec.path.display().to_string();
        match spec.kind {
            WorkloadKind::Prompts => UserPrompts::parse(spec, text),
            WorkloadKind::ShareGptText => {
                let (pairs, skipped) = super::sharegpt::pairs(&file, text)?;
                if pairs.is_empty() {
                    return Err(WorkloadError::Empty { file, skipped });
                }
                let prompts = pairs
                    .into_iter()
                    .map(|p| UserPrompt {
                        line: p.line,
                        approx_tokens: (p.ask.len() as u64).div_ceil(4).max(1),
                        max_tokens: Some(
                            u32::try_from(count_reply(&p.reply).max(1)).unwrap_or(u32::MAX),
                        ),
                        body: PromptBody::Text(p.ask),
                    })
                    .collect();
                Ok(UserPrompts {
                    source: spec.clone(),
                    prompts,
                    bytes: text.len() as u64,
                })
            }
            _ => Err(WorkloadError::LengthsOnly { file }),
        }
    }

    /// The recorded replies of a `sharegpt-text:FILE` file's requests, in order (what the
    /// caller counts with the server's tokenizer before [`UserPrompts::parse_texts`]); empty for
    /// any other kind.
    pub fn replies(spec: &WorkloadSpec, text: &str) -> Result<Vec<String>, WorkloadError> {
        if spec.kind != WorkloadKind::ShareGptText {
            return Ok(Vec::new());
        }
        let file = spec.path.display().to_string();
        let (pairs, _) = super::sharegpt::pairs(&file, text)?;
        Ok(pairs.into_iter().map(|p| p.reply).collect())
    }

    /// `Ok` where `api` can send every line as written. A `messages` line needs an API that
    /// carries a chat (chat completions, Messages, Responses): on completions it would have to
    /// be flattened into one text by a template of the tool's, which is not what the user's
    /// traffic sent, so it is refused (naming the first such line) rather than rendered.
    pub fn check_api(&self, api: Api) -> Result<(), WorkloadError> {
        if api != Api::Completions {
            return Ok(());
        }
        match self
            .prompts
            .iter()
            .find(|p| matches!(p.body, PromptBody::Messages(_)))
        {
            Some(p) => Err(WorkloadError::MessagesNeedChat {
                file: self.source.path.display().to_string(),
                line: p.line,
            }),
            None => Ok(()),
        }
    }

    /// What `run.json` records of the file, given the sha256 of its bytes.
    pub fn record(&self, sha256: String) -> PromptsSource {
        let name = self.source.path.file_name().map_or_else(
            || self.source.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        PromptsSource {
            name,
            lines: self.prompts.len() as u64,
            bytes: self.bytes,
            sha256,
        }
    }
}

impl PromptsSource {
    /// `Ok` where `now` (the file as it is read now) is the file the run recorded; a resumed
    /// run, or one whose file changed after it was checked, must send the same prompts.
    pub fn check_same(&self, now: &PromptsSource) -> Result<(), WorkloadError> {
        if self.sha256 == now.sha256 && self.bytes == now.bytes {
            return Ok(());
        }
        Err(WorkloadError::PromptsChanged {
            file: now.name.clone(),
            recorded: self.sha256.clone(),
            now: now.sha256.clone(),
        })
    }
}

/// One non-blank line, or what is wrong with it.
fn parse_line(raw: &str, line: usize) -> Result<UserPrompt, Fault> {
    let v: Value = serde_json::from_str(raw).map_err(|e| {
        // serde_json says "at line 1 column N" of the line alone: the column is the news.
        let msg = e.to_string();
        let detail = msg
            .rsplit_once(" at line ")
            .map_or(msg.as_str(), |(m, _)| m);
        Fault::NotJson {
            column: e.column(),
            detail: detail.to_string(),
        }
    })?;
    let Value::Object(o) = v else {
        return Err(Fault::NotObject);
    };
    let (body, bytes) = match (o.get("prompt"), o.get("messages")) {
        (Some(_), Some(_)) => return Err(Fault::Both),
        (None, None) => return Err(Fault::Neither),
        (Some(p), None) => prompt_text(p)?,
        (None, Some(m)) => messages(m)?,
    };
    Ok(UserPrompt {
        line,
        body,
        max_tokens: max_tokens(&o)?,
        approx_tokens: (bytes as u64).div_ceil(4).max(1),
    })
}

/// `prompt`: a non-empty string; with its length in bytes.
fn prompt_text(p: &Value) -> Result<(PromptBody, usize), Fault> {
    match p {
        Value::String(s) if !s.is_empty() => Ok((PromptBody::Text(s.clone()), s.len())),
        Value::String(_) => Err(Fault::PromptEmpty),
        _ => Err(Fault::PromptNotString),
    }
}

/// `messages`: a non-empty array of objects, each with a non-empty string `role` and a
/// `content` that is a string or an array (of content parts); with the texts' bytes.
fn messages(m: &Value) -> Result<(PromptBody, usize), Fault> {
    let all = match m {
        Value::Array(a) if !a.is_empty() => a,
        Value::Array(_) => return Err(Fault::MessagesEmpty),
        _ => return Err(Fault::MessagesNotArray),
    };
    let mut bytes = 0;
    for (i, msg) in all.iter().enumerate() {
        let n = i + 1;
        let Value::Object(o) = msg else {
            return Err(Fault::MessageNotObject(n));
        };
        if o.get("role")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(Fault::NoRole(n));
        }
        bytes += match o.get("content") {
            Some(Value::String(s)) => s.len(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .map(str::len)
                .sum(),
            _ => return Err(Fault::NoContent(n)),
        };
    }
    Ok((PromptBody::Messages(all.clone()), bytes))
}

/// `max_tokens`: absent or `null`, else a whole number from 1 to 2³² − 1.
fn max_tokens(o: &Map<String, Value>) -> Result<Option<u32>, Fault> {
    match o.get("max_tokens") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .map(Some)
            .ok_or_else(|| Fault::BadMaxTokens(v.to_string())),
    }
}

#[cfg(test)]
#[path = "../tests/prompts.rs"]
mod tests;
