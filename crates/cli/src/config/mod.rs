//! Run configuration: one typed struct, [`RunArgs`], is both the `run` flags (clap) and the
//! `--config` TOML file (serde). Each value is parsed into its type once, by one parser per
//! kind that both sides call (`value_parser` for a flag, `deserialize_with` for a key), and
//! the sources are merged field-wise with explicit precedence — defaults < file < environment
//! < flags — before [`RunArgs::settings`] checks them into [`llmib_core::Settings`], so
//! invalid states never reach the driver. `docs/config.md` lists every key.

use anyhow::{Context, Result, bail};
use clap::Args;
use llmib_core::EngineKind;
use llmib_core::{ArrivalPattern, LengthSpec, RateSpec, Slo, TimeScaleSpec, WorkloadSpec};
use llmib_dashboard::DisplayMode;
use serde::Deserialize;
use std::path::PathBuf;
use std::time::Duration;

/// Engine names accepted by `--engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineArg {
    /// SGLang.
    Sglang,
    /// vLLM.
    Vllm,
    /// llama.cpp's llama-server.
    #[value(name = "llama.cpp", alias = "llamacpp")]
    Llamacpp,
    /// Text Generation Inference.
    Tgi,
    /// TensorRT-LLM's trtllm-serve.
    #[value(name = "tensorrt-llm", alias = "trtllm")]
    TensorrtLlm,
    /// Ollama.
    Ollama,
    /// Any other OpenAI-compatible endpoint.
    #[value(name = "openai", alias = "generic")]
    Openai,
}

impl From<EngineArg> for EngineKind {
    fn from(e: EngineArg) -> Self {
        match e {
            EngineArg::Sglang => EngineKind::Sglang,
            EngineArg::Vllm => EngineKind::Vllm,
            EngineArg::Llamacpp => EngineKind::LlamaCpp,
            EngineArg::Tgi => EngineKind::Tgi,
            EngineArg::TensorrtLlm => EngineKind::TrtLlm,
            EngineArg::Ollama => EngineKind::Ollama,
            EngineArg::Openai => EngineKind::Generic,
        }
    }
}

