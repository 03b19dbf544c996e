//! Checking structured answers (docs/structured-output.md): each request's verdict against
//! the schema (`crate::json_schema` validates) and a row's counts.
//!
//! A request's verdict ([`judge`]): an answer cut at its length limit (finish reason `length`)
//! is `cut`, never a schema failure (the grammar had no chance to close it); otherwise its tool
//! calls are checked against the called tool's `parameters` (a call to a tool not offered, a
//! call where `--tool-choice none` forbade one, or no call where one was required, fails), and
//! a text answer against `--response-format` (it must parse as JSON and meet the schema).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::json_schema::{SchemaFault, type_name, validate};
use crate::record::RequestRecord;
use crate::structured::{AnswerCheck, ResponseFormat, StructuredSpec, ToolChoice};

/// One tool call of an answer: the function's name and its arguments' text, as streamed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolCallText {
    /// The function called.
    pub name: String,
    /// Its arguments' JSON text.
    pub arguments: String,
}

/// What a request answered: its content text and its tool calls, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AnswerText {
    /// The content text (reasoning left out).
    pub text: String,
    /// The tool calls.
    pub calls: Vec<ToolCallText>,
}

/// The verdict on a request that finished with `finish` (`None`: nothing to check, as a text
/// answer under `--tool-choice auto` without a format).
pub fn judge(spec: &StructuredSpec, a: &AnswerText, finish: &str) -> Option<AnswerCheck> {
    if finish == "length" {
        return Some(AnswerCheck::Cut);
    }
    let invalid = |why: String| Some(AnswerCheck::Invalid { why });
    if !a.calls.is_empty() {
        if spec.tool_choice == Some(ToolChoice::None) {
            return invalid("a tool call where --tool-choice none forbids one".into());
        }
        for c in &a.calls {
            if let Err(why) = call_meets(spec, c) {
                return invalid(why.0);
            }
        }
        return Some(AnswerCheck::Valid);
    }
    if matches!(
        spec.tool_choice,
        Some(ToolChoice::Required | ToolChoice::Function(_))
    ) {
        return invalid("no tool call where --tool-choice requires one".into());
    }
    let format = spec.response_format.as_ref()?;
    let v: Value = match serde_json::from_str(a.text.trim()) {
        Ok(v) => v,
        Err(e) => return invalid(format!("the answer is not JSON ({e})")),
    };
    let r = match format {
        ResponseFormat::JsonObject if !v.is_object() => Err(SchemaFault(format!(
            "the answer is a {}, not an object",
            type_name(&v)
        ))),
        ResponseFormat::JsonObject => Ok(()),
        ResponseFormat::JsonSchema { schema, .. } => validate(&v, schema),
    };
    Some(r.map_or_else(
        |why| AnswerCheck::Invalid { why: why.0 },
        |()| AnswerCheck::Valid,
    ))
}

fn call_meets(spec: &StructuredSpec, c: &ToolCallText) -> Result<(), SchemaFault> {
    if let Some(ToolChoice::Function(n)) = &spec.tool_choice
        && n != &c.name
    {
        return Err(SchemaFault(format!(
            "called `{}` where --tool-choice names `{n}`",
            c.name
        )));
    }
    let Some(tool) = spec.tools.iter().find(|t| t.name == c.name) else {
        return Err(SchemaFault(format!(
            "called `{}`, which was not offered",
            c.name
        )));
    };
    let text = if c.arguments.trim().is_empty() {
        "{}"
    } else {
        c.arguments.trim()
    };
    let v: Value = serde_json::from_str(text)
        .map_err(|e| SchemaFault(format!("`{}`'s arguments are not JSON ({e})", c.name)))?;
    validate(&v, &tool.parameters)
        .map_err(|why| SchemaFault(format!("`{}`'s arguments: {why}", c.name)))
}

/// A row's structured counts: `checked` = `valid` + `invalid` + `cut` (requests that ended
/// with an answer to judge; cancelled and failed requests are not checked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StructuredFigures {
    /// What was checked: `json_schema`, `json_object`, `tools`, or a `+` of two.
    pub kind: String,
    /// Answers judged.
    pub checked: u64,
    /// Answers that met their schema.
    pub valid: u64,
    /// Answers that did not: counted, never dropped.
    pub invalid: u64,
    /// Answers cut at their length limit, not judged.
    pub cut: u64,
    /// The first invalid answer's failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_error: Option<String>,
}

/// The counts over `records` (their verdicts, set when each request ended).
pub fn structured_figures(spec: &StructuredSpec, records: &[RequestRecord]) -> StructuredFigures {
    let mut f = StructuredFigures {
        kind: spec.kind(),
        ..StructuredFigures::default()
    };
    for c in records.iter().filter_map(|r| r.structured.as_ref()) {
        f.checked += 1;
        match c {
            AnswerCheck::Valid => f.valid += 1,
            AnswerCheck::Cut => f.cut += 1,
            AnswerCheck::Invalid { why } => {
                f.invalid += 1;
                if f.first_error.is_none() {
                    f.first_error = Some(why.clone());
                }
            }
        }
    }
    f
}

#[cfg(test)]
#[path = "tests/structured.rs"]
mod tests;
