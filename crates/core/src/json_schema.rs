//! A JSON Schema validator for the subset of keywords listed in [`CHECKED_KEYWORDS`]
//! (docs/structured-output.md): a schema using any other assertion is refused at startup
//! ([`check_schema`]), so no keyword is ever silently ignored, and an answer is checked against
//! it ([`validate`]). Pure JSON in, a [`SchemaFault`] naming the place (a JSON pointer) out.

use serde_json::Value;

/// Where a schema or an answer fails, and why: the place as a JSON pointer, in words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaFault(pub String);

impl From<String> for SchemaFault {
    fn from(s: String) -> SchemaFault {
        SchemaFault(s)
    }
}

/// The assertion keywords the validator checks.
pub const CHECKED_KEYWORDS: [&str; 19] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
];

/// Keywords that assert nothing (annotations; `format` is one by JSON Schema 2020-12's
/// default), accepted and not checked.
const ANNOTATIONS: [&str; 11] = [
    "$schema",
    "$id",
    "$comment",
    "title",
    "description",
    "default",
    "examples",
    "format",
    "readOnly",
    "writeOnly",
    "deprecated",
];

const TYPES: [&str; 7] = [
    "object", "array", "string", "number", "integer", "boolean", "null",
];

/// Refuses a schema the validator cannot check in full: not an object (or `true`/`false`), a
/// keyword outside [`CHECKED_KEYWORDS`] and the annotations, or a malformed one. The message
/// names the place as a JSON pointer.
pub fn check_schema(schema: &Value) -> Result<(), SchemaFault> {
    walk_schema(schema, "")
}

fn walk_schema(s: &Value, at: &str) -> Result<(), SchemaFault> {
    let m = match s {
        Value::Bool(_) => return Ok(()),
        Value::Object(m) => m,
        _ => return Err(format!("the schema at `{at}` is not an object").into()),
    };
    for (k, v) in m {
        let here = format!("{at}/{k}");
        match k.as_str() {
            "type" => check_type_keyword(v, &here)?,
            "properties" => {
                let props = v
                    .as_object()
                    .ok_or_else(|| format!("`{here}` is not an object"))?;
                for (name, p) in props {
                    walk_schema(p, &format!("{here}/{name}"))?;
                }
            }
            "additionalProperties" | "items" | "not" => walk_schema(v, &here)?,
            "anyOf" | "allOf" | "oneOf" => {
                let list = v
                    .as_array()
                    .filter(|l| !l.is_empty())
                    .ok_or_else(|| format!("`{here}` is not a non-empty array"))?;
                for (i, p) in list.iter().enumerate() {
                    walk_schema(p, &format!("{here}/{i}"))?;
                }
            }
            "required" if v.as_array().is_some_and(|r| r.iter().all(Value::is_string)) => {}
            "enum" if v.is_array() => {}
            "const" => {}
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" if v.is_number() => {}
            "minLength" | "maxLength" | "minItems" | "maxItems" if v.is_u64() => {}
            k if ANNOTATIONS.contains(&k) => {}
            k if CHECKED_KEYWORDS.contains(&k) => {
                return Err(format!("`{here}` has the wrong type for `{k}`").into());
            }
            _ => {
                return Err(format!(
                    "`{here}`: `{k}` is not a keyword this tool checks (it checks {}; annotations such as title and format are accepted)",
                    CHECKED_KEYWORDS.join(", ")
                ).into());
            }
        }
    }
    Ok(())
}

fn check_type_keyword(v: &Value, here: &str) -> Result<(), SchemaFault> {
    let ok = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
    let fine = match v {
        Value::Array(ts) => !ts.is_empty() && ts.iter().all(ok),
        t => ok(t),
    };
    if fine {
        Ok(())
    } else {
        Err(format!("`{here}` names no JSON type ({})", TYPES.join(", ")).into())
    }
}

/// Whether `v` meets `schema` (checked by [`check_schema`]); `Err` says where it does not,
/// as a JSON pointer into the answer.
pub fn validate(v: &Value, schema: &Value) -> Result<(), SchemaFault> {
    meets(v, schema, "")
}

