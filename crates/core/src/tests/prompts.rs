//! Known answers for `prompts:FILE`: good lines read as written (texts, chats, `max_tokens`,
//! blank lines and other keys), every kind of bad line refused in one line naming the file and
//! its line number, the API check for chats, and what run.json records of the file.

use super::*;
use crate::workload::WorkloadKind;
use serde_json::json;

fn spec() -> WorkloadSpec {
    "prompts:data/p.jsonl".parse().expect("spec")
}

fn parse(text: &str) -> Result<UserPrompts, WorkloadError> {
    UserPrompts::parse(&spec(), text)
}

#[test]
fn the_spec_reads_and_prints_back() {
    let s = spec();
    assert_eq!(s.kind, WorkloadKind::Prompts);
    assert_eq!(s.to_string(), "prompts:data/p.jsonl");
    assert!(!s.kind.is_trace());
    // As lengths, a prompts file is refused: it is read as texts.
    let e = crate::workload::Workload::parse(&s, "{\"prompt\": \"x\"}", &|_| 1).expect_err("texts");
    assert!(matches!(e, WorkloadError::PromptsOnly { .. }), "{e}");
}

#[test]
fn good_lines_are_read_as_written() {
    let text = [
        r#"{"prompt": "Hello there, how are you?", "id": 7}"#,
        "",
        r#"{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}], "max_tokens": 16}"#,
        "   ",
        r#"{"prompt": "abc", "max_tokens": null}"#,
        r#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "12345678"}], "name": "u"}], "max_tokens": 4294967295}"#,
    ]
    .join("\n");
    let p = parse(&text).expect("good");
    assert_eq!(p.source, spec());
    assert_eq!(p.bytes, text.len() as u64);
    let lines: Vec<usize> = p.prompts.iter().map(|q| q.line).collect();
    assert_eq!(lines, vec![1, 3, 5, 6], "blank lines skipped, numbers kept");
    assert_eq!(
        p.prompts[0].body,
        PromptBody::Text("Hello there, how are you?".into())
    );
    // 25 bytes: 7 tokens at 4 bytes a token, rounded up.
    assert_eq!(
        (p.prompts[0].max_tokens, p.prompts[0].approx_tokens),
        (None, 7)
    );
    assert_eq!(
        p.prompts[1].body,
        PromptBody::Messages(vec![
            json!({"role": "system", "content": "Be brief."}),
            json!({"role": "user", "content": "Name a colour."}),
        ])
    );
    // 9 + 14 bytes of content.
    assert_eq!(
        (p.prompts[1].max_tokens, p.prompts[1].approx_tokens),
        (Some(16), 6)
    );
    assert_eq!(
        (p.prompts[2].max_tokens, p.prompts[2].approx_tokens),
        (None, 1)
    );
    // Content parts count their texts; the message is kept whole (its `name` too).
    assert_eq!(
        (p.prompts[3].max_tokens, p.prompts[3].approx_tokens),
        (Some(u32::MAX), 2)
    );
    let PromptBody::Messages(m) = &p.prompts[3].body else {
        panic!("a chat: {:?}", p.prompts[3]);
    };
    assert_eq!(m[0]["name"], "u");
}

