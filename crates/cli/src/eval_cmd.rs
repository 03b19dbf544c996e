//! `eval`: an accuracy profile (GSM8K, MMLU-Pro, GPQA Diamond) against a server. Every request
//! is a different item, temperature 0, at a fixed concurrency; answers are scored by
//! `llmib_core::accuracy`. Writes `items.jsonl` (one scored item per line) and `eval.json`
//! (accuracy with its Wilson interval, per subject and category, and the run's throughput).
//! `compare A B` on two eval directories pairs them by item id.
//!
//! Datasets come from [`crate::datasets`]: the official files pinned by sha256 (downloaded once
//! into the user's cache), or a local copy in `--dataset-dir`.

use crate::datasets::{Item, Locate, obtain};
use anyhow::{Context, Result, bail};
use clap::Args;
use futures_util::StreamExt;
use llmib_client::engine::{Engine, ProbeOptions};
use llmib_client::eval::generate;
use llmib_core::accuracy::{
    Accuracy, AnswerFormat, Category, EvalSummary, ItemScore, pair, parse_letter, parse_number,
    score,
};
use llmib_core::redact::sanitize_terminal;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `eval` arguments.
#[derive(Debug, Clone, Args)]
pub struct EvalArgs {
    /// Base URL of the server.
    #[arg(long, env = "OPENAI_BASE_URL")]
    pub url: String,
    /// API key (also read from OPENAI_API_KEY). Never written to any output.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Model to request (default: the one the server lists).
    #[arg(long)]
    pub model: Option<String>,
    /// Profile: gsm8k, mmlu-pro or gpqa-diamond (accuracy), or long-answer (completion-token
    /// statistics of one task; implied by --prompt or --prompt-file).
    #[arg(long, default_value = "")]
    pub profile: String,
    /// A local copy instead of the download: a folder holding the official file (checked
    /// against its sha256) or `<profile>.jsonl` in this tool's item format.
    #[arg(long)]
    pub dataset_dir: Option<PathBuf>,
    /// Download the official file from this mirror instead (it must match the pinned sha256).
    #[arg(long)]
    pub dataset_url: Option<String>,
    /// Expect this sha256 instead of the pinned one (another revision, on purpose).
    #[arg(long)]
    pub dataset_sha256: Option<String>,
    /// Where downloaded datasets are kept (default: the user's cache directory).
    #[arg(long, env = "LLMIB_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Score only N items, evenly spread over the dataset (deterministic).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Requests in flight.
    #[arg(long, default_value_t = 8)]
    pub concurrency: usize,
    /// `max_tokens` of each answer.
    #[arg(long, default_value_t = 2048)]
    pub max_output: u32,
    /// Results directory.
    #[arg(long, short)]
    pub output: PathBuf,
    /// long-answer: the task's prompt instead of the built-in one.
    #[arg(long)]
    pub prompt: Option<String>,
    /// long-answer: read the prompt from this file.
    #[arg(long)]
    pub prompt_file: Option<PathBuf>,
    /// long-answer: a regular expression the answer's final line must match to count as
    /// correct (the built-in task has its own).
    #[arg(long)]
    pub answer_regex: Option<String>,
    /// long-answer: concurrency levels the search probes, in order.
    #[arg(long, default_value = "1,2,4,8,16,32,64")]
    pub levels: String,
    /// long-answer: the gain over the best level so far that keeps the search going (0.05 = 5 %).
    #[arg(long, default_value_t = 0.05)]
    pub min_gain: f64,
    /// long-answer: levels in a row without that gain before the search stops.
    #[arg(long, default_value_t = 2)]
    pub patience: u32,
    /// long-answer: finished requests wanted at the chosen level.
    #[arg(long, default_value_t = 32)]
    pub min_results: usize,
}

fn format_of(profile: &str) -> Result<AnswerFormat> {
    Ok(match profile {
        "gsm8k" => AnswerFormat::Number,
        "mmlu-pro" | "gpqa-diamond" => AnswerFormat::Letter,
        other => bail!("unknown --profile `{other}`: use gsm8k, mmlu-pro or gpqa-diamond"),
    })
}

/// The prompt of an item.
fn prompt(item: &Item, format: AnswerFormat) -> String {
    match format {
        AnswerFormat::Number => format!(
            "Solve the problem step by step, then give the final answer on its own line as \
             '#### <number>'.\n\nQuestion: {}\n",
            item.question
        ),
        AnswerFormat::Letter => {
            let options: String = item
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {o}\n", (b'A' + i as u8) as char))
                .collect();
            format!(
                "Answer the multiple-choice question. Think briefly, then end with 'Answer: X' \
                 where X is the letter of the choice.\n\nQuestion: {}\n{options}",
                item.question
            )
        }
    }
}