fn meets(v: &Value, s: &Value, at: &str) -> Result<(), SchemaFault> {
    let m = match s {
        Value::Bool(true) => return Ok(()),
        Value::Bool(false) => return Err(format!("`{at}`: the schema allows nothing here").into()),
        Value::Object(m) => m,
        _ => return Ok(()),
    };
    let place = if at.is_empty() { "the answer" } else { at };
    if let Some(t) = m.get("type")
        && !type_matches(v, t)
    {
        return Err(format!("{place}: expected type {t}, got {}", type_name(v)).into());
    }
    if let Some(Value::Array(options)) = m.get("enum")
        && !options.iter().any(|o| same(o, v))
    {
        return Err(format!("{place}: {v} is not one of the enum's values").into());
    }
    if let Some(c) = m.get("const")
        && !same(c, v)
    {
        return Err(format!("{place}: {v} is not the const {c}").into());
    }
    bounds(v, m, place)?;
    match v {
        Value::Object(o) => object_meets(o, m, at)?,
        Value::Array(items) => {
            if let Some(item_schema) = m.get("items") {
                for (i, x) in items.iter().enumerate() {
                    meets(x, item_schema, &format!("{at}/{i}"))?;
                }
            }
        }
        _ => {}
    }
    combinators(v, m, at, place)
}

fn combinators(
    v: &Value,
    m: &serde_json::Map<String, Value>,
    at: &str,
    place: &str,
) -> Result<(), SchemaFault> {
    if let Some(Value::Array(all)) = m.get("allOf") {
        for s in all {
            meets(v, s, at)?;
        }
    }
    if let Some(Value::Array(any)) = m.get("anyOf")
        && !any.iter().any(|s| meets(v, s, at).is_ok())
    {
        return Err(format!("{place}: meets none of anyOf's schemas").into());
    }
    if let Some(Value::Array(one)) = m.get("oneOf") {
        let n = one.iter().filter(|s| meets(v, s, at).is_ok()).count();
        if n != 1 {
            return Err(format!("{place}: meets {n} of oneOf's schemas, not exactly 1").into());
        }
    }
    if let Some(not) = m.get("not")
        && meets(v, not, at).is_ok()
    {
        return Err(format!("{place}: meets the schema under `not`").into());
    }
    Ok(())
}

fn object_meets(
    o: &serde_json::Map<String, Value>,
    m: &serde_json::Map<String, Value>,
    at: &str,
) -> Result<(), SchemaFault> {
    let place = if at.is_empty() { "the answer" } else { at };
    for r in m
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(r) = r.as_str()
            && !o.contains_key(r)
        {
            return Err(format!("{place}: the required property `{r}` is missing").into());
        }
    }
    let props = m.get("properties").and_then(Value::as_object);
    for (k, x) in o {
        let here = format!("{at}/{k}");
        match (props.and_then(|p| p.get(k)), m.get("additionalProperties")) {
            (Some(p), _) => meets(x, p, &here)?,
            (None, Some(Value::Bool(false))) => {
                return Err(format!("{place}: the property `{k}` is not allowed").into());
            }
            (None, Some(extra)) => meets(x, extra, &here)?,
            (None, None) => {}
        }
    }
    Ok(())
}

fn bounds(v: &Value, m: &serde_json::Map<String, Value>, place: &str) -> Result<(), SchemaFault> {
    let num = |k: &str| m.get(k).and_then(Value::as_f64);
    let count = |k: &str| m.get(k).and_then(Value::as_u64);
    let fail = |what: &str, limit: String| Err(format!("{place}: {what} {limit}").into());
    if let Some(x) = v.as_f64() {
        if let Some(l) = num("minimum").filter(|l| x < *l) {
            return fail("below the minimum", l.to_string());
        }
        if let Some(l) = num("maximum").filter(|l| x > *l) {
            return fail("above the maximum", l.to_string());
        }
        if let Some(l) = num("exclusiveMinimum").filter(|l| x <= *l) {
            return fail("not above the exclusive minimum", l.to_string());
        }
        if let Some(l) = num("exclusiveMaximum").filter(|l| x >= *l) {
            return fail("not below the exclusive maximum", l.to_string());
        }
    }
    let len = match v {
        Value::String(s) => Some((s.chars().count() as u64, "minLength", "maxLength")),
        Value::Array(a) => Some((a.len() as u64, "minItems", "maxItems")),
        _ => None,
    };
    if let Some((n, lo, hi)) = len {
        if let Some(l) = count(lo).filter(|l| n < *l) {
            return fail(&format!("{n} long, under {lo}"), l.to_string());
        }
        if let Some(l) = count(hi).filter(|l| n > *l) {
            return fail(&format!("{n} long, over {hi}"), l.to_string());
        }
    }
    Ok(())
}

fn type_matches(v: &Value, t: &Value) -> bool {
    match t {
        Value::Array(ts) => ts.iter().any(|t| type_matches(v, t)),
        Value::String(t) => match t.as_str() {
            "integer" => is_integer(v),
            "number" => v.is_number(),
            other => other == type_name(v),
        },
        _ => true,
    }
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|x| x.fract() == 0.0)
}

pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}
