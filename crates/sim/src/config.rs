//! The simulator's configuration: every knob of the engine, its dialect and its faults.
//!
//! A `SimConfig` is plain data (serde, TOML-loadable). Profiles (`profiles.rs`) build complete
//! configs; files and `--set key=value` overrides are merged onto one as TOML tables, then the
//! result is checked once by [`SimConfig::validate`] so that the engine never sees a nonsense
//! value (an empty step table, a rate above 1, ...).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::SimError;

/// Which real engine's HTTP dialect the simulator speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Flavor {
    /// SGLang: `/get_server_info`, `sglang:*` metrics, flat error objects.
    #[default]
    Sglang,
    /// vLLM: `/version`, `vllm:*` metrics, nested `{"error": {...}}` objects.
    Vllm,
}

impl Flavor {
    /// The flavour's lowercase name (`sglang` or `vllm`).
    pub fn as_str(self) -> &'static str {
        match self {
            Flavor::Sglang => "sglang",
            Flavor::Vllm => "vllm",
        }
    }
}

impl std::str::FromStr for Flavor {
    type Err = SimError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "sglang" => Ok(Flavor::Sglang),
            "vllm" => Ok(Flavor::Vllm),
            other => Err(SimError::Invalid(format!(
                "unknown flavor `{other}`: use `sglang` or `vllm`"
            ))),
        }
    }
}

/// How `/v1/messages` splits a prompt's tokens in `usage` (`messages_usage`): the two readings
/// of Anthropic's fields that servers follow, so a client can be tested against both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MessagesUsage {
    /// Anthropic's reading, which vLLM follows in `message_delta` and the non-streamed body:
    /// `input_tokens` counts only the prompt tokens neither read from nor written to the prefix
    /// cache, beside `cache_creation_input_tokens` and `cache_read_input_tokens`; the three sum
    /// to the prompt. `message_start` still reports the whole prompt as `input_tokens`.
    #[default]
    Anthropic,
    /// The other reading: `input_tokens` is the whole prompt on every event, and
    /// `cache_read_input_tokens` (a part of it) what the prefix cache served.
    Inclusive,
}

impl MessagesUsage {
    /// The knob's value as written in TOML (`anthropic` or `inclusive`).
    pub fn as_str(self) -> &'static str {
        match self {
            MessagesUsage::Anthropic => "anthropic",
            MessagesUsage::Inclusive => "inclusive",
        }
    }
}

/// Fault injection knobs. Every rate is a probability per request in `[0, 1]`; decisions are
/// drawn from the seeded PRNG so a given seed and request order always fail the same way.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FaultConfig {
    /// Answer HTTP 500 with the engine's error body instead of running the request.
    pub http_error_rate: f64,
    /// Stream some tokens, then an error object inside the stream (`data: {"error": ...}`).
    pub stream_error_rate: f64,
    /// Stream some tokens, then drop the connection without `data: [DONE]`.
    pub disconnect_rate: f64,
    /// Replace one chunk of the stream by truncated, invalid JSON.
    pub malformed_chunk_rate: f64,
    /// A `disconnect_rate` drop happens in the middle of an event (half of its bytes sent,
    /// then the connection closes), not between two events.
    #[serde(default)]
    pub disconnect_mid_event: bool,
    /// Stream some tokens, then go silent with the connection held open (a hung engine).
    pub stall_rate: f64,
    /// Error bodies quote the request's API key, as some proxies do: a client must redact it.
    pub echo_api_key: bool,
    /// Hold back the response headers by `slow_first_byte_ms` for this fraction of requests.
    pub slow_first_byte_rate: f64,
    /// The extra delay of a slow first byte, in milliseconds.
    pub slow_first_byte_ms: u64,
    /// Reject new requests while this many already wait in the queue (`None`: unbounded).
    pub max_queue_len: Option<usize>,
    /// The HTTP status of a queue-full rejection (429 or 503 are the usual ones).
    pub queue_full_status: u16,
    /// Refuse every generation request after this many (a hosted quota running out): each
    /// gets `queue_full_status` with the engine's error body.
    pub refuse_after_requests: Option<u64>,
    /// Rejections for load (queue full, refused after the quota) carry `Retry-After: N`
    /// seconds.
    pub retry_after_s: Option<u64>,
    /// Added to every reported `usage.prompt_tokens`: a server whose usage disagrees with its
    /// own `/tokenize` (a chat template or special tokens the tokenize endpoint leaves out).
    pub usage_prompt_tokens_offset: i64,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            http_error_rate: 0.0,
            stream_error_rate: 0.0,
            disconnect_rate: 0.0,
            malformed_chunk_rate: 0.0,
            disconnect_mid_event: false,
            stall_rate: 0.0,
            echo_api_key: false,
            slow_first_byte_rate: 0.0,
            slow_first_byte_ms: 0,
            max_queue_len: None,
            queue_full_status: 503,
            refuse_after_requests: None,
            retry_after_s: None,
            usage_prompt_tokens_offset: 0,
        }
    }
}