/// Flags of `run` (and the matrix part of `demo`). Every flag but `--config` is also a key of
/// the `--config` file, spelled with `_` for `-` (`--max-output` is `max_output`), with the
/// same meaning: both go through the same parser.
#[derive(Debug, Clone, Default, PartialEq, Args, Deserialize)]
#[serde(default)]
pub struct RunArgs {
    /// Base URL of the server (`http://host:8000`, with or without `/v1`).
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub url: Option<String>,
    /// API key (also read from OPENAI_API_KEY). Never written to any output.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Model to request (default: the one the server lists).
    #[arg(long)]
    pub model: Option<String>,
    /// Force the engine instead of detecting it.
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub engine: Option<EngineArg>,
    /// Run the standard matrix, a published version (default: the latest, v1): contexts 0, 64K
    /// and 128K × concurrency 1, 8, 16, standalone prefill at 32K and 128K, fixed window and
    /// output length, so runs from different machines compare like with like. It fixes
    /// --contexts, --concurrency, --duration, --max-output, --prefill-contexts and
    /// --standalone-prefill.
    #[arg(long, value_name = "VERSION", num_args = 0..=1, default_missing_value = "v1")]
    pub standard: Option<String>,
    /// Contexts, comma-separated: 8K,16K,…,max,full (K = 1024 tokens).
    #[arg(long, value_parser = parse::contexts)]
    #[serde(deserialize_with = "de::contexts")]
    pub contexts: Option<ContextList>,
    /// Concurrency levels, comma-separated: 1,2,4,…
    #[arg(long, value_parser = parse::levels)]
    #[serde(deserialize_with = "de::levels")]
    pub concurrency: Option<Levels>,
    /// Length of each decode window (30s, 2m, 500ms).
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub duration: Option<Duration>,
    /// max_tokens of decode requests (default 4096).
    #[arg(long, value_parser = parse::max_output)]
    #[serde(deserialize_with = "de::max_output")]
    pub max_output: Option<u32>,
    /// KV cache capacity in tokens, overriding what the server reports.
    #[arg(long, value_parser = parse::tokens)]
    #[serde(deserialize_with = "de::tokens")]
    pub kv_capacity: Option<u64>,
    /// Decode-context-parallel size: the server's reported KV capacity is multiplied by it.
    #[arg(long)]
    pub dcp_size: Option<u64>,
    /// Time budget for the whole run; cells after it are Not run (e.g. 2h).
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub max_time: Option<Duration>,
    /// Longest wait for all N requests to be running before a window opens anyway.
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub readiness_timeout: Option<Duration>,
    /// Longest wait from a request's send to its first token; a request that passes it fails
    /// its cell. Default: the prompts sent together at a slow 2,000 tok/s of prefill, at least
    /// 60 s (a 1M-token prefill gets 8.7 min).
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub first_token_timeout: Option<Duration>,
    /// Longest silence between two chunks of a stream (default 2m).
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub idle_timeout: Option<Duration>,
    /// The drain barrier: how long a decode cell waits for the server to be idle (running and
    /// waiting gauges at zero) before it is Failed: server busy instead of measured (default
    /// 30s).
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub busy_timeout: Option<Duration>,
    /// Turn the repetition guard off: by default a request whose text falls into an exact loop
    /// (4 identical cycles spanning 4 KiB) fails its cell as Failed: loop. For deliberately
    /// repetitive workloads.
    #[arg(long)]
    pub no_loop_detection: bool,
    /// Forced-token decode, a route diagnostic: every request biases this token id by +100
    /// at temperature 0 (EOS ignored), so sampling is trivial and decode runs as fast as the
    /// path allows.
    #[arg(long, value_name = "ID")]
    pub forced_token_id: Option<u32>,
    /// Keep per-request records (per-chunk offsets and token counts) in requests.jsonl.
    #[arg(long)]
    pub save_requests: bool,
    /// Keep each measured request's generated text (the answer's content, secrets redacted)
    /// in its requests.jsonl record, as `text`; implies --save-requests.
    #[arg(long)]
    pub save_texts: bool,
    /// Hardware description for a remote server, e.g. "8x RTX PRO 6000 96GB".
    #[arg(long)]
    pub hardware: Option<String>,
    /// The server's launch command, for the report (secrets are redacted).
    #[arg(long)]
    pub launch_command: Option<String>,
    /// Set by `sweep` on each combination's run (JSON): the sweep and combination, recorded in
    /// run.json so the hub keeps one sweep's runs as one group. Not for hand use.
    #[arg(long, hide = true, value_parser = parse::sweep_member)]
    #[serde(skip)]
    pub sweep_member: Option<llmib_core::SweepMember>,
    /// TOML file with any of these settings; flags override it.
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// Results directory (default: `results/run-TIMESTAMP`).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// With --resume: measure the Failed cells again too (a server that crashed is back).
    #[arg(long)]
    pub retry_failed: bool,
    /// Replace the run already in the --output directory (by default that is refused).
    #[arg(long)]
    pub force: bool,
    /// Continue an interrupted run in DIR: only missing or Not run cells are measured.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
    /// Report formats written at the end (html,md,csv,json; `none` to skip).
    #[arg(long, value_parser = parse::formats)]
    #[serde(deserialize_with = "de::formats")]
    pub format: Option<Formats>,
    /// The endpoint the requests go to: `completions` (`/v1/completions`), `chat`
    /// (`/v1/chat/completions`, one user message; the chat template's tokens are measured and
    /// subtracted so prompts stay exact), `messages` (Anthropic Messages, `/v1/messages`),
    /// `responses` (OpenAI Responses, `/v1/responses`), or `auto` (the default): completions
    /// for a detected engine, chat for an unknown OpenAI-compatible endpoint (hosted APIs often
    /// serve chat only).
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub api: Option<ApiArg>,
    /// Which headers carry the API key: `bearer` (`Authorization: Bearer`), `x-api-key`
    /// (Anthropic's), or `both`; default: both for `--api messages`, bearer otherwise.
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub api_key_header: Option<KeyHeaderArg>,
    /// Make every decode cell a Burst / E2E cell: R measured requests, at most N in flight,
    /// timed from the first send to the last end (the sustained matrix is not run).
    #[arg(long, value_name = "R")]
    pub request_count: Option<u32>,
    /// Requests sent before each burst and left out of its figures (default: the cell's
    /// concurrency, as the seed: every slot warms once; 0 for none).
    #[arg(long, value_name = "W", alias = "warmup-request-count")]
    #[serde(alias = "warmup_request_count")]
    pub burst_warmup_request_count: Option<u32>,
    /// A hidden decode cell of S seconds before the first measured cell, at the largest
    /// context and the largest concurrency that fits (the seed's first-cell cold-start fix;
    /// default 0: none; the one-request hidden warm-up always runs).
    #[arg(long, value_name = "S")]
    pub decode_warmup_seconds: Option<f64>,
    /// Add a Burst / E2E matrix after the sustained one (N × `--burst-requests-per-concurrency`
    /// requests per cell, or `--request-count`).
    #[arg(long)]
    pub run_burst: bool,
    /// Measured requests per unit of N in a burst (default 5).
    #[arg(long, value_name = "K")]
    pub burst_requests_per_concurrency: Option<u32>,
    /// A `tokenizer.json` (Hugging Face format) to count chunk texts with when the server has
    /// no tokenize endpoint (hosted APIs), instead of one token per chunk.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<String>,
    /// The server's own prefill rate beside the client's (from its prompt-token and
    /// prefill-time counters, where it exports them): `client` (off), `server` (and say when
    /// unavailable) or `auto` (the default).
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub prefill_metric: Option<PrefillMetricArg>,
    /// Run no prefill cells (decode cells still warm their prompts first).
    #[arg(long, conflicts_with = "prefill_only")]
    pub skip_prefill: bool,
    /// Run only the prefill cells: the prefill table alone.
    #[arg(long)]
    pub prefill_only: bool,
    /// Extra contexts measured by a prefill cell only, comma-separated (e.g. 2K,4K); default
    /// 8K, the seed tool's sanity point; `none` for no extra context.
    #[arg(long, value_name = "LIST", value_parser = parse::prefill_contexts)]
    #[serde(deserialize_with = "de::prefill_contexts")]
    pub prefill_contexts: Option<ContextList>,
    /// Measure each prefill K times cold (a prompt of its own each time): the median and the
    /// spread (default K = 3 when the flag is given alone).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "3")]
    pub standalone_prefill: Option<u32>,
    /// A KV budget in tokens (e.g. 2M): the Over capacity prediction uses it where it is
    /// smaller than what the server reports, or where the server reports nothing.
    #[arg(long, value_name = "TOKENS", value_parser = parse::tokens)]
    #[serde(deserialize_with = "de::tokens")]
    pub max_total_tokens: Option<u64>,
    /// Measure the cells predicted Over capacity anyway; their rows are marked (the server
    /// queues or preempts there, so their figures are not a fitting cell's).
    #[arg(long)]
    pub show_capacity_limited_values: bool,
    /// How often this machine's GPUs and CPU are read (default 500ms, at least 100ms).
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub hw_monitor_interval: Option<Duration>,
    /// Read only the first N GPUs (the server's, on a machine that has more).
    #[arg(long, value_name = "N")]
    pub hw_gpu_limit: Option<usize>,
    /// Dashboard redraws per second (default 4, 1 to 30).
    #[arg(long, value_name = "HZ")]
    pub refresh_rate: Option<f64>,
    /// Which client reads the measured streams: `auto` (the default: `raw` for an `http://` or
    /// `https://` URL without credentials reached without a proxy, else `reqwest`), `raw`, a
    /// minimal HTTP/1.1 reader (TLS by rustls) that stamps each chunk with the kernel's
    /// receive time (Linux), or `reqwest`. run.json's engine info says which, why, and whose
    /// timestamps.
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub http_reader: Option<HttpReaderArg>,
    /// Sampling temperature sent with every generation request (default: the server's).
    /// Token counts stay exact with sampling on: they come from the server's usage.
    #[arg(long, value_name = "T")]
    pub temperature: Option<f64>,
    /// Nucleus sampling `top_p` sent with every generation request.
    #[arg(long, value_name = "P")]
    pub top_p: Option<f64>,
    /// The server's sampling `seed`, sent with every generation request (not the prompts'
    /// seed).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// A JSON object merged into every generation request (e.g. '{"reasoning_effort":"low"}'
    /// or '{"chat_template_kwargs":{"enable_thinking":false}}'); the tool's own keys
    /// (max_tokens, stream, …) are refused.
    #[arg(long, value_name = "JSON", value_parser = parse::extra_body)]
    #[serde(deserialize_with = "de::extra_body")]
    pub extra_body: Option<ExtraBody>,
    /// Open load: per context, one rate cell per request rate (requests/s, comma-separated),
    /// or `auto[:K]`: the synchronous rate and the saturation throughput first, then K rates
    /// spanning them (default 8). Each cell sends for `--duration`.
    #[arg(long, value_name = "R,…|auto[:K]", value_parser = parse::request_rate)]
    #[serde(deserialize_with = "de::request_rate")]
    pub request_rate: Option<RateSpec>,
    /// How open-load requests (and --session-rate sessions) arrive: `poisson` (the default),
    /// `constant`, or `gamma:SHAPE` (shape below 1 is burstier than poisson).
    #[arg(long, value_name = "PATTERN", value_parser = parse::arrival)]
    #[serde(deserialize_with = "de::arrival")]
    pub arrival: Option<ArrivalPattern>,
    /// The SLO open-load cells (and decode cells) are judged against: limits on per-request
    /// figures at a quantile, e.g. ttft_p99=2s,tpot_p50=40ms,e2e_p90=30s,user_tok_s_p10=20.
    #[arg(long, value_name = "LIMITS", value_parser = parse::slo)]
    #[serde(deserialize_with = "de::slo")]
    pub slo: Option<Slo>,
    /// Latency percentiles beyond p50, p90 and p99 in every decode, rate and session row's
    /// TTFT, TBT/ITL, TPOT and E2E, e.g. 50,90,99,99.9 (as vLLM's --metric-percentiles).
    #[arg(long, value_name = "LIST", value_parser = parse::percentiles)]
    #[serde(deserialize_with = "de::percentiles")]
    pub percentiles: Option<parse::Percentiles>,
    /// Search each context for the largest request rate whose cell holds the SLO (needs
    /// --slo); one capacity row per context.
    #[arg(long)]
    pub find_capacity: bool,
    /// The capacity search stops when its bracket is this narrow, a fraction (default 0.05).
    #[arg(long, value_name = "FRACTION", value_parser = parse::precision)]
    #[serde(deserialize_with = "de::precision")]
    pub capacity_precision: Option<f64>,
    /// Open load: at most N requests in flight; the rest wait (client queue time).
    #[arg(long, value_name = "N")]
    pub max_concurrency: Option<u32>,
    /// Open load: how long requests still running when a cell's schedule ends are waited for
    /// before they are cut and counted as failed (default 2m).
    #[arg(long, value_parser = parse::duration)]
    #[serde(deserialize_with = "de::duration")]
    pub drain_timeout: Option<Duration>,
    /// Run the open-load cells without the closed-loop decode matrix.
    #[arg(long, conflicts_with = "prefill_only")]
    pub skip_decode: bool,
    /// Open load: each request's prompt length, drawn from `4K` (fixed), `4K:normal:512` or
    /// `1K..16K` (uniform); one open-load section labelled by it replaces the per-context ones.
    #[arg(long, value_name = "LENGTH", value_parser = parse::length)]
    #[serde(deserialize_with = "de::length")]
    pub input_len: Option<LengthSpec>,
    /// Open load: each request's output length (`max_tokens`, EOS ignored), drawn as
    /// --input-len is (default --max-output).
    #[arg(long, value_name = "LENGTH", value_parser = parse::length)]
    #[serde(deserialize_with = "de::length")]
    pub output_len: Option<LengthSpec>,
    /// Open load from a file: `sharegpt:FILE` (lengths, filler sent at --request-rate),
    /// `sharegpt-text:FILE` (each first human message sent with its words, asking its recorded
    /// reply's length), a trace replayed with its own arrivals, `mooncake:FILE` or
    /// `azure:FILE` (one rate row), or `prompts:FILE`: your own prompts (JSONL, `{"prompt": …}`
    /// or `{"messages": […]}` with an optional `max_tokens`), sent as written at
    /// --request-rate; for texts run.json records the file's name, size and sha256, never its
    /// text. Replayed as sessions (docs/sessions.md): `sessions:FILE` (this tool's session
    /// trace) or `weka:FILE` (Weka agentic coding traces, as AIPerf and AgentX replay them).
    #[arg(long, value_name = "KIND:FILE", value_parser = parse::workload)]
    #[serde(deserialize_with = "de::workload")]
    pub workload: Option<WorkloadSpec>,
    /// A trace's replay speed: K (2 replays twice as fast; default 1), or `auto` with --slo:
    /// the largest K that holds the SLO.
    #[arg(long, value_name = "K|auto", value_parser = parse::time_scale)]
    #[serde(deserialize_with = "de::time_scale")]
    pub time_scale: Option<TimeScaleSpec>,
    /// End a decode window (once its output tok/s settles) or a rate cell's schedule (once its
    /// output tok/s and p99 TTFT settle) early: when the 95 % confidence half-widths (batch
    /// means) are within this share of their means (`2%`); never past --duration. The row
    /// says how long it ran and why it stopped.
    #[arg(long, value_name = "PCT", value_parser = parse::stable_target)]
    #[serde(deserialize_with = "de::stable_target")]
    pub until_stable: Option<llmib_core::StableTarget>,
    /// The session flags (`--sessions`, `--turns`, …: `config/sessions.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub session: session_args::SessionArgs,
    /// The price and GPU count of the cost figures (`--gpu-hour-usd`, …: `config/cost_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub cost: cost_args::CostArgs,
    /// How prompts are made (`--token-targeting`, `--prompt-text`: `config/prompt_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub prompts: prompt_args::PromptArgs,
    /// The probe requests (`--probe-rate`, …: `config/probe_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub probe: probe_args::ProbeArgs,
    /// The LoRA adapters (`--lora`, `--lora-assign`: `config/lora_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub lora: lora_args::LoraArgs,
    /// Structured output and tools (`--response-format`, `--tools`, `--tool-choice`:
    /// `config/structured_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub structured: structured_args::StructuredArgs,
    /// The images in requests (`--images`, `--image-size`: `config/image_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub images: image_args::ImageArgs,
    /// The mixed-prefill cells (`--mixed-prefill`, …: `config/mixed_args.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub mixed: mixed_args::MixedArgs,
    /// The shard flags (`--shard`, `--shards`, `--start-at`, …: `config/shard_flags.rs`).
    #[command(flatten)]
    #[serde(flatten)]
    pub sharding: shard_flags::ShardFlags,
    /// The server runs one request at a time (mlx-lm style): a window opens once tokens flow
    /// on one stream, and the report says that aggregate tok/s above N = 1 measures a queue.
    #[arg(long)]
    pub serial_server: bool,
    /// Let requests end at the model's EOS (by default `ignore_eos` keeps every request to
    /// max-output tokens): the report says so, and rows count the requests that stopped early.
    #[arg(long)]
    pub respect_eos: bool,
    /// What the terminal shows while the run works: `tui` (a full-screen dashboard; the
    /// default on a terminal), `plain` (a line per event; the default otherwise) or `json`
    /// (one JSON event per line, for scripts).
    #[arg(long, value_enum)]
    #[serde(deserialize_with = "de::value_enum")]
    pub display: Option<DisplayMode>,
    /// Do not read this machine's GPUs and CPU (the dashboard's hardware panel, and each
    /// row's hardware summary when the server runs here).
    #[arg(long)]
    pub no_hw_monitor: bool,
    /// Also write every progress event to FILE, one JSON line each with its wall-clock and
    /// monotonic time, flushed line by line (to line other tools' telemetry up with the cells).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Serve the run's live figures as Prometheus text at http://ADDR/metrics while it runs
    /// (the cell in progress, cells done and planned, errors, tok/s, TTFT and TPOT histograms);
    /// closed when the run ends. ADDR is HOST:PORT (127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<String>,
    /// Hardware card set by the caller (the demo's simulator); not a flag.
    #[arg(skip)]
    #[serde(skip)]
    pub hardware_info: Option<llmib_core::HardwareInfo>,
}

