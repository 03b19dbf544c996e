//! What crosses the scheduler thread's boundary: the commands the [`super::Engine`] handle
//! sends it, and what it sends back (each request's token events, the stats snapshot), with
//! the request as the engine sees it. The handle and the scheduler both import these; neither
//! imports the other for them.

use tokio::sync::mpsc as tmpsc;

use super::prefix_cache;

/// Why a request stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// `max_tokens` reached.
    Length,
    /// A natural EOS (only with `eos_rate` > 0 and `ignore_eos` off).
    Stop,
    /// Aborted (`POST /abort_request`): the stream's last event carries no token.
    Abort,
}

impl Finish {
    /// The OpenAI `finish_reason` string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
            Finish::Abort => "abort",
        }
    }
}

/// What the scheduler tells a request's HTTP handler.
#[derive(Debug)]
pub(crate) struct TokenEvent {
    /// The text of the tokens of this step (one chunk, even with speculative decoding).
    pub text: String,
    /// How many tokens this step produced.
    pub n: u32,
    /// Output tokens so far, including these.
    pub completion_tokens: u32,
    /// Set on the request's last event.
    pub finish: Option<Finish>,
    /// Prompt tokens the prefix cache served this request at its admission (whole blocks
    /// cached then; 0 with the cache off): what its usage reports as cached.
    pub cached_tokens: u64,
}

/// A request as the engine sees it.
#[derive(Debug, Clone)]
pub(crate) struct NewRequest {
    /// Prompt length in tokens.
    pub prompt_len: u64,
    /// Hash of the prompt's token ids (the output text's seed).
    pub prompt_hash: u64,
    /// The prompt's prefix-cache blocks (`prefix_cache::prompt_blocks`).
    pub blocks: Vec<prefix_cache::Block>,
    /// The ids of the prompt's last, partial block (`prefix_cache::prompt_tail`): with
    /// `blocks`, what caching prompt ++ answer at the end needs, without the whole prompt.
    pub prompt_tail: Vec<u32>,
    /// Output tokens to generate at most.
    pub max_tokens: u32,
    /// No natural EOS before this many tokens.
    pub min_tokens: u32,
    /// Never stop before `max_tokens`.
    pub ignore_eos: bool,
    /// A fixed answer (`answer_accuracy`): these words are the output, then a natural stop
    /// (the length limit still cuts it).
    pub script: Option<Vec<String>>,
    /// The client's request id (SGLang's `rid`), by which `POST /abort_request` names it.
    pub rid: Option<String>,
    /// The LoRA adapter serving it (an index in `lora_adapters`; `None`: the base model).
    pub adapter: Option<u16>,
    /// Under a grammar (`crate::structured`): its decode steps take `grammar_step_factor`
    /// times as long.
    pub grammar: bool,
    /// Its mean tokens per decode step where a `spec_accept_by_text` rule matched its prompt
    /// (`None`: the engine's `spec_accept_length`).
    pub spec_accept: Option<f64>,
}

/// A snapshot of the engine's state, published after every scheduler iteration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stats {
    /// Requests admitted (prefilling or decoding).
    pub running: usize,
    /// Requests waiting for KV capacity.
    pub queued: usize,
    /// KV tokens the engine schedules with.
    pub capacity: u64,
    /// Prompt + max_tokens of admitted requests (the admission rule's left side).
    pub reserved: u64,
    /// KV tokens actually written by admitted requests (prompt + generated so far).
    pub used: u64,
    /// Tokens held by the prefix cache.
    pub cached: u64,
    /// Prompt tokens prefilled or served from cache, cumulative.
    pub prompt_tokens_total: u64,
    /// Output tokens emitted, cumulative.
    pub generation_tokens_total: u64,
    /// Prompt tokens looked up in the prefix cache, cumulative.
    pub cache_query_tokens: u64,
    /// Prompt tokens found in the prefix cache, cumulative.
    pub cache_hit_tokens: u64,
    /// Requests that ran to their end, cumulative.
    pub finished_requests: u64,
    /// Requests aborted (client gone), cumulative.
    pub aborted_requests: u64,
    /// Output tokens per second of the last decode step.
    pub last_gen_throughput: f64,
    /// Speculative decoding, cumulative (vLLM's counters; `spec_tokens` > 1 only): decode
    /// steps of a request, each a draft of `spec_tokens - 1` tokens.
    pub spec_drafts: u64,
    /// Draft tokens proposed, cumulative.
    pub spec_draft_tokens: u64,
    /// Draft tokens accepted, cumulative: the tokens each step emitted less the one the
    /// target model samples.
    pub spec_accepted_tokens: u64,
    /// Accepted draft tokens by position in the draft (index 0: its first token).
    pub spec_accepted_per_pos: Vec<u64>,
    /// SGLang's `spec_accept_length` gauge: tokens emitted per request-step over the last
    /// log interval (`spec::LOG_INTERVAL` decode batches).
    pub spec_accept_length: f64,
    /// SGLang's `spec_accept_rate` gauge: those tokens over the steps × `spec_tokens` (SGLang
    /// divides by `speculative_num_draft_tokens`, the step's whole width).
    pub spec_accept_rate: f64,
}

pub(super) enum Cmd {
    Submit {
        id: u64,
        req: NewRequest,
        events: tmpsc::UnboundedSender<TokenEvent>,
    },
    /// The client went away (its stream was dropped): freed at once, or kept running for
    /// `drop_keeps_running_ms`.
    Dropped(u64),
    /// `POST /abort_request`: abort the requests with these `rid`s (every request with
    /// `all`); `done` gets how many were aborted once the state is published.
    AbortRids {
        rids: Vec<String>,
        all: bool,
        done: tokio::sync::oneshot::Sender<usize>,
    },
    FlushCache,
    Stop,
}
