//! What the engine-specific endpoints answered during the probe, as each adapter reads it to
//! fill the Engine and Model cards. Apart from the probe so that the adapters, which the probe
//! calls, do not import the probe.

use llmib_core::Sourced;
use serde_json::Value;

/// What the engine-specific endpoints answered (`None`: no usable JSON answer).
#[derive(Debug, Default, Clone)]
pub(crate) struct Discovery {
    /// `/v1/models`.
    pub models: Option<Value>,
    /// SGLang `/get_server_info`.
    pub sglang_info: Option<Value>,
    /// `/version` (vLLM, TensorRT-LLM).
    pub version: Option<Value>,
    /// llama.cpp `/props`.
    pub props: Option<Value>,
    /// TGI `/info`.
    pub tgi_info: Option<Value>,
    /// Ollama `/api/version`.
    pub ollama_version: Option<Value>,
    /// `/metrics` body, when it answered 200.
    pub metrics: Option<String>,
    /// `/metrics` answered an error status (the engine has it switched off).
    pub metrics_missing: bool,
    /// Further engine-specific answers fetched after detection (Ollama `/api/show`, `/api/ps`;
    /// vLLM `/server_info`).
    pub extra: Vec<(String, Value)>,
}

impl Discovery {
    pub(crate) fn extra(&self, path: &str) -> Option<&Value> {
        self.extra.iter().find(|(p, _)| p == path).map(|(_, v)| v)
    }
}

/// `max_model_len` of the served model in `/v1/models` (vLLM, SGLang and some providers).
pub(crate) fn model_max_len(d: &Discovery, served: &str) -> Option<Sourced<u64>> {
    let entry = d
        .models
        .as_ref()?
        .get("data")?
        .as_array()?
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(served))?;
    let n = entry.get("max_model_len")?.as_u64()?;
    Some(Sourced {
        value: n,
        source: "/v1/models max_model_len".to_owned(),
    })
}
