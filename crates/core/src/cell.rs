//! One measurement of the matrix (a prefill of one context, or a decode cell C × N), exactly as
//! written to `cells.jsonl`. The field names of METHOD.md's results contract are part of the
//! product: add fields freely, never rename these. Figures that don't apply are `None` (null),
//! never 0.

use crate::figures::{DecodeFigures, PrefillFigures};
use crate::meta::TokenCountSource;
use crate::slot::SlotRecord;
use crate::stats::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

mod economics;
mod mixed_figures;
mod open_loop;
pub use economics::{CellEconomics, GpusSource, PriceSource};
pub use mixed_figures::MixedFigures;
pub use open_loop::{CapacityFigures, CapacityPoint, LimitRow, RateFigures, SloRow};

/// Which measurement a row is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// One fresh prompt, `max_tokens = 1`.
    Prefill,
    /// Sustained decode, N streams for a fixed window.
    Decode,
    /// Burst / E2E: a finite batch of requests, at most N in flight, timed end to end.
    Burst,
    /// Open-loop: requests arrive at a request rate R on a seeded schedule for the window.
    Rate,
    /// A context's capacity under the SLO: the largest rate and concurrency that hold it.
    Capacity,
    /// Sessions: S concurrent conversations from a history of C tokens, turn by turn.
    Session,
    /// Mixed prefill: a prompt of P tokens sent into N running decode streams (`crate::mixed`).
    MixedPrefill,
}

impl Phase {
    /// As the seed's table prints it.
    pub fn label(self) -> &'static str {
        match self {
            Phase::Prefill => "Prefill",
            Phase::Decode => "Sustained decode",
            Phase::Burst => "Burst / E2E",
            Phase::Rate => "Open-loop rate",
            Phase::Capacity => "Capacity",
            Phase::Session => "Sessions",
            Phase::MixedPrefill => "Mixed prefill",
        }
    }
}

/// Status of a measurement (METHOD.md, "Status of a cell").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    /// Ran as designed.
    Valid,
    /// The server could not run all N at once.
    RequestsQueued,
    /// N × (C + M) > KV capacity: predicted, never sent.
    OverCapacity,
    /// Skipped: budget spent, run stopped early, or interrupted.
    NotRun,
    /// Requests errored or streams broke.
    Failed,
}

impl CellStatus {
    /// Status in words, as the seed prints it.
    pub fn label(self) -> &'static str {
        match self {
            CellStatus::Valid => "Valid",
            CellStatus::RequestsQueued => "Requests queued",
            CellStatus::OverCapacity => "Over capacity",
            CellStatus::NotRun => "Not run",
            CellStatus::Failed => "Failed",
        }
    }

    /// Whether the figures of a row with this status are measurements (and so not null).
    pub fn has_figures(self) -> bool {
        matches!(self, CellStatus::Valid | CellStatus::RequestsQueued)
    }
}

