//! The validated plan: which contexts and concurrency levels run, in which order, and which
//! cells are predicted Over capacity. Built once the server's context length and KV capacity
//! are known, before anything is sent.

use crate::cell::{CellKey, Phase};
use crate::request_controls::RequestControls;
use crate::size::{ContextSpec, format_tokens};
use serde::{Deserialize, Serialize};

pub use crate::api::Api;
pub use crate::planned::{DroppedContext, PlannedCell, decode_drops};
use crate::planned::{Fit, tokens_fit};
pub use crate::targeting::{
    ESTIMATE_TOLERANCE, MINIMAL_PROMPT_MAX, MINIMAL_PROMPT_SPREAD, Targeting, estimate_tolerance,
    prompt_tolerance,
};

/// The seed's contexts: 8K … 512K, then `max` and `full`.
pub fn default_contexts() -> Vec<ContextSpec> {
    let mut v: Vec<ContextSpec> = [8u64, 16, 32, 64, 128, 256, 512]
        .iter()
        .map(|k| ContextSpec::Tokens(k * 1024))
        .collect();
    v.push(ContextSpec::Max);
    v.push(ContextSpec::Full);
    v
}

/// The seed's concurrency levels: 1 … 128.
pub fn default_concurrency() -> Vec<u32> {
    vec![1, 2, 4, 8, 16, 32, 64, 128]
}

