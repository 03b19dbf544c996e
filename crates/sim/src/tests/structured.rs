//! Structured output and tool calls in the simulator: a request under a grammar gets its
//! schema's instance at the length asked, tool calls stream as tool-call deltas on chat, every
//! k-th answer breaks its schema when asked, and each API's shape of the grammar is read.

use serde_json::{Value, json};

use super::raw::post;
use crate::SimConfig;
use crate::api::Api;
use crate::structured::{answer_words, grammar_of};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "rank": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 2},
        },
        "required": ["city", "rank"],
    })
}

fn parse_words(words: &[String]) -> Value {
    serde_json::from_str(&words.join(" ")).expect("the words join into JSON")
}

#[test]
fn the_answer_is_the_minimal_instance_filled_to_the_length_asked() {
    let short = answer_words(&schema(), 0, false);
    let v = parse_words(&short);
    assert_eq!(v, json!({"city": "a", "rank": 1, "tags": ["x", "x"]}));
    for target in [12, 40] {
        let w = answer_words(&schema(), target, false);
        assert_eq!(w.len(), target as usize, "{w:?}");
        let v = parse_words(&w);
        assert!(v["city"].as_str().expect("a string").ends_with("lorem"));
        assert_eq!(v["rank"], 1);
    }
    let broken = parse_words(&answer_words(&schema(), 12, true));
    assert!(broken.get("city").is_none(), "{broken}");
    let no_required = answer_words(&json!({"type": "string"}), 3, true);
    assert!(serde_json::from_str::<Value>(&no_required.join(" ")).is_err());
}

#[test]
fn each_api_shape_of_the_grammar_is_read() {
    let chat = json!({"response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema()}}});
    let g = grammar_of(Api::Chat, chat.to_string().as_bytes()).expect("a grammar");
    assert_eq!((g.schema, g.tool), (schema(), None));
    let resp =
        json!({"text": {"format": {"type": "json_schema", "name": "c", "schema": schema()}}});
    assert_eq!(
        grammar_of(Api::Responses, resp.to_string().as_bytes())
            .expect("g")
            .schema,
        schema()
    );
    let obj = json!({"response_format": {"type": "json_object"}});
    assert_eq!(
        grammar_of(Api::Completions, obj.to_string().as_bytes())
            .expect("g")
            .schema,
        json!({"type": "object"})
    );
    let tools = json!({
        "tools": [{"type": "function", "function": {"name": "a"}},
                  {"type": "function", "function": {"name": "b", "parameters": schema()}}],
        "tool_choice": {"type": "function", "function": {"name": "b"}},
    });
    let g = grammar_of(Api::Chat, tools.to_string().as_bytes()).expect("g");
    assert_eq!((g.tool.as_deref(), g.schema), (Some("b"), schema()));
    let msg =
        json!({"tools": [{"name": "a", "input_schema": schema()}], "tool_choice": {"type": "any"}});
    assert_eq!(
        grammar_of(Api::Messages, msg.to_string().as_bytes())
            .expect("g")
            .tool
            .as_deref(),
        Some("a")
    );
    let auto = json!({"tools": [{"name": "a"}], "tool_choice": "auto"});
    assert_eq!(
        grammar_of(Api::Responses, auto.to_string().as_bytes()),
        None
    );
    assert_eq!(grammar_of(Api::Chat, b"{}"), None);
}

fn chat_body(extra: Value, stream: bool) -> Value {
    let mut b = json!({"model": "sim/tiny", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 100, "stream": stream});
    for (k, v) in extra.as_object().expect("object") {
        b[k] = v.clone();
    }
    b
}

#[tokio::test]
async fn every_kth_answer_breaks_and_the_others_meet_the_schema() {
    let cfg = SimConfig {
        grammar_break_every: 2,
        grammar_answer_tokens: 10,
        ..SimConfig::default()
    };
    let sim = crate::spawn(cfg).await.expect("starts");
    let format = json!({"response_format": {"type": "json_schema", "json_schema": {"name": "c", "schema": schema()}}});
    let mut has_city = Vec::new();
    for _ in 0..4 {
        let a: Value = serde_json::from_str(
            &post(
                sim.addr(),
                "/v1/chat/completions",
                &chat_body(format.clone(), false),
            )
            .await,
        )
        .expect("JSON");
        let content = a["choices"][0]["message"]["content"]
            .as_str()
            .expect("text");
        let v: Value = serde_json::from_str(content.trim()).expect("the answer is JSON");
        has_city.push(v.get("city").is_some());
        assert_eq!(a["choices"][0]["finish_reason"], "stop");
    }
    let plain: Value = serde_json::from_str(
        &post(
            sim.addr(),
            "/v1/chat/completions",
            &chat_body(json!({}), false),
        )
        .await,
    )
    .expect("JSON");
    sim.shutdown().await;
    assert_eq!(has_city, [true, false, true, false]);
    assert!(
        plain["choices"][0]["message"]["content"]
            .as_str()
            .expect("text")
            .parse::<i64>()
            .is_err()
    );
}

#[tokio::test]
async fn a_forced_tool_call_streams_as_tool_call_deltas() {
    let sim = crate::spawn(SimConfig::default()).await.expect("starts");
    let tools = json!({
        "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": schema()}}],
        "tool_choice": "required",
    });
    let sse = post(sim.addr(), "/v1/chat/completions", &chat_body(tools, true)).await;
    sim.shutdown().await;
    let mut name = None;
    let mut args = String::new();
    let mut finish = None;
    for data in sse
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter(|d| *d != "[DONE]")
    {
        let v: Value = serde_json::from_str(data).expect("a chunk");
        let c = &v["choices"][0];
        assert!(
            c["delta"]
                .get("content")
                .is_none_or(|t| t == "" || t.is_null()),
            "{v}"
        );
        if let Some(f) = c["delta"]["tool_calls"][0]["function"].as_object() {
            if let Some(n) = f.get("name") {
                assert!(name.is_none(), "named once");
                name = n.as_str().map(str::to_string);
            }
            args.push_str(f.get("arguments").and_then(Value::as_str).unwrap_or(""));
        }
        if let Some(f) = c["finish_reason"].as_str() {
            finish = Some(f.to_string());
        }
    }
    assert_eq!(name.as_deref(), Some("get_weather"));
    let v: Value = serde_json::from_str(args.trim()).expect("the arguments are JSON");
    assert_eq!(v["rank"], 1);
    assert_eq!(finish.as_deref(), Some("tool_calls"));
}
