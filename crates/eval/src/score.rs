//! Scoring an accuracy profile's answers: GSM8K's final number, a multiple-choice letter, the
//! category of each answer, and the paired A/B comparison of two runs with its exact two-sided
//! McNemar test. Pure functions with known answers; the records they fill are
//! `llmib_core::accuracy`'s.

use llmib_core::{Accuracy, Category, ItemScore, Profile};
use serde::{Deserialize, Serialize};

/// What an item's expected answer looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerFormat {
    /// A number (GSM8K): the last number of the output, separators, `$` and `%` tolerated.
    Number,
    /// A letter A–J (MMLU-Pro, GPQA): `Answer: X`, else the last standalone letter.
    Letter,
}

/// The number an output ends on: GSM8K's `#### 42`, else the last number in the text. Commas,
/// `$`, `%` and a trailing period are tolerated; `1,234.50` reads as 1234.5.
pub fn parse_number(output: &str) -> Option<f64> {
    let tail = match output.rfind("####") {
        Some(i) => &output[i + 4..],
        None => output,
    };
    let mut last: Option<f64> = None;
    let mut cur = String::new();
    let flush = |cur: &mut String, last: &mut Option<f64>| {
        let t = cur.trim_end_matches(['.', ',']).replace(',', "");
        if t.chars().any(|c| c.is_ascii_digit())
            && let Ok(v) = t.parse::<f64>()
        {
            *last = Some(v);
        }
        cur.clear();
    };
    for c in tail.chars() {
        if c.is_ascii_digit() || c == '.' || c == ',' || (c == '-' && cur.is_empty()) {
            cur.push(c);
        } else {
            flush(&mut cur, &mut last);
        }
    }
    flush(&mut cur, &mut last);
    // GSM8K takes the first number after `####`, not the last of the rest.
    if output.contains("####") {
        let mut first = String::new();
        for c in tail.trim_start().trim_start_matches('$').chars() {
            if c.is_ascii_digit() || c == '.' || c == ',' || (c == '-' && first.is_empty()) {
                first.push(c);
            } else {
                break;
            }
        }
        let t = first.trim_end_matches(['.', ',']).replace(',', "");
        if let Ok(v) = t.parse::<f64>() {
            return Some(v);
        }
    }
    last
}

/// The choice an output gives: the letter after the last `Answer:` (any case, `**`, `(X)` and
/// `X.` tolerated), else the last standalone capital letter A–J.
pub fn parse_letter(output: &str) -> Option<char> {
    let lower = output.to_ascii_lowercase();
    if let Some(i) = lower.rfind("answer") {
        let rest = output[i + "answer".len()..].trim_start_matches([':', '*', ' ', '(', '"']);
        if let Some(c) = rest.chars().next()
            && ('A'..='J').contains(&c.to_ascii_uppercase())
            && rest
                .chars()
                .nth(1)
                .is_none_or(|n| !n.is_ascii_alphanumeric())
        {
            return Some(c.to_ascii_uppercase());
        }
    }
    let chars: Vec<char> = output.chars().collect();
    (0..chars.len()).rev().find_map(|i| {
        let c = chars[i];
        let alone = |j: Option<&char>| j.is_none_or(|n| !n.is_ascii_alphanumeric());
        (('A'..='J').contains(&c)
            && alone(i.checked_sub(1).and_then(|p| chars.get(p)))
            && alone(chars.get(i + 1)))
        .then_some(c)
    })
}

/// Scores one output against `expected` (a number or a letter, as `format` says).
/// `hit_limit`: the request ended on the token limit.
pub fn score(output: &str, expected: &str, format: AnswerFormat, hit_limit: bool) -> Category {
    let found = match format {
        AnswerFormat::Number => parse_number(output).map(|got| {
            let want = parse_number(expected);
            want.is_some_and(|w| (w - got).abs() < 1e-6)
        }),
        AnswerFormat::Letter => {
            parse_letter(output).map(|got| expected.trim().eq_ignore_ascii_case(&got.to_string()))
        }
    };
    match (found, hit_limit) {
        (Some(true), _) => Category::Correct,
        // An answer cut by the limit may be a partial number: the limit is the reason.
        (_, true) => Category::Truncated,
        (Some(false), false) => Category::Wrong,
        (None, false) => Category::Unparseable,
    }
}

/// How `profile`'s answers are read; `None` for long-answer, which is not scored by item.
pub fn answer_format(profile: Profile) -> Option<AnswerFormat> {
    match profile {
        Profile::Gsm8k => Some(AnswerFormat::Number),
        Profile::MmluPro | Profile::GpqaDiamond => Some(AnswerFormat::Letter),
        Profile::LongAnswer | Profile::MtBench => None,
    }
}