/// What the server's queue looked like during a window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueueObservation {
    /// Gauge samples taken inside the window.
    pub samples: u64,
    /// Largest waiting-requests gauge seen (None: the server has no such gauge).
    pub max_waiting: Option<f64>,
    /// Smallest running-requests gauge seen inside the window.
    pub min_running: Option<f64>,
    /// Mean of the waiting-requests gauge over the window's samples.
    #[serde(default)]
    pub mean_waiting: Option<f64>,
    /// The mean time a request waited in the server's queue, ms, by Little's law (mean waiting
    /// × window / requests sent inside it); null when none was sent or there is no gauge.
    #[serde(default)]
    pub queue_wait_ms: Option<f64>,
    /// The mean wait above which the gauge shows a real queue (4 × TBT p50 + 50 ms).
    #[serde(default)]
    pub queue_wait_threshold_ms: Option<f64>,
    /// Seconds from the first send until the window opened (readiness).
    pub readiness_s: Option<f64>,
    /// Whether readiness came before the limit (false: measured anyway, marked queued).
    pub ready: bool,
    /// The rule that opened the window: `gauges_and_first_tokens`, `first_tokens`,
    /// `queue_stalled` or `timeout` (`ReadinessBy`).
    pub readiness_by: Option<String>,
    /// Seconds from the first send until the gauges alone first showed N running and none
    /// waiting. On an engine that counts a request in prefill as running this comes well before
    /// `readiness_s`: the difference is the ramp the first-token rule kept out of the window.
    #[serde(default)]
    pub gauges_ready_s: Option<f64>,
    /// Seconds from the first send until every stream had received a token.
    #[serde(default)]
    pub all_streams_token_s: Option<f64>,
    /// Tokens of the measured requests that arrived before the window opened (not counted).
    #[serde(default)]
    pub ramp_tokens: Option<u64>,
    /// Without a gauge: the TTFT above which a request counts as queued (ms), kept so the rule
    /// can be checked.
    pub ttft_queue_threshold_ms: Option<f64>,
    /// Requests whose TTFT passed that threshold.
    pub ttft_over_threshold: Option<u64>,
    /// Seconds spent waiting for the server to be idle (gauges at zero) before the first wave;
    /// `None` without gauges.
    #[serde(default)]
    pub idle_wait_s: Option<f64>,
    /// When the two generation-counter reads were sent, seconds from the cell origin, so the
    /// server's figure can be matched to the requests that ended between them.
    #[serde(default)]
    pub counter_reads_s: Option<[f64; 2]>,
    /// With `--until-stable`: why the window closed (`stable`, or `duration` for its full
    /// length; the window's length is `measured_s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<crate::stable::StopReason>,
    /// The drain barrier at the start: the gauges after the wait for an idle server
    /// (`crate::drain`; `None` without gauges, or on a timetabled shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_barrier: Option<crate::drain::BarrierCheck>,
    /// The drain barrier at the end: what was still running once the streams were closed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_barrier: Option<crate::drain::BarrierCheck>,
    /// Requests the window cancelled that the client aborted on the server by id (SGLang's
    /// `/abort_request`); `None` where the engine has no such call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_requests: Option<u64>,
}

/// Prompt lengths checked against the server's `usage.prompt_tokens`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PromptCheck {
    /// Prompt tokens the tool built (C).
    pub expected: u64,
    /// Requests whose usage reported prompt tokens.
    pub checked: u64,
    /// Requests whose reported count differed from C.
    pub mismatched: u64,
    /// Largest reported − expected difference (signed), if any mismatched.
    pub max_diff: Option<i64>,
    /// The smallest prompt length the server reported (its own count, template included).
    #[serde(default)]
    pub reported_min: Option<u64>,
    /// The largest prompt length the server reported.
    #[serde(default)]
    pub reported_max: Option<u64>,
}

