//! Structured output and tool calls in the simulator (docs/structured-output.md): a request
//! under a grammar (`response_format` / Responses' `text.format` with a JSON schema or
//! `json_object`, or a tool call its `tool_choice` forces) is answered with an instance of its
//! schema, and its decode steps are slower.
//!
//! - The answer: the schema's minimal instance (every listed property; arrays at `minItems`;
//!   numbers at their minimum; the first `enum` value), written with a space after each `:`
//!   and `,` and split at the spaces into words, one token each. Its first unbounded string is
//!   filled with filler words up to `grammar_answer_tokens` tokens, or to the length a request
//!   forces (`min_tokens`, or `max_tokens` under `ignore_eos`). The answer then stops
//!   (finish `stop`, or `tool_calls` for a call), unless `max_tokens` cuts it first.
//! - Timing: a decode step whose batch holds a request under a grammar takes
//!   `grammar_step_factor` times as long (the mask the grammar computes every step).
//! - Faults: every `grammar_break_every`-th answer under a grammar (counted from the
//!   server's start) breaks its schema: a required property is left out, or where there is
//!   none the text is not JSON.
//! - Tool calls stream as tool-call deltas on chat (`delta.tool_calls[0].function`, the name
//!   on the first); the Messages and Responses routes answer a tool call as text (left out).

use serde_json::{Map, Value};

use crate::api::Api;

/// What a request's grammar asks for.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Grammar {
    /// The schema the answer (or the call's arguments) meets.
    pub schema: Value,
    /// The function called, for a forced tool call.
    pub tool: Option<String>,
}

/// The grammar of a request body on `api`'s route, if it has one.
pub(crate) fn grammar_of(api: Api, body: &[u8]) -> Option<Grammar> {
    let v: Value = serde_json::from_slice(body).ok()?;
    tool_grammar(api, &v).or_else(|| format_grammar(api, &v))
}

fn format_grammar(api: Api, v: &Value) -> Option<Grammar> {
    let f = match api {
        Api::Responses => v.get("text")?.get("format")?,
        _ => v.get("response_format")?,
    };
    let schema = match f.get("type")?.as_str()? {
        "json_object" => serde_json::json!({"type": "object"}),
        "json_schema" => match api {
            Api::Responses => f.get("schema")?.clone(),
            _ => f.get("json_schema")?.get("schema")?.clone(),
        },
        _ => return None,
    };
    Some(Grammar { schema, tool: None })
}

/// A tool call the request's `tool_choice` forces: `required` / `any` takes the first tool.
fn tool_grammar(api: Api, v: &Value) -> Option<Grammar> {
    let tools = v.get("tools")?.as_array()?;
    let choice = v.get("tool_choice")?;
    let named = match choice {
        Value::String(s) if s == "required" => None,
        Value::Object(o) => match o.get("type")?.as_str()? {
            "any" => None,
            "tool" | "function" => Some(
                o.get("name")
                    .or_else(|| o.get("function")?.get("name"))?
                    .as_str()?
                    .to_string(),
            ),
            _ => return Option::None,
        },
        _ => return Option::None,
    };
    let def = |t: &Value| -> Option<(String, Value)> {
        let f = if api == Api::Chat || api == Api::Completions {
            t.get("function")?
        } else {
            t
        };
        let name = f.get("name")?.as_str()?.to_string();
        let schema = f
            .get("parameters")
            .or_else(|| f.get("input_schema"))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        Some((name, schema))
    };
    let (name, schema) = tools
        .iter()
        .filter_map(def)
        .find(|(n, _)| named.as_ref().is_none_or(|w| w == n))?;
    Some(Grammar {
        schema,
        tool: Some(name),
    })
}

/// The answer's words (one token each) for `target` tokens; `broken` leaves out a required
/// property (or, with none, makes the text not JSON).
pub(crate) fn answer_words(schema: &Value, target: u32, broken: bool) -> Vec<String> {
    let mut v = instance(schema);
    let mut spoiled = false;
    if broken && let (Value::Object(o), Some(first)) = (&mut v, first_required(schema)) {
        spoiled = o.remove(&first).is_some();
    }
    let words = |pad: usize| {
        let mut text = String::new();
        let mut slot = Some(pad);
        write(&v, schema, &mut text, &mut slot);
        if broken && !spoiled {
            text.insert_str(0, "broken ");
        }
        text.split(' ').map(str::to_string).collect::<Vec<_>>()
    };
    let base = words(0);
    let short = (target as usize).saturating_sub(base.len());
    if short == 0 { base } else { words(short) }
}

fn first_required(schema: &Value) -> Option<String> {
    let r = schema.get("required")?.as_array()?;
    Some(r.first()?.as_str()?.to_string())
}

/// The schema's minimal instance (module docs).
fn instance(s: &Value) -> Value {
    let Some(m) = s.as_object() else {
        return Value::Null;
    };
    if let Some(c) = m.get("const") {
        return c.clone();
    }
    if let Some(first) = m
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for k in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = m.get(k).and_then(Value::as_array).and_then(|l| l.first()) {
            return instance(first);
        }
    }
    let ty = match m.get("type") {
        Some(Value::Array(ts)) => ts.first().and_then(Value::as_str),
        Some(t) => t.as_str(),
        None if m.contains_key("properties") => Some("object"),
        None => None,
    };
    let num = |k: &str| m.get(k).and_then(Value::as_f64);
    match ty {
        Some("object") => {
            let props = m.get("properties").and_then(Value::as_object);
            let o: Map<String, Value> = props
                .into_iter()
                .flatten()
                .map(|(k, p)| (k.clone(), instance(p)))
                .collect();
            Value::Object(o)
        }
        Some("array") => {
            let n = m.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = m.get("items").map_or(Value::Null, instance);
            Value::Array(vec![item; n as usize])
        }
        Some("string") => {
            let n = m.get("minLength").and_then(Value::as_u64).unwrap_or(1);
            let max = m
                .get("maxLength")
                .and_then(Value::as_u64)
                .unwrap_or(u64::MAX);
            Value::String("a".repeat(n.min(max) as usize))
        }
        Some("integer" | "number") => {
            let x = num("minimum")
                .or_else(|| num("exclusiveMinimum").map(|x| x.floor() + 1.0))
                .unwrap_or(0.0);
            serde_json::json!(x as i64)
        }
        Some("boolean") => Value::Bool(true),
        _ => Value::Null,
    }
}

