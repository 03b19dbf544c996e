//! `eval`: its arguments, and the dispatch to `llmib_eval` (an accuracy profile, the
//! long-answer task, or MT-Bench's acceptance per category). Everything eval does lives in that crate; this file only turns flags
//! into its settings.

use anyhow::{Result, bail};
use clap::Args;
use llmib_eval::{AccuracyRun, Locate, Profile, Server, SpecRun, TaskPrompt, TaskRun};
use std::path::PathBuf;

pub use llmib_eval::{compare, is_eval_dir, rewrite_reports};

/// `eval` arguments.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Base URL of the server.
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub url: String,
    /// API key (also read from OPENAI_API_KEY). Never written to any output.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Model to request (default: the one the server lists).
    #[arg(long)]
    pub model: Option<String>,
    /// The API the answers come from: chat (the default), messages (Anthropic Messages) or
    /// responses (OpenAI Responses).
    #[arg(long, value_enum)]
    pub api: Option<EvalApi>,
    /// Profile: gsm8k, mmlu-pro or gpqa-diamond (accuracy), long-answer (completion-token
    /// statistics of one task; implied by --prompt or --prompt-file), or mt-bench (speculative
    /// decoding's acceptance per category).
    #[arg(long, value_enum, hide_possible_values = true)]
    pub profile: Option<Profile>,
    /// A local copy instead of the download: a folder holding the official file (checked
    /// against its sha256) or `<profile>.jsonl` in this tool's item format.
    #[arg(long)]
    pub dataset_dir: Option<PathBuf>,
    /// Download the official file from this mirror instead (it must match the pinned sha256).
    #[arg(long)]
    pub dataset_url: Option<String>,
    /// Expect this sha256 instead of the pinned one (another revision, on purpose).
    #[arg(long)]
    pub dataset_sha256: Option<String>,
    /// Where downloaded datasets are kept (default: the user's cache directory).
    #[arg(long, env = "LLMIB_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Score only N items, evenly spread over the dataset (deterministic).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Requests in flight.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// `max_tokens` of each answer.
    #[arg(long, default_value_t = 2048)]
    pub max_output: u32,
    /// Results directory.
    #[arg(long, short)]
    pub output: PathBuf,
    /// long-answer: the task's prompt instead of the built-in one.
    #[arg(long)]
    pub prompt: Option<String>,
    /// long-answer: read the prompt from this file.
    #[arg(long)]
    pub prompt_file: Option<PathBuf>,
    /// long-answer: a regular expression the answer's final line must match to count as
    /// correct (the built-in task has its own).
    #[arg(long)]
    pub answer_regex: Option<String>,
    /// long-answer: concurrency levels the search probes, in order.
    #[arg(long, default_value = "1,2,4,8,16,32,64")]
    pub levels: String,
    /// long-answer: the gain over the best level so far that keeps the search going (0.05 = 5 %).
    #[arg(long, default_value_t = 0.05)]
    pub min_gain: f64,
    /// long-answer: levels in a row without that gain before the search stops.
    #[arg(long, default_value_t = 2)]
    pub patience: u32,
    /// long-answer: finished requests wanted at the chosen level.
    #[arg(long, default_value_t = 32)]
    pub min_results: usize,
}

/// `eval --api`: the conversation APIs (a profile sends chat messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EvalApi {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/messages`.
    Messages,
    /// `/v1/responses`.
    Responses,
}

impl EvalApi {
    fn api(self) -> llmib_core::Api {
        match self {
            EvalApi::Chat => llmib_core::Api::Chat,
            EvalApi::Messages => llmib_core::Api::Messages,
            EvalApi::Responses => llmib_core::Api::Responses,
        }
    }
}

/// Runs the profile the arguments name.
pub async fn run(a: EvalArgs) -> Result<()> {
    let server = Server {
        url: a.url.clone(),
        api_key: a.api_key.clone(),
        model: a.model.clone(),
        api: a.api.map(EvalApi::api),
    };
    let given_prompt = a.prompt.is_some() || a.prompt_file.is_some();
    match (a.profile, given_prompt) {
        (None, false) => {
            bail!("pass --profile: gsm8k, mmlu-pro, gpqa-diamond, long-answer or mt-bench")
        }
        (None, true) | (Some(Profile::LongAnswer), _) => {
            Ok(llmib_eval::run_task(&server, &task_run(a)?).await?)
        }
        (Some(_), true) => bail!("--prompt and --prompt-file belong to --profile long-answer"),
        (Some(Profile::MtBench), false) => Ok(llmib_eval::run_spec(&server, &spec_run(a)?).await?),
        (Some(profile), false) => {
            Ok(llmib_eval::run_accuracy(&server, &accuracy_run(profile, a)?).await?)
        }
    }
}

/// Where the dataset is, from the flags (`--dataset-sha256` checked).
fn locate(a: &EvalArgs) -> Result<Locate> {
    if let Some(h) = &a.dataset_sha256
        && (h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        bail!("--dataset-sha256 must be 64 hex digits");
    }
    Ok(Locate {
        dataset_dir: a.dataset_dir.clone(),
        url: a.dataset_url.clone(),
        sha256: a.dataset_sha256.as_deref().map(str::to_ascii_lowercase),
        cache_dir: a.cache_dir.clone(),
    })
}

/// `mt-bench`: speculative decoding's acceptance per category, the metrics read every 250 ms
/// during a category's window (often enough for SGLang's gauges, which cover its last 40
/// decode batches; vLLM's counters need only the first and last read).
fn spec_run(a: EvalArgs) -> Result<SpecRun> {
    Ok(SpecRun {
        locate: locate(&a)?,
        limit: a.limit,
        concurrency: a.concurrency,
        max_output: a.max_output,
        gauge_interval: std::time::Duration::from_millis(250),
        output: a.output,
    })
}

fn accuracy_run(profile: Profile, a: EvalArgs) -> Result<AccuracyRun> {
    Ok(AccuracyRun {
        profile,
        locate: locate(&a)?,
        limit: a.limit,
        concurrency: a.concurrency,
        max_output: a.max_output,
        output: a.output,
    })
}

fn task_run(a: EvalArgs) -> Result<TaskRun> {
    let prompt = match (a.prompt, a.prompt_file) {
        (Some(_), Some(_)) => bail!("give --prompt or --prompt-file, not both"),
        (Some(p), None) => TaskPrompt::Text(p),
        (None, Some(f)) => TaskPrompt::File(f),
        (None, None) => TaskPrompt::BuiltIn,
    };
    Ok(TaskRun {
        prompt,
        answer_regex: a.answer_regex,
        levels: llmib_eval::parse_levels(&a.levels)?,
        min_gain: a.min_gain,
        patience: a.patience,
        min_results: a.min_results,
        max_output: a.max_output,
        output: a.output,
    })
}
