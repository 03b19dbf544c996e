//! Structured output and tool calls (`run --response-format`, `--tools`, `--tool-choice`;
//! docs/structured-output.md): what the user asked every generation request to carry, checked
//! before anything is sent, and put into each API's body in that API's shape.
//!
//! Shapes, per API:
//! - chat: `response_format: {"type": "json_schema", "json_schema": {"name", "schema",
//!   "strict": true}}` (or `{"type": "json_object"}`), `tools: [{"type": "function",
//!   "function": {"name", "description", "parameters"}}]`, `tool_choice`;
//! - completions: `response_format` as chat (vLLM and SGLang take it there too); no tools (the
//!   API has no tool calls: refused);
//! - Responses: `text: {"format": {"type": "json_schema", "name", "schema", "strict": true}}`,
//!   `tools` flat (`{"type": "function", "name", "description", "parameters"}`), `tool_choice`
//!   (`{"type": "function", "name"}` for one function);
//! - Messages: `tools: [{"name", "description", "input_schema"}]`, `tool_choice: {"type":
//!   "auto" | "any" | "none" | "tool", "name"}`; its structured output is a beta header this
//!   tool does not send, so `--response-format` is refused there.
//!
//! The answers are checked by `crate::structured_check`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::api::Api;
use crate::json_schema::{SchemaFault, check_schema};

/// `--response-format`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Any JSON object (`json_object`).
    JsonObject,
    /// A JSON Schema the answer must meet (`json_schema:FILE`).
    JsonSchema {
        /// The schema's name, sent as the API's `name` (the file's stem, as the APIs allow).
        name: String,
        /// The schema.
        schema: Value,
        /// sha256 of the file's bytes, which `--resume` compares.
        sha256: String,
    },
}

/// One function tool of `--tools`, in the shape every API's is made from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The function's name.
    pub name: String,
    /// Its description, where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of its arguments (`{"type": "object"}` where the file gave none).
    pub parameters: Value,
}

/// `--tool-choice`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides (a text answer is not checked).
    Auto,
    /// Every answer is a tool call.
    Required,
    /// No tool call (one is a failure).
    None,
    /// Every answer calls this function.
    Function(String),
}

impl ToolChoice {
    /// Reads the flag's value: `auto`, `required`, `none` or a function's name.
    pub fn parse(s: &str) -> ToolChoice {
        match s.trim() {
            "auto" => ToolChoice::Auto,
            "required" => ToolChoice::Required,
            "none" => ToolChoice::None,
            name => ToolChoice::Function(name.to_string()),
        }
    }
}

/// What every generation request carries for structured output and tools.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StructuredSpec {
    /// `--response-format`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// `--tools` (empty without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// sha256 of the tools file's bytes, which `--resume` compares.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_sha256: Option<String>,
    /// `--tool-choice` (the API's default, `auto`, where not given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// Why the structured-output flags were refused (one line each, before anything is sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StructuredError {
    /// The file is not JSON.
    #[error("{flag} {file}: not JSON ({why})")]
    NotJson {
        /// The flag.
        flag: &'static str,
        /// The file as given.
        file: String,
        /// serde's words.
        why: String,
    },
    /// The schema file is not a schema this tool can check.
    #[error("--response-format {file}: {why}")]
    BadSchema {
        /// The file as given.
        file: String,
        /// What is wrong, with the JSON pointer of the place.
        why: String,
    },
    /// The tools file is not a list of function tools.
    #[error("--tools {file}: {why}")]
    BadTools {
        /// The file as given.
        file: String,
        /// What is wrong.
        why: String,
    },
    /// `--tool-choice` without tools, or naming no tool.
    #[error("--tool-choice {0}")]
    BadChoice(String),
    /// `--extra-body` sets a key these flags own.
    #[error(
        "--extra-body may not set `{0}` with --response-format or --tools: the flags set it (and the answers are checked against it)"
    )]
    ExtraBodyKey(String),
    /// The chosen API has no place for it.
    #[error("{flag} has no counterpart in the {api} API: {hint}")]
    Api {
        /// The flag.
        flag: &'static str,
        /// The API's label.
        api: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
}

/// The body keys these flags set on some API: `--extra-body` may not set them too.
pub const STRUCTURED_BODY_KEYS: [&str; 4] = ["response_format", "tools", "tool_choice", "text"];

