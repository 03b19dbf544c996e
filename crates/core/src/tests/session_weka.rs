//! Known answers for the Weka trace importer (`session/weka.rs`): a hand-written conversation
//! (tool calls, a subagent, a streaming pair, a compaction) read as exact sessions on both
//! clocks, several conversations in one file, the sample file, and one line naming the file,
//! the line, the conversation and the request for every trace that cannot be imported.

use super::*;
use crate::session::{Fork, ReplaySession, TurnInput};
use proptest::prelude::*;

/// One conversation: a tool call and its result, a subagent (`SUB_CLOCK`: its requests' `t`)
/// with a tool call of its own, a turn after a recorded think time, the streaming twin of
/// that turn, and a compacted prompt.
fn trace(sub: [f64; 2]) -> String {
    format!(
        r#"{{"id": "c1", "models": ["m"], "block_size": 64, "hash_id_scope": "local", "tool_tokens": 0, "system_tokens": 0, "requests": [
{{"t": 0.0, "type": "s", "model": "m", "in": 1000, "out": 20, "hash_ids": [1, 2], "stop": "tool_use", "api_time": 1.0}},
{{"t": 1.5, "type": "n", "model": "m", "in": 1100, "out": 30, "hash_ids": [1, 2, 3], "stop": "end_turn", "api_time": 2.0}},
{{"t": 4.0, "type": "subagent", "agent_id": "a1", "subagent_type": "Explore", "status": "completed", "models": ["m"], "tool_tokens": 0, "requests": [
  {{"t": {}, "type": "s", "model": "m", "in": 600, "out": 10, "stop": "tool_use"}},
  {{"t": {}, "type": "s", "model": "m", "in": 700, "out": 12, "think_time": 0.25}}]}},
{{"t": 10.0, "type": "s", "model": "m", "in": 1200, "out": 15, "hash_ids": [1, 2, 3, 4], "think_time": 3.0}},
{{"t": 12.0, "type": "n", "model": "m", "in": 1200, "out": 15, "hash_ids": [1, 2, 3, 4]}},
{{"t": 20.0, "type": "s", "model": "m", "in": 500, "out": 8, "hash_ids": [9]}}]}}"#,
        sub[0], sub[1]
    )
    .replace('\n', " ")
}

fn turns(s: &ReplaySession) -> Vec<(u64, u32, f64, MessageKind, AnswerKind)> {
    s.turns
        .iter()
        .map(|t| {
            let TurnInput::Tokens(n) = t.input else {
                panic!("a trace gives lengths: {t:?}")
            };
            (n, t.output_tokens, t.delay_s, t.kind, t.answer)
        })
        .collect()
}

fn fork0(parent: &str) -> Option<Fork> {
    Some(Fork {
        parent: parent.to_string(),
        turn: 0,
    })
}

#[test]
fn a_conversation_reads_as_exact_sessions_on_either_clock() {
    use AnswerKind::{Text, ToolCall};
    use MessageKind::{ToolResult, User};
    // Raw kv-cache-tester: the subagent's t count from its marker at 4.0; AgentX: the root's.
    for sub in [[0.5, 2.0], [4.5, 6.0]] {
        let r = parse_weka_trace("w.json", &trace(sub)).expect("a Weka trace");
        let ids: Vec<&str> = r.sessions.iter().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["c1", "c1::sa:a1", "c1::ctx:2"], "by start: {sub:?}");
        assert_eq!(r.starts_s(1.0), [0.0, 4.5, 20.0], "{sub:?}");
        let (c1, sa, ctx) = (&r.sessions[0], &r.sessions[1], &r.sessions[2]);
        // 1,100 − (1,000 + 20); the pause is 1.5 − 0 − api_time 1.0; the twin at 12 s is gone.
        assert_eq!(
            turns(c1),
            [
                (1000, 20, 0.0, User, ToolCall),
                (80, 30, 0.5, ToolResult, Text),
                (70, 15, 3.0, User, Text)
            ],
            "{sub:?}"
        );
        assert_eq!((c1.fork.clone(), c1.tools_tokens), (None, 0));
        assert_eq!(
            turns(sa),
            [
                (600, 10, 4.5, User, ToolCall),
                (90, 12, 0.25, ToolResult, Text)
            ],
            "{sub:?}"
        );
        assert_eq!(sa.fork, fork0("c1"));
        assert_eq!(turns(ctx), [(500, 8, 20.0, User, Text)], "{sub:?}");
        assert_eq!(ctx.fork, fork0("c1"));
        assert!(r.sessions.iter().all(|s| s.group.is_none()));
    }
}

