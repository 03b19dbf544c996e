//! Reading the official files into items: GSM8K's JSON lines, OpenAI simple-evals' GPQA CSV,
//! TIGER-Lab's MMLU-Pro parquet, FastChat's MT-Bench JSON lines. Each item is named by the file's own id (or its line or row),
//! and every error by the file and the line or row.

use crate::error::EvalError;
use crate::select::{gsm8k_answer, permutation};
use serde::Deserialize;
use std::path::Path;

/// One item, as every profile's file is read into.
#[derive(Debug, Clone, Deserialize)]
pub struct Item {
    /// Stable id (what A/B pairs by).
    pub id: String,
    /// The question.
    pub question: String,
    /// The reference answer: a number, or a choice letter.
    pub answer: String,
    /// Multiple-choice options, in the order shown (A, B, …).
    #[serde(default)]
    pub options: Vec<String>,
    /// Subject or category.
    #[serde(default)]
    pub category: Option<String>,
    /// The user's later turns of a multi-turn question (MT-Bench's second turn), each sent
    /// after the model's answer to the one before; empty for the accuracy profiles.
    #[serde(default)]
    pub followups: Vec<String>,
}

/// How an official file is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `{"question", "answer"}` lines, the answer ending `#### N`.
    Gsm8kJsonl,
    /// OpenAI simple-evals' GPQA CSV: `Question`, `Correct Answer`, `Incorrect Answer 1..3`,
    /// `Record ID`, `High-level domain`.
    GpqaCsv,
    /// TIGER-Lab's parquet: `question_id`, `question`, `options`, `answer`, `category`.
    MmluProParquet,
    /// FastChat's MT-Bench lines: `question_id` (a number, or a string as SPEED-Bench's
    /// qualitative split writes it), `category`, `turns` (the user's messages, sent in order,
    /// each after the model's answer to the one before). No reference answer: the profile
    /// measures acceptance, not accuracy.
    MtBenchJsonl,
}

/// Parses the checked `bytes` of the file at `path` (named in errors).
pub(crate) fn parse(layout: Layout, bytes: Vec<u8>, path: &Path) -> Result<Vec<Item>, EvalError> {
    match layout {
        Layout::Gsm8kJsonl => parse_gsm8k(&bytes, path),
        Layout::GpqaCsv => parse_gpqa(&bytes, path),
        Layout::MmluProParquet => parse_mmlu_pro(bytes, path),
        Layout::MtBenchJsonl => parse_mt_bench(&bytes, path),
    }
}

fn parse_mt_bench(bytes: &[u8], path: &Path) -> Result<Vec<Item>, EvalError> {
    #[derive(Deserialize)]
    struct Line {
        question_id: serde_json::Value,
        category: String,
        turns: Vec<String>,
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| EvalError::dataset_by(format!("{}: not UTF-8", path.display()), e))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let at = || format!("{} line {}", path.display(), i + 1);
            let line: Line = serde_json::from_str(l).map_err(|e| {
                EvalError::dataset_by(
                    format!(
                        "{}: not an MT-Bench line ({{\"question_id\", \"category\", \"turns\": [...]}})",
                        at()
                    ),
                    e,
                )
            })?;
            let id = match &line.question_id {
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::String(s) if !s.is_empty() => s.clone(),
                _ => return Err(EvalError::dataset(format!("{}: no `question_id`", at()))),
            };
            let mut turns = line.turns.into_iter();
            let question = turns
                .next()
                .filter(|t| !t.trim().is_empty())
                .ok_or_else(|| EvalError::dataset(format!("{}: no first turn", at())))?;
            Ok(Item {
                id: format!("mt-bench-{id}"),
                question,
                answer: String::new(),
                options: Vec::new(),
                category: Some(line.category),
                followups: turns.collect(),
            })
        })
        .collect()
}