/// One row of `cells.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// `prefill` or `decode`.
    pub phase: Phase,
    /// Exact prompt tokens (C).
    pub context_tokens: u64,
    /// The label shown in tables (`8K`, `1019K`).
    pub context_label: String,
    /// Requests at once (N; 1 for prefill).
    pub concurrency: u32,
    /// The status.
    pub status: CellStatus,
    /// Prefill: C / TTFT.
    pub prompt_tok_per_s: Option<f64>,
    /// Decode: output tokens / measured seconds.
    pub total_tok_per_s: Option<f64>,
    /// Decode: median per-request rate.
    pub per_request_tok_per_s: Option<f64>,
    /// Median TTFT, ms.
    pub ttft_ms_p50: Option<f64>,
    /// Median time between tokens, ms.
    pub tbt_ms_p50: Option<f64>,
    /// Time-weighted mean of active requests.
    pub avg_active_requests: Option<f64>,
    /// Requests finished inside the window (prefill: 1).
    pub completed_requests: Option<u64>,
    /// Content tokens inside the window.
    pub output_tokens: Option<u64>,
    /// The window's measured length, seconds.
    pub measured_s: Option<f64>,
    /// How tokens per chunk were counted (the weakest source any request needed).
    pub token_count_source: Option<TokenCountSource>,
    /// Why the count is weaker than the engine allows, when it is (a tokenizer call failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_count_note: Option<String>,
    /// The server's generation-token counter delta over the window, or null.
    pub server_generation_tokens: Option<f64>,
    /// Full TTFT distribution, ms.
    pub ttft_ms: Option<Summary>,
    /// Full TBT distribution, ms.
    pub tbt_ms: Option<Summary>,
    /// Full per-request rate distribution, tok/s.
    pub per_request_tok_per_s_summary: Option<Summary>,
    /// Requests sent in the measured phase.
    pub requests_sent: Option<u64>,
    /// Requests that got no token before the window closed.
    pub requests_without_token: Option<u64>,
    /// Errors counted by kind.
    #[serde(default)]
    pub errors: BTreeMap<String, u64>,
    /// The first error's text.
    pub first_error: Option<String>,
    /// Queue gauge and readiness observations.
    pub queue: Option<QueueObservation>,
    /// Prompt-length check against server usage.
    pub prompt_check: Option<PromptCheck>,
    /// Why the status is what it is, in words (e.g. which rule marked it queued).
    pub status_reason: Option<String>,
    /// Wall-clock start (RFC 3339), metadata only.
    pub started_at: Option<String>,
    /// Wall-clock end (RFC 3339), metadata only.
    pub finished_at: Option<String>,
    /// Prefill: the server's own rate over the scout (Δ prompt tokens / Δ prefill seconds of
    /// its counters), beside the client's `prompt_tok_per_s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_prompt_tok_per_s: Option<f64>,
    /// Requests that ended inside the window before `max_tokens` (EOS or a stop string; only
    /// with `--respect-eos`, or a server that ignores `ignore_eos`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_stopped_early: Option<u64>,
    /// A Burst / E2E cell's own figures (requests/s, E2E latency, TTST, max-token hits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<BurstFigures>,
    /// What this machine's GPUs and CPU did during the cell, when the server runs here and the
    /// hardware monitor was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<crate::hw::HwSummary>,
    /// Whether this machine's GPUs held their clocks through the cell, from their clock event
    /// reasons (`llmib_core::hardware_verdict`); absent without GPU samples that report them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware_verdict: Option<crate::telemetry::HardwareVerdict>,
    /// How late the client itself ran through the window (its scheduling delay), with a
    /// warning when that is large against the TBT (`llmib_core::lag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_lag: Option<crate::lag::ClientLag>,
    /// Open-loop rows: the request rate asked for, requests per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_rate: Option<f64>,
    /// Open-loop rows: (requests sent − 1) / (last send − first send); null with fewer than
    /// two sends.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub achieved_request_rate: Option<Option<f64>>,
    /// Open-loop rows: requests that ended in an error, or were cut at the drain limit.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub failed_requests: Option<Option<u64>>,
    /// Rows judged against an SLO: requests that met every limit / requests sent.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub slo_attainment: Option<Option<f64>>,
    /// Rows judged against an SLO: requests that met it per second of the cell's span.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub goodput_rps: Option<Option<f64>>,
    /// Rows judged against an SLO: their output tokens per second of the span.
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub goodput_tok_per_s: Option<Option<f64>>,
    /// Capacity rows: the largest request rate whose cell holds the SLO (null: none does).
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub capacity_request_rate: Option<Option<f64>>,
    /// Capacity rows: the largest concurrency whose decode cell holds the SLO (null: none
    /// does, or no decode cell was measured).
    #[serde(
        default,
        deserialize_with = "crate::nullable::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub capacity_concurrency: Option<Option<u32>>,
    /// An open-loop cell's own figures (schedule, pacing, queue, latencies, the SLO's limits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<Box<RateFigures>>,
    /// A capacity row's search: every measured point and how the answer was reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Box<CapacityFigures>>,
    /// Decode rows: speculative decoding over the window, where the server reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative: Option<SpecFigures>,
    /// Decode rows: content tokens per streamed chunk inside the window (the client's own
    /// figure: above 1 where a chunk carries a speculative step's tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens_per_chunk: Option<f64>,
    /// Predicted Over capacity and measured anyway (`--show-capacity-limited-values`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capacity_limited: bool,
    /// A Failed: loop row's evidence: which request looped, its cycle and where it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loop_guard: Option<crate::repetition::LoopEvidence>,
    /// A decode row judged against the run's SLO (closed loop: its finished requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo: Option<SloRow>,
    /// A shard's row (`run --shard`): its part of the cell, its slot and its clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Box<ShardCell>>,
    /// A merged row (`merge`): what each shard's part was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<Box<MergedShards>>,
    /// Cost and energy per token (`crate::energy`): price, GPUs, joules; absent on rows
    /// without measured figures and in rows saved before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub economics: Option<Box<CellEconomics>>,
    /// A mixed-prefill row's figures (`crate::mixed`): the streams' tok/s before, during and
    /// after the injected prompt, their longest gaps, its TTFT against its standalone TTFT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed: Option<Box<MixedFigures>>,
    /// What the probe requests sent beside this cell's load met (`--probe-rate`;
    /// `crate::probe`), apart from the cell's own figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Box<crate::probe::ProbeFigures>>,
    /// The row's figures per LoRA adapter beside its total (`--lora`; `crate::lora`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<Box<crate::lora::LoraFigures>>,
    /// The row's structured-output counts (`--response-format`, `--tools`;
    /// `crate::structured_check`): answers checked, valid, invalid, cut.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Box<crate::structured_check::StructuredFigures>>,
    /// The row's images: per request, sizes, and the image tokens the server counted
    /// (`--images`; `crate::images`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Box<crate::images::ImageFigures>>,
    /// A session row's columns (`turns_completed`, `cached_tokens`, `per_turn`, …), written
    /// at the row's top level; absent on other rows.
    #[serde(flatten)]
    pub session: crate::session::SessionColumns,
}

