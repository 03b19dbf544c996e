//! Accuracy profiles, the deciding half: scoring an answer (GSM8K's final number, a multiple
//! choice letter), the Wilson 95 % interval of an accuracy, and the exact two-sided McNemar
//! test of a paired A/B comparison. Pure functions with known answers; the requests are the
//! client's.

use serde::{Deserialize, Serialize};

/// How one answer scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// The parsed answer equals the expected one.
    Correct,
    /// An answer was found, and it is wrong.
    Wrong,
    /// The output hit the token limit before an answer appeared.
    Truncated,
    /// The output ended, but no answer could be read from it.
    Unparseable,
}

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

/// The Wilson score interval of `k` successes in `n`, at 95 % (z = 1.96): (low, high).
pub fn wilson_95(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 || k > n {
        return None;
    }
    let z = 1.959_963_984_540_054_f64;
    let (n, p) = (n as f64, k as f64 / n as f64);
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) + z * z / (4.0 * n)) / n).sqrt() / denom;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
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

#[cfg(test)]
#[path = "tests/accuracy.rs"]
mod tests;
