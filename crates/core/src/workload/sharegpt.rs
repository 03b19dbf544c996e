//! ShareGPT JSON: an array of conversations, each request the first human turn and the model's
//! reply right after it, lengths counted by the caller's tokenizer.

use super::error::{WorkloadError, bad_row};
use super::request::WorkloadRequest;
use serde::Deserialize;

#[derive(Deserialize)]
struct Conversation {
    #[serde(default)]
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

/// One conversation's first human message and the model's reply right after it, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Pair {
    /// The 1-based line where the conversation's object starts.
    pub line: usize,
    /// The human message.
    pub ask: String,
    /// The model's reply.
    pub reply: String,
}

/// Every conversation's first pair, in file order, and how many conversations have none (or an
/// empty side: whitespace only). Whether a side is empty is read from its text, never from a
/// token count, so the same file always gives the same pairs whoever counts them.
pub(super) fn pairs(file: &str, text: &str) -> Result<(Vec<Pair>, usize), WorkloadError> {
    let all: Vec<Conversation> = serde_json::from_str(text).map_err(|e| {
        bad_row(
            file,
            e.line(),
            format!("not ShareGPT JSON (an array of {{\"conversations\": [{{\"from\", \"value\"}}]}}): {e}"),
        )
    })?;
    let lines = element_lines(text);
    let mut out = Vec::new();
    let mut skipped = 0;
    for (i, c) in all.into_iter().enumerate() {
        match first_pair(&c.conversations) {
            Some((ask, reply)) if !ask.trim().is_empty() && !reply.trim().is_empty() => {
                out.push(Pair {
                    line: lines.get(i).copied().unwrap_or(1),
                    ask: ask.to_string(),
                    reply: reply.to_string(),
                })
            }
            _ => skipped += 1,
        }
    }
    Ok((out, skipped))
}

/// The requests of a ShareGPT file and how many conversations were skipped.
pub(super) fn parse(
    file: &str,
    text: &str,
    count_tokens: &dyn Fn(&str) -> u64,
) -> Result<(Vec<WorkloadRequest>, usize), WorkloadError> {
    let (all, mut skipped) = pairs(file, text)?;
    let mut requests = Vec::new();
    for p in all {
        let (input, output) = (count_tokens(&p.ask), count_tokens(&p.reply));
        if input == 0 || output == 0 {
            skipped += 1;
            continue;
        }
        requests.push(WorkloadRequest {
            line: p.line,
            arrival_s: None,
            input_tokens: input,
            output_tokens: output,
            prefix_blocks: Vec::new(),
        });
    }
    Ok((requests, skipped))
}

/// The first human turn's text and the model turn right after it, if that turn is the model's.
fn first_pair(turns: &[Turn]) -> Option<(&str, &str)> {
    let is = |t: &Turn, names: &[&str]| names.iter().any(|n| t.from.eq_ignore_ascii_case(n));
    let i = turns.iter().position(|t| is(t, &["human", "user"]))?;
    let reply = turns.get(i + 1)?;
    is(reply, &["gpt", "assistant", "chatgpt"])
        .then(|| (turns[i].value.as_str(), reply.value.as_str()))
}

/// The 1-based line on which each element of the top-level JSON array starts: JSON has no row
/// numbers, so a short scan (strings and escapes skipped) finds where each value begins.
fn element_lines(text: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let (mut depth, mut line) = (0usize, 1usize);
    let (mut in_str, mut escaped, mut want_value) = (false, false, false);
    for c in text.chars() {
        if c == '\n' {
            line += 1;
        }
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_str = false,
                _ => {}
            }
            continue;
        }
        if want_value && !c.is_whitespace() {
            want_value = false;
            if c != ']' {
                out.push(line);
            }
        }
        match c {
            '"' => in_str = true,
            '[' | '{' => {
                depth += 1;
                want_value = depth == 1 && c == '[';
            }
            ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 1 => want_value = true,
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_found_on_their_lines() {
        let text = "[\n {\"a\": \"x,[{\\\"\"},\n {\"b\": [1,\n2]}, {}\n]";
        assert_eq!(element_lines(text), vec![2, 3, 4]);
        assert_eq!(element_lines("[]"), Vec::<usize>::new());
        assert_eq!(element_lines("garbage\"[{"), Vec::<usize>::new());
    }
}
