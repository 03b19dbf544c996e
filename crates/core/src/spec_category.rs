//! Speculative decoding per category (`eval --profile mt-bench`, issue 45): a dataset whose
//! questions (each one or more turns) carry a category (MT-Bench's writing, roleplay, reasoning, math, coding,
//! extraction, STEM, humanities) is sent one category at a time, each as a window of its own,
//! so the server's acceptance over that window belongs to that category alone. The acceptance
//! is the decode row's (`crate::SpecWindow`, docs/method-notes.md "Speculative decoding per
//! cell"): vLLM's counters' delta (rate = accepted / draft tokens, length = 1 + accepted /
//! drafts), else SGLang's gauges' mean over the samples taken while the category ran.
//!
//! Token counts are the server's `usage`, summed over the category's finished requests, and the
//! row says so (`token_count_source`); where one finished request reported none the sum is
//! `None`, never a partial figure. Pure: the eval crate gathers the observations.

use crate::accuracy::{Profile, Provenance};
use crate::cell::SpecFigures;
use crate::spec::SpecWindow;
use serde::{Deserialize, Serialize};

/// What one request of a category's window gave back.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecRequestOutcome {
    /// `usage.prompt_tokens` (`input_tokens` on the agents' APIs), where the server said it.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens` (`output_tokens`), where the server said it.
    pub completion_tokens: Option<u64>,
    /// Why it failed, in one line (`None`: it finished).
    pub error: Option<String>,
}

/// What `token_count_source` says when every finished request reported its usage.
pub const SERVER_USAGE: &str = "server usage (usage.prompt_tokens, usage.completion_tokens)";

/// One category's row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecCategoryRow {
    /// The category, as the dataset names it.
    pub category: String,
    /// Requests sent.
    pub requests: u64,
    /// Requests that failed.
    pub failed: u64,
    /// The first failure's text.
    pub first_error: Option<String>,
    /// Prompt tokens of the finished requests, by the server's usage.
    pub prompt_tokens: Option<u64>,
    /// Completion tokens of the finished requests, by the server's usage.
    pub completion_tokens: Option<u64>,
    /// Where the token counts come from ([`SERVER_USAGE`], or why there are none).
    pub token_count_source: String,
    /// The window's length: the first request sent to the last answer, seconds.
    pub wall_s: f64,
    /// Completion tokens / `wall_s`.
    pub completion_tok_per_s: Option<f64>,
    /// The server's acceptance over the window; `None` where it showed no speculative
    /// decoding (no metrics, no counter that moved, no gauge sampled).
    pub speculative: Option<SpecFigures>,
}

/// What `eval --profile mt-bench` writes as `spec.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecBenchSummary {
    /// The profile.
    pub profile: Profile,
    /// The served model.
    pub model: String,
    /// The server, without credentials.
    pub url: String,
    /// Conversations in flight within a category's window (each sends its turns one at a
    /// time).
    pub concurrency: usize,
    /// `max_tokens` of each answer (answers end where the model stops, temperature 0).
    pub max_output: u32,
    /// The dataset's file, URL, sha256 and set size.
    pub dataset: Provenance,
    /// One row per category, in the dataset's order of first appearance.
    pub categories: Vec<SpecCategoryRow>,
}

/// The categories of `items` (each item's category; `None` is `uncategorised`) in order of
/// first appearance, each with the indices of its items in file order.
pub fn group_by_category(items: &[Option<&str>]) -> Vec<(String, Vec<usize>)> {
    let mut out: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, c) in items.iter().enumerate() {
        let name = c.unwrap_or("uncategorised");
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => v.push(i),
            None => out.push((name.to_string(), vec![i])),
        }
    }
    out
}