impl CellResult {
    /// A row with no figures: for Over capacity, Not run, or a failure before any figure.
    pub fn empty(
        phase: Phase,
        context_tokens: u64,
        context_label: &str,
        concurrency: u32,
        status: CellStatus,
    ) -> Self {
        CellResult {
            phase,
            context_tokens,
            context_label: context_label.to_string(),
            concurrency,
            status,
            prompt_tok_per_s: None,
            total_tok_per_s: None,
            per_request_tok_per_s: None,
            ttft_ms_p50: None,
            tbt_ms_p50: None,
            avg_active_requests: None,
            completed_requests: None,
            output_tokens: None,
            measured_s: None,
            token_count_source: None,
            token_count_note: None,
            server_generation_tokens: None,
            ttft_ms: None,
            tbt_ms: None,
            per_request_tok_per_s_summary: None,
            requests_sent: None,
            requests_without_token: None,
            errors: BTreeMap::new(),
            first_error: None,
            queue: None,
            prompt_check: None,
            status_reason: None,
            started_at: None,
            finished_at: None,
            requests_stopped_early: None,
            server_prompt_tok_per_s: None,
            burst: None,
            hardware: None,
            hardware_verdict: None,
            client_lag: None,
            request_rate: None,
            achieved_request_rate: None,
            failed_requests: None,
            slo_attainment: None,
            goodput_rps: None,
            goodput_tok_per_s: None,
            capacity_request_rate: None,
            capacity_concurrency: None,
            rate: None,
            capacity: None,
            slo: None,
            shard: None,
            merged: None,
            session: crate::session::SessionColumns::default(),
            capacity_limited: false,
            loop_guard: None,
            speculative: None,
            tokens_per_chunk: None,
            economics: None,
            mixed: None,
            probe: None,
            lora: None,
            images: None,
            structured: None,
        }
    }

