//! `eval --profile long-answer` (or `--prompt` / `--prompt-file`): completion-token statistics of
//! one long-answer task. One prefix-cache scout, then the adaptive concurrency search
//! (`llmib_core::tokenstats::next_step` decides; this file only sends the batches), then more
//! batches at the chosen level until `--min-results`. Writes `tasks.jsonl` (one line per
//! request), `tokens.json` and `tokens.md`.
//!
//! Requests are streamed (TTFT is measured at the first content chunk), end where the model
//! stops, and use the server's default sampling, so the answers' lengths vary as they do in
//! service: the distribution is the point.

use crate::eval_cmd::EvalArgs;
use anyhow::{Context, Result, bail};
use llmib_client::counting::count_tokens;
use llmib_client::engine::{Engine, PromptInput};
use llmib_client::stream::{Measured, RequestSpec, StreamLimits, measure};
use llmib_core::record::Outcome;
use llmib_core::stats::Summary;
use llmib_core::tokenstats::{LevelResult, Step, TaskResult, TaskStats, final_line, next_step};
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The built-in long-answer task: several worked steps, a checkable result on the last line.
pub const LONG_ANSWER_PROMPT: &str = "A warehouse receives 3 shipments a day for 14 days. \
The shipments hold 125, 240 and 315 boxes. Each box weighs 12 kg. Work it out step by step, \
explaining every calculation in full sentences: the boxes per day, the boxes over the 14 days, \
the total weight in kilograms and in tonnes. Then check the result a second way (per shipment \
across the 14 days, then summed). End with one line of the form \"Final answer: N kg\".";

/// What the built-in task's final line must say: 680 boxes a day × 14 days × 12 kg.
pub const LONG_ANSWER_PATTERN: &str = r"(?i)final answer\W*114[,.\s]?240\s*kg";

/// `tokens.json`.
#[derive(Debug, Serialize)]
struct TokensSummary<'a> {
    profile: &'a str,
    model: &'a str,
    prompt_source: &'a str,
    answer_pattern: Option<&'a str>,
    max_output: u32,
    scout_ttft_ms: Option<f64>,
    levels: &'a [LevelResult],
    chosen: u32,
    search_stopped: &'a str,
    stats: &'a TaskStats,
    completion_token_source: &'a str,
}