/// The row of `category` from its requests' outcomes, the server's figures over its window and
/// the window's length.
pub fn spec_category_row(
    category: &str,
    outcomes: &[SpecRequestOutcome],
    window: &SpecWindow,
    wall_s: f64,
) -> SpecCategoryRow {
    let finished: Vec<&SpecRequestOutcome> =
        outcomes.iter().filter(|o| o.error.is_none()).collect();
    let sum = |f: fn(&SpecRequestOutcome) -> Option<u64>| -> Option<u64> {
        if finished.is_empty() {
            return None;
        }
        finished.iter().map(|o| f(o)).sum()
    };
    let prompt_tokens = sum(|o| o.prompt_tokens);
    let completion_tokens = sum(|o| o.completion_tokens);
    let token_count_source = match (finished.is_empty(), prompt_tokens, completion_tokens) {
        (true, _, _) => "none: no request finished".to_string(),
        (false, Some(_), Some(_)) => SERVER_USAGE.to_string(),
        _ => "none: a finished request reported no usage (no partial sum is kept)".to_string(),
    };
    SpecCategoryRow {
        category: category.to_string(),
        requests: outcomes.len() as u64,
        failed: (outcomes.len() - finished.len()) as u64,
        first_error: outcomes.iter().find_map(|o| o.error.clone()),
        prompt_tokens,
        completion_tokens,
        token_count_source,
        wall_s,
        completion_tok_per_s: completion_tokens
            .filter(|_| wall_s > 0.0)
            .map(|t| t as f64 / wall_s),
        speculative: window.figures(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(p: u64, c: u64) -> SpecRequestOutcome {
        SpecRequestOutcome {
            prompt_tokens: Some(p),
            completion_tokens: Some(c),
            error: None,
        }
    }

    #[test]
    fn categories_keep_their_first_appearance() {
        let items = [
            Some("writing"),
            Some("math"),
            None,
            Some("writing"),
            Some("math"),
        ];
        assert_eq!(
            group_by_category(&items),
            vec![
                ("writing".to_string(), vec![0, 3]),
                ("math".to_string(), vec![1, 4]),
                ("uncategorised".to_string(), vec![2]),
            ]
        );
        assert!(group_by_category(&[]).is_empty());
    }

    /// vLLM's counters over one category: 40 drafts of 3 draft tokens, 60 accepted: rate 0.5,
    /// length 2.5; usage summed over the finished requests, a failure counted apart.
    #[test]
    fn a_row_holds_the_windows_acceptance_and_the_servers_counts() {
        let mut w = SpecWindow::default();
        w.observe(None, None, Some([100.0, 300.0, 150.0]));
        w.observe(None, None, Some([140.0, 420.0, 210.0]));
        let failed = SpecRequestOutcome {
            error: Some("HTTP 500".into()),
            ..Default::default()
        };
        let r = spec_category_row("coding", &[ok(10, 25), failed, ok(12, 25)], &w, 2.0);
        assert_eq!((r.requests, r.failed), (3, 1));
        assert_eq!(r.first_error.as_deref(), Some("HTTP 500"));
        assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(22), Some(50)));
        assert_eq!(r.token_count_source, SERVER_USAGE);
        assert_eq!(r.completion_tok_per_s, Some(25.0));
        let s = r.speculative.expect("figures");
        assert_eq!((s.accept_rate, s.accept_length), (Some(0.5), Some(2.5)));
        assert!(s.source.starts_with("server counters"), "{}", s.source);
    }

    /// A finished request without usage leaves no partial sum, and the row says why; a window
    /// without speculative figures has none.
    #[test]
    fn a_missing_count_is_null_never_partial() {
        let half = SpecRequestOutcome {
            prompt_tokens: Some(5),
            ..Default::default()
        };
        let r = spec_category_row("math", &[ok(10, 20), half], &SpecWindow::default(), 1.0);
        assert_eq!((r.prompt_tokens, r.completion_tokens), (Some(15), None));
        assert!(
            r.token_count_source.starts_with("none: a finished"),
            "{r:?}"
        );
        assert_eq!((r.completion_tok_per_s, r.speculative), (None, None));
        let none = spec_category_row("x", &[], &SpecWindow::default(), 0.0);
        assert_eq!((none.prompt_tokens, none.requests), (None, 0));
        assert_eq!(none.token_count_source, "none: no request finished");
    }
}
