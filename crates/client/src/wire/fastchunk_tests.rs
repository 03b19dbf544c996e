//! The chunk parse's fast path ([`crate::wire::fastchunk`]) against its `serde` path.

use super::chunk;
use crate::wire::chunk::{Chunk, StreamItem, parse_json};
use proptest::prelude::*;

/// The fast path agrees with `serde` wherever it answers: same chunk, and `serde` accepts it.
fn agrees(data: &str) -> bool {
    let fast = chunk(data);
    if let Some(c) = &fast {
        assert_eq!(
            parse_json(data),
            Ok(StreamItem::Chunk(c.clone())),
            "the fast path and serde differ on {data}"
        );
    }
    fast.is_some()
}

/// Every `data:` line of the recorded transcripts, through both paths.
#[test]
fn every_recorded_chunk_reads_the_same_as_through_serde() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/transcripts");
    let (mut lines, mut fast) = (0, 0);
    let mut dirs = vec![root];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("transcripts").flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            for data in text.lines().filter_map(|l| l.strip_prefix("data:")) {
                let data = data.trim();
                if data.is_empty() || data == "[DONE]" {
                    continue;
                }
                lines += 1;
                fast += usize::from(agrees(data));
            }
        }
    }
    assert!(lines > 100, "{lines} recorded chunks");
    // Most recorded chunks are the common kind; the rest (errors, tool calls, llama.cpp's
    // timings, escaped text) are serde's.
    assert!(fast * 2 > lines, "the fast path read {fast} of {lines}");
}

#[test]
fn the_common_chunks_read_their_fields() {
    let c = chunk(
        r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":1024,"total_tokens":1031,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":512}}}"#,
    )
    .expect("the fast path");
    assert_eq!(c.choices, 1);
    assert_eq!(c.content.as_deref(), Some(" the"));
    assert_eq!(c.finish_reason, None);
    let u = c.usage.expect("usage");
    assert_eq!(
        (
            u.prompt_tokens,
            u.completion_tokens,
            u.total_tokens,
            u.cached_tokens
        ),
        (Some(1024), Some(7), Some(1031), Some(512))
    );
    let c = chunk(
        r#"{"choices":[{"delta":{"role":"assistant","content":null,"reasoning_content":"hm"},"finish_reason":"length"},{"delta":{}}],"usage":null}"#,
    )
    .expect("the fast path");
    assert_eq!((c.choices, c.content, c.usage), (2, None, None));
    assert_eq!(c.reasoning.as_deref(), Some("hm"));
    assert_eq!(c.finish_reason.as_deref(), Some("length"));
    let c = chunk(r#"{"choices":[],"usage":{"completion_tokens":3}}"#).expect("usage only");
    assert_eq!(c.choices, 0);
    assert_eq!(c.usage.and_then(|u| u.completion_tokens), Some(3));
    assert_eq!(chunk("{}"), Some(Chunk::default()));
}

#[test]
fn what_the_fast_path_is_not_sure_of_goes_to_serde() {
    for data in [
        // An escape in a kept string, or in a key.
        r#"{"choices":[{"text":"a\"b"}]}"#,
        r#"{"choi\u0063es":[]}"#,
        // Duplicates, which serde refuses.
        r#"{"choices":[],"choices":[]}"#,
        r#"{"usage":null,"choices":[],"usage":null}"#,
        r#"{"object":"x","object":"x"}"#,
        r#"{"choices":[{"text":"a","text":"a"}]}"#,
        r#"{"choices":[{"delta":{"content":"a","content":"a"}}]}"#,
        r#"{"usage":{"prompt_tokens_details":null,"prompt_tokens_details":null}}"#,
        r#"{"usage":{"completion_tokens":1,"completion_tokens":2}}"#,
        // Error shapes, llama.cpp's timings, tool calls.
        r#"{"error":{"message":"boom"}}"#,
        r#"{"object":"error","message":"boom"}"#,
        r#"{"choices":[],"timings":{"cache_n":3}}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f"}}]}}]}"#,
        // Counts serde would refuse, and an escape it checks.
        r#"{"usage":{"completion_tokens":-1}}"#,
        r#"{"usage":{"completion_tokens":1.0}}"#,
        r#"{"usage":{"completion_tokens":99999999999999999999}}"#,
        r#"{"id":"\u00e9","choices":[]}"#,
        // Not JSON, or not all of it.
        r#"{"choices":[],}"#,
        r#"{"choices":[]} x"#,
        r#"{"a":01}"#,
        r#"{"a":[1,2,]}"#,
        r#"{"a":tru}"#,
        r#"{"choices":[null]}"#,
        r#"{"object":1}"#,
        "null",
        "{\"a\":\"line\nbreak\"}",
        "[1]",
        "",
    ] {
        assert_eq!(chunk(data), None, "{data}");
    }
    // Nesting past the limit is serde's (which takes 128 levels).
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(40), "]".repeat(40));
    assert_eq!(chunk(&deep), None);
    assert!(parse_json(&deep).is_ok());
    let shallow = format!("{{\"a\":{}1{}}}", "[".repeat(20), "]".repeat(20));
    assert!(agrees(&shallow));
}