/// Settings of a run, after flags, config file and environment were merged and checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Requested contexts.
    pub contexts: Vec<ContextSpec>,
    /// Concurrency levels, ascending, unique.
    pub concurrency: Vec<u32>,
    /// Decode window length, seconds.
    pub duration_s: f64,
    /// `max_tokens` of decode requests (M).
    pub max_output: u32,
    /// Longest wait for readiness before a window opens anyway (marked queued), seconds.
    pub readiness_timeout_s: f64,
    /// Total time budget; cells that would start after it are Not run.
    pub max_time_s: Option<f64>,
    /// Keep per-request records with per-chunk offsets.
    pub save_requests: bool,
    /// Keep each measured request's answer text in its record (`--save-texts`; implies
    /// `save_requests`).
    #[serde(default)]
    pub save_texts: bool,
    /// Interval between queue-gauge samples during windows, ms.
    pub gauge_interval_ms: u64,
    /// Seed for prompt prefixes (a fresh one per run unless given).
    pub prompt_seed: u64,
    /// Longest wait from a request's send to its first content chunk (response headers
    /// included), seconds, when the user gave one; `None`: it follows the prompts
    /// ([`first_token_default_s`]). A request that passes it fails its cell with the reason,
    /// so no warm-up or prefill can hang a run.
    #[serde(default)]
    pub first_token_timeout_s: Option<f64>,
    /// Longest silence between two chunks of a stream once it has produced, seconds.
    #[serde(default = "default_idle_timeout_s")]
    pub idle_timeout_s: f64,
    /// The repetition guard (`--no-loop-detection` turns it off): a request whose text loops
    /// fails its cell.
    #[serde(default = "yes")]
    pub loop_detection: bool,
    /// The drain barrier's limit (`--busy-timeout`): how long a decode cell waits for the
    /// server's running and waiting gauges to reach zero before it is Failed: server busy.
    #[serde(default = "default_busy_timeout_s")]
    pub busy_timeout_s: f64,
    /// The endpoint generation requests go to (runs saved before it existed used
    /// completions).
    #[serde(default)]
    pub api: Api,
    /// How prompt lengths are hit.
    #[serde(default)]
    pub token_targeting: Targeting,
    /// Let requests end at the model's EOS (no `ignore_eos` / `min_tokens`): outputs are as
    /// long as the model makes them, so the window measures a mix of lengths.
    #[serde(default)]
    pub respect_eos: bool,
    /// Burst / E2E cells, when asked for.
    #[serde(default)]
    pub burst: Option<BurstSettings>,
    /// A single-flight server (mlx-lm style): readiness is tokens flowing on one stream.
    #[serde(default)]
    pub serial_server: bool,
    /// No prefill cells (`--skip-prefill`).
    #[serde(default)]
    pub skip_prefill: bool,
    /// Only prefill cells (`--prefill-only`).
    #[serde(default)]
    pub prefill_only: bool,
    /// Extra contexts measured by a prefill cell only (`--prefill-contexts`).
    #[serde(default)]
    pub prefill_contexts: Vec<ContextSpec>,
    /// Whether prefill cells also read the server's own prefill rate from its counters.
    #[serde(default)]
    pub prefill_metric: PrefillMetric,
    /// A local `tokenizer.json` that counts chunk texts where the server has no tokenizer
    /// (`--tokenizer`).
    #[serde(default)]
    pub tokenizer_file: Option<String>,
    /// What the prompts are cut from instead of filler (`--prompt-text`; never the text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_text: Option<crate::prompt_text::PromptTextSource>,
    /// Cold prefills per prefill cell, each with a prefix of its own (`--standalone-prefill`;
    /// 1: the one scout). The row gives the median and the spread.
    #[serde(default = "one")]
    pub prefill_repeats: u32,
    /// A KV budget in tokens that caps what the server reports (`--max-total-tokens`): the
    /// Over capacity prediction uses the smaller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_tokens: Option<u64>,
    /// Measure cells predicted Over capacity anyway, marked (`--show-capacity-limited-values`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub measure_over_capacity: bool,
    /// Sampling and extra body keys sent with every generation request (`--temperature`,
    /// `--top-p`, `--seed`, `--extra-body`).
    #[serde(default, skip_serializing_if = "RequestControls::is_empty")]
    pub request: RequestControls,
    /// The open-loop section of each context (`--request-rate`, `--find-capacity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::load_settings::LoadSettings>,
    /// The session section of each context (`--sessions`, `--turns`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<crate::session::SessionSettings>,
    /// Probe requests beside every loaded cell (`--probe-rate`; `crate::probe`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<crate::probe::ProbeSettings>,
    /// LoRA adapters the decode, burst and rate cells' requests are spread over (`--lora`,
    /// `--lora-assign`; `crate::lora`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<crate::lora::LoraSettings>,
    /// Images in the prefill, decode, burst and rate cells' requests (`--images`,
    /// `--image-size`; `crate::images`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<crate::images::ImageSettings>,
    /// The mixed-prefill cells (`--mixed-prefill`; `crate::mixed`), after the matrix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mixed_prefill: Option<crate::mixed_plan::MixedPrefillSettings>,
    /// The standard matrix version this run follows (`--standard`; `crate::standard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub standard: Option<String>,
    /// A hidden decode cell of this many seconds before the first measured cell
    /// (`--decode-warmup-seconds`; 0: none), at [`crate::decode_warmup_cell`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub decode_warmup_s: f64,
    /// End a decode window or a rate cell's schedule early once its figures are stable
    /// (`--until-stable`; never past the window's length).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_stable: Option<crate::stable::StableTarget>,
    /// This run is one shard of a run spread over several client machines (`--shard I/N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::shard::ShardSpec>,
    /// The slots every shard follows (`--start-at`, `--shard-prep-seconds`); set with
    /// `shard`, and shared by every shard (so part of the plan's hash).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timetable: Option<crate::timetable::TimetableSettings>,
    /// The cost figures' prices and GPU count (`--gpu-hour-usd`, `--gpus`; `crate::energy`).
    #[serde(default, skip_serializing_if = "crate::energy::CostSettings::is_empty")]
    pub economics: crate::energy::CostSettings,
    /// Latency percentiles beyond p50, p90 and p99 in every row (`--percentiles`; ascending).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles: Vec<f64>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn one() -> u32 {
    1
}

/// `--prefill-metric`: the client's figure (C / TTFT) is always the prefill figure; the
/// server's rate (Δ prompt tokens / Δ prefill seconds from its counters) is added beside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrefillMetric {
    /// The client's figure only.
    Client,
    /// The server's beside it, and a note when the engine exports no prefill counters.
    Server,
    /// The server's where the engine exports its counters.
    #[default]
    Auto,
}