/// Everything the simulated engine needs: dialect, sizes, the performance model and faults.
///
/// One rule of [`SimConfig::spec_accept_by_text`]: requests whose prompt holds `contains`
/// emit `length` tokens per decode step on average.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpecAcceptRule {
    /// Text the prompt must hold (case-sensitive, non-empty).
    pub contains: String,
    /// Mean tokens per decode step, in `[1, spec_tokens]`.
    pub length: f64,
}

/// Defaults (used for keys a TOML file leaves out) are those of the `tiny` profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// The HTTP dialect (`sglang` or `vllm`).
    pub flavor: Flavor,
    /// The served model name (`/v1/models`, `model` fields, metric labels).
    pub model: String,
    /// The engine version string (`/get_server_info` `version`, `/version`).
    pub version: String,
    /// Maximum prompt + output tokens of one request (`max_model_len` / `context_length`).
    pub context_length: u64,
    /// KV cache size in tokens (SGLang `max_total_num_tokens`; vLLM blocks × `block_size`).
    pub kv_capacity_tokens: u64,
    /// vLLM KV block size; the capacity the engine uses is rounded down to whole blocks.
    pub block_size: u32,
    /// Prefill throughput in prompt tokens per second.
    pub prefill_tok_per_s: f64,
    /// Fixed cost of one prefill pass in milliseconds (kernel launches, scheduling).
    pub prefill_overhead_ms: f64,
    /// Most prompt tokens prefilled in one pass (chunked prefill); longer prompts take several.
    pub chunked_prefill_tokens: u64,
    /// Decode step time table: `(batch_size, step_ms)` points, linearly interpolated and
    /// extrapolated from the last two points.
    pub decode_step_ms: Vec<(u32, f64)>,
    /// Extra step time per KV token held by the batch, in microseconds (attention cost).
    pub per_kv_token_us: f64,
    /// Tokens produced per decode step and delivered in one chunk (speculative decoding).
    pub spec_tokens: u32,
    /// Speculative decoding: the mean tokens one decode step emits per request, in
    /// `[1, spec_tokens]` (`None`: every draft is accepted, `spec_tokens` per step). Steps
    /// emit whole tokens around this mean without randomness (2.5 gives 2, 3, 2, 3, ...), and
    /// the engines' acceptance figures (`/metrics`) report what the steps really emitted.
    #[serde(default)]
    pub spec_accept_length: Option<f64>,
    /// Speculative decoding that depends on the content: the first rule whose `contains` text
    /// appears in a request's prompt (any string of its JSON body: the `prompt`, a message's
    /// `content` or its parts' `text`) gives that request's mean tokens per step instead of
    /// `spec_accept_length`; a request no rule matches keeps `spec_accept_length`. As a drafter
    /// accepts more of code or of a repeated passage than of free prose, a per-category (or
    /// per-text) answer a test can know: `[[spec_accept_by_text]]`, `contains = "…"`,
    /// `length = 2.0`.
    #[serde(default)]
    pub spec_accept_by_text: Vec<SpecAcceptRule>,
    /// Prefix cache size in tokens (0 disables it). Cached prompts also yield to running
    /// requests: they are evicted, least recently used first, when KV is needed.
    pub prefix_cache_tokens: u64,
    /// Prefill one admitted request per pass (vLLM-like), instead of packing every admitted
    /// prompt into the pass up to `chunked_prefill_tokens`. Requests count as running from
    /// admission either way, so with this on the running gauge reads N long before N streams
    /// have a token: the ramp a client's readiness rule must wait out.
    pub serial_prefill: bool,
    /// Most requests running at once (`None`: only KV capacity limits admission).
    pub max_running_requests: Option<u32>,
    /// Serve `/metrics` (SGLang's `--enable-metrics`). Off: 404, as an engine started without
    /// metrics answers, so clients must work without queue gauges or counters.
    pub metrics_enabled: bool,
    /// Imitate a hosted API in front of the engine (OpenRouter-, Together-like): only
    /// `/v1/chat/completions`, `/v1/models` and `/health` are served (no completions, no
    /// tokenize, no engine info, no metrics), and usage comes only at the end of a stream
    /// (`continuous_usage_stats` is ignored). A client must target prompt lengths from the
    /// server's `usage.prompt_tokens` alone.
    #[serde(default)]
    pub hosted: bool,
    /// Answer fixture questions (a `⟦sim:ID:ANSWER⟧` marker in the prompt, as this project's
    /// fixture datasets write it): correctly with this probability, decided from the item id
    /// alone, so two simulators at 0.80 and 0.74 disagree on a known set of items. `None`:
    /// outputs are filler words, as always.
    #[serde(default)]
    pub answer_accuracy: Option<f64>,
    /// Filler words before the answer line of a fixture answer.
    #[serde(default = "default_answer_words")]
    pub answer_words: u32,
    /// Whether string prompts get a BOS token (counted in `prompt_tokens`).
    pub add_bos: bool,
    /// Per-token probability of a natural EOS after `min_tokens` when `ignore_eos` is off.
    pub eos_rate: f64,
    /// Chat only: the first this-many tokens of every answer stream as `reasoning_content`
    /// (a reasoning model's thinking) rather than `content`; they count as output.
    #[serde(default)]
    pub reasoning_tokens: u32,
    /// `/v1/messages`: how `usage` splits the prompt between uncached, cache-written and
    /// cache-read tokens (see [`MessagesUsage`]).
    #[serde(default)]
    pub messages_usage: MessagesUsage,
    /// `/v1/messages`: also accept the API key as Anthropic's `x-api-key` header. vLLM reads
    /// only `Authorization: Bearer` (an `x-api-key` alone gets 401), hence off by default.
    #[serde(default)]
    pub messages_x_api_key: bool,
    /// `/v1/messages`: send Anthropic's `ping` event after `message_start`. vLLM sends none,
    /// hence off by default; on, a client can be shown to ignore it.
    #[serde(default)]
    pub messages_ping: bool,
    /// Loop mode: every answer is this sentence repeated, token by token, until `max_tokens`
    /// (EOS, `eos_rate` and fixture scripts are ignored; finish `length`): a model stuck in a
    /// loop. ASCII only, and two copies in a row must tokenize as two single copies (end it
    /// with punctuation, e.g. `"The cache is warm and the batch is full, so we wait here."`).
    #[serde(default)]
    pub answer_loop: Option<String>,
    /// Loop mode in the thinking: a streamed chat answer carries the whole loop as
    /// `delta.reasoning_content` (content null or absent), as a reasoning model stuck while
    /// thinking does. Completions and non-streamed answers carry it as text/content.
    #[serde(default)]
    pub answer_loop_reasoning: bool,
    /// Foreign load: this many requests of "another client" are added to the running gauge
    /// (`sglang:num_running_reqs`, `vllm:num_requests_running`) at all times. Only the gauge:
    /// nothing is generated for them and they take no KV.
    #[serde(default)]
    pub foreign_running: u32,
    /// Foreign load: this many requests added to the waiting gauge (`sglang:num_queue_reqs`,
    /// `vllm:num_requests_waiting`) at all times (the gauge only; `faults.max_queue_len` does
    /// not count them).
    #[serde(default)]
    pub foreign_waiting: u32,
    /// A stream the client dropped keeps its slot and KV and keeps generating (counted as
    /// running) for this many milliseconds after the drop, unless it finishes first or is
    /// aborted (`POST /abort_request`), as SGLang does until it notices the disconnect. 0 (the
    /// default): the request is freed at once.
    #[serde(default)]
    pub drop_keeps_running_ms: u64,
    /// LoRA adapters served beside the base model (`crate::lora`): listed in `/v1/models`
    /// with the base model as `parent`, and named by a request's `model` (vLLM: the adapter's
    /// name; SGLang: `base:adapter`).
    #[serde(default)]
    pub lora_adapters: Vec<String>,
    /// Extra decode-step time per distinct adapter in the step's batch, in milliseconds
    /// (requests on the base model add nothing; `crate::lora::switch_ms`).
    #[serde(default)]
    pub lora_switch_ms: f64,
    /// A decode step whose batch holds a request under a grammar (a JSON schema, or a forced
    /// tool call) takes this many times as long (`crate::structured`; 1: no cost).
    #[serde(default = "one")]
    pub grammar_step_factor: f64,
    /// Every k-th answer under a grammar breaks its schema (0: none; `crate::structured`).
    #[serde(default)]
    pub grammar_break_every: u32,
    /// Tokens of an answer under a grammar when the request forces no length
    /// (`crate::structured`).
    #[serde(default = "default_grammar_answer_tokens")]
    pub grammar_answer_tokens: u32,
    /// Pixels per image token along each side: a W × H image in a chat, Messages or Responses
    /// request costs `ceil(W / p) · ceil(H / p) + 2` prompt tokens (`crate::images`).
    #[serde(default = "default_image_patch")]
    pub image_patch: u32,
    /// Required `Authorization: Bearer` key (`None`: open server).
    pub api_key: Option<String>,
    /// Seed of every random decision (output text, ids, faults).
    pub seed: u64,
    /// The profile's size scale relative to the real engine it imitates (informational).
    pub scale: u32,
    /// Fault injection.
    pub faults: FaultConfig,
    /// Record when each content chunk of a stream is handed to the HTTP server (for measuring a
    /// client's timestamp error against the simulator; read with
    /// [`SimHandle::take_chunk_stamps`](crate::SimHandle::take_chunk_stamps)). Off by default:
    /// it takes a lock per chunk. Nothing on the wire changes.
    pub stamp_chunks: bool,
    /// SGLang `server_args`-like metadata reported by `/get_server_info` (vLLM: engine args
    /// shown as `cache_config_info` labels where they apply). TOML has no null: leave a key
    /// out to report it as `null`.
    pub server_args: BTreeMap<String, serde_json::Value>,
}

