//! Per-request records: the protocol instants of one request, as offsets in nanoseconds from
//! the cell's monotonic origin, plus token counts and where they came from. Figures are derived
//! from these afterwards by the pure functions in [`crate::figures`].

use serde::{Deserialize, Serialize};

/// One content chunk: when it arrived and how many tokens it carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Arrival, ns from the cell origin.
    pub t_ns: u64,
    /// Tokens in this chunk (≥ 1 for a content chunk; k for a speculative step of k tokens).
    pub tokens: u32,
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "end", rename_all = "snake_case")]
pub enum Outcome {
    /// The server finished it (`finish_reason`), and the stream ended properly.
    Finished {
        /// `length`, `stop`, …
        reason: String,
    },
    /// The client cancelled it at window end (closed the connection).
    Cancelled,
    /// It failed.
    Error {
        /// Kind of error, for counting (`http_500`, `stream_error`, `no_done`, `connect`, …).
        kind: String,
        /// The first line of the error, for the results.
        message: String,
    },
}

/// Everything measured about one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Stream index (0..N).
    pub stream: u32,
    /// When the request was written, ns from the cell origin.
    pub sent_ns: u64,
    /// When the response headers arrived (engines may hold them back until the first token).
    pub headers_ns: Option<u64>,
    /// Content chunks in arrival order.
    pub chunks: Vec<Chunk>,
    /// When the request ended (last byte, error, or cancellation).
    pub end_ns: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// `usage.prompt_tokens` reported by the server, if any.
    pub prompt_tokens_reported: Option<u64>,
    /// `usage.completion_tokens` reported by the server, if any.
    pub completion_tokens_reported: Option<u64>,
    /// Cached prompt tokens reported by the server, if any.
    pub cached_tokens_reported: Option<u64>,
    /// The loop the repetition guard found in this request's text (`crate::LoopGuard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition: Option<crate::repetition::LoopFinding>,
    /// The structured-output verdict on its answer (`--response-format`, `--tools`;
    /// `crate::structured_check::judge`), where one was checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<crate::structured::AnswerCheck>,
    /// The answer's content text as the server streamed it (`run --save-texts`; secrets
    /// redacted), where the run keeps texts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

impl RequestRecord {
    /// Arrival of the first content token.
    pub fn first_token_ns(&self) -> Option<u64> {
        self.chunks.first().map(|c| c.t_ns)
    }

    /// Time to first token, ns.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.first_token_ns()
            .map(|t| t.saturating_sub(self.sent_ns))
    }

    /// Total content tokens received.
    pub fn tokens(&self) -> u64 {
        self.chunks.iter().map(|c| u64::from(c.tokens)).sum()
    }

    /// Whether the request ended with an error.
    pub fn is_error(&self) -> bool {
        matches!(self.outcome, Outcome::Error { .. })
    }

    /// A scheduled request that was never sent: it still waited for the `--max-concurrency`
    /// cap when the drain limit cut the cell (`at_ns`). It counts against the SLO's attainment
    /// (offered load the client-and-server system did not serve) but not as a request sent.
    pub fn never_sent(stream: u32, at_ns: u64) -> Self {
        RequestRecord {
            stream,
            sent_ns: at_ns,
            headers_ns: None,
            chunks: Vec::new(),
            end_ns: at_ns,
            outcome: Outcome::Error {
                kind: NEVER_SENT.to_string(),
                message: "it still waited for the --max-concurrency cap when the drain limit cut the cell".to_string(),
            },
            prompt_tokens_reported: None,
            completion_tokens_reported: None,
            cached_tokens_reported: None,
            repetition: None,
            structured: None,
            text: None,
        }
    }

    /// Whether the request was written to the server ([`RequestRecord::never_sent`]: not).
    pub fn was_sent(&self) -> bool {
        !matches!(&self.outcome, Outcome::Error { kind, .. } if kind == NEVER_SENT)
    }
}

/// The error kind of a scheduled request that was never sent ([`RequestRecord::never_sent`]).
pub const NEVER_SENT: &str = "never_sent";
