//! Known answers of the structured-output checks: the schema subset refused at startup, the
//! validator's verdicts, the flags' refusals, the bodies per API, a request's verdict and a
//! row's counts.

use super::*;
use crate::api::Api;
use crate::json_schema::{check_schema, validate};
use crate::structured::{AnswerCheck, ResponseFormat, StructuredError, StructuredSpec, ToolChoice};
use serde_json::{Map, json};

fn city_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "city": {"type": "string", "minLength": 2},
            "rank": {"type": "integer", "minimum": 1, "maximum": 10},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2},
        },
        "required": ["city", "rank"],
        "additionalProperties": false,
    })
}

fn spec_with(
    format: Option<ResponseFormat>,
    tools: &str,
    choice: Option<ToolChoice>,
) -> StructuredSpec {
    StructuredSpec {
        response_format: format,
        tools: if tools.is_empty() {
            Vec::new()
        } else {
            StructuredSpec::tools_of("t.json", tools.as_bytes()).expect("tools")
        },
        tools_sha256: None,
        tool_choice: choice,
    }
}

fn schema_spec() -> StructuredSpec {
    let bytes = serde_json::to_vec(&city_schema()).expect("json");
    let f = StructuredSpec::schema_format("city.json", "city answer", &bytes).expect("schema");
    spec_with(Some(f), "", None)
}

const TOOLS: &str = r#"[{"type":"function","function":{"name":"get_weather","description":"d",
  "parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},
  {"name":"noop"}]"#;

#[test]
fn the_validator_checks_each_keyword_of_its_subset() {
    let s = city_schema();
    assert_eq!(validate(&json!({"city": "Oslo", "rank": 3}), &s), Ok(()));
    assert_eq!(
        validate(&json!({"city": "Oslo", "rank": 3.0, "tags": ["a"]}), &s),
        Ok(())
    );
    let why = |v: Value| validate(&v, &s).expect_err("invalid").0;
    assert!(why(json!({"rank": 3})).contains("required property `city`"));
    assert!(why(json!({"city": "O", "rank": 3})).contains("/city: 1 long, under minLength"));
    assert!(why(json!({"city": "Oslo", "rank": 11})).contains("/rank: above the maximum"));
    assert!(why(json!({"city": "Oslo", "rank": 2.5})).contains("expected type \"integer\""));
    assert!(why(json!({"city": "Oslo", "rank": 2, "x": 1})).contains("`x` is not allowed"));
    assert!(why(json!({"city": "Oslo", "rank": 2, "tags": ["c"]})).contains("/tags/0"));
    assert!(why(json!({"city": "Oslo", "rank": 2, "tags": ["a", "a", "b"]})).contains("maxItems"));
    assert!(why(json!([1])).contains("expected type \"object\", got array"));
    let any = json!({"anyOf": [{"type": "string"}, {"type": "null"}]});
    assert_eq!(validate(&json!(null), &any), Ok(()));
    assert!(validate(&json!(1), &any).is_err());
    let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
    assert!(
        validate(&json!(2), &one)
            .expect_err("both")
            .0
            .contains("2 of oneOf")
    );
    assert_eq!(validate(&json!(2.5), &one), Ok(()));
    assert!(validate(&json!(1), &json!({"not": {"const": 1}})).is_err());
    assert!(validate(&json!(1), &json!(false)).is_err());
    assert!(validate(&json!(5), &json!({"exclusiveMaximum": 5})).is_err());
}

#[test]
fn a_schema_with_an_unchecked_keyword_is_refused_where_it_stands() {
    assert_eq!(check_schema(&city_schema()), Ok(()));
    let e = check_schema(&json!({"properties": {"a": {"pattern": "^x"}}}))
        .expect_err("pattern")
        .0;
    assert!(
        e.starts_with("`/properties/a/pattern`: `pattern` is not a keyword"),
        "{e}"
    );
    assert!(check_schema(&json!({"$ref": "#/$defs/a"})).is_err());
    assert!(
        check_schema(&json!({"type": "text"}))
            .expect_err("type")
            .0
            .contains("names no JSON type")
    );
    assert!(
        check_schema(&json!({"minLength": -1}))
            .expect_err("neg")
            .0
            .contains("wrong type")
    );
    assert!(check_schema(&json!([1])).is_err());
    assert_eq!(
        check_schema(&json!({"title": "t", "format": "date", "description": "d"})),
        Ok(())
    );
}

