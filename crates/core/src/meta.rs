//! Run metadata: what was measured (hardware, engine, model, launch command), as the seed page's
//! Hardware, Engine and Run cards show it. Every field that cannot be known is `None`, never
//! guessed; the report prints "unknown" for it.

use serde::{Deserialize, Serialize};

/// The inference engine behind the endpoint, as detected by probing (or forced with `--engine`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// SGLang (`/get_server_info`, `sglang:*` metrics).
    Sglang,
    /// vLLM (`/version`, `vllm:*` metrics).
    Vllm,
    /// llama.cpp's `llama-server` (`/props`, `llamacpp:*` metrics).
    LlamaCpp,
    /// Hugging Face Text Generation Inference (`/info`, `tgi_*` metrics).
    Tgi,
    /// TensorRT-LLM's `trtllm-serve` (JSON `/metrics`).
    TrtLlm,
    /// Ollama (`/api/version`, `/api/show`).
    Ollama,
    /// Any other OpenAI-compatible endpoint (hosted APIs): nothing beyond `/v1`.
    Generic,
}

impl EngineKind {
    /// All kinds, in detection order.
    pub const ALL: [EngineKind; 7] = [
        EngineKind::Sglang,
        EngineKind::Vllm,
        EngineKind::LlamaCpp,
        EngineKind::Tgi,
        EngineKind::TrtLlm,
        EngineKind::Ollama,
        EngineKind::Generic,
    ];

    /// The name users know the engine by (the seed prints `sglang`).
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Sglang => "sglang",
            EngineKind::Vllm => "vllm",
            EngineKind::LlamaCpp => "llama.cpp",
            EngineKind::Tgi => "tgi",
            EngineKind::TrtLlm => "tensorrt-llm",
            EngineKind::Ollama => "ollama",
            EngineKind::Generic => "openai-compatible",
        }
    }

    /// The engine's public source repository, for the Engine card.
    pub fn repository(self) -> Option<&'static str> {
        match self {
            EngineKind::Sglang => Some("github.com/sgl-project/sglang"),
            EngineKind::Vllm => Some("github.com/vllm-project/vllm"),
            EngineKind::LlamaCpp => Some("github.com/ggml-org/llama.cpp"),
            EngineKind::Tgi => Some("github.com/huggingface/text-generation-inference"),
            EngineKind::TrtLlm => Some("github.com/NVIDIA/TensorRT-LLM"),
            EngineKind::Ollama => Some("github.com/ollama/ollama"),
            EngineKind::Generic => None,
        }
    }
}

/// A value and where it came from, for figures that a reader must be able to trace
/// (e.g. the KV capacity: `sglang max_total_num_tokens`, `--kv-capacity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sourced<T> {
    /// The value.
    pub value: T,
    /// Where it was read, in words (endpoint and field, or the flag).
    pub source: String,
}

/// How the tool learns how many tokens each streamed chunk carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenCountSource {
    /// `usage` on every chunk (`continuous_usage_stats`): exact per chunk.
    ServerUsagePerChunk,
    /// The server's final `usage.completion_tokens`, split over chunks by the tokenizer.
    ServerUsageFinalTokenizerChunks,
    /// Only the tokenizer (the server sent no usage).
    Tokenizer,
    /// Chunks counted as one token each, for at least one request: the server gave neither
    /// per-chunk usage nor a usable tokenizer answer. A degraded count says so (the row's
    /// `token_count_note` tells why) instead of claiming a better source.
    ChunkCount,
}