#[test]
fn conversations_one_per_line_start_together_and_keep_their_tools() {
    let text = concat!(
        r#"{"id": "x", "tool_tokens": 300, "requests": [{"t": 2.0, "type": "n", "in": 900, "out": 9}, {"t": 5.0, "type": "n", "in": 1000, "out": 9}]}"#,
        "\n",
        r#"{"id": "y", "requests": [{"t": 0.0, "type": "subagent", "agent_id": "s", "tool_tokens": 50, "requests": [{"t": 1.0, "type": "s", "in": 400, "out": 0}]}, {"t": 3.0, "type": "s", "in": 800, "out": 8}]}"#,
        "\n"
    );
    let r = parse_weka_trace("w.jsonl", text).expect("two conversations");
    let got: Vec<(&str, f64, u64, Option<Fork>)> = r
        .sessions
        .iter()
        .map(|s| (s.id.as_str(), s.start_s, s.tools_tokens, s.fork.clone()))
        .collect();
    // A marker before its parent's first call opens a session of its own.
    assert_eq!(
        got,
        [
            ("y::sa:s", 1.0, 50, None),
            ("x", 2.0, 300, None),
            ("y", 3.0, 0, None)
        ]
    );
    // A recorded answer of 0 tokens asks 1.
    assert_eq!(r.sessions[0].turns[0].output_tokens, 1);
    // No api_time, no think_time: the gap between the two t's.
    assert_eq!(
        turns(&r.sessions[1])[1],
        (91, 9, 3.0, MessageKind::User, AnswerKind::Text)
    );
    assert_eq!(r.sessions[2].turns[0].line, 2, "the conversation's line");
}

#[test]
fn the_sample_reads_as_its_readme_says() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/weka-sample.jsonl"
    ))
    .expect("the sample");
    let r = parse_weka_trace("weka-sample.jsonl", &text).expect("the sample");
    let ids: Vec<&str> = r.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, ["conv-a", "conv-b", "conv-a::sa:agent_001"]);
    assert_eq!(r.turns(), 7);
    assert_eq!(r.sessions[2].fork, fork0("conv-a"));
    let tools: Vec<u64> = r.sessions.iter().map(|s| s.tools_tokens).collect();
    assert_eq!(tools, [0, 200, 100]);
}

