//! The bodies each dialect sends: the tool's own keys per engine (usage, EOS, the SGLang
//! request id) and the user's controls beside them; and what a dialect believes of its
//! server's args (SGLang's speculation).

use std::time::Duration;

use llmib_core::EngineKind;
use serde_json::{Value, json};

use super::tests::{SG_INFO, normalize_base};
use super::*;

#[test]
fn completion_bodies_per_dialect() {
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let mk = |kind| Engine {
        kind,
        base_url: "http://h".into(),
        client: client.clone(),
        info: EngineInfo::default(),
        model: ModelInfo::default(),
        launch_command: None,
        dialect: super::dispatch::dialect_of(kind),
        side_timeout: Duration::from_secs(1),
        api_key: None,
        api: llmib_core::Api::Completions,
        targeting: llmib_core::Targeting::Exact,
        respect_eos: false,
        save_texts: false,
        request: llmib_core::RequestControls::default(),
        local_tokenizer: None,
        raw: None,
        key_header: crate::wire::http::KeyHeader::Bearer,
        reading: Arc::default(),
        route_extra: Arc::default(),
    };
    let mut sg =
        mk(EngineKind::Sglang).completion_body("m", PromptInput::Text("p".into()), 16, true);
    // SGLang's requests carry an id of the client's, for the targeted abort; unique per body.
    let rid = sg
        .as_object_mut()
        .and_then(|m| m.remove("rid"))
        .expect("an SGLang body carries a rid");
    assert!(
        rid.as_str().is_some_and(|r| r.starts_with("llmib-")),
        "{rid}"
    );
    assert_eq!(
        sg,
        json!({"model":"m","prompt":"p","max_tokens":16,"stream":true,"ignore_eos":true,
               "stream_options":{"include_usage":true,"continuous_usage_stats":true}})
    );
    let nostream =
        mk(EngineKind::Vllm).completion_body("m", PromptInput::Text("p".into()), 1, false);
    assert_eq!(nostream.get("stream_options"), None);
    assert_eq!(nostream.get("stream"), Some(&Value::Bool(false)));
    let ol = mk(EngineKind::Ollama).completion_body("m", PromptInput::Text("p".into()), 1, true);
    assert_eq!(ol.get("ignore_eos"), None);
    assert_eq!(
        normalize_base("http://h:8000/v1/"),
        Some("http://h:8000".into())
    );
    assert_eq!(
        normalize_base("https://api.example.com/openai/v1"),
        Some("https://api.example.com/openai".into())
    );
}

/// Engine info's `extra` holding SGLang server args `v`.
fn args(v: Value) -> serde_json::Map<String, Value> {
    serde_json::Map::from_iter([("server_args".to_string(), v)])
}

/// SGLang's acceptance gauges count only where its server args name speculation: they read 0
/// on a server without a draft model.
#[test]
fn sglang_speculates_only_where_its_args_say_so() {
    assert!(sglang::speculates(&serde_json::Map::new()), "unknown args");
    assert!(!sglang::speculates(&args(json!({
        "speculative_algorithm": null, "speculative_num_draft_tokens": null
    }))));
    assert!(!sglang::speculates(&args(json!({"tp_size": 8}))));
    assert!(sglang::speculates(&args(
        json!({"speculative_algorithm": "EAGLE"})
    )));
    assert!(sglang::speculates(&args(json!({
        "speculative_algorithm": null, "speculative_num_draft_tokens": 3
    }))));
    let seed: Value = serde_json::from_str(SG_INFO).expect("fixture");
    assert!(
        sglang::speculates(&args(seed)),
        "the seed's server runs DFLASH"
    );
}