#[test]
fn the_flags_files_and_choice_are_checked_before_anything_is_sent() {
    let e = StructuredSpec::schema_format("s.json", "s", b"{nope").expect_err("not json");
    assert!(
        e.to_string()
            .starts_with("--response-format s.json: not JSON ("),
        "{e}"
    );
    let f = StructuredSpec::schema_format("s.json", "my schema!", b"{\"type\":\"object\"}")
        .expect("ok");
    let ResponseFormat::JsonSchema { name, sha256, .. } = &f else {
        panic!("schema")
    };
    assert_eq!(name, "my_schema_");
    assert_eq!(sha256, &crate::digest::hex_sha256(b"{\"type\":\"object\"}"));
    assert!(
        StructuredSpec::tools_of("t", b"{}")
            .expect_err("object")
            .to_string()
            .contains("JSON array")
    );
    assert!(StructuredSpec::tools_of("t", b"[]").is_err());
    let twice = r#"[{"name":"a"},{"name":"a"}]"#;
    assert!(
        StructuredSpec::tools_of("t", twice.as_bytes())
            .expect_err("twice")
            .to_string()
            .contains("listed twice")
    );
    let kind = r#"[{"type":"web_search","function":{"name":"a"}}]"#;
    assert!(StructuredSpec::tools_of("t", kind.as_bytes()).is_err());
    let tools = StructuredSpec::tools_of("t", TOOLS.as_bytes()).expect("tools");
    assert_eq!(tools[1].parameters, json!({"type": "object"}));
    let s = spec_with(None, TOOLS, Some(ToolChoice::parse("get_time")));
    assert!(
        matches!(s.check_choice(), Err(StructuredError::BadChoice(m)) if m.contains("get_weather, noop"))
    );
    assert_eq!(
        spec_with(None, TOOLS, Some(ToolChoice::parse("noop"))).check_choice(),
        Ok(())
    );
    assert!(
        spec_with(None, "", Some(ToolChoice::Auto))
            .check_choice()
            .is_err()
    );
    let mut extra = Map::new();
    extra.insert("tool_choice".into(), json!("auto"));
    assert_eq!(
        s.clash(Some(&extra)),
        Err(StructuredError::ExtraBodyKey("tool_choice".into()))
    );
    extra.clear();
    extra.insert("top_k".into(), json!(2));
    assert_eq!(s.clash(Some(&extra)), Ok(()));
    assert!(
        s.refused_on(Api::Completions)
            .expect("no tools")
            .to_string()
            .contains("--tools has no counterpart in the completions API")
    );
    assert_eq!(s.refused_on(Api::Messages), None);
    let e = schema_spec().refused_on(Api::Messages).expect("no format");
    assert!(
        e.to_string()
            .starts_with("--response-format has no counterpart in the messages API")
    );
    assert_eq!(schema_spec().refused_on(Api::Completions), None);
}

