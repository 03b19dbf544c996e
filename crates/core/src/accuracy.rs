//! The records of an eval run, as its files keep them and its pages show them: the profile,
//! one scored item (`items.jsonl`), an accuracy with its Wilson 95 % interval, and the run's
//! summary (`eval.json`) with the dataset's provenance. The eval crate (`llmib-eval`) writes
//! them, the report crate renders them; the scoring itself is the eval crate's.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An eval profile: `--profile` and `eval.json`'s `profile`, spelled the same in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Profile {
    /// GSM8K's test split (accuracy; the answer is a number).
    #[serde(rename = "gsm8k")]
    #[cfg_attr(feature = "clap", value(name = "gsm8k"))]
    Gsm8k,
    /// A stratified 1,000 of MMLU-Pro's test split (accuracy; a letter).
    #[serde(rename = "mmlu-pro")]
    #[cfg_attr(feature = "clap", value(name = "mmlu-pro"))]
    MmluPro,
    /// GPQA Diamond (accuracy; a letter).
    #[serde(rename = "gpqa-diamond")]
    #[cfg_attr(feature = "clap", value(name = "gpqa-diamond"))]
    GpqaDiamond,
    /// Completion-token statistics of one long-answer task.
    #[serde(rename = "long-answer")]
    #[cfg_attr(feature = "clap", value(name = "long-answer"))]
    LongAnswer,
    /// MT-Bench's 80 questions in 8 categories, sent for speculative decoding's acceptance per
    /// category (`crate::SpecBenchSummary`), not scored.
    #[serde(rename = "mt-bench")]
    #[cfg_attr(feature = "clap", value(name = "mt-bench"))]
    MtBench,
}

impl Profile {
    /// Every profile, in the order help lists them.
    pub const ALL: [Profile; 5] = [
        Profile::Gsm8k,
        Profile::MmluPro,
        Profile::GpqaDiamond,
        Profile::LongAnswer,
        Profile::MtBench,
    ];

    /// The name `--profile` takes and `eval.json` keeps.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Gsm8k => "gsm8k",
            Profile::MmluPro => "mmlu-pro",
            Profile::GpqaDiamond => "gpqa-diamond",
            Profile::LongAnswer => "long-answer",
            Profile::MtBench => "mt-bench",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the items came from, kept in `eval.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Provenance {
    /// The file read: a cache path, a `--dataset-dir` file.
    pub file: String,
    /// Where it was downloaded from (None: a local copy).
    pub url: Option<String>,
    /// Its sha256, checked against the pin (None: the project's own item format, unpinned).
    pub sha256: Option<String>,
    /// Items in the profile's set (before `--limit`).
    pub items_in_set: usize,
}

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

/// One scored item, as an eval run saves it (`items.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemScore {
    /// The dataset's item id.
    pub id: String,
    /// The expected answer.
    pub expected: String,
    /// What was read from the output (`None`: nothing).
    pub parsed: Option<String>,
    /// How it scored.
    pub category: Category,
    /// The item's subject (MMLU-Pro's category), if the dataset has one.
    pub subject: Option<String>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `finish_reason`.
    pub finish_reason: Option<String>,
    /// The request's error, when it failed (scored Unparseable).
    pub error: Option<String>,
}

/// Accuracy of a set of items: correct / all, with its Wilson interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Accuracy {
    /// Items.
    pub n: u64,
    /// Correct ones.
    pub correct: u64,
    /// `correct / n`.
    pub accuracy: f64,
    /// Wilson 95 % interval.
    pub wilson_95: Option<(f64, f64)>,
}

impl Accuracy {
    /// Of `items`.
    pub fn of<'a>(items: impl IntoIterator<Item = &'a ItemScore>) -> Accuracy {
        let (mut n, mut k) = (0u64, 0u64);
        for i in items {
            n += 1;
            k += u64::from(i.category == Category::Correct);
        }
        Accuracy {
            n,
            correct: k,
            accuracy: if n > 0 { k as f64 / n as f64 } else { 0.0 },
            wilson_95: wilson_95(k, n),
        }
    }
}

/// `eval.json`: one eval run's accuracy, per category and subject, its throughput and where
/// its items came from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvalSummary {
    /// The profile.
    pub profile: Profile,
    /// Served model.
    pub model: String,
    /// Server URL, without its user and password (`redact::strip_url_userinfo`).
    pub url: String,
    /// Accuracy over every item.
    pub accuracy: Accuracy,
    /// Items per category (correct, wrong, truncated, unparseable).
    pub categories: std::collections::BTreeMap<String, u64>,
    /// Accuracy per subject.
    pub by_subject: std::collections::BTreeMap<String, Accuracy>,
    /// Σ completion tokens / wall time.
    pub tok_per_s: f64,
    /// Wall time, seconds.
    pub wall_s: f64,
    /// Requests in flight.
    pub concurrency: usize,
    /// Where the items came from.
    #[serde(default)]
    pub dataset: Provenance,
}

#[cfg(test)]
#[path = "tests/accuracy.rs"]
mod tests;