    /// Fills the decode figures (only meaningful for Valid / Requests queued).
    pub fn with_decode(mut self, f: &DecodeFigures) -> Self {
        self.total_tok_per_s = Some(f.total_tok_per_s);
        self.per_request_tok_per_s = f.per_request_tok_per_s.as_ref().map(|s| s.p50);
        self.ttft_ms_p50 = f.ttft_ms.as_ref().map(|s| s.p50);
        self.tbt_ms_p50 = f.tbt_ms.as_ref().map(|s| s.p50);
        self.avg_active_requests = Some(f.avg_active_requests);
        self.completed_requests = Some(f.completed_requests);
        self.output_tokens = Some(f.output_tokens);
        self.measured_s = Some(f.measured_s);
        self.ttft_ms = f.ttft_ms.clone();
        self.tbt_ms = f.tbt_ms.clone();
        self.per_request_tok_per_s_summary = f.per_request_tok_per_s.clone();
        self.requests_sent = Some(f.requests_sent);
        self.requests_without_token = Some(f.requests_without_token);
        self
    }

    /// Fills the prefill figures.
    pub fn with_prefill(mut self, f: &PrefillFigures) -> Self {
        self.prompt_tok_per_s = Some(f.prompt_tok_per_s);
        self.ttft_ms_p50 = Some(f.ttft_ms);
        self.completed_requests = Some(1);
        self.requests_sent = Some(1);
        self
    }

    /// For a decode row marked Requests queued: how many requests the server ran at once, N
    /// minus the window's mean waiting gauge, rounded (live views print `(X/N)*`). `None` when
    /// the row is not queued or no gauge was read.
    pub fn server_ran(&self) -> Option<u32> {
        if self.phase != Phase::Decode || self.status != CellStatus::RequestsQueued {
            return None;
        }
        let waiting = self.queue.as_ref()?.mean_waiting?;
        let ran = (f64::from(self.concurrency) - waiting).round();
        Some(ran.clamp(0.0, f64::from(self.concurrency)) as u32)
    }

    /// Identity of the measurement in the matrix, for resume and lookups.
    pub fn key(&self) -> CellKey {
        CellKey {
            phase: self.phase,
            context_tokens: self.context_tokens,
            concurrency: self.concurrency,
            // An open-loop session cell's identity is its session rate.
            rate_mrps: self
                .request_rate
                .or(self.session.session_rate.flatten())
                .map_or(0, rate_mrps),
        }
    }
}

/// A request rate as a cell key holds it: milli-requests per second, rounded (a rate is
/// written with at most three decimals, so two rates a key tells apart differ in the table).
pub fn rate_mrps(rate: f64) -> u64 {
    if rate.is_finite() && rate > 0.0 {
        (rate * 1000.0).round() as u64
    } else {
        0
    }
}

fn is_zero(x: &u64) -> bool {
    *x == 0
}

/// Identity of one measurement in the matrix.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CellKey {
    /// Prefill or decode.
    pub phase: Phase,
    /// C.
    pub context_tokens: u64,
    /// N.
    pub concurrency: u32,
    /// An open-loop cell's request rate, milli-requests per second ([`rate_mrps`]); 0 for
    /// every other phase.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rate_mrps: u64,
}

impl CellKey {
    /// An open-loop cell's request rate, requests per second, from its key (the inverse of
    /// [`rate_mrps`]); `None` for every other cell.
    pub fn request_rate(&self) -> Option<f64> {
        (self.rate_mrps > 0).then(|| self.rate_mrps as f64 / 1000.0)
    }
}

/// What a burst measured (the figures are computed by `crate::burst`; the row holds them,
/// so the type lives with the row and `cell` imports nothing of the modules that fill it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstFigures {
    /// Measured requests (warm-ups excluded).
    pub requests: u64,
    /// Of them, finished properly.
    pub completed: u64,
    /// Σ completion tokens.
    pub output_tokens: u64,
    /// First send to last end, seconds.
    pub wall_s: f64,
    /// `output_tokens / wall_s`.
    pub tok_per_s: f64,
    /// `requests / wall_s`.
    pub requests_per_s: f64,
    /// Send to end, ms.
    pub e2e_ms: Option<Summary>,
    /// Send to first token, ms.
    pub ttft_ms: Option<Summary>,
    /// First to second chunk, ms.
    pub ttst_ms: Option<Summary>,
    /// Per token between chunks, ms.
    pub tbt_ms: Option<Summary>,
    /// Requests that ended on `finish_reason = length`.
    pub max_token_hits: u64,
    /// Requests whose completion tokens came from final usage (the rest: counted chunks).
    pub usage_counted: u64,
    /// The span in which at least 95 % of N were in flight, with its figures
    /// (`crate::burst_steady`); absent where none opened (and in rows written before it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<crate::burst_steady::SteadyFigures>,
}