fn default_answer_words() -> u32 {
    24
}

/// The default `image_patch`: pixels per image token along each side (Qwen2-VL's 14-pixel
/// patches merged 2 × 2).
pub(crate) const DEFAULT_IMAGE_PATCH: u32 = 28;

fn default_image_patch() -> u32 {
    DEFAULT_IMAGE_PATCH
}

/// `grammar_step_factor`'s default: no grammar cost.
fn one() -> f64 {
    1.0
}

/// `grammar_answer_tokens`'s default.
fn default_grammar_answer_tokens() -> u32 {
    32
}

impl SimConfig {
    /// The KV capacity the engine really schedules with: vLLM rounds down to whole blocks.
    pub fn effective_kv_capacity(&self) -> u64 {
        match self.flavor {
            Flavor::Sglang => self.kv_capacity_tokens,
            Flavor::Vllm => {
                let bs = u64::from(self.block_size.max(1));
                self.kv_capacity_tokens / bs * bs
            }
        }
    }

    /// Decode step time in milliseconds for `batch` requests holding `kv_tokens` KV tokens.
    pub fn step_ms(&self, batch: usize, kv_tokens: u64) -> f64 {
        interpolate(&self.decode_step_ms, batch as f64)
            + self.per_kv_token_us * kv_tokens as f64 / 1000.0
    }

