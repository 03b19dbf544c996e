//! `eval --profile long-answer` (or `--prompt` / `--prompt-file`): completion-token statistics of
//! one long-answer task. One prefix-cache scout, then the adaptive concurrency search
//! ([`crate::tokenstats::next_step`] decides; this file only sends the batches), then more
//! batches at the chosen level until `min_results`. Each batch is one closed burst of the
//! client's burst driver (`llmib_client::send_burst`: L copies, L in flight, each to
//! its end). Writes `tasks.jsonl`, `tokens.json` and `tokens.md` ([`crate::tokens`]).
//!
//! Requests are streamed (TTFT is measured at the first content chunk), end where the model
//! stops, and use the server's default sampling, so the answers' lengths vary as they do in
//! service: the distribution is the point.

use crate::error::EvalError;
use crate::server::{Server, answering_engine};
use crate::tokens::{TokensSummary, write_results};
use crate::tokenstats::{LevelResult, Step, TaskResult, TaskStats, final_line, next_step};
use llmib_client::count_tokens;
use llmib_client::send_burst;
use llmib_client::{Engine, PromptInput};
use llmib_client::{Measured, RequestSpec, StreamLimits};
use llmib_core::Outcome;
use llmib_core::Profile;
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

/// The built-in long-answer task: several worked steps, a checkable result on the last line.
pub const LONG_ANSWER_PROMPT: &str = "A warehouse receives 3 shipments a day for 14 days. \
The shipments hold 125, 240 and 315 boxes. Each box weighs 12 kg. Work it out step by step, \
explaining every calculation in full sentences: the boxes per day, the boxes over the 14 days, \
the total weight in kilograms and in tonnes. Then check the result a second way (per shipment \
across the 14 days, then summed). End with one line of the form \"Final answer: N kg\".";

/// What the built-in task's final line must say: 680 boxes a day × 14 days × 12 kg.
pub const LONG_ANSWER_PATTERN: &str = r"(?i)final answer\W*114[,.\s]?240\s*kg";

/// The task's prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskPrompt {
    /// [`LONG_ANSWER_PROMPT`], judged by [`LONG_ANSWER_PATTERN`] unless a pattern is given.
    BuiltIn,
    /// Given as text (`--prompt`).
    Text(String),
    /// Read from this file (`--prompt-file`).
    File(PathBuf),
}

/// What a long-answer run does.
#[derive(Debug, Clone)]
pub struct TaskRun {
    /// The prompt.
    pub prompt: TaskPrompt,
    /// A regular expression the answer's final line must match to count as correct.
    pub answer_regex: Option<String>,
    /// Concurrency levels the search probes, ascending ([`parse_levels`]).
    pub levels: Vec<u32>,
    /// The gain over the best level so far that keeps the search going (0.05 = 5 %).
    pub min_gain: f64,
    /// Levels in a row without that gain before the search stops.
    pub patience: u32,
    /// Finished requests wanted at the chosen level.
    pub min_results: usize,
    /// `max_tokens` of each answer.
    pub max_output: u32,
    /// Results directory.
    pub output: PathBuf,
}

/// The concurrency levels of `--levels` (`1,2,4,…`), sorted, each once.
pub fn parse_levels(text: &str) -> Result<Vec<u32>, EvalError> {
    let mut v: Vec<u32> = text
        .split(',')
        .map(|s| {
            s.trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    EvalError::Settings(format!("--levels: `{s}` is not a concurrency (1 or more)"))
                })
        })
        .collect::<Result<_, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// The prompt's text and how it was given (kept in `tokens.json`).
fn prompt_text(p: &TaskPrompt) -> Result<(String, &'static str), EvalError> {
    Ok(match p {
        TaskPrompt::BuiltIn => (LONG_ANSWER_PROMPT.to_string(), "built-in long-answer task"),
        TaskPrompt::Text(t) => (t.clone(), "--prompt"),
        TaskPrompt::File(f) => (
            std::fs::read_to_string(f).map_err(EvalError::io("read --prompt-file", f))?,
            "--prompt-file",
        ),
    })
}