/// Speculative decoding over a decode window (`crate::spec`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecFigures {
    /// Accepted draft tokens / proposed draft tokens.
    pub accept_rate: Option<f64>,
    /// Mean tokens per decoding step (1 + accepted / drafts).
    pub accept_length: Option<f64>,
    /// Where the figures come from (gauges or counters).
    pub source: String,
    /// Accepted tokens at draft position k / drafts, over the window (vLLM's
    /// `spec_decode_num_accepted_tokens_per_pos`; vllm-bench's
    /// `spec_decode_per_position_acceptance_rates`); empty and absent where not counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_position_accept_rate: Vec<f64>,
}

/// What the host's clock discipline says of its own error (chrony's tracking, read by
/// `crate::parse_chrony_tracking`). It bounds how far this shard's wall clock, and so its slot
/// instants, may be from true time, and so from the other shards'.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClockSync {
    /// chrony's leap status is "Normal" (it is synchronized to a source).
    pub synchronized: bool,
    /// Estimated error: the system clock's offset from chrony's true time, ms.
    pub est_error_ms: f64,
    /// Maximum error: the offset plus half the root delay and the root dispersion, ms.
    pub max_error_ms: f64,
}

/// What a shard's row records of its part of a cell (`cells.jsonl`, `shard`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardCell {
    /// This shard.
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
    /// The timetable's origin of the cell, ns since the Unix epoch.
    pub origin_due_unix_ns: u64,
    /// This shard's wall clock when its cell origin was taken (the records' offsets count from
    /// it): late by `origin_unix_ns − origin_due_unix_ns`.
    pub origin_unix_ns: u64,
    /// Decode: the window opened at `open_ns` from the origin (the timetable's instant).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_ns: Option<u64>,
    /// Decode: the window closed at `close_ns` from the origin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_ns: Option<u64>,
    /// Decode: this shard's readiness judge had opened the window by that instant (`false`:
    /// its streams were still ramping, or queued, when the window opened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at_open: Option<bool>,
    /// Requests (rate) or streams (decode) this shard ran.
    pub requests: u64,
    /// The server's generation-token counter delta over the window, as this shard read it
    /// (server-wide: every shard's tokens; the row's own field is left empty on a shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_generation_tokens: Option<f64>,
    /// The host's clock discipline at the cell, where the kernel tells.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSync>,
    /// The cell's slot of the timetable: what it was sized from, and how long this shard's
    /// preparation took against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotRecord>,
}

/// What a merged row says of its shards (`cells.jsonl`, `merged`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShards {
    /// Each shard's part, by index.
    pub shards: Vec<MergedShard>,
    /// Every shard measured its part (a status with figures, ready where it is a decode
    /// cell): when `false`, the row's status says why.
    pub complete: bool,
}

/// One shard's part of a merged row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedShard {
    /// The shard.
    pub index: u32,
    /// Its own row's status.
    pub status: CellStatus,
    /// Its own row's reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reason: Option<String>,
    /// Requests (rate) or streams (decode) it ran.
    pub requests: u64,
    /// How late its origin was against the timetable, ms, by its own clock.
    pub origin_late_ms: f64,
    /// Decode: ready when the window opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_at_open: Option<bool>,
    /// Its clock's own error bound, where the kernel told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<ClockSync>,
    /// How long its preparation took, ms (from its slot's start until it was ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prep_ms: Option<f64>,
    /// The slot's preparation it was held to, ms (the same on every shard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prep_budget_ms: Option<f64>,
}