/// Burst / E2E cells (`--request-count`, `--run-burst`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BurstSettings {
    /// Measured requests per cell, whatever N (`--request-count R`); `None`: N ×
    /// `requests_per_concurrency`.
    pub request_count: Option<u32>,
    /// Measured requests per unit of N (`--burst-requests-per-concurrency`, default 5).
    pub requests_per_concurrency: u32,
    /// Requests sent first and left out of the figures (`--burst-warmup-request-count`);
    /// `None`: the cell's concurrency, as the seed does (every slot warms once).
    #[serde(default)]
    pub warmup_request_count: Option<u32>,
    /// Bursts replace the sustained decode cells (`--request-count`) instead of following
    /// them as a second matrix (`--run-burst`).
    pub replace_sustained: bool,
}

impl BurstSettings {
    /// Measured requests of a cell at concurrency `n` (at least `n`, so every slot runs).
    pub fn requests(&self, n: u32) -> u32 {
        self.request_count
            .unwrap_or_else(|| n.saturating_mul(self.requests_per_concurrency))
            .max(1)
    }

    /// Unmeasured requests sent before a cell at concurrency `n`.
    pub fn warmup_requests(&self, n: u32) -> u32 {
        self.warmup_request_count.unwrap_or(n)
    }
}

/// The KV capacity the plan predicts with: the server's, capped by the user's budget
/// (`--max-total-tokens`); the budget alone where the server reports none.
pub fn budgeted_kv(reported: Option<u64>, budget: Option<u64>) -> Option<u64> {
    match (reported, budget) {
        (Some(k), Some(b)) => Some(k.min(b)),
        (k, b) => k.or(b),
    }
}

/// The slow prefill rate the default first-token limit allows for, tokens per second.
pub const SLOW_PREFILL_TOK_PER_S: f64 = 2000.0;

/// The default first-token limit of a request sent with `in_flight − 1` others of the same
/// prompt length (`prompt_tokens`): every one of their prompts at a slow 2,000 tok/s of
/// prefill, and never under 60 s. A short prompt to a server that accepts and never answers
/// fails within a minute; a 1M-token prefill keeps a long limit (8.7 min), and N cold prompts
/// sent at once N times that.
pub fn first_token_default_s(prompt_tokens: u64, in_flight: u32) -> f64 {
    let queued = prompt_tokens as f64 * f64::from(in_flight.max(1));
    (queued / SLOW_PREFILL_TOK_PER_S).max(60.0)
}

impl Settings {
    /// The first-token limit of a request (see [`first_token_default_s`]): the user's where
    /// given.
    pub fn first_token_limit_s(&self, prompt_tokens: u64, in_flight: u32) -> f64 {
        self.first_token_timeout_s
            .unwrap_or_else(|| first_token_default_s(prompt_tokens, in_flight))
    }
}

fn default_idle_timeout_s() -> f64 {
    120.0
}

/// Runs saved before the guards existed ran without the loop guard; a file that omits the
/// key gets today's default.
fn yes() -> bool {
    true
}

fn default_busy_timeout_s() -> f64 {
    crate::drain::DEFAULT_BUSY_TIMEOUT_S
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            contexts: default_contexts(),
            concurrency: default_concurrency(),
            duration_s: 30.0,
            max_output: 4096,
            readiness_timeout_s: 120.0,
            max_time_s: None,
            save_requests: false,
            save_texts: false,
            gauge_interval_ms: 250,
            prompt_seed: 0,
            first_token_timeout_s: None,
            idle_timeout_s: default_idle_timeout_s(),
            loop_detection: true,
            busy_timeout_s: default_busy_timeout_s(),
            api: Api::Completions,
            token_targeting: Targeting::Exact,
            respect_eos: false,
            burst: None,
            serial_server: false,
            skip_prefill: false,
            prefill_only: false,
            prefill_contexts: Vec::new(),
            prefill_repeats: 1,
            max_total_tokens: None,
            measure_over_capacity: false,
            request: RequestControls::default(),
            load: None,
            sessions: None,
            mixed_prefill: None,
            probe: None,
            lora: None,
            images: None,
            standard: None,
            decode_warmup_s: 0.0,
            shard: None,
            timetable: None,
            economics: crate::energy::CostSettings::default(),
            percentiles: Vec::new(),
            until_stable: None,
            tokenizer_file: None,
            prompt_text: None,
            prefill_metric: PrefillMetric::Auto,
        }
    }
}

