//! The server's prefix cache as a session cell needs it: its block size (the granularity of
//! what it can serve) and the endpoint that empties it. A third `impl` block beside `tokens.rs`
//! and `reader.rs`.

use super::{Engine, EngineError};
use llmib_core::EngineKind;
use serde_json::{Map, Value};

impl Engine {
    /// Tokens per block of the server's prefix cache, where it says: vLLM's `block_size`
    /// (its cache config), SGLang's `page_size` (1 from a version before it), llama.cpp's
    /// token-granular slot cache (1).
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
                .and_then(num)
                // Server args without `page_size` are from before it: a radix tree of tokens.
                .or_else(|| extra.get("server_args").map(|_| 1)),
            EngineKind::LlamaCpp => Some(1),
            _ => None,
        }
    }

    /// Whether the server keeps prompts in a prefix cache, as its configuration says:
    /// vLLM's `enable_prefix_caching` (a label of `vllm:cache_config_info`, or its
    /// `/server_info` config), SGLang's `disable_radix_cache` (`/get_server_info`). `None`:
    /// the engine does not say. llama.cpp is `None` too: a prompt stays only in the slot that
    /// ran it, and a stream may land in another.
    pub fn prefix_caching(&self) -> Option<bool> {
        prefix_caching(self.kind(), &self.info().extra)
    }

    /// The block size of a prefix cache the server says is on ([`Self::prefix_caching`] and
    /// [`Self::cache_block_tokens`]): what a sharded run's timetable sizes a decode ramp by,
    /// since the slot's preparation warmed the streams' prompts.
    pub fn cached_prompt_block_tokens(&self) -> Option<u64> {
        self.prefix_caching()
            .filter(|on| *on)
            .and_then(|_| self.cache_block_tokens())
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

/// [`Engine::prefix_caching`] from the engine's kind and what its probe kept (`extra`). A
/// flag reads as a JSON bool or as the text Python prints for one (`True`, `False`).
fn prefix_caching(kind: EngineKind, extra: &Map<String, Value>) -> Option<bool> {
    let flag = |v: &Value| {
        v.as_bool()
            .or_else(|| match v.as_str()?.to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            })
    };
    match kind {
        EngineKind::Vllm => extra
            .get("cache_config")
            .and_then(|c| c.get("enable_prefix_caching"))
            .or_else(|| {
                extra
                    .get("vllm_config")?
                    .get("cache_config")?
                    .get("enable_prefix_caching")
            })
            .and_then(flag),
        EngineKind::Sglang => extra
            .get("server_args")
            .and_then(|a| a.get("disable_radix_cache"))
            .and_then(flag)
            .map(|off| !off),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn extra(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn each_engine_says_whether_it_caches_prompts_its_own_way() {
        // vLLM's metric labels are Python's text; its /server_info config has JSON bools.
        let on = extra(json!({"cache_config": {"enable_prefix_caching": "True"}}));
        let off = extra(json!({"cache_config": {"enable_prefix_caching": "False"}}));
        let cfg = extra(json!({"vllm_config": {"cache_config": {"enable_prefix_caching": true}}}));
        assert_eq!(prefix_caching(EngineKind::Vllm, &on), Some(true));
        assert_eq!(prefix_caching(EngineKind::Vllm, &off), Some(false));
        assert_eq!(prefix_caching(EngineKind::Vllm, &cfg), Some(true));
        // SGLang says the opposite: whether the radix cache is off.
        let sg = extra(json!({"server_args": {"disable_radix_cache": false}}));
        let sg_off = extra(json!({"server_args": {"disable_radix_cache": true}}));
        assert_eq!(prefix_caching(EngineKind::Sglang, &sg), Some(true));
        assert_eq!(prefix_caching(EngineKind::Sglang, &sg_off), Some(false));
        // Not said, said in a shape not known, or another engine: unknown, never "on".
        let odd = extra(json!({"server_args": {"disable_radix_cache": "maybe"}}));
        assert_eq!(prefix_caching(EngineKind::Sglang, &odd), None);
        assert_eq!(prefix_caching(EngineKind::Sglang, &Map::new()), None);
        assert_eq!(prefix_caching(EngineKind::LlamaCpp, &sg), None);
        assert_eq!(prefix_caching(EngineKind::Vllm, &sg), None);
    }
}