/// A JSON value for the random chunks: what engines put beside the fields read.
fn value() -> impl Strategy<Value = String> {
    // Mostly valid JSON without `\u` escapes (the fast path's ground), sometimes escapes and
    // text that is not JSON at all.
    let leaf = prop_oneof![
        3 => Just("null".to_owned()),
        2 => Just("true".to_owned()),
        2 => Just("false".to_owned()),
        4 => any::<i64>().prop_map(|n| n.to_string()),
        2 => any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        6 => "[a-zA-Z0-9 .,:!?]{0,8}".prop_map(|s| format!("\"{s}\"")),
        1 => "[ -~]{0,8}".prop_map(|s| serde_json::to_string(&s).expect("a string")),
        1 => "[a-z\\\\\"/]{0,6}".prop_map(|s| format!("\"{s}\"")),
        1 => "[0-9.eE+-]{1,5}",
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(("[a-z_]{1,6}", inner), 0..4).prop_map(|v| {
                let fields: Vec<String> = v.iter().map(|(k, x)| format!("\"{k}\":{x}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

/// A value for a field the chunk reads: usually its own kind, sometimes anything.
fn field(kind: &'static str) -> impl Strategy<Value = String> {
    let own = match kind {
        "string" => prop_oneof![
            8 => "[a-zA-Z0-9 .,:!?]{0,8}".prop_map(|s| format!("\"{s}\"")),
            1 => Just("null".to_owned()),
            1 => "[ -~]{0,8}".prop_map(|s| serde_json::to_string(&s).expect("a string")),
        ]
        .boxed(),
        _ => prop_oneof![
            8 => any::<u32>().prop_map(|n| n.to_string()),
            1 => Just("null".to_owned()),
            1 => Just("-3".to_owned()),
            1 => Just("2.5".to_owned())
        ]
        .boxed(),
    };
    prop_oneof![30 => own, 1 => value()]
}

/// An object of some of `fields` (each `(name, value)`), in any order, maybe repeated, with
/// other keys between, and whitespace.
fn object(fields: Vec<BoxedStrategy<(String, String)>>) -> impl Strategy<Value = String> {
    (
        fields,
        prop::collection::vec(("[a-z]{1,5}", value()), 0..3),
        prop::option::weighted(0.05, any::<prop::sample::Index>()),
        "[ \n]{0,1}",
    )
        .prop_flat_map(|(mut own, other, dups, ws)| {
            if let Some(d) = dups
                && !own.is_empty()
            {
                own.push(d.get(&own).clone());
            }
            own.extend(other);
            Just(own).prop_shuffle().prop_map(move |v| {
                let fields: Vec<String> = v
                    .iter()
                    .map(|(k, x)| format!("{ws}\"{k}\"{ws}:{ws}{x}"))
                    .collect();
                format!("{{{}{ws}}}", fields.join(","))
            })
        })
}

fn named(name: &'static str, kind: &'static str) -> BoxedStrategy<(String, String)> {
    field(kind).prop_map(move |v| (name.to_owned(), v)).boxed()
}

fn chunk_text() -> impl Strategy<Value = String> {
    let delta = object(vec![
        named("content", "string"),
        named("reasoning_content", "string"),
        named("role", "string"),
    ]);
    let choice = (
        object(vec![
            named("text", "string"),
            named("finish_reason", "string"),
        ]),
        delta,
    )
        .prop_map(|(c, d)| format!("{{\"delta\":{d},{}", &c[1..]).replace(",}", "}"));
    let details = object(vec![named("cached_tokens", "count")]);
    let usage = (
        object(vec![
            named("prompt_tokens", "count"),
            named("completion_tokens", "count"),
            named("total_tokens", "count"),
        ]),
        details,
    )
        .prop_map(|(u, d)| {
            format!("{{\"prompt_tokens_details\":{d},{}", &u[1..]).replace(",}", "}")
        });
    (
        prop::collection::vec(choice, 0..3),
        usage,
        object(vec![named("id", "string"), named("object", "string")]),
    )
        .prop_map(|(choices, usage, rest)| {
            format!(
                "{{\"choices\":[{}],\"usage\":{usage},{}",
                choices.join(","),
                &rest[1..]
            )
            .replace(",}", "}")
        })
}

#[test]
fn random_chunks_read_the_same_as_through_serde() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config::default());
    let strategy = chunk_text();
    let (cases, mut fast, mut refused) = (3000, 0, 0);
    for _ in 0..cases {
        let text = strategy
            .new_tree(&mut runner)
            .expect("a random chunk")
            .current();
        fast += usize::from(agrees(&text));
        refused += usize::from(parse_json(&text).is_err());
    }
    // Both sides are exercised: chunks the fast path reads, and chunks serde refuses (the fast
    // path must too).
    assert!(fast * 10 > cases, "the fast path read {fast} of {cases}");
    assert!(refused * 20 > cases, "serde refused {refused} of {cases}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn random_text_never_gets_an_answer_serde_would_not_give(text in "[ -~]{0,40}") {
        agrees(&text);
        agrees(&format!("{{\"choices\":[{{\"text\":{text}}}]}}"));
    }
}

proptest! {
    /// The eight-bytes-a-step search finds what a byte loop finds, at every length and offset,
    /// with the special bytes and their neighbours (0x1f/0x20, 0x21/0x23, 0x5b/0x5d, 0x7f/0x80
    /// and up, where a borrow or a sign could mislead a word trick) common.
    #[test]
    fn the_word_search_finds_the_first_special_byte(
        bytes in proptest::collection::vec(
            prop_oneof![
                4 => 0x20u8..0x7f,
                1 => prop::sample::select(vec![
                    b'"', b'\\', 0x00, 0x1f, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff,
                ]),
                1 => any::<u8>(),
            ],
            0..80,
        )
    ) {
        let naive = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
        prop_assert_eq!(super::find_special(&bytes), naive);
    }
}