/// Writes `v` with a space after each `:` and `,`; the first string that its schema leaves
/// unbounded gets `slot`'s filler words (then `slot` is spent).
fn write(v: &Value, s: &Value, out: &mut String, slot: &mut Option<usize>) {
    match v {
        Value::Object(o) => {
            out.push('{');
            for (i, (k, x)) in o.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push_str(": ");
                let sub = s
                    .get("properties")
                    .and_then(|p| p.get(k))
                    .unwrap_or(&Value::Null);
                write(x, sub, out, slot);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write(x, s.get("items").unwrap_or(&Value::Null), out, slot);
            }
            out.push(']');
        }
        Value::String(t)
            if s.get("maxLength").is_none()
                && s.get("enum").is_none()
                && s.get("const").is_none() =>
        {
            let pad = slot.take().unwrap_or(0);
            let mut t = t.clone();
            for _ in 0..pad {
                t.push_str(" lorem");
            }
            out.push_str(&Value::String(t).to_string());
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The chat route's events of a tool call: a step's `delta.content` becomes the arguments of
/// `delta.tool_calls[0]` (named on the first), and a `stop` finish `tool_calls`.
pub(crate) fn as_tool_call(event: &str, name: &str, first: &mut bool) -> String {
    let Some(data) = event.trim_end().strip_prefix("data: ") else {
        return event.to_string();
    };
    let Ok(mut v) = serde_json::from_str::<Value>(data) else {
        return event.to_string();
    };
    let Some(choice) = v.get_mut("choices").and_then(|c| c.get_mut(0)) else {
        return event.to_string();
    };
    if choice.get("finish_reason").and_then(Value::as_str) == Some("stop") {
        choice["finish_reason"] = Value::String("tool_calls".into());
    }
    if let Some(Value::Object(delta)) = choice.get_mut("delta")
        && let Some(Value::String(text)) = delta.remove("content")
    {
        let mut function = Map::new();
        if *first {
            function.insert("name".into(), Value::String(name.into()));
            *first = false;
        }
        function.insert("arguments".into(), Value::String(text));
        let call = serde_json::json!({"index": 0, "id": "call_0", "type": "function", "function": function});
        delta.insert("tool_calls".into(), Value::Array(vec![call]));
    }
    crate::wire::sse(&v.to_string())
}

/// A grammar request's answer and, for a tool call, the tool's name: `None` without a
/// grammar. Counts the answer toward `grammar_break_every`.
pub(crate) fn answer_for(
    st: &crate::state::AppState,
    api: Api,
    body: &[u8],
    req: &crate::request::GenRequest,
) -> Option<(Vec<String>, Option<String>)> {
    let g = grammar_of(api, body)?;
    let cfg = &st.cfg;
    let n = st
        .structured_answers
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    let broken =
        cfg.grammar_break_every > 0 && n.is_multiple_of(u64::from(cfg.grammar_break_every));
    let target = if req.ignore_eos {
        req.max_tokens
    } else if req.min_tokens > 0 {
        req.min_tokens
    } else {
        cfg.grammar_answer_tokens
    };
    Some((answer_words(&g.schema, target, broken), g.tool))
}

/// The chat route's framing of a tool call: the route's own frames, their step events
/// rewritten by [`as_tool_call`].
pub(crate) struct ToolCallFrames {
    /// The route's frames.
    pub inner: Box<dyn crate::frames::Frames>,
    /// The function called.
    pub name: String,
    /// The name is still to be sent.
    pub first: bool,
}

impl crate::frames::Frames for ToolCallFrames {
    fn writer(&self) -> &crate::wire::Writer {
        self.inner.writer()
    }

    fn set_cached_tokens(&mut self, cached: u64) {
        self.inner.set_cached_tokens(cached);
    }

    fn greeting(&mut self) -> Vec<String> {
        self.inner.greeting()
    }

    fn opening(&mut self) -> Vec<String> {
        self.inner.opening()
    }

    fn step(&mut self, s: &crate::frames::Step<'_>) -> crate::frames::StepEvents {
        let mut ev = self.inner.step(s);
        for e in &mut ev.events {
            *e = as_tool_call(e, &self.name, &mut self.first);
        }
        ev
    }

    fn closing(&mut self, completion: u32, finish: crate::engine::Finish) -> Vec<String> {
        self.inner.closing(completion, finish)
    }

    fn failure(&mut self, message: &str) -> Vec<String> {
        self.inner.failure(message)
    }

    fn torn_event(&self) -> &'static str {
        self.inner.torn_event()
    }

    fn body(
        &self,
        answer: &crate::frames::Answer,
        completion: u32,
        finish: crate::engine::Finish,
    ) -> String {
        self.inner.body(answer, completion, finish)
    }
}
