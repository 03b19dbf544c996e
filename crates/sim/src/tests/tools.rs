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

/// One agent turn in each API's shape: a user's request, the assistant's call of
/// `read_file`, the tool's result (issue 42). Each route's body, and the same conversation
/// without the call and its result.
fn tool_turns() -> [(&'static str, Value, Value); 3] {
    let (sys, user) = ("You are a coder.", "Fix the bug in main.");
    let args = r#"{"path":"src/main.rs"}"#;
    let result = "fn main() { println!(\"hi\"); }";
    let chat = json!([
        {"role": "system", "content": sys},
        {"role": "user", "content": user},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "call_1", "type": "function",
            "function": {"name": "read_file", "arguments": args}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": result}
    ]);
    let messages = json!([
        {"role": "user", "content": user},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "call_1", "name": "read_file",
            "input": {"path": "src/main.rs"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
            "content": result}]}
    ]);
    let items = json!([
        {"role": "user", "content": user},
        {"type": "function_call", "call_id": "call_1", "name": "read_file", "arguments": args},
        {"type": "function_call_output", "call_id": "call_1", "output": result}
    ]);
    let with = |path: &str, conv: &Value, n: usize| {
        let cut = Value::Array(conv.as_array().map_or(&[][..], |a| &a[..n]).to_vec());
        match path {
            "/v1/messages" => {
                json!({"model": "sim/tiny", "system": sys, "messages": cut, "max_tokens": 1})
            }
            "/v1/responses" => {
                json!({"model": "sim/tiny", "instructions": sys, "input": cut, "max_output_tokens": 1})
            }
            _ => json!({"model": "sim/tiny", "messages": cut, "max_tokens": 1}),
        }
    };
    [
        ("/v1/chat/completions", &chat, 4, 2),
        ("/v1/messages", &messages, 3, 1),
        ("/v1/responses", &items, 3, 1),
    ]
    .map(|(path, conv, all, bare)| (path, with(path, conv, all), with(path, conv, bare)))
}

#[tokio::test]
async fn tool_calls_and_results_cost_the_same_tokens_on_every_route_and_tokenize() {
    let sim = crate::spawn(SimConfig {
        flavor: Flavor::Vllm,
        ..SimConfig::default()
    })
    .await
    .expect("starts");
    let mut added = Vec::new();
    for (path, with, bare) in tool_turns() {
        let a = usage_prompt(path, &post(sim.addr(), path, &with).await);
        let b = usage_prompt(path, &post(sim.addr(), path, &bare).await);
        // The call's name and arguments and the result's text are all in the prompt.
        assert!(a > b + 20, "{path}: {a} with the tool turns, {b} without");
        added.push(a - b);
    }
    assert!(added.iter().all(|n| *n == added[0]), "{added:?}");
    // vLLM's /tokenize with the chat shape counts what the chat route served.
    let [(path, chat, _), ..] = tool_turns();
    let served = usage_prompt(path, &post(sim.addr(), path, &chat).await);
    let body = json!({"model": "sim/tiny", "messages": chat["messages"]});
    let v: Value = serde_json::from_str(&post(sim.addr(), "/tokenize", &body).await).expect("JSON");
    assert_eq!(v["count"].as_u64(), Some(served));
    sim.shutdown().await;
}

#[tokio::test]
async fn each_route_refuses_another_apis_tool_shape() {
    let sim = crate::spawn(SimConfig {
        flavor: Flavor::Vllm,
        ..SimConfig::default()
    })
    .await
    .expect("starts");
    let [chat, messages, responses] = tool_turns().map(|(path, with, _)| (path, with));
    // Each body's conversation sent on the next route, in that route's keys.
    let swaps = [
        (
            "/v1/messages",
            json!({"model": "sim/tiny", "messages": chat.1["messages"], "max_tokens": 1}),
        ),
        (
            "/v1/responses",
            json!({"model": "sim/tiny", "input": messages.1["messages"], "max_output_tokens": 1}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "sim/tiny", "messages": responses.1["input"], "max_tokens": 1}),
        ),
    ];
    for (path, body) in swaps {
        let answer = post(sim.addr(), path, &body).await;
        assert!(answer.contains("takes tool calls as"), "{path}: {answer}");
    }
    sim.shutdown().await;
}