#[test]
fn each_api_gets_its_own_shape() {
    let mut s = schema_spec();
    s.tools = StructuredSpec::tools_of("t", TOOLS.as_bytes()).expect("tools");
    s.tool_choice = Some(ToolChoice::Function("get_weather".into()));
    let shaped = |s: &StructuredSpec, api| {
        let mut m = Map::new();
        s.apply(api, &mut m);
        Value::Object(m)
    };
    let body = |api| shaped(&s, api);
    let chat = body(Api::Chat);
    assert_eq!(chat["response_format"]["type"], "json_schema");
    assert_eq!(
        chat["response_format"]["json_schema"]["name"],
        "city_answer"
    );
    assert_eq!(chat["response_format"]["json_schema"]["strict"], true);
    assert_eq!(chat["tools"][0]["function"]["name"], "get_weather");
    assert_eq!(
        chat["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    let resp = body(Api::Responses);
    assert_eq!(resp["text"]["format"]["type"], "json_schema");
    assert_eq!(resp["text"]["format"]["schema"], city_schema());
    assert_eq!(resp["tools"][0]["type"], "function");
    assert_eq!(resp["tools"][0]["name"], "get_weather");
    assert!(resp["tools"][0].get("function").is_none());
    assert_eq!(
        resp["tool_choice"],
        json!({"type": "function", "name": "get_weather"})
    );
    let msg = body(Api::Messages);
    assert!(msg.get("response_format").is_none() && msg.get("text").is_none());
    assert_eq!(
        msg["tools"][1],
        json!({"name": "noop", "input_schema": {"type": "object"}})
    );
    assert_eq!(
        msg["tool_choice"],
        json!({"type": "tool", "name": "get_weather"})
    );
    let comp = body(Api::Completions);
    assert!(comp.get("tools").is_none() && comp.get("tool_choice").is_none());
    assert_eq!(comp["response_format"]["type"], "json_schema");
    let mut s = s.clone();
    s.tool_choice = Some(ToolChoice::Required);
    assert_eq!(
        shaped(&s, Api::Messages)["tool_choice"],
        json!({"type": "any"})
    );
    assert_eq!(shaped(&s, Api::Chat)["tool_choice"], "required");
    assert_eq!(s.kind(), "json_schema+tools");
    assert!(s.constrains());
    assert!(!spec_with(None, TOOLS, Some(ToolChoice::Auto)).constrains());
}

fn text(t: &str) -> AnswerText {
    AnswerText {
        text: t.into(),
        calls: Vec::new(),
    }
}

fn call(name: &str, args: &str) -> AnswerText {
    AnswerText {
        text: String::new(),
        calls: vec![ToolCallText {
            name: name.into(),
            arguments: args.into(),
        }],
    }
}

#[test]
fn a_request_is_valid_invalid_or_cut_never_dropped() {
    let s = schema_spec();
    assert_eq!(
        judge(&s, &text(r#" {"city": "Oslo", "rank": 1}"#), "stop"),
        Some(AnswerCheck::Valid)
    );
    let Some(AnswerCheck::Invalid { why }) = judge(&s, &text(r#"{"city": "Oslo"}"#), "stop") else {
        panic!("invalid")
    };
    assert!(why.contains("`rank` is missing"));
    let Some(AnswerCheck::Invalid { why }) = judge(&s, &text("{\"city\": \"Os"), "stop") else {
        panic!("not json")
    };
    assert!(why.starts_with("the answer is not JSON"));
    // The same broken text cut at the length limit is cut, not a schema failure.
    assert_eq!(
        judge(&s, &text("{\"city\": \"Os"), "length"),
        Some(AnswerCheck::Cut)
    );
    let obj = spec_with(Some(ResponseFormat::JsonObject), "", None);
    assert!(matches!(
        judge(&obj, &text("[1]"), "stop"),
        Some(AnswerCheck::Invalid { .. })
    ));
    assert_eq!(judge(&obj, &text("{}"), "stop"), Some(AnswerCheck::Valid));
    let req = spec_with(None, TOOLS, Some(ToolChoice::Required));
    assert_eq!(
        judge(
            &req,
            &call("get_weather", r#"{"city":"Oslo"}"#),
            "tool_calls"
        ),
        Some(AnswerCheck::Valid)
    );
    assert_eq!(
        judge(&req, &call("noop", ""), "tool_calls"),
        Some(AnswerCheck::Valid)
    );
    let bad = |s: &StructuredSpec, a: &AnswerText| match judge(s, a, "stop") {
        Some(AnswerCheck::Invalid { why }) => why,
        other => panic!("{other:?}"),
    };
    assert!(
        bad(&req, &call("get_weather", "{}"))
            .contains("`get_weather`'s arguments: the answer: the required property `city`")
    );
    assert!(bad(&req, &call("get_time", "{}")).contains("`get_time`, which was not offered"));
    assert!(bad(&req, &call("get_weather", "{")).contains("are not JSON"));
    assert!(bad(&req, &text("hello")).contains("no tool call"));
    let one = spec_with(None, TOOLS, Some(ToolChoice::Function("noop".into())));
    assert!(bad(&one, &call("get_weather", r#"{"city":"x"}"#)).contains("names `noop`"));
    let none = spec_with(None, TOOLS, Some(ToolChoice::None));
    assert!(bad(&none, &call("noop", "{}")).contains("forbids"));
    // A text answer under `auto` without a format has nothing to be checked against.
    let auto = spec_with(None, TOOLS, Some(ToolChoice::Auto));
    assert_eq!(judge(&auto, &text("hello"), "stop"), None);
}

#[test]
fn a_rows_counts_add_up_and_name_the_first_failure() {
    let r = |c: Option<AnswerCheck>| {
        let mut r = RequestRecord::never_sent(0, 0);
        r.structured = c;
        r
    };
    let invalid = |w: &str| Some(AnswerCheck::Invalid { why: w.into() });
    let rows = [
        r(Some(AnswerCheck::Valid)),
        r(invalid("first")),
        r(None),
        r(Some(AnswerCheck::Cut)),
        r(invalid("second")),
        r(Some(AnswerCheck::Valid)),
    ];
    let f = structured_figures(&schema_spec(), &rows);
    assert_eq!((f.checked, f.valid, f.invalid, f.cut), (5, 2, 2, 1));
    assert_eq!(f.first_error.as_deref(), Some("first"));
    assert_eq!(f.kind, "json_schema");
    let back: StructuredFigures =
        serde_json::from_value(serde_json::to_value(&f).expect("ser")).expect("de");
    assert_eq!(back, f);
}