/// One context of the plan, with its exact token count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedContext {
    /// Exact prompt tokens.
    pub tokens: u64,
    /// Label for tables.
    pub label: String,
    /// Whether decode cells run at this context (`full` is prefill only).
    pub decode: bool,
    /// What the user asked for.
    pub spec: ContextSpec,
}

/// Resolves requested contexts against the server's context length `limit` (prompt + output).
///
/// - `max` is the largest whole-K context with C + M < limit (strictly less: some engines reject
///   prompt + max_tokens equal to the limit). This gives the seed's "1019K" for a 1024K model with
///   M = 4096. Below 1K of room, the exact largest count is used.
/// - `full` is prefill only and sends limit − 2 tokens: prompt + its one output token stay
///   strictly below the limit, the same rule as `max` (SGLang rejects prompt + max_tokens equal
///   to the context length). It is labelled by the context length ("1024K"), as the seed does.
/// - Explicit contexts with C + M ≥ limit are prefill only when C < limit, dropped otherwise.
///
/// Without a known limit, `max` and `full` are dropped and explicit contexts are kept.
/// The result is sorted ascending by tokens and deduplicated.
pub fn resolve_contexts(
    specs: &[ContextSpec],
    limit: Option<u64>,
    max_output: u32,
) -> (Vec<PlannedContext>, Vec<DroppedContext>) {
    resolve_contexts_of("--contexts", specs, limit, max_output)
}

/// [`resolve_contexts`] for the sizes of `flag` (`--contexts` or `--prefill-contexts`), which a
/// dropped context's reason names as the flag that would make it fit.
fn resolve_contexts_of(
    flag: &'static str,
    specs: &[ContextSpec],
    limit: Option<u64>,
    max_output: u32,
) -> (Vec<PlannedContext>, Vec<DroppedContext>) {
    let mut out: Vec<PlannedContext> = Vec::new();
    let mut dropped = Vec::new();
    for &spec in specs {
        match resolve_one(flag, spec, limit, u64::from(max_output)) {
            Ok(p) => {
                if let Some(existing) = out.iter_mut().find(|e| e.tokens == p.tokens) {
                    existing.decode |= p.decode;
                } else {
                    out.push(p);
                }
            }
            Err(why) => dropped.push(DroppedContext {
                spec,
                reason: why.to_string(),
            }),
        }
    }
    out.sort_by_key(|p| p.tokens);
    (out, dropped)
}

/// Why a requested context does not run (the rules of [`resolve_contexts`]); its words are the
/// [`DroppedContext::reason`] that `plan.json` keeps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum DropReason {
    /// An explicit context at or past the server's context length.
    #[error(
        "{} tokens does not fit the server's context length of {}; pass smaller {flag}",
        format_tokens(*.tokens),
        format_tokens(*.limit)
    )]
    TooLong {
        /// The context asked for.
        tokens: u64,
        /// The server's context length.
        limit: u64,
        /// The flag that asked for it.
        flag: &'static str,
    },
    /// `max` or `full` without a known context length.
    #[error("the server's context length is unknown; pass explicit sizes")]
    UnknownLimit,
    /// `max` where the output alone fills the context.
    #[error(
        "max output {max_output} leaves no room in a context of {limit}; pass a smaller --max-output"
    )]
    NoRoom {
        /// Max output tokens.
        max_output: u64,
        /// The server's context length.
        limit: u64,
    },
    /// `full` in a context too small to send a prompt.
    #[error("context length too small")]
    TooSmall,
}

