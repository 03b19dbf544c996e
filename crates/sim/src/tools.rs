//! Tool definitions rendered into a chat prompt, as a model's chat template renders them
//! (a `tools` block ahead of the conversation, so a real server's prompt count grows by the
//! same tokens on every request and its prefix cache shares them). The three APIs' shapes
//! (chat's `{"type": "function", "function": {…}}`, Responses' flat `{"type": "function",
//! "name", …}`, Messages' `{"name", "input_schema", …}`) render alike: each tool as its name,
//! description and parameters, so a count made through vLLM's `/tokenize` with chat-shaped
//! tools equals the count of the same tools sent on any route.
//!
//! Tool *messages* render alike too (issue 42): a call the assistant made (chat's `tool_calls`,
//! Messages' `tool_use` block, Responses' `function_call` item) is appended to the assistant's
//! text as `<tool_call>{"name", "arguments"}</tool_call>` (the arguments' JSON text: chat's and
//! Responses' string as sent, Messages' `input` object written compactly), and a tool's result
//! (chat's `tool` message, Messages' `tool_result` block, Responses' `function_call_output`)
//! is a `tool` turn of its text. So a conversation with tool turns costs the same tokens on
//! every route and on `/tokenize`, and its prefix is cached alike.

use serde_json::{Map, Value, json};

use crate::reject::Reject;
use crate::tokenizer::ChatMessage;

/// One tool in the rendered form: `name`, `description` (where given), `parameters`.
fn canonical(tool: &Value) -> Value {
    let f = tool.get("function").unwrap_or(tool);
    let mut m = Map::new();
    for key in ["name", "description"] {
        if let Some(v) = f.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    let params = f.get("parameters").or_else(|| f.get("input_schema"));
    m.insert("parameters".into(), params.cloned().unwrap_or(Value::Null));
    Value::Object(m)
}

/// `messages` with the tools' block first (as a system turn of its own), or as they are
/// without tools.
pub(crate) fn with_tools(
    mut messages: Vec<ChatMessage>,
    tools: Option<&[Value]>,
) -> Vec<ChatMessage> {
    let Some(tools) = tools.filter(|t| !t.is_empty()) else {
        return messages;
    };
    let rendered: Vec<Value> = tools.iter().map(canonical).collect();
    let block = ChatMessage {
        role: "tools".into(),
        content: format!("<tools>{}</tools>", Value::Array(rendered)),
    };
    messages.insert(0, block);
    messages
}

/// A call as the template renders it.
fn rendered_call(name: Option<&Value>, arguments: Option<&Value>) -> String {
    let args = match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let name = name.and_then(Value::as_str).unwrap_or_default();
    format!(
        "<tool_call>{}</tool_call>",
        json!({"name": name, "arguments": args})
    )
}

/// The text of a tool result's or a message's content: a string, or its text parts joined.
fn text_of(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect(),
        _ => String::new(),
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    v.get("type").and_then(Value::as_str) == Some(t)
}

/// The API whose shape a conversation's tool turns must have: each route refuses the
/// others' (a real server would not read them), so a client that sends the wrong shape fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolShape {
    /// `tool_calls` on an assistant message, results as `tool` messages.
    Chat,
    /// `tool_use` and `tool_result` content blocks.
    Messages,
    /// `function_call` and `function_call_output` items.
    Responses,
}

/// Why message item `m` has another API's tool shape than `shape`'s, if it does.
fn foreign(m: &Value, shape: ToolShape) -> Option<&'static str> {
    let role = m.get("role").and_then(Value::as_str);
    let blocks = m.get("content").and_then(Value::as_array);
    let has = |t: &str| blocks.is_some_and(|b| b.iter().any(|x| is_type(x, t)));
    let chat = m.get("tool_calls").is_some() || role == Some("tool");
    let messages = has("tool_use") || has("tool_result");
    let responses = is_type(m, "function_call") || is_type(m, "function_call_output");
    match shape {
        ToolShape::Chat if messages || responses => Some(
            "chat takes tool calls as an assistant's `tool_calls` and results as `tool` messages",
        ),
        ToolShape::Messages if chat || responses => Some(
            "Messages takes tool calls as `tool_use` blocks and results as `tool_result` blocks",
        ),
        ToolShape::Responses if chat || messages => Some(
            "Responses takes tool calls as `function_call` items and results as `function_call_output` items",
        ),
        _ => None,
    }
}

/// Adds message item `m` to `out` where it is a tool's shape (module docs) and says so;
/// `false`: a plain message, for the caller to read. Another API's shape is refused.
pub(crate) fn push_tool_item(
    out: &mut Vec<ChatMessage>,
    m: &Value,
    shape: ToolShape,
) -> Result<bool, Reject> {
    if let Some(why) = foreign(m, shape) {
        return Err(Reject::bad(why));
    }
    let role = m.get("role").and_then(Value::as_str);
    let blocks = m.get("content").and_then(Value::as_array);
    let has = |t: &str| blocks.is_some_and(|b| b.iter().any(|x| is_type(x, t)));
    if is_type(m, "function_call") {
        let call = rendered_call(m.get("name"), m.get("arguments"));
        match out.last_mut() {
            // A Responses call follows the assistant's text item of the same turn.
            Some(last) if last.role == "assistant" => last.content.push_str(&call),
            _ => out.push(ChatMessage {
                role: "assistant".into(),
                content: call,
            }),
        }
    } else if is_type(m, "function_call_output") {
        out.push(tool_turn(text_of(m.get("output"))));
    } else if role == Some("assistant") && (m.get("tool_calls").is_some() || has("tool_use")) {
        out.push(assistant_with_calls(m)?);
    } else if role == Some("user") && has("tool_result") {
        // Anthropic's results come back in a user turn: each is a tool turn, any text after.
        let mut text = String::new();
        for b in blocks.into_iter().flatten() {
            if is_type(b, "tool_result") {
                out.push(tool_turn(text_of(b.get("content"))));
            } else if let Some(t) = b.get("text").and_then(Value::as_str) {
                text.push_str(t);
            }
        }
        if !text.is_empty() {
            out.push(ChatMessage {
                role: "user".into(),
                content: text,
            });
        }
    } else {
        return Ok(false);
    }
    Ok(true)
}

fn tool_turn(content: String) -> ChatMessage {
    ChatMessage {
        role: "tool".into(),
        content,
    }
}

/// An assistant message with calls: chat's text then its `tool_calls`, or Messages' blocks
/// in order (text as it is, each `tool_use` rendered).
fn assistant_with_calls(m: &Value) -> Result<ChatMessage, Reject> {
    let mut content = String::new();
    match m.get("content") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => content.push_str(s),
        Some(Value::Array(blocks)) => {
            for b in blocks {
                if is_type(b, "tool_use") {
                    content.push_str(&rendered_call(b.get("name"), b.get("input")));
                } else if let Some(t) = b.get("text").and_then(Value::as_str) {
                    content.push_str(t);
                }
            }
        }
        Some(_) => {
            return Err(Reject::bad(
                "message `content` must be a string or a list of parts",
            ));
        }
    }
    let calls = match m.get("tool_calls") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(c)) => c.as_slice(),
        Some(_) => return Err(Reject::bad("`tool_calls` must be a list")),
    };
    for c in calls {
        let f = c.get("function").unwrap_or(c);
        content.push_str(&rendered_call(f.get("name"), f.get("arguments")));
    }
    Ok(ChatMessage {
        role: "assistant".into(),
        content,
    })
}
