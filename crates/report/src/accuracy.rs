//! The accuracy section of an eval run (`eval.json` + `items.jsonl`), as Markdown (`eval.md`) and
//! as a self-contained HTML page (`eval.html`, same style and safety as the speed report: no
//! network, every dataset and server string auto-escaped). Both render one [`AccuracyView`], so
//! the two formats cannot disagree on a figure.

use crate::ReportError;
use crate::html::{CSS, generator, render_template, ser};
use crate::markdown::escape;
use llmib_core::Provenance;
use llmib_core::{Accuracy, Category, EvalSummary, ItemScore};
use serde::Serialize;
use std::fmt::Write as _;

/// One labelled figure.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Figure {
    /// What it is.
    pub(crate) label: String,
    /// The value, formatted.
    pub(crate) value: String,
}

/// One subject's accuracy.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SubjectRow {
    /// Subject or category of the dataset.
    pub(crate) name: String,
    /// Items.
    pub(crate) n: u64,
    /// Accuracy, formatted.
    pub(crate) accuracy: String,
    /// Its Wilson 95 % interval, formatted.
    pub(crate) interval: String,
}

/// One item that was not correct.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct MissRow {
    /// Item id.
    pub(crate) id: String,
    /// Reference answer.
    pub(crate) expected: String,
    /// What was read from the answer (`–`: nothing).
    pub(crate) parsed: String,
    /// Wrong, Truncated or Unparseable.
    pub(crate) category: String,
    /// The server's finish reason.
    pub(crate) finish: String,
    /// Completion tokens.
    pub(crate) tokens: String,
    /// The request's error, if it failed.
    pub(crate) error: String,
}

/// Everything the accuracy section shows, formatted once.
#[derive(Debug, Clone, Serialize)]
pub struct AccuracyView {
    /// `Accuracy: <profile> on <model>`.
    pub(crate) title: String,
    /// Items, correct, accuracy, interval, throughput, concurrency.
    pub(crate) headline: Vec<Figure>,
    /// Items per category, in the order Correct, Wrong, Truncated, Unparseable.
    pub(crate) categories: Vec<Figure>,
    /// Per subject, as listed in the dataset (alphabetical).
    pub(crate) subjects: Vec<SubjectRow>,
    /// The items not correct.
    pub(crate) misses: Vec<MissRow>,
    /// Where the items came from.
    pub(crate) dataset: Vec<Figure>,
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

fn interval(a: &Accuracy) -> String {
    a.wilson_95
        .map_or("–".into(), |(l, h)| format!("{}–{}", pct(l), pct(h)))
}

fn category_word(c: Category) -> &'static str {
    match c {
        Category::Correct => "Correct",
        Category::Wrong => "Wrong",
        Category::Truncated => "Truncated",
        Category::Unparseable => "Unparseable",
    }
}

fn fig(label: &str, value: impl Into<String>) -> Figure {
    Figure {
        label: label.to_string(),
        value: value.into(),
    }
}

/// One row per item that was not answered correctly.
fn miss_rows(items: &[ItemScore]) -> Vec<MissRow> {
    let dash = |o: Option<&str>| o.map_or("–".to_string(), str::to_string);
    items
        .iter()
        .filter(|i| i.category != Category::Correct)
        .map(|i| MissRow {
            id: i.id.clone(),
            expected: i.expected.clone(),
            parsed: dash(i.parsed.as_deref()),
            category: category_word(i.category).to_string(),
            finish: dash(i.finish_reason.as_deref()),
            tokens: i.completion_tokens.map_or("–".into(), |t| t.to_string()),
            error: i.error.clone().unwrap_or_default(),
        })
        .collect()
}

/// Where the items came from: file, URL, digest, size of the set.
fn dataset_figures(d: &Provenance) -> Vec<Figure> {
    let mut dataset = vec![fig("File", d.file.clone())];
    if let Some(u) = &d.url {
        dataset.push(fig("Downloaded from", u.clone()));
    }
    dataset.push(fig(
        "sha256",
        d.sha256
            .clone()
            .unwrap_or_else(|| "– (own item file)".into()),
    ));
    if d.items_in_set > 0 {
        dataset.push(fig(
            "Items in the profile's set",
            d.items_in_set.to_string(),
        ));
    }
    dataset
}

impl AccuracyView {
    /// The view of one eval run.
    pub fn new(s: &EvalSummary, items: &[ItemScore]) -> AccuracyView {
        let a = &s.accuracy;
        let headline = vec![
            fig("Items", a.n.to_string()),
            fig("Correct", a.correct.to_string()),
            fig("Accuracy", pct(a.accuracy)),
            fig("95% interval (Wilson)", interval(a)),
            fig("Completion tok/s", format!("{:.1}", s.tok_per_s)),
            fig("Concurrency", s.concurrency.to_string()),
        ];
        let count = |c: Category| items.iter().filter(|i| i.category == c).count();
        let categories = [
            Category::Correct,
            Category::Wrong,
            Category::Truncated,
            Category::Unparseable,
        ]
        .into_iter()
        .map(|c| fig(category_word(c), count(c).to_string()))
        .collect();
        let subjects = s
            .by_subject
            .iter()
            .map(|(k, a)| SubjectRow {
                name: k.clone(),
                n: a.n,
                accuracy: pct(a.accuracy),
                interval: interval(a),
            })
            .collect();
        AccuracyView {
            title: format!("Accuracy: {} on {}", s.profile, s.model),
            headline,
            categories,
            subjects,
            misses: miss_rows(items),
            dataset: dataset_figures(&s.dataset),
        }
    }