/// Runs the task against `server` and writes the results.
pub async fn run_task(server: &Server, run: &TaskRun) -> Result<(), EvalError> {
    let (prompt, source) = prompt_text(&run.prompt)?;
    let pattern = match (&run.answer_regex, &run.prompt) {
        (Some(r), _) => Some(r.clone()),
        (None, TaskPrompt::BuiltIn) => Some(LONG_ANSWER_PATTERN.to_string()),
        _ => None,
    };
    let regex = pattern
        .as_deref()
        .map(regex::Regex::new)
        .transpose()
        .map_err(|e| {
            EvalError::Settings(format!(
                "--answer-regex is not a valid regular expression: {e}"
            ))
        })?;
    if !(0.0..10.0).contains(&run.min_gain) {
        return Err(EvalError::Settings(
            "--min-gain is a fraction (0.05 = 5 %)".into(),
        ));
    }
    let engine = Arc::new(answering_engine(server, &run.output).await?);
    let model = engine.model().served_model.clone();
    let spec = engine.stream_request(
        &model,
        PromptInput::Text(prompt),
        run.max_output,
        true,
        StreamLimits::default(),
    )?;
    let secrets = engine.secrets().iter().map(|s| s.to_string()).collect();
    let sender = Sender {
        engine,
        spec,
        regex,
        secrets,
    };

    // The scout: the prompt's prefix is cached once, so every later TTFT is a cached one.
    let scout = sender.batch(1).await?;
    if let Some(e) = scout.results.first().and_then(|r| r.error.clone()) {
        return Err(EvalError::Requests(format!(
            "the scout request failed: {e}"
        )));
    }
    let mut gathered = search(&sender, run).await?;
    gathered.fill(&sender, run.min_results).await?;
    let stats = TaskStats::of(&gathered.results, gathered.chosen);
    let summary = TokensSummary {
        profile: Profile::LongAnswer,
        model: &model,
        prompt_source: source,
        answer_pattern: pattern.as_deref(),
        max_output: run.max_output,
        scout_ttft_ms: scout.results.first().and_then(|r| r.ttft_ms),
        levels: &gathered.levels,
        chosen: gathered.chosen,
        search_stopped: &gathered.reason,
        stats: &stats,
        completion_token_source: gathered.token_source(),
    };
    write_results(&run.output, &summary, &gathered.results)?;
    print_outcome(&summary, run);
    Ok(())
}

/// What the search and the batches after it gathered.
struct Gathered {
    /// The levels probed, in order.
    levels: Vec<LevelResult>,
    /// Every request's result.
    results: Vec<TaskResult>,
    /// How each batch's tokens were counted.
    sources: Vec<&'static str>,
    /// The level chosen.
    chosen: u32,
    /// Why the search stopped.
    reason: String,
}

impl Gathered {
    fn add(&mut self, b: Batch) {
        self.results.extend(b.results);
        self.sources.push(b.source);
    }

    /// More batches at the chosen level until `min_results` finished there. A level whose
    /// batches keep failing must not loop for ever: a few batches past the minimum's worth,
    /// then what there is.
    async fn fill(&mut self, sender: &Sender, min_results: usize) -> Result<(), EvalError> {
        let chosen = self.chosen;
        let at_chosen = |r: &[TaskResult]| {
            r.iter()
                .filter(|x| x.concurrency == chosen && x.error.is_none())
                .count()
        };
        let mut extra = 0;
        while at_chosen(&self.results) < min_results
            && extra < min_results.div_ceil(chosen as usize) + 2
        {
            let b = sender.batch(chosen).await?;
            self.add(b);
            extra += 1;
        }
        Ok(())
    }

    fn token_source(&self) -> &'static str {
        if self.sources.iter().all(|s| *s == "server usage") {
            "server usage"
        } else {
            "tokenizer or chunk count (no usage from the server)"
        }
    }
}