/// The refusal of `text`, which must name `at` (`FILE:LINE: conversation …`) and say `says`.
fn refused(text: &str, at: &str, says: &str) {
    let e = parse_weka_trace("w.json", text)
        .expect_err(says)
        .to_string();
    assert!(e.starts_with(at), "{e}");
    assert!(e.contains(says), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn every_bad_trace_is_refused_in_one_line_naming_the_conversation_and_request() {
    let call =
        |t: f64, i: u64, o: u64| format!(r#"{{"t": {t}, "type": "s", "in": {i}, "out": {o}}}"#);
    let conv = |id: &str, reqs: &[String]| {
        format!(r#"{{"id": "{id}", "requests": [{}]}}"#, reqs.join(", "))
    };
    refused("[1, 2]", "w.json:1: not a Weka trace", "invalid type");
    refused(
        "{\"id\": \"a\"}",
        "w.json:1: not a Weka trace",
        "missing field `requests`",
    );
    let odd = r#"{"id": "a", "requests": [{"t": 0, "type": "x", "in": 1, "out": 1}]}"#;
    refused(odd, "w.json:1: not a Weka trace", "unknown variant `x`");
    let two = format!(
        "{}\n\n{}",
        conv("a", &[call(0.0, 9, 1)]),
        conv("b", &[call(-1.0, 9, 1)])
    );
    refused(
        &two,
        "w.json:3: conversation b",
        "requests[0]: t -1 must be 0 or more seconds",
    );
    refused(
        &conv("a", &[call(0.0, 0, 9)]),
        "w.json:1: conversation a",
        "requests[0]: in 0: a call sends a prompt of at least 1 token",
    );
    refused(
        &conv("a", &[call(0.0, 9, 1 << 32)]),
        "w.json:1: conversation a",
        "requests[0]: out 4294967296 is above 4294967295",
    );
    let back = conv("a", &[call(5.0, 9, 1), call(4.0, 20, 1)]);
    refused(
        &back,
        "w.json:1: conversation a",
        "requests[1]: t 4 is before requests[0]'s t 5",
    );
    let dup = format!(
        "{}\n{}",
        conv("a", &[call(0.0, 9, 1)]),
        conv("a", &[call(0.0, 9, 1)])
    );
    refused(
        &dup,
        "w.json:2: conversation a",
        "a second conversation with this id",
    );
    refused(
        &conv("a", &[]),
        "w.json:1: conversation a",
        "has no request",
    );
    let sub = |id: &str| {
        format!(
            r#"{{"t": 1, "type": "subagent", "agent_id": "{id}", "requests": [{}]}}"#,
            call(0.0, 5, 1)
        )
    };
    let twins = conv("a", &[call(0.0, 9, 1), sub("s"), sub("s")]);
    refused(
        &twins,
        "w.json:1: conversation a",
        "two sessions would be named a::sa:s",
    );
    let deep = conv(
        "a",
        &[
            call(0.0, 9, 1),
            format!(
                r#"{{"t": 1, "type": "subagent", "agent_id": "s", "requests": [{}]}}"#,
                call(0.0, 0, 5)
            ),
        ],
    );
    refused(
        &deep,
        "w.json:1: conversation a",
        "requests[1].requests[0]: in 0",
    );
    let late = conv(
        "a",
        &[
            call(0.0, 9, 1),
            r#"{"t": 1, "type": "n", "in": 20, "out": 1, "api_time": -2}"#.to_string(),
        ],
    );
    refused(
        &late,
        "w.json:1: conversation a",
        "requests[1]: api_time -2 must be 0 or more",
    );
    let e = parse_weka_trace("w.json", "  \n").expect_err("empty");
    assert!(
        matches!(e, crate::workload::WorkloadError::Empty { .. }),
        "{e}"
    );
}

/// A request of a trace, broken in every way: any time (negative, huge), any lengths, calls
/// and markers nested.
fn requestish() -> impl Strategy<Value = String> {
    let call = (-2.0e3f64..1.0e300, 0u64..3000, 0u64..5000, 0u8..3).prop_map(|(t, i, o, h)| {
        format!(r#"{{"t": {t}, "type": "s", "in": {i}, "out": {o}, "hash_ids": [1, {h}], "stop": "tool_use", "api_time": 1e308}}"#)
    });
    call.prop_recursive(2, 12, 4, |inner| {
        (
            -10.0f64..10.0,
            0u8..2,
            proptest::collection::vec(inner, 0..4),
        )
            .prop_map(|(t, a, r)| {
                format!(
                    r#"{{"t": {t}, "type": "subagent", "agent_id": "a{a}", "requests": [{}]}}"#,
                    r.join(", ")
                )
            })
    })
}

proptest! {
    #[test]
    fn garbage_never_panics(convs in proptest::collection::vec(
        (0u8..3, proptest::collection::vec(requestish(), 0..6)), 0..4)
    ) {
        let text: Vec<String> = convs
            .iter()
            .map(|(id, r)| format!(r#"{{"id": "c{id}", "requests": [{}]}}"#, r.join(", ")))
            .collect();
        if let Ok(r) = parse_weka_trace("w.jsonl", &text.join("\n")) {
            prop_assert!(r.sessions.iter().all(|s| s.start_s.is_finite() && s.start_s >= 0.0));
        }
    }
}
