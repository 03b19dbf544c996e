//! Run configuration in two stages: raw input (flags, a TOML file, environment) is merged with
//! explicit precedence — defaults < file < environment < flags — and then validated into
//! [`llmib_core::plan::Settings`] plus connection options, so invalid states never reach the
//! driver.

use anyhow::{Context, Result, bail};
use clap::Args;
use llmib_core::meta::EngineKind;
use llmib_core::plan::Settings;
use llmib_core::size::{parse_context_list, parse_duration, parse_tokens};
use serde::Deserialize;
use std::path::PathBuf;

/// Engine names accepted by `--engine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EngineArg {
    /// SGLang.
    Sglang,
    /// vLLM.
    Vllm,
    /// llama.cpp's llama-server.
    #[value(name = "llama.cpp", alias = "llamacpp")]
    #[serde(alias = "llama.cpp")]
    Llamacpp,
    /// Text Generation Inference.
    Tgi,
    /// TensorRT-LLM's trtllm-serve.
    #[value(name = "tensorrt-llm", alias = "trtllm")]
    #[serde(alias = "trtllm")]
    TensorrtLlm,
    /// Ollama.
    Ollama,
    /// Any other OpenAI-compatible endpoint.
    #[value(name = "openai", alias = "generic")]
    #[serde(alias = "generic")]
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