/// One context against the server's limit `limit` with max output `m` (the rules of
/// [`resolve_contexts`]); the error is the reason it is dropped.
fn resolve_one(
    flag: &'static str,
    spec: ContextSpec,
    limit: Option<u64>,
    m: u64,
) -> Result<PlannedContext, DropReason> {
    let planned = |tokens: u64, label: u64, decode: bool| PlannedContext {
        tokens,
        label: format_tokens(label),
        decode,
        spec,
    };
    match (spec, limit) {
        (ContextSpec::Tokens(c), None) => Ok(planned(c, c, true)),
        (ContextSpec::Tokens(c), Some(l)) => match tokens_fit(c, m, l) {
            Fit::Decode => Ok(planned(c, c, true)),
            Fit::PrefillOnly => Ok(planned(c, c, false)),
            Fit::TooLong => Err(DropReason::TooLong {
                tokens: c,
                limit: l,
                flag,
            }),
        },
        (ContextSpec::Max | ContextSpec::Full, None) => Err(DropReason::UnknownLimit),
        (ContextSpec::Max, Some(l)) => {
            let room = l.saturating_sub(m + 1);
            let c = if room >= 1024 {
                room / 1024 * 1024
            } else {
                room
            };
            if c == 0 {
                Err(DropReason::NoRoom {
                    max_output: m,
                    limit: l,
                })
            } else {
                Ok(planned(c, c, true))
            }
        }
        (ContextSpec::Full, Some(l)) if l < 3 => Err(DropReason::TooSmall),
        // Labelled by the context length, as the seed does; sends limit − 2 tokens.
        (ContextSpec::Full, Some(l)) => Ok(planned(l - 2, l, false)),
    }
}

/// The contexts of a plan in size order: `--contexts`, then the `--prefill-contexts` not
/// among them (prefill only; a size asked for both keeps its decode cells), all prefill only
/// with `--prefill-only`; and those dropped, with why.
fn planned_contexts(
    settings: &Settings,
    context_length: Option<u64>,
) -> (Vec<PlannedContext>, Vec<DroppedContext>) {
    let m = settings.max_output;
    let (mut contexts, mut dropped) = resolve_contexts(&settings.contexts, context_length, m);
    let prefill = &settings.prefill_contexts;
    let (extra, more) = resolve_contexts_of("--prefill-contexts", prefill, context_length, m);
    dropped.extend(more);
    for mut e in extra {
        if !contexts.iter().any(|c| c.tokens == e.tokens) {
            e.decode = false;
            contexts.push(e);
        }
    }
    contexts.sort_by_key(|c| c.tokens);
    if settings.prefill_only {
        contexts.iter_mut().for_each(|c| c.decode = false);
    }
    (contexts, dropped)
}

/// Burst cells for the decode cells of `cells` (same contexts, N and capacity prediction):
/// in their place (`replace`), or as a second matrix after the whole sustained one.
pub fn with_bursts(cells: Vec<PlannedCell>, replace: bool) -> Vec<PlannedCell> {
    let burst = |c: &PlannedCell| PlannedCell {
        key: CellKey {
            phase: Phase::Burst,
            ..c.key
        },
        ..c.clone()
    };
    if replace {
        return cells
            .iter()
            .map(|c| {
                if c.key.phase == Phase::Decode {
                    burst(c)
                } else {
                    c.clone()
                }
            })
            .collect();
    }
    let extra: Vec<PlannedCell> = cells
        .iter()
        .filter(|c| c.key.phase == Phase::Decode)
        .map(burst)
        .collect();
    cells.into_iter().chain(extra).collect()
}

/// The matrix in run order: contexts ascending; per context its prefill, then decode cells with
/// N ascending (METHOD.md, "The matrix").
pub fn matrix(
    contexts: &[PlannedContext],
    concurrency: &[u32],
    kv_capacity: Option<u64>,
    max_output: u32,
) -> Vec<PlannedCell> {
    let mut cells = Vec::new();
    for c in contexts {
        // Context 0 has no filler to prefill: its decode cells only (METHOD note).
        if c.tokens > 0 {
            cells.push(PlannedCell {
                key: CellKey {
                    phase: Phase::Prefill,
                    context_tokens: c.tokens,
                    concurrency: 1,
                    rate_mrps: 0,
                },
                label: c.label.clone(),
                over_capacity: false,
            });
        }
        if !c.decode {
            continue;
        }
        for &n in concurrency {
            let need = crate::capacity::kv_tokens_needed(n, c.tokens, max_output);
            cells.push(PlannedCell {
                key: CellKey {
                    phase: Phase::Decode,
                    context_tokens: c.tokens,
                    concurrency: n,
                    rate_mrps: 0,
                },
                label: c.label.clone(),
                over_capacity: crate::capacity::exceeds(need, kv_capacity),
            });
        }
    }
    cells
}

