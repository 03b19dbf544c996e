//! What the engine adapters say about themselves and what they read: each engine's request
//! dialect, metrics format and tokenizer shape, and the gauges read from its metrics. Apart from
//! the dispatcher (`mod.rs`) so that the adapters import these types and nothing of the
//! dispatcher that imports them.

/// Queue gauges and token counters read from the engine's metrics. `None`: the engine does not
/// report it (or the read failed for that metric).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Gauges {
    /// Requests running (in the batch).
    pub running: Option<f64>,
    /// Requests waiting in the engine's queue.
    pub waiting: Option<f64>,
    /// Cumulative generated tokens.
    pub generation_tokens_total: Option<f64>,
    /// Cumulative prompt tokens.
    pub prompt_tokens_total: Option<f64>,
    /// Cumulative prompt tokens served from the prefix cache.
    pub cached_prompt_tokens_total: Option<f64>,
    /// Cumulative prompt tokens looked up in the prefix cache (vLLM `prefix_cache_queries`):
    /// with `cached_prompt_tokens_total`, the cache's hit rate over an interval.
    pub prefix_cache_queries_total: Option<f64>,
    /// Cumulative preemptions: requests the scheduler evicted to free KV cache (vLLM
    /// `num_preemptions`, SGLang `num_retracted_requests`).
    pub preemptions_total: Option<f64>,
    /// KV cache in use, as a fraction of its capacity (SGLang `token_usage`, vLLM
    /// `kv_cache_usage_perc`; the mean over ranks).
    pub kv_usage: Option<f64>,
    /// Speculative decoding: fraction of draft tokens accepted, as the engine reports it
    /// (SGLang `spec_accept_rate`).
    pub spec_accept_rate: Option<f64>,
    /// Speculative decoding: mean tokens per step (SGLang `spec_accept_length`).
    pub spec_accept_length: Option<f64>,
    /// Speculative decoding counters (vLLM): drafts, draft tokens, accepted tokens. A live view
    /// derives rate and length from their deltas.
    pub spec_counters: Option<SpecCounters>,
    /// Cumulative seconds the server spent on prefill (llama.cpp `prompt_seconds_total`, vLLM
    /// `request_prefill_time_seconds_sum`): with `prompt_tokens_total`, the server's own
    /// prefill rate over an interval.
    pub prompt_seconds_total: Option<f64>,
}

/// The most draft positions read from `spec_decode_num_accepted_tokens_per_pos`: a fixed
/// array keeps the gauges `Copy`; vLLM's speculative methods draft far fewer (EAGLE, MTP and
/// n-gram use 1 to 8), and a page with a position past it gives no per-position figures.
pub const MAX_SPEC_POSITIONS: usize = 32;

/// vLLM's cumulative speculative-decoding counters.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpecCounters {
    /// `spec_decode_num_drafts_total`.
    pub drafts: f64,
    /// `spec_decode_num_draft_tokens_total`.
    pub draft_tokens: f64,
    /// `spec_decode_num_accepted_tokens_total`.
    pub accepted_tokens: f64,
    /// `spec_decode_num_accepted_tokens_per_pos_total{position="k"}`, positions 0 to
    /// `positions − 1` (0 positions: the page has no such family).
    pub accepted_per_pos: SpecPositions,
}

/// The accepted tokens per draft position, cumulative (`SpecCounters::accepted_per_pos`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecPositions {
    /// How many positions the page had.
    pub positions: usize,
    /// Their counters, summed over engines; the first `positions` are meaningful.
    pub accepted: [f64; MAX_SPEC_POSITIONS],
}

impl Default for SpecPositions {
    fn default() -> Self {
        SpecPositions {
            positions: 0,
            accepted: [0.0; MAX_SPEC_POSITIONS],
        }
    }
}

impl SpecPositions {
    /// The counters by position, empty without them.
    pub fn as_slice(&self) -> &[f64] {
        &self.accepted[..self.positions.min(MAX_SPEC_POSITIONS)]
    }

    /// From `(position, value)` samples (any order; one position may repeat across engines,
    /// summed). Empty where a position is past [`MAX_SPEC_POSITIONS`] or one between is
    /// missing: a partial list would shift the rates to the wrong positions.
    pub fn from_samples(samples: impl IntoIterator<Item = (usize, f64)>) -> SpecPositions {
        let mut p = SpecPositions::default();
        let mut seen = [false; MAX_SPEC_POSITIONS];
        for (k, v) in samples {
            if k >= MAX_SPEC_POSITIONS || !v.is_finite() {
                return SpecPositions::default();
            }
            p.accepted[k] += v;
            seen[k] = true;
            p.positions = p.positions.max(k + 1);
        }
        if seen[..p.positions].iter().all(|s| *s) {
            p
        } else {
            SpecPositions::default()
        }
    }
}

impl SpecCounters {
    /// Acceptance rate and mean tokens per step between two readings (`None` when no draft
    /// was made in between): rate = accepted / draft tokens, length = 1 + accepted / drafts
    /// (each step emits the accepted tokens plus the one the target model samples).
    pub fn since(&self, before: &SpecCounters) -> Option<(f64, f64)> {
        let drafts = self.drafts - before.drafts;
        let draft_tokens = self.draft_tokens - before.draft_tokens;
        let accepted = self.accepted_tokens - before.accepted_tokens;
        (drafts > 0.0 && draft_tokens > 0.0 && accepted >= 0.0)
            .then(|| (accepted / draft_tokens, 1.0 + accepted / drafts))
    }
}

/// How an engine wants completion requests and how it exposes metrics and tokenization.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dialect {
    /// Send `ignore_eos: true`.
    pub ignore_eos: bool,
    /// Send `min_tokens = max_tokens` (only where `ignore_eos` is not honoured).
    pub min_tokens: bool,
    /// Send `stream_options.include_usage`.
    pub include_usage: bool,
    /// Send `stream_options.continuous_usage_stats`.
    pub continuous_usage: bool,
    /// Where `/metrics` is and in which format.
    pub metrics: MetricsKind,
    /// The tokenizer endpoints' shape.
    pub tokenizer: TokenizerKind,
    /// Requests carry an id (`rid`) the client can abort by (SGLang's `/abort_request`): a
    /// dropped stream keeps generating there until it is aborted.
    pub abort_by_rid: bool,
}

/// The metrics format of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MetricsKind {
    /// Prometheus text at `/metrics`.
    Prometheus,
    /// TensorRT-LLM's JSON iteration stats at `/metrics` (drained by each read).
    TrtLlmJson,
    /// No metrics.
    None,
}

/// The tokenizer endpoints of an engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TokenizerKind {
    /// vLLM/SGLang: `POST /tokenize {"model","prompt","add_special_tokens"}` → `{"tokens"}`;
    /// `POST /detokenize {"model","tokens"}` → `{"prompt"}` (vLLM) or `{"text"}` (SGLang).
    OpenAiStyle,
    /// llama.cpp: `POST /tokenize {"content","add_special"}` → `{"tokens"}`;
    /// `POST /detokenize {"tokens"}` → `{"content"}`.
    LlamaCpp,
    /// TGI: `POST /tokenize {"inputs","add_special_tokens"}` → `[{"id",…}]`; no detokenize.
    Tgi,
    /// No tokenizer endpoint.
    None,
}
