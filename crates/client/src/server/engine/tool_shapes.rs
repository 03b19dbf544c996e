//! A chat history's tool turns in the shape of the API that carries it (issue 42). A history is
//! kept in chat's shape (an assistant message's `tool_calls`, each result a `tool` message with
//! its `tool_call_id`); Messages takes the calls as `tool_use` content blocks (`input` the
//! arguments' JSON object) and the results as `tool_result` blocks of one user message;
//! Responses takes each call as a `function_call` item after the assistant's text, and each
//! result as a `function_call_output` item. A history without tool turns is passed as it is.

use llmib_core::Api;
use serde_json::{Map, Value, json};

/// The call id, name and arguments' text of one chat `tool_calls` entry.
fn call_parts(call: &Value) -> (Value, Value, String) {
    let f = call.get("function").unwrap_or(call);
    let args = match f.get("arguments") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => String::new(),
        Some(other) => other.to_string(),
    };
    let id = call.get("id").cloned().unwrap_or(Value::Null);
    let name = f.get("name").cloned().unwrap_or(Value::Null);
    (id, name, args)
}

fn role(m: &Value) -> Option<&str> {
    m.get("role").and_then(Value::as_str)
}

/// The calls of an assistant message, where it made any.
fn calls(m: &Value) -> Option<&Vec<Value>> {
    (role(m) == Some("assistant"))
        .then(|| m.get("tool_calls").and_then(Value::as_array))
        .flatten()
        .filter(|c| !c.is_empty())
}

/// The text of a message's `content` (a string; a list's text parts joined).
fn content_text(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

/// A chat history (system messages already apart) in Messages' shape (module docs).
pub(crate) fn messages_shape(history: Value) -> Value {
    let Value::Array(all) = history else {
        return history;
    };
    let mut out: Vec<Value> = Vec::with_capacity(all.len());
    for m in all {
        if let Some(cs) = calls(&m) {
            let text = content_text(&m);
            let mut blocks: Vec<Value> = Vec::new();
            if !text.is_empty() {
                blocks.push(json!({"type": "text", "text": text}));
            }
            for c in cs {
                let (id, name, args) = call_parts(c);
                // Messages takes the arguments as an object; a text that is not one is kept.
                let input = match serde_json::from_str::<Value>(&args) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => json!({ "arguments": args }),
                };
                blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
            }
            out.push(json!({"role": "assistant", "content": blocks}));
        } else if role(&m) == Some("tool") {
            let block = json!({"type": "tool_result", "tool_use_id": m.get("tool_call_id").cloned().unwrap_or(Value::Null), "content": content_text(&m)});
            // One turn's results go back in one user message.
            match out.last_mut() {
                Some(last) if is_results(last) => push_block(last, block),
                _ => out.push(json!({"role": "user", "content": [block]})),
            }
        } else {
            out.push(m);
        }
    }
    Value::Array(out)
}

/// Whether `m` is a user message of tool results (built by [`messages_shape`]).
fn is_results(m: &Value) -> bool {
    role(m) == Some("user")
        && m.get("content")
            .and_then(Value::as_array)
            .is_some_and(|b| b.iter().all(|x| x["type"] == "tool_result"))
}

fn push_block(m: &mut Value, block: Value) {
    if let Some(Value::Array(b)) = m
        .as_object_mut()
        .and_then(|o: &mut Map<String, Value>| o.get_mut("content"))
    {
        b.push(block);
    }
}

/// A chat history (system messages already apart) as Responses' `input` items (module docs).
pub(crate) fn responses_shape(history: Value) -> Value {
    let Value::Array(all) = history else {
        return history;
    };
    let mut out: Vec<Value> = Vec::with_capacity(all.len());
    for m in all {
        if let Some(cs) = calls(&m) {
            let text = content_text(&m);
            if !text.is_empty() {
                out.push(json!({"role": "assistant", "content": text}));
            }
            for c in cs {
                let (id, name, args) = call_parts(c);
                out.push(json!({"type": "function_call", "call_id": id, "name": name, "arguments": args}));
            }
        } else if role(&m) == Some("tool") {
            let id = m.get("tool_call_id").cloned().unwrap_or(Value::Null);
            out.push(
                json!({"type": "function_call_output", "call_id": id, "output": content_text(&m)}),
            );
        } else {
            out.push(m);
        }
    }
    Value::Array(out)
}

/// Chat-shaped tool definitions (`{"type": "function", "function": {…}}`) in `api`'s shape:
/// Messages' `{name, description, input_schema}`, Responses' flat `{type, name, description,
/// parameters}`, chat's as they are.
pub(crate) fn tools_shape(api: Api, tools: &Value) -> Value {
    let Value::Array(all) = tools else {
        return tools.clone();
    };
    let one = |t: &Value| {
        let f = t.get("function").unwrap_or(t);
        let mut m = Map::new();
        for k in ["name", "description"] {
            if let Some(v) = f.get(k) {
                m.insert(k.into(), v.clone());
            }
        }
        let params = f.get("parameters").cloned().unwrap_or(json!({}));
        match api {
            Api::Messages => {
                m.insert("input_schema".into(), params);
                Value::Object(m)
            }
            Api::Responses => {
                m.insert("type".into(), json!("function"));
                m.insert("parameters".into(), params);
                Value::Object(m)
            }
            Api::Chat | Api::Completions => t.clone(),
        }
    };
    Value::Array(all.iter().map(one).collect())
}

#[cfg(test)]
#[path = "tool_shapes_tests.rs"]
mod tests;
