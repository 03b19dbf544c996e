//! Known answers for agentic session traces (issue 42): the sample's subagents, tools and tool
//! turns as parsed, the prefix each kind of turn shares, and one line naming the file and line
//! for every trace that cannot be replayed.

use super::*;
use crate::session::{SessionReplay, TurnInput, parse_session_trace, predicted_cached_prefix};

fn sample() -> SessionReplay {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/agent-sessions.jsonl"
    ))
    .expect("the sample agent trace");
    parse_session_trace("agent-sessions.jsonl", &text).expect("an agent trace")
}

#[test]
fn the_sample_agent_trace_reads_subagents_tools_and_tool_turns() {
    let r = sample();
    let ids: Vec<&str> = r.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, vec!["lead", "sub1", "sub2", "solo"], "by start");
    assert_eq!(r.turns(), 8);
    let (lead, sub1, sub2, solo) = (
        &r.sessions[0],
        &r.sessions[1],
        &r.sessions[2],
        &r.sessions[3],
    );
    assert_eq!(lead.fork, None);
    assert_eq!(lead.tools_tokens, 300);
    assert_eq!(lead.turns[0].answer, AnswerKind::ToolCall);
    assert_eq!(lead.turns[1].kind, MessageKind::ToolResult);
    assert_eq!(lead.turns[1].answer, AnswerKind::ToolCall);
    // The subagent's report comes back to its parent as the tool's result.
    assert_eq!(lead.turns[2].kind, MessageKind::ToolResult);
    // `idle_s` is the pause before a later turn, as `delay_s` is.
    assert_eq!(lead.turns[2].delay_s, 0.6);
    assert_eq!(
        sub1.fork,
        Some(Fork {
            parent: "lead".into(),
            turn: 2
        })
    );
    // A subagent takes its parent's group, and its tools unless it gives its own.
    assert_eq!(sub1.group.as_deref(), Some("coder"));
    assert_eq!(sub1.tools_tokens, 300);
    assert_eq!(sub2.tools_tokens, 150);
    assert_eq!(sub2.fork.as_ref().map(|f| f.turn), Some(0));
    // A subagent's turn 1 is its own message, after what it shares: here the result of the
    // parent's call that spawned it.
    assert_eq!(sub1.turns[0].input, TurnInput::Tokens(120));
    assert_eq!(sub1.turns[0].kind, MessageKind::ToolResult);
    assert_eq!(sub2.turns[0].kind, MessageKind::User);
    assert_eq!(sub1.turns[1].kind, MessageKind::ToolResult);
    assert_eq!(solo.tools_tokens, 0);
    // A subagent starts its delay after its parent's start (at the earliest).
    assert_eq!(r.starts_s(1.0), vec![0.0, 0.02, 0.03, 0.1]);
    assert_eq!(r.agentic_line(), Some(1));
    // Replayed on a chat API in one process; refused in one line on completions or shards.
    let file = "agent-sessions.jsonl";
    assert_eq!(r.agent_refusal(file, true, false), None);
    let e = r.agent_refusal(file, false, false).expect("completions");
    assert!(
        e.starts_with("agent-sessions.jsonl:1: an agent's trace"),
        "{e}"
    );
    assert!(e.contains("needs --api chat"), "{e}");
    let e = r.agent_refusal(file, true, true).expect("shards");
    assert!(e.contains("runs on one client machine"), "{e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn a_plain_trace_says_nothing_agentic() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/workloads/sessions.jsonl"
    ))
    .expect("the sample trace");
    let r = parse_session_trace("sessions.jsonl", &text).expect("a trace");
    assert_eq!(r.agentic_line(), None);
    assert_eq!(r.agent_refusal("sessions.jsonl", false, true), None);
    assert!(
        r.sessions
            .iter()
            .all(|s| s.fork.is_none() && s.tools_tokens == 0)
    );
    // One tool turn further down makes it an agent's trace, at that turn's line.
    let tool = format!(
        "{}\n{{\"session\":\"s\",\"turn\":1,\"input_tokens\":10,\"output_tokens\":2,\"answer\":\"tool_call\",\"delay_s\":9}}\n",
        text.trim_end()
    );
    let r = parse_session_trace("t.jsonl", &tool).expect("a trace");
    assert_eq!(r.agentic_line(), Some(17));
}

#[test]
fn a_turn_shares_its_prior_prompt_and_its_answer_unless_the_answer_was_a_tool_call() {
    let prior = |answer| PriorTurn {
        prompt_tokens: 1_000,
        answer_tokens: 20,
        answer,
    };
    // (prior, shared, predicted for a prompt of 1,500 tokens in blocks of 16)
    let table = [
        (None, 0, 0),
        (Some(prior(AnswerKind::Text)), 1_020, 1_008),
        (Some(prior(AnswerKind::ToolCall)), 1_000, 992),
    ];
    for (p, shared, predicted) in table {
        assert_eq!(replay_shared_prefix(p), shared, "{p:?}");
        assert_eq!(
            predicted_cached_prefix(shared, 1_500, 16),
            predicted,
            "{p:?}"
        );
    }
    // At most the prompt less one token: a prompt the cache holds whole still prefills one.
    let big = PriorTurn {
        prompt_tokens: u64::MAX,
        answer_tokens: 5,
        answer: AnswerKind::Text,
    };
    assert_eq!(replay_shared_prefix(Some(big)), u64::MAX);
    assert_eq!(predicted_cached_prefix(u64::MAX, 100, 1), 99);
}