impl TokenCountSource {
    /// Short words for tables.
    pub fn label(self) -> &'static str {
        match self {
            TokenCountSource::ServerUsagePerChunk => "server usage (per chunk)",
            TokenCountSource::ServerUsageFinalTokenizerChunks => {
                "server usage (final) + tokenizer per chunk"
            }
            TokenCountSource::Tokenizer => "tokenizer",
            TokenCountSource::ChunkCount => "chunk count",
        }
    }

    /// How weak the source is: 0 exact per chunk … 3 chunks counted as tokens.
    fn rank(self) -> u8 {
        match self {
            TokenCountSource::ServerUsagePerChunk => 0,
            TokenCountSource::ServerUsageFinalTokenizerChunks => 1,
            TokenCountSource::Tokenizer => 2,
            TokenCountSource::ChunkCount => 3,
        }
    }

    /// The weaker of two sources: a cell claims no more than its weakest request.
    pub fn weaker(self, other: TokenCountSource) -> TokenCountSource {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// What the engine accepts in a request; `None` = not known.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    /// Honours `ignore_eos: true`.
    pub ignore_eos: Option<bool>,
    /// Honours `min_tokens`.
    pub min_tokens: Option<bool>,
    /// Accepts `prompt` as a list of token ids.
    pub token_id_prompts: Option<bool>,
    /// Streams `usage` on every chunk when asked with `continuous_usage_stats`.
    pub continuous_usage_stats: Option<bool>,
    /// Reports cached prompt tokens (`prompt_tokens_details.cached_tokens`).
    pub cached_tokens: Option<bool>,
    /// Has a queue-length gauge (waiting requests) in its metrics.
    pub queue_gauge: Option<bool>,
    /// Has a cumulative generated-tokens counter in its metrics.
    pub generation_counter: Option<bool>,
}

/// The Engine card.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineInfo {
    /// Detected (or forced) engine.
    pub kind: Option<EngineKind>,
    /// Engine name as printed (`sglang`).
    pub name: Option<String>,
    /// Version string as the engine reports it.
    pub version: Option<String>,
    /// Quantization of the weights (`FP8`).
    pub quantization: Option<String>,
    /// KV cache data type (`fp8_e4m3`).
    pub kv_cache_dtype: Option<String>,
    /// Compute backend (`cuda`, `cpu`).
    pub backend: Option<String>,
    /// Source repository.
    pub repository: Option<String>,
    /// Build description (`cuda-13.2`, llama.cpp `build_info`).
    pub build: Option<String>,
    /// Source commit, where the version or build names one.
    pub commit: Option<String>,
    /// Speculative decoding algorithm (`DFLASH`), if any.
    pub speculative_algorithm: Option<String>,
    /// Tensor-parallel size.
    pub tp_size: Option<u64>,
    /// Data-parallel / decode-context-parallel size, where it changes the KV capacity.
    pub dcp_size: Option<u64>,
    /// Context length (max prompt + output tokens) of the served model.
    pub context_length: Option<Sourced<u64>>,
    /// KV cache capacity in tokens.
    pub kv_capacity_tokens: Option<Sourced<u64>>,
    /// What the engine accepts and reports.
    pub capabilities: Capabilities,
    /// Other engine facts worth keeping (backend flags, server args), verbatim but redacted.
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The Hardware card.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HardwareInfo {
    /// `Discrete GPU`, `CPU`, …
    pub device_type: Option<String>,
    /// GPU model name.
    pub gpu_name: Option<String>,
    /// Number of GPUs.
    pub gpu_count: Option<u32>,
    /// Memory of one GPU, in bytes.
    pub gpu_memory_bytes: Option<u64>,
    /// GPU driver version.
    pub driver_version: Option<String>,
    /// CUDA version.
    pub cuda_version: Option<String>,
    /// Operating system (`linux`).
    pub os: Option<String>,
    /// CPU model.
    pub cpu: Option<String>,
    /// Where these facts came from (`nvml`, `nvidia-smi`, `--hardware`, `local`).
    pub source: Option<String>,
}

/// The model that was served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// Served model name, as sent in requests.
    pub served_model: String,
    /// Model path or repository, where the engine shows it.
    pub model_path: Option<String>,
    /// Model revision.
    pub revision: Option<String>,
}