    /// Checks every knob; the message says which one is wrong and what is allowed.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        if self.model.trim().is_empty() {
            return bad("model: must not be empty".into());
        }
        if self.context_length < 2 {
            return bad("context_length: must be at least 2 tokens".into());
        }
        if self.effective_kv_capacity() == 0 {
            return bad("kv_capacity_tokens: must hold at least one block of tokens".into());
        }
        if !(self.prefill_tok_per_s.is_finite() && self.prefill_tok_per_s > 0.0) {
            return bad("prefill_tok_per_s: must be a positive number".into());
        }
        if !(self.prefill_overhead_ms.is_finite() && self.prefill_overhead_ms >= 0.0) {
            return bad("prefill_overhead_ms: must be zero or positive".into());
        }
        if self.chunked_prefill_tokens == 0 {
            return bad("chunked_prefill_tokens: must be at least 1".into());
        }
        if self.decode_step_ms.is_empty() {
            return bad("decode_step_ms: give at least one [batch_size, step_ms] point".into());
        }
        self.validate_step_table()?;
        if !(self.per_kv_token_us.is_finite() && self.per_kv_token_us >= 0.0) {
            return bad("per_kv_token_us: must be zero or positive".into());
        }
        if self.spec_tokens == 0 {
            return bad("spec_tokens: must be at least 1 (1 = no speculative decoding)".into());
        }
        if let Some(l) = self.spec_accept_length
            && !(l.is_finite() && l >= 1.0 && l <= f64::from(self.spec_tokens))
        {
            return bad(format!(
                "spec_accept_length: must be between 1 and spec_tokens ({}), got {l}",
                self.spec_tokens
            ));
        }
        for (i, r) in self.spec_accept_by_text.iter().enumerate() {
            if r.contains.is_empty() {
                return bad(format!(
                    "spec_accept_by_text[{i}].contains: must not be empty"
                ));
            }
            if !(r.length.is_finite() && r.length >= 1.0 && r.length <= f64::from(self.spec_tokens))
            {
                return bad(format!(
                    "spec_accept_by_text[{i}].length: must be between 1 and spec_tokens ({}), got {}",
                    self.spec_tokens, r.length
                ));
            }
        }
        if let Some(s) = &self.answer_loop {
            crate::tokenizer::loop_tokens(s)?;
        }
        if self.block_size == 0 {
            return bad("block_size: must be at least 1".into());
        }
        if self.max_running_requests == Some(0) {
            return bad("max_running_requests: must be at least 1 when set".into());
        }
        self.validate_lora()?;
        if self.image_patch == 0 {
            return bad("image_patch: must be at least 1 pixel".into());
        }
        self.validate_faults()
    }

    /// `decode_step_ms`: batch sizes from 1, strictly ascending, each step time positive.
    fn validate_step_table(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        let mut prev = 0u32;
        for &(b, ms) in &self.decode_step_ms {
            if b <= prev {
                return bad(
                    "decode_step_ms: batch sizes must be >= 1 and strictly ascending".into(),
                );
            }
            if !(ms.is_finite() && ms > 0.0) {
                return bad(format!(
                    "decode_step_ms: step time at batch {b} must be positive"
                ));
            }
            prev = b;
        }
        Ok(())
    }

    /// The LoRA knobs (`crate::lora`): adapter names non-empty, unique, not the base model's,
    /// without spaces or `:` (which SGLang's `base:adapter` syntax splits at); the switch cost
    /// zero or positive.
    fn validate_lora(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        for (i, name) in self.lora_adapters.iter().enumerate() {
            if name.is_empty() || name.contains(':') || name.contains(char::is_whitespace) {
                return bad(format!(
                    "lora_adapters: `{name}` is not an adapter name (non-empty, no spaces, no `:`)"
                ));
            }
            if *name == self.model || self.lora_adapters[..i].contains(name) {
                return bad(format!(
                    "lora_adapters: `{name}` is listed twice (or is the base model's name)"
                ));
            }
        }
        if !(self.lora_switch_ms.is_finite() && self.lora_switch_ms >= 0.0) {
            return bad("lora_switch_ms: must be zero or positive".into());
        }
        if !(self.grammar_step_factor.is_finite() && self.grammar_step_factor >= 1.0) {
            return bad("grammar_step_factor: must be 1 or more".into());
        }
        Ok(())
    }

    /// Every rate a probability, the queue-full status an HTTP error.
    fn validate_faults(&self) -> Result<(), SimError> {
        let bad = |m: String| Err(SimError::Invalid(m));
        let f = &self.faults;
        for (name, v) in [
            ("eos_rate", self.eos_rate),
            ("faults.http_error_rate", f.http_error_rate),
            ("faults.stream_error_rate", f.stream_error_rate),
            ("faults.disconnect_rate", f.disconnect_rate),
            ("faults.malformed_chunk_rate", f.malformed_chunk_rate),
            ("faults.stall_rate", f.stall_rate),
            ("faults.slow_first_byte_rate", f.slow_first_byte_rate),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return bad(format!("{name}: must be a probability in [0, 1], got {v}"));
            }
        }
        if !(400..=599).contains(&f.queue_full_status) {
            return bad("faults.queue_full_status: must be an HTTP error status (400-599)".into());
        }
        Ok(())
    }

    /// Applies one `key=value` override (`faults.http_error_rate=0.1`, `model="x"`). The value
    /// is read as TOML, falling back to a plain string, so `--set model=foo` works unquoted.
    pub fn apply_override(&mut self, assignment: &str) -> Result<(), SimError> {
        let (key, raw) = assignment.split_once('=').ok_or_else(|| {
            SimError::Invalid(format!("override `{assignment}`: expected key=value"))
        })?;
        let key = key.trim();
        let value = parse_toml_value(raw.trim());
        let mut table = toml::Table::try_from(&*self)
            .map_err(|e| SimError::Invalid(format!("cannot serialize config: {e}")))?;
        let mut slot: &mut toml::Table = &mut table;
        let parts: Vec<&str> = key.split('.').collect();
        let (last, path) = parts
            .split_last()
            .ok_or_else(|| SimError::Invalid("override: empty key".into()))?;
        for p in path {
            let entry = slot
                .entry((*p).to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            slot = entry.as_table_mut().ok_or_else(|| {
                SimError::Invalid(format!("override `{key}`: `{p}` is not a table"))
            })?;
        }
        slot.insert((*last).to_string(), value);
        *self = from_table(table)?;
        Ok(())
    }
}