#[test]
fn a_subagent_shares_its_parents_fork_turn_only_with_the_same_tools() {
    // (fork turn, its tools, its parent's tools, shares the parent's turn)
    let table = [
        (2, 300, 300, true),
        (1, 0, 0, true),
        (0, 300, 300, false),
        (2, 150, 300, false),
    ];
    for (turn, tools, parent, shares) in table {
        assert_eq!(
            fork_shares_turn(turn, tools, parent),
            shares,
            "{turn} {tools} {parent}"
        );
    }
}

/// The error a one-session trace `rows` (one row a line) gives, as one line.
fn error(rows: &[&str]) -> String {
    let text = rows.join("\n");
    parse_session_trace("t.jsonl", &text)
        .expect_err("a bad trace")
        .to_string()
}

const LEAD: &str = r#"{"session":"p","turn":1,"input_tokens":100,"output_tokens":4}"#;

#[test]
fn a_trace_that_cannot_be_replayed_names_its_file_and_line() {
    let call =
        r#"{"session":"p","turn":1,"input_tokens":100,"output_tokens":4,"answer":"tool_call"}"#;
    // (rows, the error's start)
    let table: [(&[&str], &str); 11] = [
        (
            &[
                call,
                r#"{"session":"c","turn":1,"parent":"p","fork_turn":1,"input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session c: forks after p's turn 1, a tool call, so its turn 1 is that call's \"kind\": \"tool_result\"",
        ),
        (
            &[
                LEAD,
                r#"{"session":"c","turn":1,"parent":"p","fork_turn":0,"kind":"tool_result","input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session c: its turn 1 is a tool_result but p's turn 0 made no tool call",
        ),
        (
            &[
                r#"{"session":"s","turn":1,"kind":"tool_result","input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:1: session s: turn 1 is a tool_result but opens its session",
        ),
        (
            &[
                LEAD,
                r#"{"session":"p","turn":2,"kind":"tool_result","input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session p: turn 2 is a tool_result but turn 1 answered with text",
        ),
        (
            &[
                call,
                r#"{"session":"p","turn":2,"input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session p: turn 2 is a user message but turn 1 answered with a tool call",
        ),
        (
            &[
                r#"{"session":"c","turn":1,"parent":"p","fork_turn":1,"input_tokens":9,"output_tokens":2}"#,
                LEAD,
            ],
            "t.jsonl:1: session c: its parent p has no row before it",
        ),
        (
            &[
                LEAD,
                r#"{"session":"c","turn":1,"parent":"p","fork_turn":2,"input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session c: forks after turn 2 of p, which has 1 turns before this row",
        ),
        (
            &[
                LEAD,
                r#"{"session":"c","turn":1,"parent":"p","input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session c: a subagent gives both parent and fork_turn",
        ),
        (
            &[
                LEAD,
                r#"{"session":"c","turn":1,"parent":"p","fork_turn":1,"group":"g","input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session c: a subagent shares its parent's system prompt",
        ),
        (
            &[
                LEAD,
                r#"{"session":"p","turn":2,"tools_tokens":50,"input_tokens":9,"output_tokens":2}"#,
            ],
            "t.jsonl:2: session p: parent, fork_turn and tools_tokens are the session's",
        ),
        (
            &[r#"{"session":"s","turn":1,"kind":"tool_use","input_tokens":9,"output_tokens":2}"#],
            "t.jsonl:1: not a session trace row",
        ),
    ];
    for (rows, start) in table {
        let e = error(rows);
        assert!(e.starts_with(start), "{e}\n  wanted: {start}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    // Repeating a session's own fields on a later row is fine.
    let same = r#"{"session":"p","turn":2,"tools_tokens":0,"input_tokens":9,"output_tokens":2}"#;
    assert!(parse_session_trace("t.jsonl", &[LEAD, same].join("\n")).is_ok());
}

#[test]
fn the_docs_agent_trace_example_is_a_trace() {
    let doc = include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/sessions.md"
    ));
    let from = doc.find("**An agent's trace**").expect("the docs' section");
    let rest = &doc[from..];
    let start = rest.find("```json").expect("its example") + "```json".len();
    let end = start + rest[start..].find("```").expect("its end");
    let rows: Vec<&str> = rest[start..end].lines().map(str::trim).collect();
    let r = parse_session_trace("sessions.md", &rows.join("\n")).expect("the example parses");
    assert_eq!(r.turns(), 4);
    assert_eq!(r.sessions[1].fork.as_ref().map(|f| f.turn), Some(2));
}