fn parse_gsm8k(bytes: &[u8], path: &Path) -> Result<Vec<Item>, EvalError> {
    #[derive(Deserialize)]
    struct Line {
        question: String,
        answer: String,
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|e| EvalError::dataset_by(format!("{}: not UTF-8", path.display()), e))?;
    // Items are numbered by their line in the file (blank lines keep their numbers).
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let at = || format!("{} line {}", path.display(), i + 1);
            let line: Line = serde_json::from_str(l)
                .map_err(|e| EvalError::dataset_by(format!("{}: not a GSM8K line", at()), e))?;
            let answer = gsm8k_answer(&line.answer)
                .ok_or_else(|| EvalError::dataset(format!("{}: no `#### answer`", at())))?;
            Ok(Item {
                // The split's line number: what GSM8K items are known by.
                id: format!("gsm8k-test-{i:04}"),
                question: line.question,
                answer,
                options: Vec::new(),
                category: None,
                followups: Vec::new(),
            })
        })
        .collect()
}

fn parse_gpqa(bytes: &[u8], path: &Path) -> Result<Vec<Item>, EvalError> {
    let mut r = csv::Reader::from_reader(bytes);
    let headers = r
        .headers()
        .map_err(|e| EvalError::dataset_by(format!("{}: no header row", path.display()), e))?
        .clone();
    let col = |name: &str| {
        headers
            .iter()
            .position(|h| h.trim() == name)
            .ok_or_else(|| EvalError::dataset(format!("{}: no `{name}` column", path.display())))
    };
    let q = col("Question")?;
    let right = col("Correct Answer")?;
    let wrong = [
        col("Incorrect Answer 1")?,
        col("Incorrect Answer 2")?,
        col("Incorrect Answer 3")?,
    ];
    let id = col("Record ID").ok();
    let domain = col("High-level domain").ok();
    let mut out = Vec::new();
    for (row, rec) in r.records().enumerate() {
        let rec = rec.map_err(|e| {
            EvalError::dataset_by(format!("{} row {}: not CSV", path.display(), row + 2), e)
        })?;
        let field = |i: usize| rec.get(i).unwrap_or("").trim().to_string();
        let id = id
            .map(field)
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| format!("gpqa-{row:03}"));
        let choices = [
            field(right),
            field(wrong[0]),
            field(wrong[1]),
            field(wrong[2]),
        ];
        // The correct answer is first in the file: shown in an order fixed by the item's id,
        // so its letter is spread over A–D and the same on every run.
        let order = permutation(&id, choices.len());
        let letter = order.iter().position(|&c| c == 0).unwrap_or(0);
        out.push(Item {
            question: field(q),
            answer: ((b'A' + letter as u8) as char).to_string(),
            options: order.iter().map(|&c| choices[c].clone()).collect(),
            category: domain.map(field).filter(|s| !s.is_empty()),
            id,
            followups: Vec::new(),
        });
    }
    Ok(out)
}

fn parse_mmlu_pro(bytes: Vec<u8>, path: &Path) -> Result<Vec<Item>, EvalError> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let reader = SerializedFileReader::new(bytes::Bytes::from(bytes))
        .map_err(|e| EvalError::dataset_by(format!("{}: not a parquet file", path.display()), e))?;
    let rows = reader
        .get_row_iter(None)
        .map_err(|e| EvalError::dataset_by(format!("{}: unreadable rows", path.display()), e))?;
    let mut out = Vec::new();
    for (n, row) in rows.enumerate() {
        let at = format!("{} row {n}", path.display());
        let row = row.map_err(|e| EvalError::dataset_by(format!("{at}: unreadable"), e))?;
        out.push(mmlu_pro_item(&row, &at)?);
    }
    Ok(out)
}