/// Probes the server for an eval (accuracy or long-answer) and makes its results folder. An
/// answer ends where the model stops; chat is what instruction models are served for.
pub async fn answering_engine(a: &EvalArgs) -> Result<Engine> {
    let probe = Engine::probe(&ProbeOptions {
        api_key: a.api_key.clone(),
        model: a.model.clone(),
        timeout: Duration::from_secs(10),
        respect_eos: true,
        api: Some(llmib_core::plan::Api::Chat),
        ..ProbeOptions::new(a.url.clone())
    })
    .await?;
    let engine = probe.engine;
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("cannot create {}", a.output.display()))?;
    Ok(engine)
}

/// Runs the profile and writes the results.
pub async fn run(mut a: EvalArgs) -> Result<()> {
    if a.profile.is_empty() && (a.prompt.is_some() || a.prompt_file.is_some()) {
        a.profile = "long-answer".into();
    }
    match a.profile.as_str() {
        "" => bail!("pass --profile: gsm8k, mmlu-pro, gpqa-diamond or long-answer"),
        "long-answer" => return crate::task_cmd::run(&a).await,
        _ if a.prompt.is_some() || a.prompt_file.is_some() => {
            bail!("--prompt and --prompt-file belong to --profile long-answer")
        }
        _ => {}
    }
    let format = format_of(&a.profile)?;
    if let Some(h) = &a.dataset_sha256
        && (h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        bail!("--dataset-sha256 must be 64 hex digits");
    }
    let locate = Locate {
        dataset_dir: a.dataset_dir.clone(),
        url: a.dataset_url.clone(),
        sha256: a.dataset_sha256.as_deref().map(str::to_ascii_lowercase),
        cache_dir: a.cache_dir.clone(),
    };
    let (items, dataset) = obtain(&a.profile, &locate, a.limit).await?;
    let engine = answering_engine(&a).await?;
    let model = engine.model().served_model.clone();
    let t0 = Instant::now();
    let secrets: Vec<&str> = engine.secrets();
    let engine_ref = &engine;
    let mut scored: Vec<ItemScore> = futures_util::stream::iter(items.iter())
        .map(|item| async move {
            let g = generate(engine_ref, &prompt(item, format), a.max_output).await;
            (item, g)
        })
        .buffer_unordered(a.concurrency.max(1))
        .map(|(item, g)| match g {
            Ok(g) => {
                let hit = g.finish_reason.as_deref() == Some("length");
                let parsed = match format {
                    AnswerFormat::Number => parse_number(&g.text).map(|v| v.to_string()),
                    AnswerFormat::Letter => parse_letter(&g.text).map(|c| c.to_string()),
                };
                ItemScore {
                    id: item.id.clone(),
                    expected: item.answer.clone(),
                    parsed,
                    category: score(&g.text, &item.answer, format, hit),
                    subject: item.category.clone(),
                    completion_tokens: g.completion_tokens,
                    finish_reason: g.finish_reason,
                    error: None,
                }
            }
            Err(e) => ItemScore {
                id: item.id.clone(),
                expected: item.answer.clone(),
                parsed: None,
                category: Category::Unparseable,
                subject: item.category.clone(),
                completion_tokens: None,
                finish_reason: None,
                error: Some(llmib_core::redact::redact_text(&e, &secrets)),
            },
        })
        .collect()
        .await;
    let wall_s = t0.elapsed().as_secs_f64();
    scored.sort_by(|x, y| x.id.cmp(&y.id));
    let errors = scored.iter().filter(|s| s.error.is_some()).count();
    if errors == scored.len() {
        bail!(
            "every request failed (first: {})",
            scored[0].error.as_deref().unwrap_or("unknown")
        );
    }
    std::fs::write(a.output.join("items.jsonl"), to_jsonl(&scored)?)?;
    let mut categories: BTreeMap<String, u64> = BTreeMap::new();
    let mut subjects: BTreeMap<String, Vec<ItemScore>> = BTreeMap::new();
    for s in &scored {
        let c = serde_json::to_value(s.category)?;
        *categories
            .entry(c.as_str().unwrap_or("?").to_string())
            .or_default() += 1;
        if let Some(sub) = &s.subject {
            subjects.entry(sub.clone()).or_default().push(s.clone());
        }
    }
    let tokens: u64 = scored.iter().filter_map(|s| s.completion_tokens).sum();
    let summary = EvalSummary {
        profile: a.profile.clone(),
        model,
        url: a.url.clone(),
        accuracy: Accuracy::of(&scored),
        categories,
        by_subject: subjects
            .iter()
            .map(|(k, v)| (k.clone(), Accuracy::of(v)))
            .collect(),
        tok_per_s: if wall_s > 0.0 {
            tokens as f64 / wall_s
        } else {
            0.0
        },
        wall_s,
        concurrency: a.concurrency,
        dataset,
    };
    std::fs::write(
        a.output.join("eval.json"),
        serde_json::to_string_pretty(&summary)?,
    )?;
    write_accuracy_pages(&a.output, &summary, &scored)?;
    let acc = &summary.accuracy;
    let (lo, hi) = acc.wilson_95.unwrap_or((0.0, 0.0));
    println!(
        "{}: {}/{} correct, accuracy {:.1}% (95% CI {:.1}–{:.1}%), {:?}, {:.0} tok/s; results in {}",
        a.profile,
        acc.correct,
        acc.n,
        acc.accuracy * 100.0,
        lo * 100.0,
        hi * 100.0,
        summary.categories,
        summary.tok_per_s,
        a.output.display()
    );
    if errors > 0 {
        eprintln!(
            "note: {errors} request(s) failed; they score as unparseable (items.jsonl has each error)"
        );
    }
    Ok(())
}