#[test]
fn each_bad_line_is_refused_with_its_number() {
    let good = r#"{"prompt": "fine"}"#;
    let cases: [(&str, &str); 20] = [
        (r#"{"prompt": "unterminated"#, "not valid JSON (column"),
        ("[1, 2]", "not a JSON object"),
        (r#""just text""#, "not a JSON object"),
        (r#"{"text": "x"}"#, r#"has neither "prompt" nor "messages""#),
        (
            r#"{"prompt": "x", "messages": [{"role": "user", "content": "x"}]}"#,
            r#"has both "prompt" and "messages""#,
        ),
        (r#"{"prompt": ["a", "b"]}"#, r#""prompt" is not a string"#),
        (r#"{"prompt": null}"#, r#""prompt" is not a string"#),
        (r#"{"prompt": ""}"#, r#""prompt" is empty"#),
        (r#"{"messages": "hi"}"#, r#""messages" is not an array"#),
        (r#"{"messages": []}"#, r#""messages" is empty"#),
        (
            r#"{"messages": ["hi"]}"#,
            "message 1 of \"messages\" is not an object",
        ),
        (
            r#"{"messages": [{"role": "user", "content": "a"}, {"content": "b"}]}"#,
            r#"message 2 has no "role" string"#,
        ),
        (
            r#"{"messages": [{"role": "", "content": "a"}]}"#,
            r#"message 1 has no "role" string"#,
        ),
        (
            r#"{"messages": [{"role": "user"}]}"#,
            r#"message 1 has no "content""#,
        ),
        (
            r#"{"messages": [{"role": "assistant", "content": null}]}"#,
            r#"message 1 has no "content""#,
        ),
        (
            r#"{"prompt": "x", "max_tokens": 0}"#,
            r#""max_tokens" is 0, not a positive integer"#,
        ),
        (
            r#"{"prompt": "x", "max_tokens": -3}"#,
            r#""max_tokens" is -3, not"#,
        ),
        (
            r#"{"prompt": "x", "max_tokens": 1.5}"#,
            r#""max_tokens" is 1.5, not"#,
        ),
        (
            r#"{"prompt": "x", "max_tokens": "8"}"#,
            r#""max_tokens" is "8", not"#,
        ),
        (
            r#"{"prompt": "x", "max_tokens": 4294967296}"#,
            r#""max_tokens" is 4294967296, not"#,
        ),
    ];
    for (bad, says) in cases {
        // The bad line is line 4: two good lines and a blank one before it.
        let text = format!("{good}\n\n{good}\n{bad}\n{good}\n");
        let e = parse(&text).expect_err(bad);
        assert!(
            matches!(&e, WorkloadError::BadPrompt { line: 4, .. }),
            "{bad}: {e:?}"
        );
        let msg = e.to_string();
        assert!(!msg.contains('\n'), "one line: {msg}");
        assert!(
            msg.starts_with("--workload prompts:data/p.jsonl: line 4: ") && msg.contains(says),
            "{bad}: `{msg}` should say {says}"
        );
        assert!(
            msg.ends_with(
                r#"; each line is {"prompt": "..."} or {"messages": [...]}, with an optional "max_tokens""#
            ),
            "{msg}"
        );
    }
    // The JSON error's column is the line's own, not a position in the file.
    let e = parse("{\"prompt\": 5,}")
        .expect_err("trailing comma")
        .to_string();
    assert!(e.contains("line 1: not valid JSON (column 14"), "{e}");
}

#[test]
fn an_empty_file_holds_no_prompt() {
    for text in ["", "\n  \n\t\n"] {
        let e = parse(text).expect_err("empty");
        assert_eq!(
            e,
            WorkloadError::Empty {
                file: "data/p.jsonl".into(),
                skipped: 0
            }
        );
    }
}

#[test]
fn a_chat_line_needs_an_api_that_carries_a_chat() {
    let text = [
        r#"{"prompt": "one"}"#,
        r#"{"prompt": "two"}"#,
        r#"{"messages": [{"role": "user", "content": "three"}]}"#,
        r#"{"messages": [{"role": "user", "content": "four"}]}"#,
    ]
    .join("\n");
    let p = parse(&text).expect("good");
    let e = p.check_api(Api::Completions).expect_err("completions");
    assert_eq!(
        e,
        WorkloadError::MessagesNeedChat {
            file: "data/p.jsonl".into(),
            line: 3
        }
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with("--workload prompts:data/p.jsonl: line 3 is a chat")
            && msg.contains("--api chat")
            && !msg.contains('\n'),
        "{msg}"
    );
    for api in [Api::Chat, Api::Messages, Api::Responses] {
        assert_eq!(p.check_api(api), Ok(()), "{api:?}");
    }
    let texts = parse(r#"{"prompt": "one"}"#).expect("good");
    assert_eq!(texts.check_api(Api::Completions), Ok(()));
}

#[test]
fn the_record_names_the_file_without_its_text() {
    let p = parse("{\"prompt\": \"secret plans\"}\n\n{\"prompt\": \"more\"}\n").expect("good");
    let r = p.record("ab12".into());
    assert_eq!(
        r,
        PromptsSource {
            name: "p.jsonl".into(),
            lines: 2,
            bytes: 47,
            sha256: "ab12".into(),
        }
    );
    let saved = serde_json::to_value(&r).expect("json");
    assert_eq!(
        saved,
        json!({"name": "p.jsonl", "lines": 2, "bytes": 47, "sha256": "ab12"})
    );
    assert_eq!(r.check_same(&r.clone()), Ok(()));
    let other = PromptsSource {
        sha256: "cd34".into(),
        ..r.clone()
    };
    let e = r.check_same(&other).expect_err("changed").to_string();
    assert!(
        e.contains("p.jsonl (sha256 cd34) is not the file the run recorded (sha256 ab12)"),
        "{e}"
    );
}

/// `sharegpt-text:FILE`: each conversation's first human message as written, asking its
/// recorded reply's count (the caller's counter: here one token per byte), at least 1; a
/// conversation without a pair, or with a blank side, left out whatever the counter says.
#[test]
fn sharegpt_text_sends_the_first_human_message_with_its_reply_count() {
    let spec: WorkloadSpec = "sharegpt-text:data/sg.json".parse().expect("spec");
    assert_eq!(spec.kind, WorkloadKind::ShareGptText);
    assert!(spec.kind.is_texts() && !spec.kind.is_trace());
    assert_eq!(spec.to_string(), "sharegpt-text:data/sg.json");
    let text = r#"[
 {"id": "a", "conversations": [{"from": "system", "value": "sys"}, {"from": "human", "value": "Hi there, tell me a joke."}, {"from": "gpt", "value": "No."}, {"from": "human", "value": "again"}]},
 {"id": "b", "conversations": [{"from": "human", "value": "   "}, {"from": "gpt", "value": "x"}]},
 {"id": "c", "conversations": [{"from": "gpt", "value": "alone"}]},
 {"id": "d", "conversations": [{"from": "user", "value": "Why?"}, {"from": "assistant", "value": ""}]},
 {"id": "e", "conversations": [{"from": "USER", "value": "Count: 1 2 3"}, {"from": "chatgpt", "value": "four five"}]}
]"#;
    let bytes = |t: &str| t.len() as u64;
    let p = UserPrompts::parse_texts(&spec, text, &bytes).expect("good");
    let got: Vec<(usize, PromptBody, Option<u32>)> = p
        .prompts
        .iter()
        .map(|q| (q.line, q.body.clone(), q.max_tokens))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                2,
                PromptBody::Text("Hi there, tell me a joke.".into()),
                Some(3)
            ),
            (6, PromptBody::Text("Count: 1 2 3".into()), Some(9)),
        ]
    );
    assert_eq!(p.bytes, text.len() as u64);
    // The same prompts whoever counts (a zero count still asks one token).
    let zero = UserPrompts::parse_texts(&spec, text, &|_| 0).expect("good");
    assert_eq!(zero.prompts.len(), 2);
    assert_eq!(zero.prompts[0].max_tokens, Some(1));
    assert_eq!(
        UserPrompts::replies(&spec, text).expect("replies"),
        vec!["No.".to_string(), "four five".to_string()]
    );
    // A prompts file parses as itself; a file of lengths is refused as texts.
    let own = UserPrompts::parse_texts(&self::spec(), r#"{"prompt": "x"}"#, &bytes).expect("own");
    assert_eq!(own.prompts.len(), 1);
    let lengths: WorkloadSpec = "sharegpt:data/sg.json".parse().expect("spec");
    let e = UserPrompts::parse_texts(&lengths, text, &bytes).expect_err("lengths");
    assert!(matches!(e, WorkloadError::LengthsOnly { .. }), "{e}");
    // Nothing usable, and a bad file: one line naming the file (and the line).
    let e = UserPrompts::parse_texts(&spec, r#"[{"conversations": []}]"#, &bytes)
        .expect_err("empty")
        .to_string();
    assert!(
        e.contains("data/sg.json") && e.contains("1 entries skipped"),
        "{e}"
    );
    let e = UserPrompts::parse_texts(&spec, "[\n{\"conversations\": 3}\n]", &bytes)
        .expect_err("bad")
        .to_string();
    assert!(e.starts_with("data/sg.json:2: "), "{e}");
    // As lengths, it is refused: it is read as texts.
    let e = crate::workload::Workload::parse(&spec, text, &|_| 1).expect_err("texts");
    assert!(matches!(e, WorkloadError::PromptsOnly { .. }), "{e}");
}
