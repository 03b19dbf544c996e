//! `llm-inference-bench sim`: serve the built-in simulated engine until Ctrl-C.
//!
//! Layering: the profile (built-in name or TOML file) first, then `--set key=value`
//! overrides, then the dedicated flags, so a flag always wins.

use anyhow::Context as _;
use clap::Args;

/// The engine dialect the simulator speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FlavorArg {
    /// SGLang (`/get_server_info`, `sglang:*` metrics).
    Sglang,
    /// vLLM (`/version`, `vllm:*` metrics).
    Vllm,
}

impl From<FlavorArg> for llmib_sim::Flavor {
    fn from(f: FlavorArg) -> Self {
        match f {
            FlavorArg::Sglang => llmib_sim::Flavor::Sglang,
            FlavorArg::Vllm => llmib_sim::Flavor::Vllm,
        }
    }
}

/// Options of the `sim` command.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Built-in profile (tiny, tiny-vllm, seed, seed-vllm, seed:N for 1/N scale) or a TOML file.
    #[arg(long, default_value = "tiny", env = "LLMIB_SIM_PROFILE")]
    pub profile: String,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// HTTP dialect to speak.
    #[arg(long, value_enum)]
    pub flavor: Option<FlavorArg>,
    /// Served model name.
    #[arg(long)]
    pub model: Option<String>,
    /// KV cache capacity in tokens.
    #[arg(long)]
    pub kv_capacity: Option<u64>,
    /// Context length (max prompt + output tokens).
    #[arg(long)]
    pub context_length: Option<u64>,
    /// Tokens per decode step, delivered in one chunk (speculative decoding).
    #[arg(long)]
    pub spec_tokens: Option<u32>,
    /// Required API key; an empty string turns the key off.
    #[arg(long, env = "LLMIB_SIM_API_KEY")]
    pub api_key: Option<String>,
    /// Seed of every random decision.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Prefill throughput in tokens per second.
    #[arg(long)]
    pub prefill_tok_per_s: Option<f64>,
    /// Requests the scheduler runs at once (SGLang `--max-running-requests`, vLLM
    /// `--max-num-seqs`); the rest wait. A knob a sweep varies.
    #[arg(long, value_name = "N")]
    pub max_running_requests: Option<u32>,
    /// Prompt tokens prefilled per scheduler step (SGLang `--chunked-prefill-size`, vLLM
    /// `--max-num-batched-tokens`). A knob a sweep varies.
    #[arg(long, value_name = "TOKENS")]
    pub chunked_prefill_tokens: Option<u64>,
    /// LoRA adapters served beside the base model, comma-separated (`--lora sql,chat`): listed
    /// in `/v1/models`, named by a request's `model` (docs/lora.md). Their switching cost is
    /// `--set lora_switch_ms=MS` (per distinct adapter in a decode step's batch).
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub lora: Option<Vec<String>>,
    /// Any other knob, as key=value (TOML value; dotted keys for tables), repeatable:
    /// `--set faults.http_error_rate=0.05 --set decode_step_ms=[[1,5.0],[8,9.0]]`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

/// Builds the simulator configuration from the arguments.
pub fn config_from_args(args: &SimArgs) -> anyhow::Result<llmib_sim::SimConfig> {
    let mut cfg = llmib_sim::load_profile(&args.profile)?;
    for s in &args.set {
        cfg.apply_override(s)
            .with_context(|| format!("--set {s}"))?;
    }
    if let Some(f) = args.flavor {
        cfg.flavor = f.into();
    }
    if let Some(m) = &args.model {
        cfg.model = m.clone();
    }
    if let Some(v) = args.kv_capacity {
        cfg.kv_capacity_tokens = v;
    }
    if let Some(v) = args.context_length {
        cfg.context_length = v;
    }
    if let Some(v) = args.spec_tokens {
        cfg.spec_tokens = v;
    }
    if let Some(k) = &args.api_key {
        cfg.api_key = (!k.is_empty()).then(|| k.clone());
    }
    if let Some(v) = args.seed {
        cfg.seed = v;
    }
    if let Some(v) = args.prefill_tok_per_s {
        cfg.prefill_tok_per_s = v;
    }
    if let Some(v) = args.max_running_requests {
        cfg.max_running_requests = Some(v);
    }
    if let Some(v) = args.chunked_prefill_tokens {
        cfg.chunked_prefill_tokens = v;
    }
    if let Some(names) = &args.lora {
        cfg.lora_adapters = names.iter().map(|n| n.trim().to_string()).collect();
    }
    cfg.validate()?;
    Ok(cfg)
}

/// Serves the simulator until Ctrl-C.
pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    let cfg = config_from_args(&args)?;
    let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port))
        .await
        .with_context(|| {
            format!(
                "cannot listen on {}:{} (is the port in use? try --port 0)",
                args.host, args.port
            )
        })?;
    let addr = listener.local_addr()?;
    outln!(
        "simulated {} engine `{}` (profile {}) listening on http://{addr}{}; Ctrl-C stops it",
        cfg.flavor.as_str(),
        // A profile may name its model at any length: the line stays a line.
        llmib_core::terminal_name(&cfg.model),
        llmib_core::terminal_name(&args.profile),
        if cfg.api_key.is_some() {
            " (API key required)"
        } else {
            ""
        }
    );
    llmib_sim::serve(listener, cfg, async {
        // If the signal handler cannot be installed, serve until the process is killed.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        sim: SimArgs,
    }

    fn config(args: &[&str]) -> llmib_sim::SimConfig {
        let cmd = Cmd::try_parse_from(std::iter::once("sim").chain(args.iter().copied()))
            .expect("flags parse");
        config_from_args(&cmd.sim).expect("config")
    }

    /// The knobs a sweep varies are flags of their own, and a flag wins over `--set`.
    #[test]
    fn a_sweeps_knobs_are_flags_and_win_over_set() {
        let c = config(&[
            "--profile",
            "open-load",
            "--max-running-requests",
            "4",
            "--chunked-prefill-tokens",
            "512",
            "--set",
            "max_running_requests=2",
        ]);
        assert_eq!(c.max_running_requests, Some(4));
        assert_eq!(c.chunked_prefill_tokens, 512);
        let c = config(&["--profile", "open-load"]);
        assert_eq!(c.max_running_requests, Some(1));
    }

    /// `--lora a,b` serves two adapters (as `--set lora_adapters=[...]` does), and wins over it.
    #[test]
    fn lora_adapters_are_a_flag_and_a_key() {
        let c = config(&["--lora", "sql,chat", "--set", "lora_switch_ms=2.5"]);
        assert_eq!(c.lora_adapters, ["sql", "chat"]);
        assert_eq!(c.lora_switch_ms, 2.5);
        let c = config(&["--set", "lora_adapters=[\"a\", \"b\"]"]);
        assert_eq!(c.lora_adapters, ["a", "b"]);
        let c = config(&["--set", "lora_adapters=[\"a\"]", "--lora", "b"]);
        assert_eq!(c.lora_adapters, ["b"]);
        assert!(
            config_from_args(&SimArgs {
                lora: Some(vec!["a".into(), "a".into()]),
                ..Cmd::try_parse_from(["sim"]).expect("parses").sim
            })
            .is_err()
        );
    }
}