/// The adaptive concurrency search: one batch per level until [`next_step`] stops it.
async fn search(sender: &Sender, run: &TaskRun) -> Result<Gathered, EvalError> {
    let mut g = Gathered {
        levels: Vec::new(),
        results: Vec::new(),
        sources: Vec::new(),
        chosen: 0,
        reason: String::new(),
    };
    loop {
        match next_step(&run.levels, &g.levels, run.min_gain, run.patience) {
            Step::Probe(n) => {
                let b = sender.batch(n).await?;
                let _ = writeln!(
                    std::io::stderr(),
                    "concurrency {n}: {:.1} tok/s ({} finished, {} failed)",
                    b.level.tok_per_s,
                    b.level.requests,
                    b.level.errors
                );
                g.levels.push(b.level.clone());
                g.add(b);
            }
            Step::Done { chosen, reason } => {
                if chosen == 0 {
                    return Err(EvalError::Requests(format!(
                        "no request finished: {reason}"
                    )));
                }
                g.chosen = chosen;
                g.reason = reason;
                return Ok(g);
            }
        }
    }
}

/// The run's line on stdout.
fn print_outcome(s: &TokensSummary<'_>, run: &TaskRun) {
    let t = s.stats.completion_tokens.as_ref();
    let fmt = |v: Option<f64>| v.map_or("–".into(), |x| format!("{x:.0}"));
    let _ = writeln!(
        std::io::stdout(),
        "{}: chose concurrency {} ({}); {} results, completion tokens avg {} p50 {} p90 {} p99 {}, {} hit max tokens{}; results in {}",
        s.profile,
        s.chosen,
        s.search_stopped,
        s.stats.results,
        fmt(t.map(|s| s.mean)),
        fmt(t.map(|s| s.p50)),
        fmt(t.map(|s| s.p90)),
        fmt(t.map(|s| s.p99)),
        s.stats.max_token_hits,
        s.stats
            .correct
            .map_or(String::new(), |(k, n)| format!(", {k}/{n} correct")),
        run.output.display()
    );
}

/// One closed batch: its level's figures, its results and how its tokens were counted.
struct Batch {
    level: LevelResult,
    results: Vec<TaskResult>,
    source: &'static str,
}

/// What every batch sends, and how its answers are judged.
struct Sender {
    engine: Arc<Engine>,
    spec: RequestSpec,
    regex: Option<regex::Regex>,
    secrets: Vec<String>,
}

impl Sender {
    /// Sends `n` copies of the request at once (one burst of `n`, `n` in flight), each to its
    /// end, and scores them.
    async fn batch(&self, n: u32) -> Result<Batch, EvalError> {
        let t0 = Instant::now();
        let copies = vec![self.spec.clone(); n as usize];
        let mut measured = send_burst(&self.engine, &copies, n, &CancellationToken::new())
            .await
            .map_err(|e| EvalError::Requests(e.to_string()))?;
        let wall_s = t0.elapsed().as_secs_f64();
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
            count_tokens(&self.engine, &mut measured).await;
        }
        let results: Vec<TaskResult> = measured
            .iter()
            .zip(&texts)
            .map(|(m, text)| self.result(m, text, n))
            .collect();
        Ok(Batch {
            level: level_of(n, &results, wall_s),
            results,
            source: if usage_everywhere {
                "server usage"
            } else {
                "counted"
            },
        })
    }

    /// One request's result, its error without any secret.
    fn result(&self, m: &Measured, text: &str, n: u32) -> TaskResult {
        let r = &m.record;
        let secrets: Vec<&str> = self.secrets.iter().map(String::as_str).collect();
        let (finish_reason, error) = match &r.outcome {
            Outcome::Finished { reason } => (Some(reason.clone()), None),
            Outcome::Error { message, .. } => {
                (None, Some(llmib_core::redact_text(message, &secrets)))
            }
            Outcome::Cancelled => (None, Some("cancelled".to_string())),
        };
        TaskResult {
            concurrency: n,
            completion_tokens: error
                .is_none()
                .then(|| r.completion_tokens_reported.unwrap_or_else(|| r.tokens())),
            ttft_ms: r.ttft_ns().map(|t| t as f64 / 1e6),
            correct: match (&self.regex, &error) {
                (Some(re), None) => Some(re.is_match(final_line(text))),
                _ => None,
            },
            finish_reason,
            error,
        }
    }
}

/// The figures of one level's batch.
fn level_of(n: u32, results: &[TaskResult], wall_s: f64) -> LevelResult {
    let ok: Vec<&TaskResult> = results.iter().filter(|r| r.error.is_none()).collect();
    let tokens: u64 = ok.iter().filter_map(|r| r.completion_tokens).sum();
    LevelResult {
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
    }
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