/// `--api`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ApiArg {
    /// Completions for a detected engine, chat for an unknown endpoint.
    #[default]
    Auto,
    /// `/v1/completions`.
    Completions,
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/messages` (Anthropic Messages).
    Messages,
    /// `/v1/responses` (OpenAI Responses).
    Responses,
}

/// `--api-key-header`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum KeyHeaderArg {
    /// `Authorization: Bearer KEY`.
    Bearer,
    /// `x-api-key: KEY`.
    XApiKey,
    /// Both headers.
    Both,
}

impl From<KeyHeaderArg> for llmib_client::KeyHeader {
    fn from(a: KeyHeaderArg) -> Self {
        match a {
            KeyHeaderArg::Bearer => llmib_client::KeyHeader::Bearer,
            KeyHeaderArg::XApiKey => llmib_client::KeyHeader::XApiKey,
            KeyHeaderArg::Both => llmib_client::KeyHeader::Both,
        }
    }
}

impl ApiArg {
    /// The endpoint asked for; `None` lets the probe choose by the engine it finds.
    pub fn choice(self) -> Option<llmib_core::Api> {
        use llmib_core::Api;
        match self {
            ApiArg::Completions => Some(Api::Completions),
            ApiArg::Chat => Some(Api::Chat),
            ApiArg::Messages => Some(Api::Messages),
            ApiArg::Responses => Some(Api::Responses),
            ApiArg::Auto => None,
        }
    }
}

/// `--http-reader`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HttpReaderArg {
    /// The raw reader where it reads the endpoint as reqwest would, else reqwest
    /// (`llmib_client::HttpReader::auto`).
    #[default]
    Auto,
    /// The shared reqwest client.
    Reqwest,
    /// The raw HTTP/1.1 reader with kernel receive timestamps (`http://`, `https://`).
    Raw,
}