/// The exact two-sided McNemar p-value for `b` items right only in A and `c` right only in B:
/// under no difference the discordant pairs split as Binomial(b + c, ½), and the p-value is
/// twice the smaller tail, capped at 1.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let k = b.min(c);
    // P(X ≤ k) for X ~ Bin(n, ½), summed in log space so n in the thousands cannot overflow.
    let ln_half_n = -(n as f64) * std::f64::consts::LN_2;
    let mut ln_choose = 0.0f64; // ln C(n, 0)
    let mut tail = 0.0f64;
    for i in 0..=k {
        if i > 0 {
            ln_choose += ((n - i + 1) as f64).ln() - (i as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// Two eval runs of the same items, paired by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Items in both runs.
    pub n: u64,
    /// Accuracy of A and of B over the paired items.
    pub a: Accuracy,
    /// B's.
    pub b: Accuracy,
    /// B − A, in accuracy points (fraction).
    pub delta: f64,
    /// Items right in A only.
    pub a_only: Vec<String>,
    /// Items right in B only.
    pub b_only: Vec<String>,
    /// Exact two-sided McNemar p-value over the discordant pairs.
    pub p_value: f64,
    /// Per subject: (subject, A, B, B − A), worst delta first.
    pub by_subject: Vec<(String, f64, f64, f64)>,
    /// Mean completion tokens of B over A's (1.0: no inflation), where both reported them.
    pub token_inflation: Option<f64>,
    /// Truncated items in A and in B.
    pub truncated: (u64, u64),
}

/// Pairs `a` and `b` by item id (items in only one run are left out).
pub fn pair(a: &[ItemScore], b: &[ItemScore]) -> Paired {
    use std::collections::BTreeMap;
    let bmap: BTreeMap<&str, &ItemScore> = b.iter().map(|i| (i.id.as_str(), i)).collect();
    let pairs: Vec<(&ItemScore, &ItemScore)> = a
        .iter()
        .filter_map(|x| bmap.get(x.id.as_str()).map(|y| (x, *y)))
        .collect();
    let right = |i: &ItemScore| i.category == Category::Correct;
    let a_only: Vec<String> = pairs
        .iter()
        .filter(|(x, y)| right(x) && !right(y))
        .map(|(x, _)| x.id.clone())
        .collect();
    let b_only: Vec<String> = pairs
        .iter()
        .filter(|(x, y)| !right(x) && right(y))
        .map(|(x, _)| x.id.clone())
        .collect();
    let acc_a = Accuracy::of(pairs.iter().map(|(x, _)| *x));
    let acc_b = Accuracy::of(pairs.iter().map(|(_, y)| *y));
    let mut subjects: BTreeMap<String, (u64, u64, u64)> = BTreeMap::new();
    for (x, y) in &pairs {
        let s = subjects
            .entry(x.subject.clone().unwrap_or_else(|| "all".into()))
            .or_default();
        s.0 += 1;
        s.1 += u64::from(right(x));
        s.2 += u64::from(right(y));
    }
    let mut by_subject: Vec<(String, f64, f64, f64)> = subjects
        .into_iter()
        .map(|(s, (n, ka, kb))| {
            let (fa, fb) = (ka as f64 / n as f64, kb as f64 / n as f64);
            (s, fa, fb, fb - fa)
        })
        .collect();
    by_subject.sort_by(|x, y| x.3.total_cmp(&y.3));
    let tokens: Vec<(u64, u64)> = pairs
        .iter()
        .filter_map(|(x, y)| Some((x.completion_tokens?, y.completion_tokens?)))
        .collect();
    let (ta, tb) = tokens
        .iter()
        .fold((0u64, 0u64), |(a, b), (x, y)| (a + x, b + y));
    let trunc = |i: &ItemScore| u64::from(i.category == Category::Truncated);
    let truncated_a: u64 = pairs.iter().map(|(x, _)| trunc(x)).sum();
    let truncated_b: u64 = pairs.iter().map(|(_, y)| trunc(y)).sum();
    Paired {
        n: pairs.len() as u64,
        delta: acc_b.accuracy - acc_a.accuracy,
        p_value: mcnemar_exact(a_only.len() as u64, b_only.len() as u64),
        a: acc_a,
        b: acc_b,
        a_only,
        b_only,
        by_subject,
        token_inflation: (ta > 0).then(|| tb as f64 / ta as f64),
        truncated: (truncated_a, truncated_b),
    }
}

#[cfg(test)]
#[path = "tests/score.rs"]
mod tests;