/// One MMLU-Pro row (`at` names it in errors).
fn mmlu_pro_item(row: &parquet::record::Row, at: &str) -> Result<Item, EvalError> {
    use parquet::record::Field;
    let (mut id, mut question, mut answer, mut category) = (None, None, None, None);
    let mut options = Vec::new();
    for (name, field) in row.get_column_iter() {
        match (name.as_str(), field) {
            ("question_id", Field::Long(v)) => id = Some(format!("mmlu-pro-{v}")),
            ("question", Field::Str(s)) => question = Some(s.clone()),
            ("answer", Field::Str(s)) => answer = Some(s.trim().to_string()),
            ("category", Field::Str(s)) => category = Some(s.clone()),
            ("options", Field::ListInternal(list)) => {
                options = list
                    .elements()
                    .iter()
                    .map(|e| match e {
                        Field::Str(s) => Ok(s.clone()),
                        other => Err(EvalError::dataset(format!(
                            "{at}: an option that is not text ({other})"
                        ))),
                    })
                    .collect::<Result<_, _>>()?
            }
            _ => {}
        }
    }
    let missing = |what: &str| EvalError::dataset(format!("{at}: no `{what}`"));
    let answer = answer.ok_or_else(|| missing("answer"))?;
    // An item whose answer is not one of its options could only ever score Wrong: a broken
    // file, not a harder question.
    let letter = answer.bytes().next().filter(|_| answer.len() == 1);
    if !letter.is_some_and(|b| b.is_ascii_uppercase() && usize::from(b - b'A') < options.len()) {
        return Err(EvalError::dataset(format!(
            "{at}: answer `{answer}` is not one of its {} options",
            options.len()
        )));
    }
    Ok(Item {
        id: id.ok_or_else(|| missing("question_id"))?,
        question: question.ok_or_else(|| missing("question"))?,
        answer,
        options,
        category,
        followups: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gpqa_rows_become_shuffled_four_way_items() {
        let bytes = b"Question,Correct Answer,Incorrect Answer 1,Incorrect Answer 2,Incorrect Answer 3,Record ID,High-level domain\n\
             \"What is 2+2?\nPick one.\",4,3,5,\"6, or so\",recA,Math\n";
        let items = parse_gpqa(bytes, Path::new("g.csv")).expect("parsed");
        assert_eq!(items.len(), 1);
        let it = &items[0];
        assert_eq!(it.id, "recA");
        assert_eq!(it.question, "What is 2+2?\nPick one.");
        assert_eq!(it.category.as_deref(), Some("Math"));
        let letter = it.answer.as_bytes()[0] - b'A';
        assert_eq!(it.options[letter as usize], "4", "{it:?}");
        assert!(it.options.contains(&"6, or so".to_string()));
    }

    #[test]
    fn mt_bench_lines_keep_their_turns_and_category() {
        let bytes = b"{\"question_id\": 81, \"category\": \"writing\", \"turns\": [\"Compose a post.\", \"Rewrite it.\"]}\n\n{\"question_id\": \"sb-7\", \"category\": \"math\", \"turns\": [\"2+2?\"], \"reference\": [\"4\"]}\n";
        let items = parse_mt_bench(bytes, Path::new("q.jsonl")).expect("parsed");
        let got: Vec<(&str, &str, Option<&str>)> = items
            .iter()
            .map(|i| (i.id.as_str(), i.question.as_str(), i.category.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("mt-bench-81", "Compose a post.", Some("writing")),
                ("mt-bench-sb-7", "2+2?", Some("math")),
            ]
        );
        assert_eq!(items[0].followups, ["Rewrite it."]);
        assert!(items[1].followups.is_empty());
        let e = parse_mt_bench(
            b"{\"question_id\": 1, \"category\": \"x\", \"turns\": []}",
            Path::new("q.jsonl"),
        )
        .expect_err("no turn");
        assert_eq!(e.to_string(), "q.jsonl line 1: no first turn");
        let e = parse_mt_bench(b"\n{\"turns\": 3}", Path::new("q.jsonl")).expect_err("bad");
        assert!(
            e.to_string()
                .starts_with("q.jsonl line 2: not an MT-Bench line"),
            "{e}"
        );
    }

    #[test]
    fn gsm8k_lines_are_numbered_by_their_line() {
        let bytes = b"{\"question\":\"q0\",\"answer\":\"so\\n#### 1,250\"}\n\n{\"question\":\"q2\",\"answer\":\"#### 3\"}\n";
        let items = parse_gsm8k(bytes, Path::new("t.jsonl")).expect("parsed");
        let ids: Vec<&str> = items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["gsm8k-test-0000", "gsm8k-test-0002"]);
        assert_eq!(items[0].answer, "1250");
        let e = parse_gsm8k(
            b"{\"question\":\"q\",\"answer\":\"7\"}",
            Path::new("t.jsonl"),
        )
        .expect_err("no marker");
        assert_eq!(e.to_string(), "t.jsonl line 1: no `#### answer`");
    }
}