/// `--prefill-metric`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum PrefillMetricArg {
    /// The client's figure only.
    Client,
    /// The server's too, with a note where it is unavailable.
    Server,
    /// The server's where available.
    #[default]
    Auto,
}

impl From<PrefillMetricArg> for llmib_core::PrefillMetric {
    fn from(m: PrefillMetricArg) -> Self {
        use llmib_core::PrefillMetric;
        match m {
            PrefillMetricArg::Client => PrefillMetric::Client,
            PrefillMetricArg::Server => PrefillMetric::Server,
            PrefillMetricArg::Auto => PrefillMetric::Auto,
        }
    }
}

pub mod parse;
pub use parse::{ContextList, ExtraBody, Formats, Levels};
pub use prompt_args::TargetingArg;

mod de;

pub mod session_args;

pub mod cost_args;
pub mod image_args;
pub mod lora_args;
pub mod mixed_args;
pub mod probe_args;
pub mod prompt_args;
pub mod shard_flags;
pub mod structured_args;

// The flags checked into what a run is given, beside the flags themselves.
pub mod load;
pub mod resume;
pub mod sessions;
pub mod settings;
pub mod shard_args;
pub mod workload_check;

impl RunArgs {
    /// Fills every flag that was not given from the `--config` file (flags win; clap has
    /// already applied the environment, which therefore also wins over the file).
    pub fn merge_file(self) -> Result<Self> {
        let Some(path) = self.config.clone() else {
            return Ok(self);
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        self.merge_text(&text, &path.display().to_string())
    }

    /// [`RunArgs::merge_file`] on the text of a config file; `origin` names it in errors.
    /// Apart so the loader can be fuzzed without a file (`fuzz/fuzz_targets/config.rs`).
    pub fn merge_text(self, text: &str, origin: &str) -> Result<Self> {
        let table: toml::Table =
            toml::from_str(text).with_context(|| format!("{origin} is not a valid config file"))?;
        check_keys(&table, origin)?;
        let file: RunArgs =
            toml::from_str(text).with_context(|| format!("{origin} is not a valid config file"))?;
        Ok(self.or(file))
    }

    /// Field-wise merge: every value of `self` that is set wins over `lower`'s (a switch is on
    /// when either turns it on). The macro destructures `lower` whole, so a new field is a
    /// compile error here until it is merged.
    pub fn or(self, lower: RunArgs) -> RunArgs {
        macro_rules! merge {
            (values: $($v:ident),*; switches: $($s:ident),*) => {{
                let RunArgs { $($v,)* $($s,)* } = lower;
                RunArgs { $($v: self.$v.or($v),)* $($s: self.$s || $s,)* }
            }};
        }
        merge!(
            values: url, api_key, model, engine, standard, contexts, concurrency, duration, max_output,
                kv_capacity, dcp_size, max_time, readiness_timeout, first_token_timeout,
                idle_timeout, busy_timeout, forced_token_id, hardware, launch_command,
                sweep_member, config, output, resume, format, api,
                api_key_header,
                request_count, burst_warmup_request_count, burst_requests_per_concurrency, tokenizer,
                decode_warmup_seconds,
                prefill_metric, prefill_contexts, standalone_prefill, display,
                request_rate, arrival, slo, percentiles, capacity_precision, max_concurrency, drain_timeout,
                input_len, output_len, workload, time_scale, until_stable,
                session,
                mixed,
                probe,
                lora,
                images,
                structured,
                sharding,
                temperature, top_p, seed, extra_body, max_total_tokens, hw_monitor_interval,
                hw_gpu_limit, refresh_rate, http_reader, events, metrics_listen, cost, prompts,
                hardware_info;
            switches: save_requests, save_texts, retry_failed, force, run_burst, skip_prefill,
                prefill_only, find_capacity, skip_decode, show_capacity_limited_values,
                serial_server, respect_eos, no_hw_monitor, no_loop_detection
        )
    }
}

/// The keys a config file may hold: every `run` argument of the clap definition but
/// `--config` itself.
pub fn file_keys() -> Vec<String> {
    // A hidden flag is set by the tool itself (`--sweep-member`, by `sweep`), not a setting.
    RunArgs::augment_args(clap::Command::new("run"))
        .get_arguments()
        .filter(|a| !a.is_hide_set())
        .map(|a| a.get_id().to_string())
        .filter(|id| id != "config")
        .collect()
}

/// The keys a config file may hold, old names included: every key of [`file_keys`] and the
/// key of each flag's long alias (`warmup_request_count`, read as
/// `burst_warmup_request_count`), so a file written for an older version still loads.
fn accepted_keys() -> Vec<String> {
    let cmd = RunArgs::augment_args(clap::Command::new("run"));
    let aliases: Vec<String> = cmd
        .get_arguments()
        .flat_map(|a| a.get_all_aliases().unwrap_or_default())
        .map(|a| a.replace('-', "_"))
        .collect();
    file_keys().into_iter().chain(aliases).collect()
}

/// Refuses a key that no flag has, naming it and the nearest key (a typo must not be a
/// setting silently left at its default).
fn check_keys(table: &toml::Table, origin: &str) -> Result<()> {
    let known = accepted_keys();
    for key in table.keys() {
        if key == "config" {
            bail!("{origin}: `config` cannot be set inside a config file; pass --config once");
        }
        if known.iter().any(|k| k == key) {
            continue;
        }
        match nearest(key, &known) {
            Some(near) => bail!(
                "{origin}: unknown key `{key}`; did you mean `{near}`? (docs/config.md lists every key)"
            ),
            None => bail!("{origin}: unknown key `{key}` (docs/config.md lists every key)"),
        }
    }
    Ok(())
}

/// The known key closest to `key` by edit distance (`-` read as `_`), if it is close enough
/// to be a plausible typo.
fn nearest<'a>(key: &str, known: &'a [String]) -> Option<&'a str> {
    let key = key.replace('-', "_");
    known
        .iter()
        .map(|k| (edit_distance(&key, k), k))
        .min()
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .map(|(_, k)| k.as_str())
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diag
            } else {
                1 + diag.min(above).min(row[j])
            };
            diag = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests;