/// Flags of `run` (and the matrix part of `demo`). Every flag can also be set in `--config`.
#[derive(Debug, Clone, Default, Args)]
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
    pub engine: Option<EngineArg>,
    /// Contexts, comma-separated: 8K,16K,…,max,full (K = 1024 tokens).
    #[arg(long)]
    pub contexts: Option<String>,
    /// Concurrency levels, comma-separated: 1,2,4,…
    #[arg(long)]
    pub concurrency: Option<String>,
    /// Length of each decode window (30s, 2m, 500ms).
    #[arg(long)]
    pub duration: Option<String>,
    /// max_tokens of decode requests (default 4096).
    #[arg(long)]
    pub max_output: Option<String>,
    /// KV cache capacity in tokens, overriding what the server reports.
    #[arg(long)]
    pub kv_capacity: Option<String>,
    /// Decode-context-parallel size: the server's reported KV capacity is multiplied by it.
    #[arg(long)]
    pub dcp_size: Option<u64>,
    /// Time budget for the whole run; cells after it are Not run (e.g. 2h).
    #[arg(long)]
    pub max_time: Option<String>,
    /// Longest wait for all N requests to be running before a window opens anyway.
    #[arg(long)]
    pub readiness_timeout: Option<String>,
    /// Longest wait from a request's send to its first token (default 10m); a request that
    /// passes it fails its cell.
    #[arg(long)]
    pub first_token_timeout: Option<String>,
    /// Longest silence between two chunks of a stream (default 2m).
    #[arg(long)]
    pub idle_timeout: Option<String>,
    /// Keep per-request records (per-chunk offsets and token counts) in requests.jsonl.
    #[arg(long)]
    pub save_requests: bool,
    /// Hardware description for a remote server, e.g. "8x RTX PRO 6000 96GB".
    #[arg(long)]
    pub hardware: Option<String>,
    /// The server's launch command, for the report (secrets are redacted).
    #[arg(long)]
    pub launch_command: Option<String>,
    /// TOML file with any of these settings; flags override it.
    #[arg(long)]
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
    #[arg(long)]
    pub format: Option<String>,
    /// The endpoint the requests go to: `completions` (`/v1/completions`), `chat`
    /// (`/v1/chat/completions`, one user message; the chat template's tokens are measured and
    /// subtracted so prompts stay exact), or `auto`: completions for a detected engine, chat
    /// for an unknown OpenAI-compatible endpoint (hosted APIs often serve chat only).
    #[arg(long, value_enum, default_value = "auto")]
    pub api: ApiArg,
    /// Make every decode cell a Burst / E2E cell: R measured requests, at most N in flight,
    /// timed from the first send to the last end (the sustained matrix is not run).
    #[arg(long, value_name = "R")]
    pub request_count: Option<u32>,
    /// Requests sent before each burst and left out of its figures.
    #[arg(long, value_name = "W")]
    pub warmup_request_count: Option<u32>,
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
    /// unavailable) or `auto`.
    #[arg(long, value_enum, default_value = "auto")]
    pub prefill_metric: PrefillMetricArg,
    /// Run no prefill cells (decode cells still warm their prompts first).
    #[arg(long, conflicts_with = "prefill_only")]
    pub skip_prefill: bool,
    /// Run only the prefill cells: the prefill table alone.
    #[arg(long)]
    pub prefill_only: bool,
    /// Extra contexts measured by a prefill cell only, comma-separated (e.g. 2K,4K); default
    /// 8K, the seed tool's sanity point; `none` for no extra context.
    #[arg(long, value_name = "LIST")]
    pub prefill_contexts: Option<String>,
    /// Measure each prefill K times cold (a prompt of its own each time): the median and the
    /// spread (default K = 3 when the flag is given alone).
    #[arg(long, value_name = "K", num_args = 0..=1, default_missing_value = "3")]
    pub standalone_prefill: Option<u32>,
    /// The server runs one request at a time (mlx-lm style): a window opens once tokens flow
    /// on one stream, and the report says that aggregate tok/s above N = 1 measures a queue.
    #[arg(long)]
    pub serial_server: bool,
    /// Let requests end at the model's EOS (by default `ignore_eos` keeps every request to
    /// max-output tokens): the report says so, and rows count the requests that stopped early.
    #[arg(long)]
    pub respect_eos: bool,
    /// How prompts are made C tokens long: `exact` (the server's tokenizer), `estimate` (from
    /// the server's `usage.prompt_tokens` of probe requests, within 0.5%; for endpoints
    /// without a tokenizer; contexts show as `≈`), or `auto`: exact where a tokenizer exists.
    #[arg(long, value_enum, default_value = "auto")]
    pub token_targeting: TargetingArg,
    /// What the terminal shows while the run works: `tui` (a full-screen dashboard; the
    /// default on a terminal), `plain` (a line per event; the default otherwise) or `json`
    /// (one JSON event per line, for scripts).
    #[arg(long, value_enum)]
    pub display: Option<DisplayMode>,
    /// Do not read this machine's GPUs and CPU (the dashboard's hardware panel, and each
    /// row's hardware summary when the server runs here).
    #[arg(long)]
    pub no_hw_monitor: bool,
    /// Hardware card set by the caller (the demo's simulator); not a flag.
    #[arg(skip)]
    pub hardware_info: Option<llmib_core::meta::HardwareInfo>,
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
}

impl ApiArg {
    /// The endpoint for a server detected as `kind`.
    pub fn resolve(self, kind: EngineKind) -> llmib_core::plan::Api {
        use llmib_core::plan::Api;
        match self {
            ApiArg::Completions => Api::Completions,
            ApiArg::Chat => Api::Chat,
            ApiArg::Auto if kind == EngineKind::Generic => Api::Chat,
            ApiArg::Auto => Api::Completions,
        }
    }
}

/// `--token-targeting`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TargetingArg {
    /// Exact where the server has a tokenizer, estimated otherwise.
    #[default]
    Auto,
    /// With the server's tokenizer.
    Exact,
    /// From the server's usage.
    Estimate,
}

impl TargetingArg {
    /// The targeting for a server that has (or lacks) a tokenizer.
    pub fn resolve(self, has_tokenizer: bool) -> llmib_core::plan::Targeting {
        use llmib_core::plan::Targeting;
        match self {
            TargetingArg::Exact => Targeting::Exact,
            TargetingArg::Estimate => Targeting::Estimate,
            TargetingArg::Auto if has_tokenizer => Targeting::Exact,
            TargetingArg::Auto => Targeting::Estimate,
        }
    }
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

/// `--display`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DisplayMode {
    /// Full-screen dashboard.
    Tui,
    /// A line per event and per finished cell.
    Plain,
    /// One JSON object per event.
    Json,
}

