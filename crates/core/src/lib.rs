//! Core of llm-inference-bench: the validated plan, per-request records, the figures computed
//! from them (pure functions), cell statuses and the results store. No HTTP, no terminal, so
//! everything here is tested without sockets.
//!
//! Modules are private; the `pub use` lists below are the crate's whole surface, so the
//! compiler reports any function no caller needs. Every type a public item exposes is
//! re-exported too (`unnameable_types` keeps that true).

#![warn(unnameable_types)]

mod accuracy;
mod agent_usage;
mod api;
mod arrival;
mod burst;
mod burst_steady;
mod capacity;
mod capacity_search;
mod cell;
mod counting;
mod diag;
mod digest;
mod drain;
mod figures;
mod gof;
mod hw;
mod image_jpeg;
mod image_png;
mod image_row;
mod images;
mod import_aiperf;
mod import_common;
mod import_guidellm;
mod import_vllm;
mod json_schema;
mod lag;
mod length;
mod live;
mod load;
mod load_settings;
mod loop_row;
mod lora;
mod merge;
mod meta;
mod mixed;
mod mixed_plan;
mod nullable;
mod plan;
mod planned;
mod probe;
mod prompt_text;
mod readiness;
mod record;
mod redact;
mod repeats;
mod repetition;
mod request_controls;
mod rng;
mod room;
mod run;
mod session;
mod shard;
mod size;
mod slo;
mod slot;
mod spec;
mod spec_category;
mod stable;
mod standard;
mod stats;
mod store;
mod structured;
mod structured_check;
mod sweep;
mod sweep_pick;
mod targeting;
mod telemetry;
mod terminal;
mod time;
mod timetable;
mod varying;
mod verdict;
mod warmup;
mod workload;

// What a run is asked to do: settings, the validated plan, sizes and durations.
pub use agent_usage::{
    InputReading, MessagesUsage, UsageConflict, infer_reading, request_prompt_tokens,
};
pub use capacity::kv_tokens_needed;
pub use json_schema::{CHECKED_KEYWORDS, SchemaFault, check_schema, validate};
pub use plan::{
    Api, BurstSettings, DroppedContext, ESTIMATE_TOLERANCE, MINIMAL_PROMPT_MAX,
    MINIMAL_PROMPT_SPREAD, Plan, PlannedCell, PlannedContext, PrefillMetric,
    SLOW_PREFILL_TOK_PER_S, Settings, Targeting, budgeted_kv, decode_drops, estimate_tolerance,
    first_token_default_s, prompt_tolerance,
};
pub use prompt_text::{PromptTextError, PromptTextSource};
pub use repeats::{FIGURES as REPEAT_FIGURES, RepeatedCell, Spread, repeated_cells, spread};
pub use request_controls::{ControlRefused, ExtraBodyError, OWN_BODY_KEYS, RequestControls};
pub use size::{
    ContextSpec, MAX_DURATION_S, SizeError, duration_from_secs, format_tokens, parse_context_list,
    parse_duration, parse_tokens,
};
pub use standard::{STANDARD_MATRICES, StandardMatrix, UnknownStandard, standard_matrix};
pub use structured::{
    AnswerCheck, ResponseFormat, STRUCTURED_BODY_KEYS, StructuredError, StructuredSpec, ToolChoice,
    ToolSpec,
};
pub use structured_check::{
    AnswerText, StructuredFigures, ToolCallText, judge, structured_figures,
};
pub use targeting::ids_refusal;

