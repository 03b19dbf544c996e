//! The server's prefix cache as a session cell needs it: its block size (the granularity of
//! what it can serve) and the endpoint that empties it. A third `impl` block beside `tokens.rs`
//! and `reader.rs`.

use super::{Engine, EngineError};
use llmib_core::EngineKind;
use serde_json::Value;

impl Engine {
    /// Tokens per block of the server's prefix cache, where it says: vLLM's `block_size`
    /// (its cache config), SGLang's `page_size`, llama.cpp's token-granular slot cache (1).
    /// `None`: unknown (the prediction is then at token granularity, which a block cache
    /// undercuts by less than a block per turn).
    pub fn cache_block_tokens(&self) -> Option<u64> {
        let extra = &self.info().extra;
        let num = |v: &Value| v.as_u64().or_else(|| v.as_str()?.parse().ok());
        match self.kind() {
            EngineKind::Vllm => extra
                .get("cache_config")
                .and_then(|c| c.get("block_size"))
                .or_else(|| {
                    extra
                        .get("vllm_config")?
                        .get("cache_config")?
                        .get("block_size")
                })
                .and_then(num),
            EngineKind::Sglang => extra
                .get("server_args")
                .and_then(|a| a.get("page_size"))
                .or_else(|| extra.get("page_size"))
                .and_then(num),
            EngineKind::LlamaCpp => Some(1),
            _ => None,
        }
    }

    /// Empties the server's prefix cache where the engine has an endpoint for it (SGLang
    /// `/flush_cache`, vLLM `/reset_prefix_cache`): `Ok(Some(path))` once the server said yes,
    /// `Ok(None)` where the engine has none. A refusal (SGLang will not flush while requests
    /// run) is an error that says so.
    pub async fn flush_prefix_cache(&self) -> Result<Option<&'static str>, EngineError> {
        let path = match self.kind() {
            EngineKind::Sglang => "/flush_cache",
            EngineKind::Vllm => "/reset_prefix_cache",
            _ => return Ok(None),
        };
        let url = format!("{}{path}", self.base_url());
        // The answer is plain text on both engines ("Cache flushed."); only its status counts.
        let req = self.client().post(&url).timeout(self.side_timeout);
        self.send_text(req, &url).await?;
        Ok(Some(path))
    }
}
