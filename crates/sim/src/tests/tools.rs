//! Tools rendered into the prompt: the three APIs' tool shapes add the same tokens to
//! `usage` (over raw HTTP, as a client meets it), vLLM's `/tokenize` with chat-shaped tools
//! counts what a chat request with them counts, and a body without tools is unchanged.

use serde_json::{Value, json};

use super::raw::{post, usage_prompt_tokens as usage_prompt};
use crate::{Flavor, SimConfig};

fn weather() -> Value {
    json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
}

#[tokio::test]
async fn tools_add_the_same_tokens_on_every_route_and_tokenize_counts_them() {
    let sim = crate::spawn(SimConfig {
        flavor: Flavor::Vllm,
        ..SimConfig::default()
    })
    .await
    .expect("starts");
    let (name, about) = ("get_weather", "The weather in a city");
    let chat_tools = json!([{"type": "function",
        "function": {"name": name, "description": about, "parameters": weather()}}]);
    let resp_tools =
        json!([{"type": "function", "name": name, "description": about, "parameters": weather()}]);
    let msg_tools = json!([{"name": name, "description": about, "input_schema": weather()}]);
    let user = json!([{"role": "user", "content": "Hi there"}]);
    let routes = [
        (
            "/v1/chat/completions",
            "messages",
            "max_tokens",
            chat_tools.clone(),
        ),
        ("/v1/messages", "messages", "max_tokens", msg_tools),
        ("/v1/responses", "input", "max_output_tokens", resp_tools),
    ];
    let mut added = Vec::new();
    for (path, key, limit, tools) in routes {
        let bare = json!({"model": "sim/tiny", key: user, limit: 1});
        let mut with = bare.clone();
        with["tools"] = tools;
        let a = usage_prompt(path, &post(sim.addr(), path, &with).await);
        let b = usage_prompt(path, &post(sim.addr(), path, &bare).await);
        assert!(a > b + 10, "{path}: {a} with tools, {b} without");
        added.push(a - b);
    }
    assert!(added.iter().all(|n| *n == added[0]), "{added:?}");
    let count = |body: Value| {
        let sim = &sim;
        async move {
            let v: Value =
                serde_json::from_str(&post(sim.addr(), "/tokenize", &body).await).expect("JSON");
            v["count"].as_u64().expect("count")
        }
    };
    let tokenized =
        count(json!({"model": "sim/tiny", "messages": user, "tools": chat_tools})).await;
    let chat = json!({"model": "sim/tiny", "messages": user, "max_tokens": 1, "tools": chat_tools});
    let served = usage_prompt(
        "/v1/chat/completions",
        &post(sim.addr(), "/v1/chat/completions", &chat).await,
    );
    assert_eq!(tokenized, served);
    let plain = count(json!({"model": "sim/tiny", "messages": user})).await;
    assert_eq!(tokenized - plain, added[0]);
    sim.shutdown().await;
}