/// Runs the task and writes the results.
pub async fn run(a: &EvalArgs) -> Result<()> {
    let (prompt, source) = match (&a.prompt, &a.prompt_file) {
        (Some(_), Some(_)) => bail!("give --prompt or --prompt-file, not both"),
        (Some(p), None) => (p.clone(), "--prompt"),
        (None, Some(f)) => (
            std::fs::read_to_string(f)
                .with_context(|| format!("cannot read --prompt-file {}", f.display()))?,
            "--prompt-file",
        ),
        (None, None) => (LONG_ANSWER_PROMPT.to_string(), "built-in long-answer task"),
    };
    let pattern = match (&a.answer_regex, source) {
        (Some(r), _) => Some(r.clone()),
        (None, "built-in long-answer task") => Some(LONG_ANSWER_PATTERN.to_string()),
        _ => None,
    };
    let regex = pattern
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .context("--answer-regex is not a valid regular expression")?;
    let levels = parse_levels(&a.levels)?;
    if !(0.0..10.0).contains(&a.min_gain) {
        bail!("--min-gain is a fraction (0.05 = 5 %)");
    }
    let engine = Arc::new(crate::eval_cmd::answering_engine(a).await?);
    let model = engine.model().served_model.clone();
    let spec = engine
        .stream_request(
            &model,
            PromptInput::Text(prompt),
            a.max_output,
            true,
            StreamLimits::default(),
        )
        .map_err(anyhow::Error::msg)?;
    let secrets: Vec<String> = engine.secrets().iter().map(|s| s.to_string()).collect();
    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();

    // The scout: the prompt's prefix is cached once, so every later TTFT is a cached one.
    let scout = batch(&engine, &spec, 1, regex.as_ref(), &secrets).await?;
    if let Some(e) = scout.results.first().and_then(|r| r.error.clone()) {
        bail!("the scout request failed: {e}");
    }
    let scout_ttft_ms = scout.results.first().and_then(|r| r.ttft_ms);

    let mut done: Vec<LevelResult> = Vec::new();
    let mut results: Vec<TaskResult> = Vec::new();
    let mut sources: Vec<&'static str> = Vec::new();
    let (chosen, reason) = loop {
        match next_step(&levels, &done, a.min_gain, a.patience) {
            Step::Probe(n) => {
                let b = batch(&engine, &spec, n, regex.as_ref(), &secrets).await?;
                eprintln!(
                    "concurrency {n}: {:.1} tok/s ({} finished, {} failed)",
                    b.level.tok_per_s, b.level.requests, b.level.errors
                );
                done.push(b.level);
                results.extend(b.results);
                sources.push(b.source);
            }
            Step::Done { chosen, reason } => break (chosen, reason),
        }
    };
    if chosen == 0 {
        bail!("no request finished: {reason}");
    }
    let at_chosen = |r: &[TaskResult]| {
        r.iter()
            .filter(|x| x.concurrency == chosen && x.error.is_none())
            .count()
    };
    // A level whose batches keep failing must not loop for ever: a few batches past the
    // minimum's worth, then what there is.
    let mut extra = 0;
    while at_chosen(&results) < a.min_results && extra < a.min_results.div_ceil(chosen as usize) + 2
    {
        let b = batch(&engine, &spec, chosen, regex.as_ref(), &secrets).await?;
        results.extend(b.results);
        sources.push(b.source);
        extra += 1;
    }
    let stats = TaskStats::of(&results, chosen);
    let tokens_from = if sources.iter().all(|s| *s == "server usage") {
        "server usage"
    } else {
        "tokenizer or chunk count (no usage from the server)"
    };
    let summary = TokensSummary {
        profile: &a.profile,
        model: &model,
        prompt_source: source,
        answer_pattern: pattern.as_deref(),
        max_output: a.max_output,
        scout_ttft_ms,
        levels: &done,
        chosen,
        search_stopped: &reason,
        stats: &stats,
        completion_token_source: tokens_from,
    };
    write_results(&a.output, &summary, &results)?;
    let t = stats.completion_tokens.as_ref();
    let fmt = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.0}"));
    println!(
        "{}: chose concurrency {chosen} ({reason}); {} results, completion tokens avg {} p50 {} p90 {} p99 {}, {} hit max tokens{}; results in {}",
        a.profile,
        stats.results,
        fmt(t.map(|s| s.mean)),
        fmt(t.map(|s| s.p50)),
        fmt(t.map(|s| s.p90)),
        fmt(t.map(|s| s.p99)),
        stats.max_token_hits,
        stats
            .correct
            .map_or(String::new(), |(k, n)| format!(", {k}/{n} correct")),
        a.output.display()
    );
    Ok(())
}

fn parse_levels(text: &str) -> Result<Vec<u32>> {
    let mut v: Vec<u32> = text
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .with_context(|| format!("--levels: `{s}` is not a concurrency (1 or more)"))
        })
        .collect::<Result<_>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// One closed batch: its level's figures, its results and how its tokens were counted.
struct Batch {
    level: LevelResult,
    results: Vec<TaskResult>,
    source: &'static str,
}

