//! Known answers for a history's tool turns in Messages' and Responses' shapes, a history
//! without them passed as it is, and the simulator's count of the three shapes alike (its
//! template renders a call and a result the same from each).

use super::*;

/// A user's request, the assistant's text and two calls, their two results, a user's reply.
fn history() -> Value {
    json!([
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}},
            {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": "{\"q\":\"bug\"}"}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "fn a() {}"},
        {"role": "tool", "tool_call_id": "c2", "content": "a.rs:1"},
        {"role": "user", "content": "Go on."}
    ])
}

#[test]
fn messages_take_tool_use_blocks_and_one_user_turn_of_results() {
    let want = json!([
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "c1", "name": "read", "input": {"path": "a.rs"}},
            {"type": "tool_use", "id": "c2", "name": "grep", "input": {"q": "bug"}}
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "fn a() {}"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "a.rs:1"}
        ]},
        {"role": "user", "content": "Go on."}
    ]);
    assert_eq!(messages_shape(history()), want);
}

#[test]
fn responses_take_function_call_and_output_items() {
    let want = json!([
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "Reading."},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{\"path\":\"a.rs\"}"},
        {"type": "function_call", "call_id": "c2", "name": "grep", "arguments": "{\"q\":\"bug\"}"},
        {"type": "function_call_output", "call_id": "c1", "output": "fn a() {}"},
        {"type": "function_call_output", "call_id": "c2", "output": "a.rs:1"},
        {"role": "user", "content": "Go on."}
    ]);
    assert_eq!(responses_shape(history()), want);
}

#[test]
fn a_history_without_tool_turns_is_sent_as_it_is() {
    let plain = json!([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "again"}]}
    ]);
    assert_eq!(messages_shape(plain.clone()), plain);
    assert_eq!(responses_shape(plain.clone()), plain);
    // Arguments that are not a JSON object still reach Messages, as an object holding them.
    let odd = json!([{"role": "assistant", "content": null, "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "f", "arguments": "not json"}}]}]);
    assert_eq!(
        messages_shape(odd)[0]["content"][0]["input"],
        json!({"arguments": "not json"})
    );
}

/// The simulator's prompt tokens for `body` on `path`.
async fn prompt_tokens(url: &str, path: &str, body: &Value) -> u64 {
    let client = crate::wire::http::build_client(&crate::wire::http::HttpOptions::default())
        .expect("client");
    let v: Value = client
        .post(format!("{url}{path}"))
        .json(body)
        .send()
        .await
        .expect("sent")
        .json()
        .await
        .expect("JSON");
    let u = &v["usage"];
    let part = |k: &str| u[k].as_u64().unwrap_or(0);
    part("prompt_tokens")
        + part("input_tokens")
        + part("cache_creation_input_tokens")
        + part("cache_read_input_tokens")
}

#[tokio::test]
async fn the_simulator_counts_the_three_shapes_of_one_history_alike() {
    let cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm");
    let model = cfg.model.clone();
    let sim = llmib_sim::spawn(cfg).await.expect("sim");
    let url = format!("http://{}", sim.addr());
    let bare = json!([{"role": "user", "content": "Fix the bug."}]);
    let bodies = |h: Value| {
        [
            (
                "/v1/chat/completions",
                json!({"model": model, "messages": h.clone(), "max_tokens": 1}),
            ),
            (
                "/v1/messages",
                json!({"model": model, "messages": messages_shape(h.clone()), "max_tokens": 1}),
            ),
            (
                "/v1/responses",
                json!({"model": model, "input": responses_shape(h), "max_output_tokens": 1}),
            ),
        ]
    };
    let mut added = Vec::new();
    for ((path, with), (_, without)) in bodies(history()).into_iter().zip(bodies(bare)) {
        let (a, b) = (
            prompt_tokens(&url, path, &with).await,
            prompt_tokens(&url, path, &without).await,
        );
        assert!(a > b + 20, "{path}: {a} with the tool turns, {b} without");
        added.push(a - b);
    }
    assert!(added.iter().all(|n| *n == added[0]), "{added:?}");
    sim.shutdown().await;
}