// What a request and a cell observed, and the figures computed from it.
pub use burst::burst_result;
pub use burst_steady::{STEADY_MIN_WINDOW_S, STEADY_THRESHOLD, SteadyFigures, steady_figures};
pub use cell::{
    BurstFigures, CellKey, CellResult, CellStatus, MixedFigures, Phase, PromptCheck,
    QueueObservation,
};
pub use digest::hex_sha256;
pub use drain::{BarrierCheck, DEFAULT_BUSY_TIMEOUT_S, SERVER_BUSY_KIND, gauges_idle};
pub use figures::{DecodeFigures, PrefillFigures, Window, server_prefill_rate};
pub use image_jpeg::{JPEG_QUALITY, JpegError, jpeg_len_bound, noise_jpeg};
pub use image_png::{adler32, base64, crc32, noise_png, zlib_stored};
pub use image_row::finish_image_row;
pub use images::{
    IMAGE_TOKENS_COUNTED_BY, ImageCheck, ImageError, ImageFigures, ImageFormat, ImageGroup,
    ImageRequest, ImageSettings, ImageSize, MAX_IMAGE_BYTES_PER_CELL, MAX_IMAGE_SIDE,
    MAX_IMAGES_PER_REQUEST, base64_len, image_token_check, png_len, sizes_label,
};
pub use loop_row::{LOOP_ERROR_KIND, fail_on_loop, guard_loops, loop_evidence};
pub use lora::{
    LoraAdapterFigures, LoraAssign, LoraError, LoraFigures, LoraSettings, LoraSpan, lora_figures,
    lora_request_model,
};
pub use mixed::{
    MixedJudgement, MixedObservation, mixed_figures, mixed_over_capacity_result, mixed_result,
    mixed_stream_context,
};
pub use mixed_plan::{
    DEFAULT_MIXED_SPAN_S, DEFAULT_STANDALONE_REPEATS, MixedPlan, MixedPlanInput,
    MixedPrefillSettings, mixed_kv_needed, mixed_prefill_plan,
};
pub use probe::{
    DEFAULT_PROBE_INPUT_TOKENS, DEFAULT_PROBE_OUTPUT_TOKENS, ProbeFigures, ProbeSettings,
    probe_figures,
};
pub use record::{Chunk, NEVER_SENT, Outcome, RequestRecord};
pub use repetition::{
    CHECK_EVERY, LOOP_MAX_CYCLE, LOOP_MIN_CYCLES, LOOP_MIN_SPAN, LoopDetector, LoopEvidence,
    LoopFinding, LoopGuard, TAIL_CAP, TextChannel,
};
pub use stats::{
    FIXED_PERCENTILES, Percentile, PercentileError, Summary, parse_percentiles, percentile_word,
};

// Decisions: readiness, token counting, the client's own lateness and each cell's row.
pub use counting::{CountReport, TokenizeError, Tokenized, count_request, needs_tokenizer};
pub use lag::{
    ClientLag, KERNEL_SHARE, KernelStamps, PROBE_EVERY_COVERED_MS, PROBE_EVERY_MS, WARN_FLOOR_MS,
    WARN_SHARE_OF_TBT, client_lag, probe_period_ms,
};
pub use readiness::{Opened, RampObservation, ReadinessBy, ReadinessJudge, ReadinessRule};
pub use verdict::{
    DecodeObservation, ErrorTally, bare_result, decode_result, decode_result_at,
    every_measured_cell_failed, failed_result, failing_window_done, first_token_stall,
    interrupted_result, measure_again_on_resume, nothing_measured, over_capacity_result,
    prefill_result, prefill_series_result,
};
pub use warmup::decode_warmup_cell;

// Load from several client machines: shards of one plan, and the check of a merge.
pub use merge::{
    DecodeMergeInputs, MergedCell, MergedRun, ShardPart, ShardResults, max_in_flight, merge_cell,
    merge_copied_row, merge_decode_cell, merge_rate_cell, merge_session_cell, merge_shards,
    origin_late_ns, to_common_clock, union_records,
};
pub use plan::{fnv1a, plan_hash};
pub use shard::{
    MAX_SHARDS, MergeError, ShardArg, ShardError, ShardIdentity, ShardSpec, check_shards,
    resolve_auto,
};