/// Writes `eval.md` and `eval.html` (the accuracy section) into `dir`.
fn write_accuracy_pages(dir: &Path, s: &EvalSummary, items: &[ItemScore]) -> Result<()> {
    let view = llmib_report::accuracy::AccuracyView::new(s, items);
    std::fs::write(dir.join("eval.md"), view.markdown())
        .with_context(|| format!("cannot write {}", dir.join("eval.md").display()))?;
    std::fs::write(dir.join("eval.html"), view.html()?)
        .with_context(|| format!("cannot write {}", dir.join("eval.html").display()))?;
    Ok(())
}

/// Writes an eval run's pages again from its `eval.json` and `items.jsonl` (`report` on an
/// eval directory); returns the files written.
pub fn rewrite_reports(dir: &Path) -> Result<Vec<PathBuf>> {
    let p = dir.join("eval.json");
    let s: EvalSummary = serde_json::from_str(
        &std::fs::read_to_string(&p).with_context(|| format!("cannot read {}", p.display()))?,
    )
    .with_context(|| format!("{}: not an eval summary", p.display()))?;
    write_accuracy_pages(dir, &s, &load_items(dir)?)?;
    Ok(vec![dir.join("eval.md"), dir.join("eval.html")])
}

/// Whether `dir` holds an eval run.
pub fn is_eval_dir(dir: &Path) -> bool {
    dir.join("eval.json").is_file()
}

fn load_items(dir: &Path) -> Result<Vec<ItemScore>> {
    read_jsonl(&dir.join("items.jsonl"), "a scored item")
}

/// One JSON value per line: the line files of eval's results (`items.jsonl`, `tasks.jsonl`).
pub(crate) fn to_jsonl<T: serde::Serialize>(rows: &[T]) -> Result<String> {
    let mut lines = String::new();
    for r in rows {
        lines.push_str(&serde_json::to_string(r)?);
        lines.push('\n');
    }
    Ok(lines)
}

/// Reads a file of one JSON value per line (blank lines skipped); a bad line is named by its
/// number and by `what` it should have been.
pub(crate) fn read_jsonl<T: serde::de::DeserializeOwned>(
    path: &Path,
    what: &str,
) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{} line {}: not {what}", path.display(), i + 1))
        })
        .collect()
}

/// The paired A/B comparison of two eval runs, as text.
pub fn compare(a: &Path, b: &Path) -> Result<String> {
    let p = pair(&load_items(a)?, &load_items(b)?);
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let mut out = format!(
        "Paired A/B over {} items: A {} ({}/{}), B {} ({}/{}), delta {:+.1} points\n",
        p.n,
        pct(p.a.accuracy),
        p.a.correct,
        p.a.n,
        pct(p.b.accuracy),
        p.b.correct,
        p.b.n,
        p.delta * 100.0
    );
    out.push_str(&format!(
        "Flips: {} right in A only, {} right in B only; exact McNemar p = {:.4}\n",
        p.a_only.len(),
        p.b_only.len(),
        p.p_value
    ));
    if !p.a_only.is_empty() {
        out.push_str(&format!("  right in A only: {}\n", p.a_only.join(", ")));
    }
    if !p.b_only.is_empty() {
        out.push_str(&format!("  right in B only: {}\n", p.b_only.join(", ")));
    }
    out.push_str(&format!(
        "Truncated: A {}, B {}; completion tokens B/A: {}\n",
        p.truncated.0,
        p.truncated.1,
        p.token_inflation.map_or("–".into(), |r| format!("×{r:.2}"))
    ));
    out.push_str("Per subject (worst first):\n");
    for (s, fa, fb, d) in &p.by_subject {
        out.push_str(&format!(
            "  {s}: {} → {} ({:+.1})\n",
            pct(*fa),
            pct(*fb),
            d * 100.0
        ));
    }
    // Item ids and subjects come from the dataset: no control character reaches the terminal.
    Ok(out
        .lines()
        .map(sanitize_terminal)
        .collect::<Vec<_>>()
        .join("\n")
        + "\n")
}