/// Sends `n` copies of `spec` at once, each to its end, and scores them.
async fn batch(
    engine: &Arc<Engine>,
    spec: &RequestSpec,
    n: u32,
    regex: Option<&regex::Regex>,
    secrets: &[&str],
) -> Result<Batch> {
    let origin = Instant::now();
    let cancel = CancellationToken::new();
    let tasks: Vec<_> = (0..n)
        .map(|i| {
            let (engine, spec, cancel) = (engine.clone(), spec.clone(), cancel.clone());
            tokio::spawn(
                async move { measure(engine.client(), &spec, i, origin, &cancel, None).await },
            )
        })
        .collect();
    let mut measured: Vec<Measured> = Vec::with_capacity(n as usize);
    for t in tasks {
        measured.push(t.await.context("a request task died")?);
    }
    let wall_s = origin.elapsed().as_secs_f64();
    let texts: Vec<String> = measured
        .iter()
        .map(|m| m.texts.as_ref().map(|t| t.concat()).unwrap_or_default())
        .collect();
    // Failed requests carry no usage and count no tokens: only the finished ones decide.
    let usage_everywhere = measured
        .iter()
        .filter(|m| matches!(m.record.outcome, Outcome::Finished { .. }))
        .all(|m| m.record.completion_tokens_reported.is_some());
    if !usage_everywhere {
        // Only then: counting consumes the texts, which were copied above.
        count_tokens(engine, &mut measured).await;
    }
    let results: Vec<TaskResult> = measured
        .iter()
        .zip(&texts)
        .map(|(m, text)| {
            let r = &m.record;
            let (finish_reason, error) = match &r.outcome {
                Outcome::Finished { reason } => (Some(reason.clone()), None),
                Outcome::Error { message, .. } => (
                    None,
                    Some(llmib_core::redact::redact_text(message, secrets)),
                ),
                Outcome::Cancelled => (None, Some("cancelled".to_string())),
            };
            TaskResult {
                concurrency: n,
                completion_tokens: error
                    .is_none()
                    .then(|| r.completion_tokens_reported.unwrap_or_else(|| r.tokens())),
                ttft_ms: r.ttft_ns().map(|t| t as f64 / 1e6),
                correct: match (regex, &error) {
                    (Some(re), None) => Some(re.is_match(final_line(text))),
                    _ => None,
                },
                finish_reason,
                error,
            }
        })
        .collect();
    let ok: Vec<&TaskResult> = results.iter().filter(|r| r.error.is_none()).collect();
    let tokens: u64 = ok.iter().filter_map(|r| r.completion_tokens).sum();
    Ok(Batch {
        level: LevelResult {
            concurrency: n,
            requests: ok.len() as u64,
            errors: (results.len() - ok.len()) as u64,
            completion_tokens: tokens,
            wall_s,
            tok_per_s: if wall_s > 0.0 {
                tokens as f64 / wall_s
            } else {
                0.0
            },
        },
        results,
        source: if usage_everywhere {
            "server usage"
        } else {
            "counted"
        },
    })
}

/// Writes `tasks.jsonl`, `tokens.json` and `tokens.md` into `dir`.
fn write_results(dir: &Path, summary: &TokensSummary<'_>, results: &[TaskResult]) -> Result<()> {
    let write = |name: &str, text: String| {
        std::fs::write(dir.join(name), text)
            .with_context(|| format!("cannot write {}", dir.join(name).display()))
    };
    write("tasks.jsonl", crate::eval_cmd::to_jsonl(results)?)?;
    write("tokens.json", serde_json::to_string_pretty(summary)?)?;
    write("tokens.md", markdown(summary))
}

fn markdown(s: &TokensSummary<'_>) -> String {
    use llmib_report::escape_markdown as escape;
    let f = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.1}"));
    let sum = |x: Option<&Summary>, pick: fn(&Summary) -> f64| f(x.map(pick));
    let t = s.stats.completion_tokens.as_ref();
    let ttft = s.stats.ttft_ms.as_ref();
    let mut out = format!(
        "# Completion tokens: {} on {}\n\nPrompt: {}; max tokens {}; tokens from {}.\n\n",
        escape(s.profile),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_pattern_reads_the_final_line() {
        let re = regex::Regex::new(LONG_ANSWER_PATTERN).expect("pattern");
        for ok in [
            "Final answer: 114240 kg",
            "final answer: 114,240 kg",
            "**Final answer:** 114 240 kg",
        ] {
            assert!(re.is_match(ok), "{ok}");
        }
        for bad in [
            "Final answer: 114241 kg",
            "Final answer: 114240 t",
            "114240 kg",
        ] {
            assert!(!re.is_match(bad), "{bad}");
        }
        // 3 shipments of 125 + 240 + 315 = 680 boxes a day, × 14 × 12 kg.
        assert_eq!((125 + 240 + 315) * 14 * 12, 114_240);
    }

    #[test]
    fn levels_parse_sorted_and_unique() {
        assert_eq!(parse_levels("8, 1,2,2").expect("levels"), vec![1, 2, 8]);
        assert!(parse_levels("0").is_err());
        assert!(parse_levels("x").is_err());
    }
}