// Open-loop load: arrival schedules and service-level objectives.
pub use arrival::{ArrivalError, ArrivalPattern, schedule};
pub use capacity_search::{Capacity, RatePoint, SearchBounds, SearchStep, next_step};
pub use cell::rate_mrps;
pub use cell::{CapacityFigures, CapacityPoint, LimitRow, RateFigures, SloRow, SpecFigures};
pub use load::{
    CapacityInputs, MAX_PROMPT_TOKENS_PER_CELL, MAX_REQUESTS_PER_CELL, RateObservation,
    ScheduleError, auto_rates, capacity_cell, capacity_concurrency, capacity_result, cell_schedule,
    closed_batch_rate, closed_loop_slo, peak_output_tok_per_s, rate_cell, rate_result,
    rate_result_at, round_rate,
};
pub use load_settings::{LoadSettings, RateSpec, RateSpecError};
pub use slo::{LimitVerdict, RequestSample, Slo, SloError, SloFigure, SloLimit, SloVerdict};
pub use spec::SpecWindow;
pub use spec_category::{
    SERVER_USAGE, SpecBenchSummary, SpecCategoryRow, SpecRequestOutcome, group_by_category,
    spec_category_row,
};
pub use varying::{
    CellRequest, HISTOGRAM_BINS, LengthBin, LengthFigures, LengthSource, WorkloadFigures,
    cell_requests, empirical_cdf, length_figures, server_counted_prompts, workload_figures,
};

// Real workloads on the open-loop path: length distributions, their fit, and the seeded
// generator they and the arrival schedules draw from.
pub use gof::{ks_critical_1pct, ks_statistic, normal_cdf};
pub use length::{LengthError, LengthSpec};
pub use rng::SplitMix64;
pub use room::{
    DEFAULT_PREFILL_CONTEXT, NoSessionRoom, default_prefill_contexts, session_contexts,
    session_room,
};
pub use session::{
    AnswerKind, Fork, MessageKind, PriorTurn, fork_shares_turn, replay_shared_prefix,
};
pub use session::{
    CACHE_SHORTFALL, PerTurn, SESSION_RATE_CAPACITY, SESSION_RATE_CEILING, SESSIONS_CEILING,
    SessionColumns, SessionFigures, SessionObservation, SessionSettings, ThinkTime, ThinkTimeError,
    TtftSplit, TurnRecord, cache_note, next_session_rate_step, next_session_step,
    predicted_cached_prefix, session_capacity_result, session_holds, session_kv_needed,
    session_rate_bounds, session_rate_capacity_cell, session_rate_capacity_result,
    session_rate_points, session_result, session_result_at, ttft_split, turn_shared_prefix,
};
pub use session::{
    ReplaySession, ReplayTurn, SessionReplay, TurnInput, parse_session_trace,
    parse_sharegpt_sessions, parse_weka_trace,
};
pub use session::{
    SessionLoop, SessionPart, TurnJoinError, TurnMeta, join_turns, my_sessions, session_limits,
    session_slot_kind,
};
pub use stable::{
    BatchMeans, MIN_BATCH_OBS, MIN_STABLE_S, STABLE_BATCHES, StableInput, StableSample,
    StableSeries, StableTarget, StableTargetError, StableVerdict, StopReason, batch_means,
    stability, stable_cadence, stable_series, t_975,
};
pub use sweep::{
    Combination, ComboRecord, ComboState, GridParam, HOST_PLACEHOLDER, Launcher, PORT_PLACEHOLDER,
    SWEEP_FILE, SWEEP_OWN_RUN_FLAGS, SWEEP_SCHEMA_VERSION, SweepError, SweepFile, SweepMember,
    SweepSpec, check_templates, combinations, holds_redacted, log_tail, own_run_flag, parse_grid,
    placeholders, redact_args, render, secret_values, stored_command, sweep_id, wants_port,
};
pub use sweep_pick::{
    CapacityEntry, ComboRows, FrontierPoint, SloPick, frontier_points, frontier_tok_per_s_per_user,
    mark_frontier, pareto_frontier, slo_picks,
};
pub use workload::{
    MOONCAKE_BLOCK_TOKENS, PrefixPrediction, TimeScaleSpec, Workload, WorkloadError, WorkloadKind,
    WorkloadRequest, WorkloadSpec, predicted_cached_tokens, trace_offsets,
};
pub use workload::{PromptBody, PromptLineFault, PromptsSource, UserPrompt, UserPrompts};