    /// `eval.md`.
    pub fn markdown(&self) -> String {
        let row = |cells: &[&str]| format!("| {} |\n", cells.join(" | "));
        let mut out = format!("# {}\n\n", escape(&self.title));
        let labels: Vec<String> = self.headline.iter().map(|f| escape(&f.label)).collect();
        let values: Vec<String> = self.headline.iter().map(|f| escape(&f.value)).collect();
        out.push_str(&row(&labels.iter().map(String::as_str).collect::<Vec<_>>()));
        out.push_str(&row(&vec!["---:"; labels.len()]));
        out.push_str(&row(&values.iter().map(String::as_str).collect::<Vec<_>>()));
        out.push_str("\n## Categories\n\n| Category | Items |\n|---|---:|\n");
        for c in &self.categories {
            out.push_str(&row(&[&c.label, &c.value]));
        }
        if !self.subjects.is_empty() {
            out.push_str(
                "\n## By subject\n\n| Subject | Items | Accuracy | 95% interval |\n|---|---:|---:|---|\n",
            );
            for s in &self.subjects {
                let n = s.n.to_string();
                out.push_str(&row(&[&escape(&s.name), &n, &s.accuracy, &s.interval]));
            }
        }
        if !self.misses.is_empty() {
            out.push_str(
                "\n## Not correct\n\n| Item | Expected | Parsed | Category | Finish | Tokens |\n|---|---|---|---|---|---:|\n",
            );
            for m in &self.misses {
                out.push_str(&row(&[
                    &escape(&m.id),
                    &escape(&m.expected),
                    &escape(&m.parsed),
                    &m.category,
                    &escape(&m.finish),
                    &m.tokens,
                ]));
            }
        }
        out.push_str("\n## Dataset\n\n");
        for f in &self.dataset {
            let _ = writeln!(out, "- {}: {}", escape(&f.label), escape(&f.value));
        }
        out
    }

    /// `eval.html`.
    pub fn html(&self) -> Result<String, ReportError> {
        render_template(
            "accuracy.html",
            minijinja::context! {
                css => minijinja::Value::from_safe_string(CSS.to_string()),
                generator => generator(),
                view => ser(self),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use llmib_core::{Profile, Provenance};
    use std::collections::BTreeMap;

    fn item(id: &str, c: Category) -> ItemScore {
        ItemScore {
            id: id.to_string(),
            expected: "B".into(),
            parsed: (c == Category::Wrong).then(|| "C".into()),
            category: c,
            subject: Some("law|<b>".into()),
            completion_tokens: Some(12),
            finish_reason: Some(
                if c == Category::Truncated {
                    "length"
                } else {
                    "stop"
                }
                .into(),
            ),
            error: None,
        }
    }

    fn summary(items: &[ItemScore]) -> EvalSummary {
        let mut by_subject = BTreeMap::new();
        by_subject.insert("law|<b>".to_string(), Accuracy::of(items));
        EvalSummary {
            profile: Profile::MmluPro,
            model: "<script>m</script>".into(),
            url: "http://x".into(),
            accuracy: Accuracy::of(items),
            categories: BTreeMap::new(),
            by_subject,
            tok_per_s: 12.5,
            wall_s: 2.0,
            concurrency: 4,
            dataset: Provenance {
                file: "/cache/x.parquet".into(),
                url: Some("https://h/x.parquet".into()),
                sha256: Some("ab".repeat(32)),
                items_in_set: 1000,
            },
        }
    }

    #[test]
    fn both_formats_show_the_same_figures_escaped() {
        let items = vec![
            item("q1", Category::Correct),
            item("q2", Category::Correct),
            item("q3", Category::Wrong),
            item("q4", Category::Truncated),
        ];
        let v = AccuracyView::new(&summary(&items), &items);
        assert_eq!(v.headline[2].value, "50.0%");
        let cats: Vec<(&str, &str)> = v
            .categories
            .iter()
            .map(|f| (f.label.as_str(), f.value.as_str()))
            .collect();
        assert_eq!(
            cats,
            vec![
                ("Correct", "2"),
                ("Wrong", "1"),
                ("Truncated", "1"),
                ("Unparseable", "0")
            ]
        );
        assert_eq!(v.misses.len(), 2);
        let md = v.markdown();
        assert!(md.contains("| 4 | 2 | 50.0% |"), "{md}");
        assert!(md.contains(r"law\|\<b\>"), "pipes and tags escaped: {md}");
        assert!(!md.contains("<script>"), "{md}");
        let html = v.html().expect("html");
        assert!(html.contains("&lt;script&gt;m&lt;"), "escaped");
        assert!(!html.contains("<script>m"));
        assert!(html.contains("50.0%") && html.contains("q4") && html.contains("Truncated"));
        assert!(html.contains(&"ab".repeat(32)));
        // The stylesheet is ours and goes in as it is (escaped, its comments and quotes break).
        let first = CSS.lines().next().expect("a stylesheet");
        assert!(html.contains(first), "the stylesheet is not escaped");
    }
}
