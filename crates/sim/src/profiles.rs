//! Built-in profiles and profile loading.
//!
//! `tiny` is fast and small, for tests. `seed` imitates the published seed matrix
//! (GLM-5.3-Flash on SGLang, 8 GPUs) at 1/64 of its sizes: the seed's step times per batch
//! size, and a KV capacity placed so that the seed's "Over capacity" staircase appears at the
//! scaled contexts (see `docs/simulator.md`). `seed:N` builds the same profile at 1/N scale.
//! A TOML file may start from a built-in profile with `base = "seed"` and change any key.

use std::collections::BTreeMap;

use serde_json::json;

use crate::SimError;
use crate::config::{FaultConfig, Flavor, MessagesUsage, SimConfig, from_table, merge_tables};

/// Names accepted by [`builtin_profile`] (plus `seed:N` for another scale).
const NAMES: &[&str] = &[
    "tiny",
    "tiny-vllm",
    "seed",
    "seed-vllm",
    "hosted",
    "hosted-seed",
    "open-load",
];

/// The seed's real context length (1M tokens) and KV capacity placed for its staircase:
/// 33152 tokens at 1/64 scale, inside the window [33024, 33280) where N×(C+M) > KV flips
/// exactly where the seed printed "Over capacity".
const SEED_CONTEXT: u64 = 1 << 20;
const SEED_KV: u64 = 33_152 * 64;

/// The names of the built-in profiles.
pub fn builtin_profile_names() -> &'static [&'static str] {
    NAMES
}

/// A built-in profile by name (`tiny`, `tiny-vllm`, `seed`, `seed-vllm`, `seed:N`).
pub fn builtin_profile(name: &str) -> Option<SimConfig> {
    match name {
        "tiny" => Some(tiny()),
        "tiny-vllm" => Some(as_vllm(tiny())),
        "seed" => Some(seed(64)),
        "seed-vllm" => Some(as_vllm(seed(64))),
        "hosted" => Some(hosted(tiny())),
        "hosted-seed" => Some(hosted(seed(64))),
        "open-load" => Some(open_load()),
        _ => {
            let scale = name.strip_prefix("seed:")?.parse::<u32>().ok()?;
            (1..=1024).contains(&scale).then(|| seed(scale))
        }
    }
}

/// A built-in profile name, or a path to a TOML file (which may name a `base` profile).
pub fn load_profile(name_or_path: &str) -> Result<SimConfig, SimError> {
    if let Some(cfg) = builtin_profile(name_or_path) {
        return Ok(cfg);
    }
    let path = std::path::Path::new(name_or_path);
    if !path.exists() {
        return Err(SimError::Profile(format!(
            "`{name_or_path}` is neither a built-in profile ({}, seed:N) nor a readable file",
            NAMES.join(", ")
        )));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| SimError::Profile(format!("cannot read {name_or_path}: {e}")))?;
    profile_from_toml(&text).map_err(|e| SimError::Profile(format!("{name_or_path}: {e}")))
}

/// Parses a profile from TOML text: keys missing from the text come from `base` (default `tiny`).
pub fn profile_from_toml(text: &str) -> Result<SimConfig, SimError> {
    let mut over: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| SimError::Invalid(format!("invalid TOML: {e}")))?;
    let base_name = match over.remove("base") {
        Some(toml::Value::String(s)) => s,
        Some(_) => return Err(SimError::Invalid("`base` must be a profile name".into())),
        None => "tiny".to_string(),
    };
    let base = builtin_profile(&base_name)
        .ok_or_else(|| SimError::Invalid(format!("unknown base profile `{base_name}`")))?;
    let mut table = toml::Table::try_from(&base)
        .map_err(|e| SimError::Invalid(format!("cannot serialize base profile: {e}")))?;
    merge_tables(&mut table, over);
    from_table(table)
}