/// The identity of a plan that every shard of one run shares: a 64-bit FNV-1a of the plan as
/// JSON, with the shard's own index left out. Shards given other settings, another seed or
/// another server's limits get another hash, and a merge refuses them.
pub fn plan_hash(plan: &Plan) -> String {
    let mut p = plan.clone();
    p.settings.shard = None;
    let text = serde_json::to_string(&p).unwrap_or_default();
    format!("{:016x}", fnv1a(text.as_bytes()))
}

/// 64-bit FNV-1a: a stable hash (the same on every machine and build) for identities that
/// several processes must agree on.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Everything the run decided before sending, as stored in `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The merged settings.
    pub settings: Settings,
    /// Contexts that run.
    pub contexts: Vec<PlannedContext>,
    /// Contexts that were asked for but dropped.
    pub dropped_contexts: Vec<DroppedContext>,
    /// Contexts that run without their decode cells, and why ([`crate::decode_drops`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decode_dropped: Vec<DroppedContext>,
    /// The KV capacity used for predictions (None: unknown, nothing predicted).
    pub kv_capacity_tokens: Option<u64>,
    /// The context length used to resolve sizes.
    pub context_length: Option<u64>,
    /// `Fixed duration` (the seed's "Decode test").
    pub decode_test: String,
    /// `Measured during decode warm-up` (the seed's "Prefill mode").
    pub prefill_mode: String,
    /// The cells in run order.
    pub cells: Vec<PlannedCell>,
}

impl Plan {
    /// Whether the run sends `cell`'s requests: every cell but one predicted Over capacity,
    /// unless `--show-capacity-limited-values` measures those too.
    pub fn measures(&self, cell: &PlannedCell) -> bool {
        !cell.over_capacity || self.settings.measure_over_capacity
    }

    /// Builds the plan from settings and what the server said.
    pub fn build(
        settings: Settings,
        context_length: Option<u64>,
        kv_capacity: Option<u64>,
    ) -> Plan {
        let (mut contexts, mut dropped_contexts) = planned_contexts(&settings, context_length);
        let skip_decode = settings.load.as_ref().is_some_and(|l| l.skip_decode);
        // Decode cells the user did not turn off but that cannot run.
        let sessions_only = settings.sessions.as_ref().is_some_and(|s| !s.with_decode);
        let decode_dropped = if settings.prefill_only || skip_decode || sessions_only {
            Vec::new()
        } else {
            let skip_prefill = settings.skip_prefill;
            let (specs, m) = (&settings.contexts, settings.max_output);
            crate::planned::decode_drops(specs, context_length, m, skip_prefill)
        };
        if settings.token_targeting == Targeting::Estimate {
            // Every table says the context is approximate.
            for c in &mut contexts {
                c.label = format!("≈{}", c.label);
            }
        }
        let kv_capacity = budgeted_kv(kv_capacity, settings.max_total_tokens);
        let mut cells = matrix(
            &contexts,
            &settings.concurrency,
            kv_capacity,
            settings.max_output,
        );
        if let Some(b) = settings.burst {
            cells = with_bursts(cells, b.replace_sustained);
        }
        if settings.skip_prefill {
            cells.retain(|c| c.key.phase != Phase::Prefill);
        }
        // `--skip-decode`: the contexts keep `decode` (their open-loop sections run), the
        // closed-loop cells go.
        // Sessions without --concurrency: the session cells replace the decode matrix.
        if skip_decode || sessions_only {
            cells.retain(|c| !matches!(c.key.phase, Phase::Decode | Phase::Burst));
        }
        // After the matrix: the mixed-prefill cells, at the smallest decode context by default.
        if let Some(mp) = &settings.mixed_prefill {
            let decode: Vec<u64> = contexts
                .iter()
                .filter(|c| c.decode)
                .map(|c| c.tokens)
                .collect();
            let run = (settings.concurrency.as_slice(), settings.max_output);
            crate::mixed_plan::plan_at(mp, run, &decode, (context_length, kv_capacity))
                .append_to(&mut cells, &mut dropped_contexts);
        }
        Plan {
            settings,
            contexts,
            dropped_contexts,
            decode_dropped,
            kv_capacity_tokens: kv_capacity,
            context_length,
            decode_test: "Fixed duration".to_string(),
            prefill_mode: "Measured during decode warm-up".to_string(),
            cells,
        }
    }
}

#[cfg(test)]
#[path = "tests/plan.rs"]
mod tests;