impl StructuredSpec {
    /// Checks `--response-format`'s schema file (`name`, its bytes) into a format.
    pub fn schema_format(
        file: &str,
        name: &str,
        bytes: &[u8],
    ) -> Result<ResponseFormat, StructuredError> {
        let schema: Value =
            serde_json::from_slice(bytes).map_err(|e| StructuredError::NotJson {
                flag: "--response-format",
                file: file.to_string(),
                why: e.to_string(),
            })?;
        check_schema(&schema).map_err(|why| StructuredError::BadSchema {
            file: file.to_string(),
            why: why.0,
        })?;
        Ok(ResponseFormat::JsonSchema {
            name: api_name(name),
            schema,
            sha256: crate::digest::hex_sha256(bytes),
        })
    }

    /// Checks `--tools`'s file: a JSON array of OpenAI-style function tools (`{"type":
    /// "function", "function": {...}}`), or the flat shape (`{"name", "parameters"}`); names
    /// unique, each `parameters` a schema this tool can check.
    pub fn tools_of(file: &str, bytes: &[u8]) -> Result<Vec<ToolSpec>, StructuredError> {
        let bad = |why: String| StructuredError::BadTools {
            file: file.to_string(),
            why,
        };
        let v: Value = serde_json::from_slice(bytes).map_err(|e| StructuredError::NotJson {
            flag: "--tools",
            file: file.to_string(),
            why: e.to_string(),
        })?;
        let Value::Array(items) = v else {
            return Err(bad("give a JSON array of function tools".into()));
        };
        if items.is_empty() {
            return Err(bad("the list is empty".into()));
        }
        let mut tools: Vec<ToolSpec> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let t = tool_of(item).map_err(|why| bad(format!("tool {i}: {why}")))?;
            if tools.iter().any(|o| o.name == t.name) {
                return Err(bad(format!("tool {i}: `{}` is listed twice", t.name)));
            }
            tools.push(t);
        }
        Ok(tools)
    }

    /// Checks the choice against the tools (`None`: the API's default).
    pub fn check_choice(&self) -> Result<(), StructuredError> {
        let Some(choice) = &self.tool_choice else {
            return Ok(());
        };
        if self.tools.is_empty() {
            return Err(StructuredError::BadChoice(
                "chooses among tools: add --tools FILE".into(),
            ));
        }
        if let ToolChoice::Function(name) = choice
            && !self.tools.iter().any(|t| &t.name == name)
        {
            let names: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
            return Err(StructuredError::BadChoice(format!(
                "`{name}` names no tool of --tools (auto, required, none, or one of: {})",
                names.join(", ")
            )));
        }
        Ok(())
    }

    /// The first `--extra-body` key that these flags set, refused.
    pub fn clash(&self, extra: Option<&Map<String, Value>>) -> Result<(), StructuredError> {
        match extra
            .into_iter()
            .flat_map(|m| m.keys())
            .find(|k| STRUCTURED_BODY_KEYS.contains(&k.as_str()))
        {
            Some(k) => Err(StructuredError::ExtraBodyKey(k.clone())),
            None => Ok(()),
        }
    }

    /// Why `api` cannot carry these flags, if it cannot: completions has no tool calls, and
    /// Messages' structured output is a beta this tool does not speak.
    pub fn refused_on(&self, api: Api) -> Option<StructuredError> {
        let (flag, hint) = match api {
            Api::Completions if !self.tools.is_empty() => (
                "--tools",
                "tool calls need --api chat, responses or messages",
            ),
            Api::Messages if self.response_format.is_some() => (
                "--response-format",
                "use --api chat or responses (or --tools with a required tool, whose input is checked)",
            ),
            _ => return None,
        };
        Some(StructuredError::Api {
            flag,
            api: api.label(),
            hint,
        })
    }

    /// Whether every answer is constrained by a grammar (a format, or a tool call the choice
    /// forces): what the row's check counts, and what a decode step is slowed by.
    pub fn constrains(&self) -> bool {
        self.response_format.is_some()
            || matches!(
                self.tool_choice,
                Some(ToolChoice::Required | ToolChoice::Function(_))
            )
    }

    /// The row's label of what is checked: `json_schema`, `json_object`, `tools` or both.
    pub fn kind(&self) -> String {
        let format = self.response_format.as_ref().map(|f| match f {
            ResponseFormat::JsonObject => "json_object",
            ResponseFormat::JsonSchema { .. } => "json_schema",
        });
        let tools = (!self.tools.is_empty()).then_some("tools");
        let parts: Vec<&str> = format.into_iter().chain(tools).collect();
        parts.join("+")
    }

    /// The tools in chat's shape, for a chat template's render (`None` without tools): the
    /// server renders them into every prompt, so a count of a prompt without them would be
    /// short by the same tokens on every request.
    pub fn chat_tools(&self) -> Option<Value> {
        (!self.tools.is_empty())
            .then(|| Value::Array(self.tools.iter().map(|t| tool_body(Api::Chat, t)).collect()))
    }

    /// Puts the keys into a body for `api` (after the user's controls, so they are the
    /// flags').
    pub fn apply(&self, api: Api, body: &mut Map<String, Value>) {
        if let Some(f) = &self.response_format {
            match api {
                Api::Responses => {
                    body.insert("text".into(), json!({ "format": responses_format(f) }));
                }
                Api::Chat | Api::Completions => {
                    body.insert("response_format".into(), chat_format(f));
                }
                Api::Messages => {}
            }
        }
        if !self.tools.is_empty() && api != Api::Completions {
            let tools: Vec<Value> = self.tools.iter().map(|t| tool_body(api, t)).collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(c) = &self.tool_choice
            && api != Api::Completions
        {
            body.insert("tool_choice".into(), choice_body(api, c));
        }
    }
}