/// A hosted chat API (`engine` behind a gateway): chat only, no tokenizer, no engine info, no
/// metrics, final usage only, and an API key. `hosted` puts the `tiny` engine behind it;
/// `hosted-seed` the seed-like one, so that `demo --profile hosted-seed` is a default run
/// against an endpoint with no tokenizer.
pub(crate) fn hosted(engine: SimConfig) -> SimConfig {
    SimConfig {
        model: "sim/hosted".to_string(),
        hosted: true,
        metrics_enabled: false,
        api_key: Some("sk-sim-hosted".to_string()),
        ..engine
    }
}

/// The default configuration is the `tiny` profile. The impl lives here, beside the profiles,
/// so `config` (the types) never imports `profiles` (the values built from them).
impl Default for SimConfig {
    fn default() -> Self {
        tiny()
    }
}

/// The `tiny` profile: a 4K-context engine with 1-3 ms steps, for fast tests.
pub(crate) fn tiny() -> SimConfig {
    SimConfig {
        flavor: Flavor::Sglang,
        model: "sim/tiny".to_string(),
        version: "0.5.6.post3.dev1+gsim".to_string(),
        context_length: 4096,
        kv_capacity_tokens: 16_384,
        block_size: 16,
        prefill_tok_per_s: 200_000.0,
        prefill_overhead_ms: 0.5,
        chunked_prefill_tokens: 2048,
        decode_step_ms: vec![(1, 1.5), (8, 2.5), (64, 6.0), (512, 30.0)],
        per_kv_token_us: 0.0,
        spec_tokens: 1,
        spec_accept_length: None,
        spec_accept_by_text: Vec::new(),
        prefix_cache_tokens: 16_384,
        serial_prefill: false,
        max_running_requests: None,
        metrics_enabled: true,
        hosted: false,
        answer_accuracy: None,
        answer_words: 24,
        add_bos: true,
        eos_rate: 0.0,
        reasoning_tokens: 0,
        messages_usage: MessagesUsage::Anthropic,
        messages_ping: false,
        messages_x_api_key: false,
        answer_loop: None,
        answer_loop_reasoning: false,
        foreign_running: 0,
        foreign_waiting: 0,
        drop_keeps_running_ms: 0,
        lora_adapters: Vec::new(),
        lora_switch_ms: 0.0,
        grammar_step_factor: 1.0,
        grammar_break_every: 0,
        grammar_answer_tokens: 32,
        image_patch: crate::config::DEFAULT_IMAGE_PATCH,
        api_key: None,
        seed: 0x5eed,
        scale: 1,
        faults: FaultConfig::default(),
        stamp_chunks: false,
        server_args: BTreeMap::from([
            ("model_path".to_string(), json!("sim/tiny")),
            ("tp_size".to_string(), json!(1)),
            ("kv_cache_dtype".to_string(), json!("auto")),
            ("enable_metrics".to_string(), json!(true)),
        ]),
    }
}

/// `open-load`: one request at a time with fixed pass times, so that its capacity under open
/// load is known by construction (docs/simulator.md, "Capacity under open load"). A request of
/// C prompt tokens and M output tokens is served in
/// S = C / `prefill_tok_per_s` + (M − 1) × 3 ms (its first token comes from the prefill pass),
/// and nothing else runs meanwhile: at C = 512, M = 16, S = 5 + 45 = 50 ms, 20 requests/s.
pub(crate) fn open_load() -> SimConfig {
    SimConfig {
        model: "sim/open-load".to_string(),
        context_length: 2048,
        // Admission is limited by `max_running_requests`, not KV; but a client sizes its
        // saturation batch from the reported KV (4096 / (C + M) = 7 requests at C = 512,
        // M = 16), and a large KV would make that batch take seconds at one request per 50 ms.
        kv_capacity_tokens: 4096,
        // 512 tokens in exactly 5 ms, with no per-pass overhead and in one pass.
        prefill_tok_per_s: 102_400.0,
        prefill_overhead_ms: 0.0,
        chunked_prefill_tokens: 4096,
        // One point: the same step at any batch size (the batch is always 1 here anyway).
        decode_step_ms: vec![(1, 3.0)],
        per_kv_token_us: 0.0,
        // No cache: a prompt seen before (a probe, a retry) would prefill one token instead of
        // C and break the service time.
        prefix_cache_tokens: 0,
        max_running_requests: Some(1),
        server_args: BTreeMap::from([
            ("model_path".to_string(), json!("sim/open-load")),
            ("max_running_requests".to_string(), json!(1)),
            ("enable_metrics".to_string(), json!(true)),
        ]),
        ..tiny()
    }
}

