//! The files of the long-answer task: `tasks.jsonl` (one line per request), `tokens.json` (the
//! search and the figures) and `tokens.md` (the same as tables).

use crate::error::EvalError;
use crate::jsonl::{to_jsonl, write};
use crate::tokenstats::{LevelResult, TaskResult, TaskStats};
use llmib_core::Profile;
use llmib_core::Summary;
use serde::Serialize;
use std::path::Path;

/// `tokens.json`.
#[derive(Debug, Serialize)]
pub(crate) struct TokensSummary<'a> {
    pub(crate) profile: Profile,
    pub(crate) model: &'a str,
    pub(crate) prompt_source: &'a str,
    pub(crate) answer_pattern: Option<&'a str>,
    pub(crate) max_output: u32,
    pub(crate) scout_ttft_ms: Option<f64>,
    pub(crate) levels: &'a [LevelResult],
    pub(crate) chosen: u32,
    pub(crate) search_stopped: &'a str,
    pub(crate) stats: &'a TaskStats,
    pub(crate) completion_token_source: &'a str,
}

/// Writes `tasks.jsonl`, `tokens.json` and `tokens.md` into `dir`.
pub(crate) fn write_results(
    dir: &Path,
    summary: &TokensSummary<'_>,
    results: &[TaskResult],
) -> Result<(), EvalError> {
    write(dir, "tasks.jsonl", to_jsonl(results)?)?;
    write(dir, "tokens.json", serde_json::to_string_pretty(summary)?)?;
    write(dir, "tokens.md", markdown(summary))
}

fn markdown(s: &TokensSummary<'_>) -> String {
    use llmib_report::escape_markdown as escape;
    let f = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.1}"));
    let sum = |x: Option<&Summary>, pick: fn(&Summary) -> f64| f(x.map(pick));
    let t = s.stats.completion_tokens.as_ref();
    let ttft = s.stats.ttft_ms.as_ref();
    let mut out = format!(
        "# Completion tokens: {} on {}\n\nPrompt: {}; max tokens {}; tokens from {}.\n\n",
        escape(s.profile.name()),
        escape(s.model),
        s.prompt_source,
        s.max_output,
        s.completion_token_source
    );
    out.push_str("| Results | Avg | p50 | p90 | p99 | Max-token hits | TTFT p50 (ms) | Correct |\n|---:|---:|---:|---:|---:|---:|---:|---|\n");
    let correct = match (s.stats.correct, s.stats.correct_wilson_95) {
        (Some((k, n)), Some((lo, hi))) => format!(
            "{k}/{n} ({:.1}%, 95% {:.1}–{:.1}%)",
            k as f64 / n as f64 * 100.0,
            lo * 100.0,
            hi * 100.0
        ),
        _ => "– (no pattern)".into(),
    };
    out.push_str(&format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.stats.results,
        sum(t, |x| x.mean),
        sum(t, |x| x.p50),
        sum(t, |x| x.p90),
        sum(t, |x| x.p99),
        s.stats.max_token_hits,
        sum(ttft, |x| x.p50),
        correct
    ));
    out.push_str(&format!(
        "\n## Concurrency search\n\nChosen: {} ({}). Scout TTFT: {} ms.\n\n| Concurrency | Finished | Failed | Tokens | Wall s | tok/s |\n|---:|---:|---:|---:|---:|---:|\n",
        s.chosen,
        escape(s.search_stopped),
        f(s.scout_ttft_ms)
    ));
    for l in s.levels {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} | {:.1} |\n",
            l.concurrency, l.requests, l.errors, l.completion_tokens, l.wall_s, l.tok_per_s
        ));
    }
    out
}