/// The same settings as a TOML file (`--config bench.toml`). Sizes may be numbers or strings.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    url: Option<String>,
    api_key: Option<String>,
    model: Option<String>,
    engine: Option<EngineArg>,
    contexts: Option<ListOrString>,
    concurrency: Option<ListOrString>,
    duration: Option<NumOrString>,
    max_output: Option<NumOrString>,
    kv_capacity: Option<NumOrString>,
    dcp_size: Option<u64>,
    max_time: Option<NumOrString>,
    readiness_timeout: Option<NumOrString>,
    first_token_timeout: Option<NumOrString>,
    idle_timeout: Option<NumOrString>,
    save_requests: Option<bool>,
    hardware: Option<String>,
    launch_command: Option<String>,
    output: Option<PathBuf>,
    format: Option<ListOrString>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum NumOrString {
    Num(u64),
    Float(f64),
    Str(String),
}

impl NumOrString {
    fn into_string(self) -> String {
        match self {
            NumOrString::Num(n) => n.to_string(),
            NumOrString::Float(f) => f.to_string(),
            NumOrString::Str(s) => s,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ListOrString {
    List(Vec<NumOrString>),
    Str(String),
}

impl ListOrString {
    fn into_string(self) -> String {
        match self {
            ListOrString::Str(s) => s,
            ListOrString::List(v) => v
                .into_iter()
                .map(NumOrString::into_string)
                .collect::<Vec<_>>()
                .join(","),
        }
    }
}

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
    pub fn merge_text(mut self, text: &str, origin: &str) -> Result<Self> {
        let f: FileConfig =
            toml::from_str(text).with_context(|| format!("{origin} is not a valid config file"))?;
        fn fill<T>(slot: &mut Option<T>, v: Option<T>) {
            if slot.is_none() {
                *slot = v;
            }
        }
        fill(&mut self.url, f.url);
        fill(&mut self.api_key, f.api_key);
        fill(&mut self.model, f.model);
        fill(&mut self.engine, f.engine);
        fill(
            &mut self.contexts,
            f.contexts.map(ListOrString::into_string),
        );
        fill(
            &mut self.concurrency,
            f.concurrency.map(ListOrString::into_string),
        );
        fill(&mut self.duration, f.duration.map(NumOrString::into_string));
        fill(
            &mut self.max_output,
            f.max_output.map(NumOrString::into_string),
        );
        fill(
            &mut self.kv_capacity,
            f.kv_capacity.map(NumOrString::into_string),
        );
        fill(&mut self.dcp_size, f.dcp_size);
        fill(&mut self.max_time, f.max_time.map(NumOrString::into_string));
        fill(
            &mut self.readiness_timeout,
            f.readiness_timeout.map(NumOrString::into_string),
        );
        fill(
            &mut self.first_token_timeout,
            f.first_token_timeout.map(NumOrString::into_string),
        );
        fill(
            &mut self.idle_timeout,
            f.idle_timeout.map(NumOrString::into_string),
        );
        fill(&mut self.hardware, f.hardware);
        fill(&mut self.launch_command, f.launch_command);
        fill(&mut self.output, f.output);
        fill(&mut self.format, f.format.map(ListOrString::into_string));
        self.save_requests |= f.save_requests.unwrap_or(false);
        Ok(self)
    }

    /// Validates the matrix settings.
    pub fn settings(&self) -> Result<Settings> {
        let mut s = Settings {
            respect_eos: self.respect_eos,
            serial_server: self.serial_server,
            skip_prefill: self.skip_prefill,
            tokenizer_file: self.tokenizer.clone(),
            prefill_metric: match self.prefill_metric {
                PrefillMetricArg::Client => llmib_core::plan::PrefillMetric::Client,
                PrefillMetricArg::Server => llmib_core::plan::PrefillMetric::Server,
                PrefillMetricArg::Auto => llmib_core::plan::PrefillMetric::Auto,
            },
            prefill_only: self.prefill_only,
            prefill_repeats: match self.standalone_prefill {
                Some(0) => bail!("--standalone-prefill takes at least 1 prefill per context"),
                Some(k) => k,
                None => 1,
            },
            ..Settings::default()
        };
        if self.request_count.is_some() || self.run_burst {
            let positive = |v: Option<u32>, flag: &str| -> Result<Option<u32>> {
                match v {
                    Some(0) => bail!("{flag} must be at least 1"),
                    v => Ok(v),
                }
            };
            s.burst = Some(llmib_core::plan::BurstSettings {
                request_count: positive(self.request_count, "--request-count")?,
                requests_per_concurrency: positive(
                    self.burst_requests_per_concurrency,
                    "--burst-requests-per-concurrency",
                )?
                .unwrap_or(5),
                warmup_request_count: self.warmup_request_count.unwrap_or(0),
                replace_sustained: !self.run_burst,
            });
        }
        s.prefill_contexts = match self.prefill_contexts.as_deref().map(str::trim) {
            // The seed tool's sanity point: a prefill at 8K in every run (it merges with an
            // 8K decode context; one that does not fit the server is listed as dropped).
            None => vec![llmib_core::size::ContextSpec::Tokens(8192)],
            Some("none") => Vec::new(),
            Some(c) => parse_context_list(c).context("--prefill-contexts")?,
        };
        if let Some(c) = &self.contexts {
            s.contexts = parse_context_list(c).context("--contexts")?;
            if s.contexts.is_empty() {
                bail!("--contexts is empty: give at least one size, e.g. 8K,16K");
            }
        }
        if let Some(c) = &self.concurrency {
            let mut v = Vec::new();
            for part in c.split(',').filter(|p| !p.trim().is_empty()) {
                let n: u32 = part
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .with_context(|| {
                        format!("--concurrency: `{part}` is not a positive whole number")
                    })?;
                v.push(n);
            }
            if v.is_empty() {
                bail!("--concurrency is empty: give levels like 1,2,4,8");
            }
            v.sort_unstable();
            v.dedup();
            s.concurrency = v;
        }
        if let Some(d) = &self.duration {
            s.duration_s = parse_duration(d).context("--duration")?.as_secs_f64();
        }
        if let Some(m) = &self.max_output {
            let m = parse_tokens(m).context("--max-output")?;
            s.max_output = u32::try_from(m).ok().context("--max-output is too large")?;
        }
        if let Some(t) = &self.max_time {
            s.max_time_s = Some(parse_duration(t).context("--max-time")?.as_secs_f64());
        }
        if let Some(t) = &self.readiness_timeout {
            s.readiness_timeout_s = parse_duration(t)
                .context("--readiness-timeout")?
                .as_secs_f64();
        }
        if let Some(t) = &self.first_token_timeout {
            s.first_token_timeout_s = parse_duration(t)
                .context("--first-token-timeout")?
                .as_secs_f64();
        }
        if let Some(t) = &self.idle_timeout {
            s.idle_timeout_s = parse_duration(t).context("--idle-timeout")?.as_secs_f64();
        }
        s.save_requests = self.save_requests;
        s.prompt_seed = fresh_seed();
        Ok(s)
    }

    /// The `--kv-capacity` override, parsed.
    pub fn kv_capacity(&self) -> Result<Option<u64>> {
        self.kv_capacity
            .as_deref()
            .map(|k| parse_tokens(k).context("--kv-capacity"))
            .transpose()
    }
}

/// A seed that differs between runs, so that no two runs share prompt prefixes (a server's
/// prefix cache must never serve one run's prompts to the next).
fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64) ^ (u64::from(std::process::id()) << 32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmib_core::size::ContextSpec;

    #[test]
    fn prefill_contexts_default_to_the_8k_sanity_point() {
        let with = |v: Option<&str>| {
            RunArgs {
                prefill_contexts: v.map(str::to_owned),
                ..Default::default()
            }
            .settings()
            .expect("settings")
            .prefill_contexts
        };
        assert_eq!(with(None), vec![ContextSpec::Tokens(8192)]);
        assert_eq!(with(Some("none")), vec![]);
        assert_eq!(
            with(Some("2K,4K")),
            vec![ContextSpec::Tokens(2048), ContextSpec::Tokens(4096)]
        );
    }

    #[test]
    fn flags_override_the_file() {
        let dir = std::env::temp_dir().join(format!("llmib-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("bench.toml");
        std::fs::write(&path, "contexts = [\"8K\", 16384]\nconcurrency = \"1,4\"\nduration = \"10s\"\nmax_output = 128\n").expect("write");
        let args = RunArgs {
            config: Some(path),
            duration: Some("2s".into()),
            ..Default::default()
        };
        let s = args
            .merge_file()
            .expect("merge")
            .settings()
            .expect("settings");
        assert_eq!(
            s.contexts,
            vec![ContextSpec::Tokens(8192), ContextSpec::Tokens(16384)]
        );
        assert_eq!(s.concurrency, vec![1, 4]);
        assert_eq!(s.duration_s, 2.0);
        assert_eq!(s.max_output, 128);
    }

    #[test]
    fn bad_values_are_errors_not_panics() {
        let args = RunArgs {
            concurrency: Some("1,x".into()),
            ..Default::default()
        };
        assert!(args.settings().is_err());
        let args = RunArgs {
            contexts: Some("8Q".into()),
            ..Default::default()
        };
        assert!(args.settings().is_err());
    }

    /// Any config file text, and any values in its keys, give settings or an error: never a
    /// panic (issue 12's config-loader property).
    mod props {
        use super::*;
        use proptest::prelude::*;

        fn value() -> impl Strategy<Value = String> {
            prop_oneof![
                "[0-9.eE+-]{1,24}",
                "\"[ -~]{0,24}\"",
                "\\[[0-9, \"a-zK]{0,24}\\]",
                Just("1e30".to_string()),
                Just("99999999999999999999".to_string()),
                Just("true".to_string()),
            ]
        }

        fn key() -> impl Strategy<Value = &'static str> {
            prop_oneof![
                Just("contexts"),
                Just("concurrency"),
                Just("duration"),
                Just("max_output"),
                Just("kv_capacity"),
                Just("max_time"),
                Just("readiness_timeout"),
                Just("first_token_timeout"),
                Just("idle_timeout"),
                Just("dcp_size"),
                Just("format"),
                Just("no_such_key"),
            ]
        }

        proptest! {
            #[test]
            fn any_config_file_gives_settings_or_an_error(
                pairs in proptest::collection::vec((key(), value()), 0..6),
                // Mostly clean files, so that the settings themselves get exercised.
                noise in prop_oneof![3 => Just(String::new()), 1 => "[ -~\n]{0,40}"],
            ) {
                let mut text: String = pairs.iter().map(|(k, v)| format!("{k} = {v}\n")).collect();
                text.push_str(&noise);
                let dir = std::env::temp_dir().join(format!(
                    "llmib-cfg-prop-{}-{:?}",
                    std::process::id(),
                    std::thread::current().id()
                ));
                std::fs::create_dir_all(&dir).expect("dir");
                let path = dir.join("bench.toml");
                std::fs::write(&path, &text).expect("write");
                let args = RunArgs { config: Some(path), ..Default::default() };
                if let Ok(a) = args.merge_file() {
                    if let Ok(s) = a.settings() {
                        prop_assert!(s.duration_s > 0.0 && s.duration_s.is_finite());
                    }
                    let _ = a.kv_capacity();
                }
            }
        }
    }
}