/// Reads a TOML value (`12`, `0.5`, `true`, `"x"`, `[[1, 2.0]]`), else takes the text as a string.
fn parse_toml_value(raw: &str) -> toml::Value {
    let doc = format!("v = {raw}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// Deserializes a config from a TOML table and validates it.
pub(crate) fn from_table(table: toml::Table) -> Result<SimConfig, SimError> {
    let cfg: SimConfig = table
        .try_into()
        .map_err(|e: toml::de::Error| SimError::Invalid(format!("profile: {e}")))?;
    cfg.validate()?;
    Ok(cfg)
}

/// Deep-merges `over` into `base` (tables merge key by key, anything else replaces).
pub(crate) fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Piecewise-linear interpolation over ascending `(x, y)` points, extrapolating linearly
/// beyond both ends (a real engine's step time keeps growing past the measured batch sizes)
/// and never going below the smallest measured y.
pub(crate) fn interpolate(points: &[(u32, f64)], x: f64) -> f64 {
    match points {
        [] => 0.0,
        [(_, y)] => *y,
        _ => {
            let idx = points
                .windows(2)
                .position(|w| x <= f64::from(w[1].0))
                .unwrap_or(points.len() - 2);
            let (x0, y0) = (f64::from(points[idx].0), points[idx].1);
            let (x1, y1) = (f64::from(points[idx + 1].0), points[idx + 1].1);
            let y = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
            let floor = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
            y.max(floor)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_hits_points_and_extrapolates() {
        let t = [(1, 5.0), (2, 6.0), (4, 10.0)];
        assert!((interpolate(&t, 1.0) - 5.0).abs() < 1e-9);
        assert!((interpolate(&t, 3.0) - 8.0).abs() < 1e-9);
        assert!((interpolate(&t, 8.0) - 18.0).abs() < 1e-9);
        assert!((interpolate(&t, 0.0) - 5.0).abs() < 1e-9);
    }

    #[test]
    fn overrides_parse_toml_and_strings() {
        let mut c = SimConfig::default();
        c.apply_override("faults.http_error_rate=0.25")
            .expect("valid");
        c.apply_override("model=some/model").expect("valid");
        c.apply_override("decode_step_ms=[[1, 3.0], [8, 6.0]]")
            .expect("valid");
        assert_eq!(c.faults.http_error_rate, 0.25);
        assert_eq!(c.model, "some/model");
        assert_eq!(c.decode_step_ms, vec![(1, 3.0), (8, 6.0)]);
        assert!(c.apply_override("spec_tokens=0").is_err());
        assert!(c.apply_override("no_equals_sign").is_err());
    }

    /// `spec_accept_by_text` from TOML, and each bad rule refused naming it: an empty text, a
    /// length outside 1..=spec_tokens.
    #[test]
    fn text_rules_load_and_bad_ones_are_refused() {
        let table: toml::Table = toml::from_str(
            "spec_tokens = 4\n[[spec_accept_by_text]]\ncontains = \"def \"\nlength = 3.5\n",
        )
        .expect("toml");
        let c = from_table(table).expect("valid");
        c.validate().expect("valid");
        assert_eq!(
            c.spec_accept_by_text,
            [SpecAcceptRule {
                contains: "def ".into(),
                length: 3.5
            }]
        );
        for (contains, length, says) in [
            ("", 2.0, "spec_accept_by_text[0].contains"),
            ("x", 4.5, "spec_accept_by_text[0].length"),
            ("x", 0.5, "spec_accept_by_text[0].length"),
        ] {
            let bad = SimConfig {
                spec_accept_by_text: vec![SpecAcceptRule {
                    contains: contains.into(),
                    length,
                }],
                ..c.clone()
            };
            let e = bad.validate().expect_err("refused").to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn vllm_capacity_rounds_to_blocks() {
        let c = SimConfig {
            flavor: Flavor::Vllm,
            block_size: 16,
            kv_capacity_tokens: 1000,
            ..SimConfig::default()
        };
        assert_eq!(c.effective_kv_capacity(), 992);
    }
}
