//! Why a workload could not be used, and the two errors every format's parser raises on a
//! row: a row that is not of the format, and a timestamp before the previous row's.

/// Why a workload could not be used. Each names the file (and the line, where there is one)
/// in a single line of text.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WorkloadError {
    /// Not `kind:PATH` with a known kind.
    #[error(
        "`{0}` is not a workload: write sharegpt:FILE, sharegpt-text:FILE, mooncake:FILE, azure:FILE, sessions:FILE, weka:FILE or prompts:FILE (formats: sharegpt, sharegpt-text, mooncake, azure, sessions, weka, prompts)"
    )]
    UnknownKind(String),
    /// The file could not be read.
    #[error("{file}: cannot read the workload: {error}")]
    Read {
        /// The file.
        file: String,
        /// The system's reason.
        error: String,
    },
    /// A row that is not of the format.
    #[error("{file}:{line}: {what}")]
    BadRow {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong, in words.
        what: String,
    },
    /// A timestamp before the previous row's.
    #[error(
        "{file}:{line}: timestamp {at_s:.3} s is before the previous row's {prev_s:.3} s: a trace must be in send order; sort it by timestamp first"
    )]
    Backwards {
        /// The file.
        file: String,
        /// 1-based line of the earlier timestamp.
        line: usize,
        /// Its instant, seconds from the first row.
        at_s: f64,
        /// The previous row's, seconds from the first row.
        prev_s: f64,
    },
    /// A session trace given where requests stand alone.
    #[error(
        "{file}: a session trace replays as sessions, not as open load: drop --request-rate and --find-capacity"
    )]
    SessionsOnly {
        /// The file.
        file: String,
    },
    /// No request in the file.
    #[error("{file}: holds no request ({skipped} entries skipped): check the file and its format")]
    Empty {
        /// The file.
        file: String,
        /// Entries skipped (ShareGPT conversations without a usable pair).
        skipped: usize,
    },
    /// A request longer than the server's context.
    #[error(
        "{file}:{line}: {input} input + {output} output tokens exceed the server's context of {context} tokens: drop such rows or use a server with a longer context"
    )]
    TooLong {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// Input tokens.
        input: u64,
        /// Output tokens.
        output: u64,
        /// The server's context length.
        context: u64,
    },
    /// A line of a prompts file that is not a prompt.
    #[error(
        "--workload prompts:{file}: line {line}: {what}; each line is {{\"prompt\": \"...\"}} or {{\"messages\": [...]}}, with an optional \"max_tokens\""
    )]
    BadPrompt {
        /// The file.
        file: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        what: PromptLineFault,
    },
    /// A chat (`messages`) line where the API sends one text.
    #[error(
        "--workload prompts:{file}: line {line} is a chat (\"messages\"), which the completions API cannot send as written: add --api chat (or messages, responses), or write the line as a \"prompt\""
    )]
    MessagesNeedChat {
        /// The file.
        file: String,
        /// 1-based line of the first `messages` line.
        line: usize,
    },
    /// A prompts file that is not the one the run recorded.
    #[error(
        "--workload prompts: {file} (sha256 {now}) is not the file the run recorded (sha256 {recorded}): give that file again, or start a new run"
    )]
    PromptsChanged {
        /// The file's name.
        file: String,
        /// The recorded sha256.
        recorded: String,
        /// The sha256 of the file now.
        now: String,
    },
    /// A prompts file (or `sharegpt-text:FILE`) read as lengths (`Workload`): it is read as
    /// texts (`UserPrompts`).
    #[error("{file}: a prompts file is sent as its texts, not as lengths")]
    PromptsOnly {
        /// The file.
        file: String,
    },
    /// A file of lengths read as texts (`UserPrompts`): only `prompts:FILE` and
    /// `sharegpt-text:FILE` are texts.
    #[error(
        "{file}: only prompts:FILE and sharegpt-text:FILE are sent as texts; this format gives lengths"
    )]
    LengthsOnly {
        /// The file.
        file: String,
    },
    /// A workload without timestamps asked to be replayed as a trace.
    #[error("{0}: has no timestamps to replay: send it at a --request-rate instead")]
    NoTimestamps(String),
    /// A time scale that is not a positive number, or a replay longer than any run.
    #[error("{0}")]
    BadTimeScale(String),
}

/// A bad-row error of `file` at `line`.
pub(super) fn bad_row(file: &str, line: usize, what: impl Into<String>) -> WorkloadError {
    WorkloadError::BadRow {
        file: file.to_string(),
        line,
        what: what.into(),
    }
}

/// `at_s` − `first_s`: seconds from the first row, or the error naming `line` when that is
/// before the previous row's `prev_s`.
pub(super) fn relative_s(
    file: &str,
    line: usize,
    at_s: f64,
    first_s: f64,
    prev_s: Option<f64>,
) -> Result<f64, WorkloadError> {
    let rel = at_s - first_s;
    if let Some(prev) = prev_s
        && rel < prev
    {
        return Err(WorkloadError::Backwards {
            file: file.to_string(),
            line,
            at_s: rel,
            prev_s: prev,
        });
    }
    Ok(rel)
}

/// What is wrong with one line of a prompts file (`WorkloadError::BadPrompt`), in the words
/// its message gives after the file and line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptLineFault {
    /// Not JSON: where on the line, and serde_json's words.
    #[error("not valid JSON (column {column}: {detail})")]
    NotJson {
        /// The 1-based column on the line.
        column: usize,
        /// What serde_json said, without its position.
        detail: String,
    },
    /// JSON, but not an object.
    #[error("not a JSON object")]
    NotObject,
    /// Both keys.
    #[error("has both \"prompt\" and \"messages\": give one")]
    Both,
    /// Neither key.
    #[error("has neither \"prompt\" nor \"messages\"")]
    Neither,
    /// `prompt` is "".
    #[error("\"prompt\" is empty")]
    PromptEmpty,
    /// `prompt` is not a string.
    #[error("\"prompt\" is not a string")]
    PromptNotString,
    /// `messages` is [].
    #[error("\"messages\" is empty")]
    MessagesEmpty,
    /// `messages` is not an array.
    #[error("\"messages\" is not an array")]
    MessagesNotArray,
    /// Message n (1-based) is not an object.
    #[error("message {0} of \"messages\" is not an object")]
    MessageNotObject(usize),
    /// Message n has no non-empty `role` string.
    #[error("message {0} has no \"role\" string")]
    NoRole(usize),
    /// Message n has no `content` string or parts array.
    #[error("message {0} has no \"content\" (a string, or an array of content parts)")]
    NoContent(usize),
    /// `max_tokens` is not a whole number from 1 to 2³² − 1 (its JSON text).
    #[error("\"max_tokens\" is {0}, not a positive integer")]
    BadMaxTokens(String),
}