// The run's metadata, the results store and what keeps secrets out of both.
pub use cell::{ClockSync, MergedShard, MergedShards, ShardCell};
pub use diag::{
    BoundedText, DiagInputs, Diagnostics, DriverSetting, ENV_PREFIXES, EnvVar, MAX_ENV_VALUE_BYTES,
    MAX_ENV_VARS, MAX_TOPOLOGY_BYTES, P2pOverride, ProbeError, Probed, RawText, SmiHeader, Uname,
    bounded_text, diagnostic_env, looks_like_secret, p2p_from_registry_dwords, parse_nvidia_params,
    parse_proc_driver_version, parse_smi_header, parse_uname, redact_env_value,
    source as diag_source,
};
pub use hw::{
    CpuReading, GpuReading, HwSample, HwSummary, NVIDIA_SMI_QUERIES, NVIDIA_SMI_QUERY, NvmlRaw,
    SmiParseError, parse_clock_event_reasons, parse_nvidia_smi, parse_nvidia_smi_events,
};
pub use import_aiperf::{
    AIPERF, AIPERF_DEFINITIONS, AIPERF_ERROR_KIND, AIPERF_UNJUDGED, AiperfExport, aiperf_cell,
    import_aiperf, parse_aiperf_export,
};
pub use import_common::{ImportError, ImportFile, ImportedRun};
pub use import_guidellm::{
    GUIDELLM, GUIDELLM_DEFINITIONS, GUIDELLM_ERROR_KIND, GUIDELLM_UNJUDGED, GuidellmBenchmark,
    GuidellmReport, guidellm_cell, import_guidellm, parse_guidellm_report,
};
pub use import_vllm::{
    VLLM_BENCH, VLLM_DEFINITIONS, VLLM_ERROR_KIND, VLLM_UNJUDGED, VllmFile, VllmResult,
    import_vllm, parse_vllm_result, vllm_cell,
};
pub use meta::{
    Capabilities, EngineInfo, EngineKind, HardwareInfo, ModelInfo, Sourced, TokenCountSource,
};
pub use redact::{
    REDACTED, is_secret_name, redact_command, redact_json, redact_strings, redact_text,
    sanitize_terminal, strip_url_userinfo, url_password,
};
pub use run::{RunInfo, RunState, SCHEMA_VERSION, ToolInfo};
pub use slot::{Slot, SlotKind, SlotRecord};
pub use store::{
    CELLS_FILE, JsonLines, LoadedRun, REQUESTS_FILE, RUN_FILE, RunDir, SCHEDULES_FILE, StoreError,
    TELEMETRY_FILE, parse_cells, parse_requests, parse_schedules, parse_telemetry, records_by_cell,
};
pub use telemetry::{
    CellTelemetry, ClockEvents, CpuSeries, GpuSeries, HardwareVerdict, HwSeries, PhaseMark,
    ServerSample, ServerSeries, VERDICT_MIN_FRACTION, VERDICT_MIN_SAMPLES, column_at,
    hardware_verdict,
};
pub use terminal::{LINE_MAX_CHARS, NAME_MAX_CHARS, cut_text, terminal_line, terminal_name};
pub use time::{now_rfc3339, parse_rfc3339_ns, rfc3339, rfc3339_nanos, unix_now_ns};
pub use timetable::{
    BUILD_TOK_PER_S, DEFAULT_PREP_S, DEFAULT_SHARD_PREFILL_TOK_PER_S, MatrixSlotSettings,
    PREFILL_FLOOR_NS, PREP_FIXED_NS, RAMP_FLOOR_NS, RATE_START_TOLERANCE_NS, SLOT_GRACE_NS,
    ShardSchedule, SlotParts, Timetable, TimetableSettings, matrix_slot_kind,
    parse_chrony_tracking, prefill_overrun, slot_lateness, slot_parts,
};

// The live view's arithmetic (rates, ETA) and the records of an eval run.
pub use accuracy::{Accuracy, Category, EvalSummary, ItemScore, Profile, Provenance, wilson_95};
pub use live::{
    DEFAULT_CELL_OVERHEAD_S, DEFAULT_PREFILL_TOK_PER_S, EtaInputs, RateMeter, eta_s, short_duration,
};

// Cost and energy per token, figures of each cell (issue 43).
mod energy;
pub use cell::{CellEconomics, GpusSource, PriceSource};
pub use energy::{
    CostSettings, CostUnknown, MAX_POWER_GAP_S, PowerInvalid, cell_economics, measured_span,
    trapezoid, usd_per_m_tokens, window_energy,
};

#[cfg(test)]
#[path = "tests/props.rs"]
mod props;