/// A name the APIs take (`^[a-zA-Z0-9_-]{1,64}$`): other characters become `_`.
fn api_name(stem: &str) -> String {
    let n: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if n.is_empty() { "schema".into() } else { n }
}

/// One tool of the file, in either shape.
fn tool_of(item: &Value) -> Result<ToolSpec, SchemaFault> {
    let f = match item.get("function") {
        Some(f) => {
            if item.get("type").and_then(Value::as_str) != Some("function") {
                return Err(SchemaFault(
                    "only `\"type\": \"function\"` tools are supported".into(),
                ));
            }
            f
        }
        None => item,
    };
    let name = f
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or_else(|| SchemaFault("needs a string `name`".into()))?;
    let parameters = f
        .get("parameters")
        .or_else(|| f.get("input_schema"))
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    check_schema(&parameters)
        .map_err(|why| SchemaFault(format!("`{name}`'s parameters: {why}")))?;
    Ok(ToolSpec {
        name: name.to_string(),
        description: f
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_string),
        parameters,
    })
}

fn chat_format(f: &ResponseFormat) -> Value {
    match f {
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema { name, schema, .. } => json!({
            "type": "json_schema",
            "json_schema": {"name": name, "schema": schema, "strict": true},
        }),
    }
}

fn responses_format(f: &ResponseFormat) -> Value {
    match f {
        ResponseFormat::JsonObject => json!({"type": "json_object"}),
        ResponseFormat::JsonSchema { name, schema, .. } => json!({
            "type": "json_schema", "name": name, "schema": schema, "strict": true,
        }),
    }
}

fn tool_body(api: Api, t: &ToolSpec) -> Value {
    let mut f = Map::new();
    f.insert("name".into(), json!(t.name));
    if let Some(d) = &t.description {
        f.insert("description".into(), json!(d));
    }
    match api {
        Api::Messages => {
            f.insert("input_schema".into(), t.parameters.clone());
            Value::Object(f)
        }
        Api::Responses => {
            f.insert("type".into(), json!("function"));
            f.insert("parameters".into(), t.parameters.clone());
            Value::Object(f)
        }
        Api::Chat | Api::Completions => {
            f.insert("parameters".into(), t.parameters.clone());
            json!({"type": "function", "function": f})
        }
    }
}

fn choice_body(api: Api, c: &ToolChoice) -> Value {
    match (api, c) {
        (Api::Messages, ToolChoice::Auto) => json!({"type": "auto"}),
        (Api::Messages, ToolChoice::Required) => json!({"type": "any"}),
        (Api::Messages, ToolChoice::None) => json!({"type": "none"}),
        (Api::Messages, ToolChoice::Function(n)) => json!({"type": "tool", "name": n}),
        (_, ToolChoice::Auto) => json!("auto"),
        (_, ToolChoice::Required) => json!("required"),
        (_, ToolChoice::None) => json!("none"),
        (Api::Responses, ToolChoice::Function(n)) => json!({"type": "function", "name": n}),
        (_, ToolChoice::Function(n)) => json!({"type": "function", "function": {"name": n}}),
    }
}

/// A request's structured verdict (kept in its record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "check", rename_all = "snake_case")]
pub enum AnswerCheck {
    /// The answer (or every call's arguments) meets its schema.
    Valid,
    /// It does not: why, with the place.
    Invalid {
        /// The first failure.
        why: String,
    },
    /// Cut at its length limit before the grammar closed it: not judged.
    Cut,
}