/// The seed-like profile at 1/`scale` of the seed's sizes.
pub(crate) fn seed(scale: u32) -> SimConfig {
    let s = u64::from(scale.max(1));
    let model = "zai-org/GLM-5.3-Flash";
    let server_args = seed_server_args(model);
    SimConfig {
        flavor: Flavor::Sglang,
        model: model.to_string(),
        version: "0.5.6.post3.dev11345+g028ac64f7".to_string(),
        context_length: SEED_CONTEXT / s,
        kv_capacity_tokens: SEED_KV / s,
        block_size: 16,
        // The seed prefilled ~10.6K tok/s at full size; scaled runs prefill faster so that a
        // demo matrix finishes in minutes (tens of thousands of tok/s at 1/64).
        prefill_tok_per_s: 10_600.0 * (s as f64 / 16.0).max(1.0),
        prefill_overhead_ms: 2.0,
        chunked_prefill_tokens: (262_144 / s).max(256),
        // The seed's TBT column (ms per token at 8K context); 64 and 128 extrapolated from
        // the doubling trend of the last points.
        decode_step_ms: vec![
            (1, 5.2),
            (2, 6.6),
            (4, 9.8),
            (8, 13.1),
            (16, 16.6),
            (32, 23.4),
            (64, 37.0),
            (128, 64.0),
        ],
        // The seed's single-stream TBT grows ~0.7 ms from 8K to 1019K of context.
        per_kv_token_us: 0.7 * 1000.0 / (1_044_479.0 / s as f64),
        spec_tokens: 1,
        spec_accept_length: None,
        spec_accept_by_text: Vec::new(),
        prefix_cache_tokens: SEED_KV / s,
        serial_prefill: false,
        max_running_requests: None,
        metrics_enabled: true,
        hosted: false,
        answer_accuracy: None,
        answer_words: 24,
        add_bos: true,
        eos_rate: 0.0,
        reasoning_tokens: 0,
        messages_usage: MessagesUsage::Anthropic,
        messages_ping: false,
        messages_x_api_key: false,
        answer_loop: None,
        answer_loop_reasoning: false,
        foreign_running: 0,
        foreign_waiting: 0,
        drop_keeps_running_ms: 0,
        lora_adapters: Vec::new(),
        lora_switch_ms: 0.0,
        grammar_step_factor: 1.0,
        grammar_break_every: 0,
        grammar_answer_tokens: 32,
        image_patch: crate::config::DEFAULT_IMAGE_PATCH,
        api_key: Some("sk-sim-seed".to_string()),
        seed: 0x5eed,
        scale,
        faults: FaultConfig::default(),
        stamp_chunks: false,
        server_args,
    }
}

