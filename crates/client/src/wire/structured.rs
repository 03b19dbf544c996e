//! A request's structured answer gathered from its stream (`run --response-format`, `--tools`;
//! docs/structured-output.md): the content text and each tool call's name and arguments, kept
//! only when the run checks answers, and judged by `llmib_core::judge` when the request ends.

use llmib_core::{AnswerCheck, AnswerText, Outcome, StructuredSpec, ToolCallText};

use crate::wire::chunk::Chunk;

/// Adds a chunk's answer text to `a`: content to the text; a tool name starts a call, and
/// arguments go to the last call (to a nameless one where a server sent arguments first).
pub(crate) fn collect(a: &mut AnswerText, c: &Chunk<'_>) {
    if let Some(t) = c.content.as_deref() {
        a.text.push_str(t);
    }
    if let Some(name) = c.tool_name.as_deref() {
        a.calls.push(ToolCallText {
            name: name.to_string(),
            arguments: String::new(),
        });
    }
    if let Some(args) = c.tool_args.as_deref().filter(|s| !s.is_empty()) {
        if a.calls.is_empty() {
            a.calls.push(ToolCallText::default());
        }
        if let Some(last) = a.calls.last_mut() {
            last.arguments.push_str(args);
        }
    }
}

/// The verdict on a request that ended as `outcome`: only a finished one is judged (a
/// cancelled or failed request has no answer to check).
pub(crate) fn verdict(
    spec: &StructuredSpec,
    a: &AnswerText,
    outcome: &Outcome,
) -> Option<AnswerCheck> {
    match outcome {
        Outcome::Finished { reason } => llmib_core::judge(spec, a, reason),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    #[test]
    fn calls_are_split_by_their_names_and_arguments_follow_the_last() {
        let mut a = AnswerText::default();
        let chunk = |name: Option<&'static str>, args: Option<&'static str>| Chunk {
            tool_name: name.map(Cow::Borrowed),
            tool_args: args.map(Cow::Borrowed),
            ..Chunk::default()
        };
        collect(&mut a, &chunk(None, Some("{\"x\"")));
        collect(&mut a, &chunk(Some("f"), Some("{")));
        collect(&mut a, &chunk(None, Some("}")));
        collect(&mut a, &chunk(Some("g"), None));
        collect(
            &mut a,
            &Chunk {
                content: Some(Cow::Borrowed("hi")),
                ..Chunk::default()
            },
        );
        assert_eq!(a.text, "hi");
        let calls: Vec<(&str, &str)> = a
            .calls
            .iter()
            .map(|c| (c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("", "{\"x\""), ("f", "{}"), ("g", "")]);
        let spec = StructuredSpec {
            response_format: Some(llmib_core::ResponseFormat::JsonObject),
            tools: Vec::new(),
            tools_sha256: None,
            tool_choice: None,
        };
        let text = AnswerText {
            text: "{}".into(),
            calls: Vec::new(),
        };
        assert_eq!(verdict(&spec, &text, &Outcome::Cancelled), None);
        let done = Outcome::Finished {
            reason: "stop".into(),
        };
        assert_eq!(verdict(&spec, &text, &done), Some(AnswerCheck::Valid));
    }
}
