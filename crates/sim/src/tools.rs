//! Tool definitions rendered into a chat prompt, as a model's chat template renders them
//! (a `tools` block ahead of the conversation, so a real server's prompt count grows by the
//! same tokens on every request and its prefix cache shares them). The three APIs' shapes
//! (chat's `{"type": "function", "function": {…}}`, Responses' flat `{"type": "function",
//! "name", …}`, Messages' `{"name", "input_schema", …}`) render alike: each tool as its name,
//! description and parameters, so a count made through vLLM's `/tokenize` with chat-shaped
//! tools equals the count of the same tools sent on any route.

use serde_json::{Map, Value};

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