/// The seed's `server_info` arguments: the SGLang launch flags of the published run.
fn seed_server_args(model: &str) -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([
        ("model_path".to_string(), json!(model)),
        ("tokenizer_path".to_string(), json!(model)),
        ("served_model_name".to_string(), json!(model)),
        ("trust_remote_code".to_string(), json!(true)),
        ("tp_size".to_string(), json!(8)),
        ("dp_size".to_string(), json!(1)),
        ("pp_size".to_string(), json!(1)),
        ("reasoning_parser".to_string(), json!("glm45")),
        ("tool_call_parser".to_string(), json!("glm47")),
        ("mem_fraction_static".to_string(), json!(0.76)),
        ("enable_metrics".to_string(), json!(true)),
        ("kv_cache_dtype".to_string(), json!("fp8_e4m3")),
        ("quantization".to_string(), json!("fp8")),
        (
            "dsa_prefill_backend".to_string(),
            json!("flashinfer_sparse_mla"),
        ),
        (
            "dsa_decode_backend".to_string(),
            json!("flashinfer_sparse_mla"),
        ),
        ("linear_attn_backend".to_string(), json!("triton")),
        ("attention_backend".to_string(), json!("dsa")),
        ("fp8_gemm_backend".to_string(), json!("cutlass")),
        ("moe_runner_backend".to_string(), json!("triton")),
        ("speculative_algorithm".to_string(), json!("DFLASH")),
        (
            "speculative_draft_model_path".to_string(),
            json!("incoai/GLM-5.3-Flash-DFlash2"),
        ),
        (
            "speculative_draft_attention_backend".to_string(),
            json!("fa4"),
        ),
        ("device".to_string(), json!("cuda")),
    ])
}

/// The same engine, speaking vLLM's dialect and scheduling prefills as vLLM does: one admitted
/// request after another, each counted as running from admission.
fn as_vllm(mut c: SimConfig) -> SimConfig {
    c.flavor = Flavor::Vllm;
    c.serial_prefill = true;
    c.version = "0.10.1.1".to_string();
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_validate() {
        for name in builtin_profile_names() {
            let cfg = builtin_profile(name).expect("listed profile exists");
            cfg.validate().expect("built-in profile is valid");
        }
        assert!(builtin_profile("seed:16").is_some());
        assert!(builtin_profile("nope").is_none());
    }

    #[test]
    fn seed_staircase_at_one_64th() {
        let c = builtin_profile("seed").expect("seed");
        assert_eq!(c.context_length, 16_384);
        assert_eq!(c.kv_capacity_tokens, 33_152);
        let m = 64u64;
        let over = |ctx: u64, n: u64| n * (ctx + m) > c.kv_capacity_tokens;
        // (scaled context, largest N that fits) as printed in the seed.
        for (ctx, fits) in [
            (256, 64),
            (512, 32),
            (1024, 16),
            (2048, 8),
            (4096, 4),
            (8192, 4),
            (16_319, 2),
        ] {
            assert!(!over(ctx, fits), "{ctx} x {fits} should fit");
            assert!(over(ctx, fits * 2), "{ctx} x {} should be over", fits * 2);
        }
        assert!(!over(128, 128));
    }

    #[test]
    fn open_load_service_time_is_fifty_ms_at_512_and_16() {
        let c = builtin_profile("open-load").expect("open-load");
        let prefill_ms = 512.0 * 1000.0 / c.prefill_tok_per_s + c.prefill_overhead_ms;
        let s_ms = prefill_ms + 15.0 * c.step_ms(1, 512 + 15);
        assert!((prefill_ms - 5.0).abs() < 1e-9, "{prefill_ms}");
        assert!((s_ms - 50.0).abs() < 1e-9, "{s_ms}");
        assert_eq!(c.max_running_requests, Some(1));
        assert_eq!(c.prefix_cache_tokens, 0);
    }

    #[test]
    fn toml_file_with_base() {
        let c = profile_from_toml(
            "base = \"seed\"\nspec_tokens = 3\n[faults]\nhttp_error_rate = 0.5\n",
        )
        .expect("valid");
        assert_eq!(c.spec_tokens, 3);
        assert_eq!(c.model, "zai-org/GLM-5.3-Flash");
        assert_eq!(c.faults.http_error_rate, 0.5);
        assert!(profile_from_toml("bogus_key = 1").is_err());
    }
}
