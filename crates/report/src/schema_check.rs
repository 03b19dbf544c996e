//! `results.json` against the published `schemas/results.schema.json`, compiled in.
//!
//! The `jsonschema` crate would pull in a regex engine, an HTTP client feature set and more, so
//! this is a focused validator of the JSON Schema keywords our schema uses. A keyword it does
//! not implement is itself a violation (never silently passed), so the schema cannot quietly
//! rely on one that is not checked. The hub runs it on every upload; the report's tests run it
//! on every exporter change.

use serde_json::Value;
use std::sync::OnceLock;

/// The published results schema (`schemas/results.schema.json`), as text.
pub const RESULTS_SCHEMA: &str = include_str!("../../../schemas/results.schema.json");

/// The keywords [`check_results_schema`] implements.
const KNOWN: &[&str] = &[
    "$schema",
    "$id",
    "$defs",
    "$ref",
    "title",
    "description",
    "type",
    "const",
    "enum",
    "properties",
    "required",
    "items",
    "minimum",
    "anyOf",
    "allOf",
    "if",
    "then",
];

/// Where a document breaks the results schema, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("results.json breaks the results schema at `{}`: {what}", if path.is_empty() { "/" } else { path })]
pub struct SchemaViolation {
    /// JSON pointer of the offending value (`/cells/3/status`; empty for the document).
    pub path: String,
    /// What failed, in words.
    pub what: String,
}

/// The schema, parsed once (it is compiled in; a parse failure is a violation at the root).
fn schema() -> Result<&'static Value, SchemaViolation> {
    static SCHEMA: OnceLock<Result<Value, SchemaViolation>> = OnceLock::new();
    SCHEMA
        .get_or_init(|| {
            serde_json::from_str(RESULTS_SCHEMA)
                .map_err(|e| violation("", format!("the compiled-in schema is not JSON: {e}")))
        })
        .as_ref()
        .map_err(SchemaViolation::clone)
}

fn violation(path: &str, what: String) -> SchemaViolation {
    SchemaViolation {
        path: path.to_string(),
        what,
    }
}

/// Checks `value` (a `results.json` document) against the results schema; the first violation
/// found, in document order.
pub fn check_results_schema(value: &Value) -> Result<(), SchemaViolation> {
    match schema_errors(value).into_iter().next() {
        Some(v) => Err(v),
        None => Ok(()),
    }
}

/// Every violation of `value` against the results schema (empty when it validates).
pub(crate) fn schema_errors(value: &Value) -> Vec<SchemaViolation> {
    let root = match schema() {
        Ok(r) => r,
        Err(v) => return vec![v],
    };
    let mut errs = Vec::new();
    Validator { root }.check(root, value, "", &mut errs);
    errs
}

fn type_ok(v: &Value, t: &str) -> Option<bool> {
    Some(match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        "integer" => v.is_u64() || v.is_i64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => return None,
    })
}

/// One walk of a document against the schema rooted at `root` (for `$ref`s).
struct Validator<'s> {
    root: &'s Value,
}

impl Validator<'_> {
    fn check(&self, schema: &Value, v: &Value, at: &str, errs: &mut Vec<SchemaViolation>) {
        let Some(s) = schema.as_object() else {
            errs.push(violation(at, "the schema here is not an object".into()));
            return;
        };
        if let Some(k) = s.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            errs.push(violation(
                at,
                format!("the schema uses unsupported keyword {k}"),
            ));
            return;
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match r.strip_prefix("#/$defs/").map(|n| &self.root["$defs"][n]) {
                Some(target) if !target.is_null() => self.check(target, v, at, errs),
                _ => errs.push(violation(at, format!("the schema's $ref {r} dangles"))),
            }
        }
        if !self.type_and_value(s, v, at, errs) {
            return;
        }
        if let Some(obj) = v.as_object() {
            self.object(s, obj, at, errs);
        }
        if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
            for (i, x) in arr.iter().enumerate() {
                self.check(items, x, &format!("{at}/{i}"), errs);
            }
        }
        self.combinators(s, v, at, errs);
    }

    /// `type`, `const`, `enum`, `minimum`; false when the type is wrong (nothing else applies).
    fn type_and_value(
        &self,
        s: &serde_json::Map<String, Value>,
        v: &Value,
        at: &str,
        errs: &mut Vec<SchemaViolation>,
    ) -> bool {
        if let Some(t) = s.get("type") {
            let ok = match t {
                Value::String(t) => type_ok(v, t),
                Value::Array(ts) => ts
                    .iter()
                    .map(|t| type_ok(v, t.as_str().unwrap_or("")))
                    .try_fold(false, |acc, x| x.map(|x| acc || x)),
                _ => None,
            };
            match ok {
                Some(true) => {}
                Some(false) => {
                    errs.push(violation(at, format!("{v} is not of type {t}")));
                    return false;
                }
                None => {
                    errs.push(violation(at, format!("the schema has an unknown type {t}")));
                    return false;
                }
            }
        }
        if let Some(c) = s.get("const")
            && c != v
        {
            errs.push(violation(at, format!("{v} is not {c}")));
        }
        if let Some(e) = s.get("enum").and_then(Value::as_array)
            && !e.contains(v)
        {
            errs.push(violation(at, format!("{v} is not one of {e:?}")));
        }
        if let (Some(m), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64())
            && x < m
        {
            errs.push(violation(at, format!("{x} < {m}")));
        }
        true
    }

    /// `required` and `properties`.
    fn object(
        &self,
        s: &serde_json::Map<String, Value>,
        obj: &serde_json::Map<String, Value>,
        at: &str,
        errs: &mut Vec<SchemaViolation>,
    ) {
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = r.as_str().unwrap_or_default();
            if !obj.contains_key(key) {
                errs.push(violation(at, format!("missing required `{key}`")));
            }
        }
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (k, sub) in props {
                if let Some(x) = obj.get(k) {
                    self.check(sub, x, &format!("{at}/{k}"), errs);
                }
            }
        }
    }

    /// `anyOf`, `allOf`, `if`/`then`.
    fn combinators(
        &self,
        s: &serde_json::Map<String, Value>,
        v: &Value,
        at: &str,
        errs: &mut Vec<SchemaViolation>,
    ) {
        if let Some(any) = s.get("anyOf").and_then(Value::as_array) {
            let ok = any.iter().any(|sub| {
                let mut e = Vec::new();
                self.check(sub, v, at, &mut e);
                e.is_empty()
            });
            if !ok {
                errs.push(violation(at, "matches none of anyOf".into()));
            }
        }
        for sub in s
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.check(sub, v, at, errs);
        }
        if let Some(cond) = s.get("if") {
            let mut e = Vec::new();
            self.check(cond, v, at, &mut e);
            if e.is_empty()
                && let Some(then) = s.get("then")
            {
                self.check(then, v, at, errs);
            }
        }
    }
}
