//! An accuracy profile (GSM8K, MMLU-Pro, GPQA Diamond) against a server. Every request is a
//! different item, temperature 0, at a fixed concurrency; answers are scored by
//! [`crate::score`]. Writes `items.jsonl` (one scored item per line), `eval.json` (accuracy
//! with its Wilson interval, per subject and category, and the run's throughput; the URL
//! without its credentials), `eval.md` and `eval.html`. `compare A B` on two eval directories
//! pairs them by item id ([`compare`]).
//!
//! Datasets come from [`crate::datasets`]: the official files pinned by sha256 (downloaded once
//! into the user's cache), or a local copy in `--dataset-dir`.

use crate::datasets::{Locate, obtain};
use crate::error::EvalError;
use crate::formats::Item;
use crate::generate::{GenerateError, Generated, generate};
use crate::jsonl::{read_jsonl, to_jsonl, write};
use crate::score::{AnswerFormat, answer_format, pair, parse_letter, parse_number, score};
use crate::server::{Server, answering_engine};
use futures_util::StreamExt;
use llmib_client::Engine;
use llmib_core::{Accuracy, Category, EvalSummary, ItemScore, Profile};
use llmib_core::{redact_text, sanitize_terminal, strip_url_userinfo};
use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// What an accuracy run does.
#[derive(Debug, Clone)]
pub struct AccuracyRun {
    /// The profile (gsm8k, mmlu-pro or gpqa-diamond).
    pub profile: Profile,
    /// Where its dataset is.
    pub locate: Locate,
    /// Score only N items, evenly spread over the dataset.
    pub limit: Option<usize>,
    /// Requests in flight.
    pub concurrency: usize,
    /// `max_tokens` of each answer.
    pub max_output: u32,
    /// Results directory.
    pub output: PathBuf,
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

/// Runs the profile against `server` and writes the results.
pub async fn run_accuracy(server: &Server, run: &AccuracyRun) -> Result<(), EvalError> {
    let format = answer_format(run.profile).ok_or_else(|| {
        EvalError::Settings(format!(
            "--profile {} is not scored by item: use gsm8k, mmlu-pro or gpqa-diamond",
            run.profile
        ))
    })?;
    let (items, dataset) = obtain(run.profile, &run.locate, run.limit).await?;
    let engine = answering_engine(server, &run.output).await?;
    let t0 = Instant::now();
    let mut scored = score_all(&engine, &items, format, run).await;
    let wall_s = t0.elapsed().as_secs_f64();
    scored.sort_by(|x, y| x.id.cmp(&y.id));
    let errors = scored.iter().filter(|s| s.error.is_some()).count();
    if errors == scored.len() {
        return Err(EvalError::Requests(format!(
            "every request failed (first: {})",
            scored
                .first()
                .and_then(|s| s.error.as_deref())
                .unwrap_or("unknown")
        )));
    }
    write(&run.output, "items.jsonl", to_jsonl(&scored)?)?;
    let summary = EvalSummary {
        profile: run.profile,
        model: engine.model().served_model.clone(),
        url: strip_url_userinfo(&server.url),
        accuracy: Accuracy::of(&scored),
        categories: categories(&scored),
        by_subject: by_subject(&scored),
        tok_per_s: per_s(
            scored.iter().filter_map(|s| s.completion_tokens).sum(),
            wall_s,
        ),
        wall_s,
        concurrency: run.concurrency,
        dataset,
    };
    write(
        &run.output,
        "eval.json",
        serde_json::to_string_pretty(&summary)?,
    )?;
    write_accuracy_pages(&run.output, &summary, &scored)?;
    print_outcome(&summary, &run.output, errors);
    Ok(())
}

/// Sends every item, `run.concurrency` at a time, and scores the answers (in the order they
/// come back).
async fn score_all(
    engine: &Engine,
    items: &[Item],
    format: AnswerFormat,
    run: &AccuracyRun,
) -> Vec<ItemScore> {
    let secrets: Vec<&str> = engine.secrets();
    futures_util::stream::iter(items.iter())
        .map(|item| async move {
            let g = generate(engine, &prompt(item, format), run.max_output).await;
            (item, g)
        })
        .buffer_unordered(run.concurrency.max(1))
        .map(|(item, g)| scored_item(item, g, format, &secrets))
        .collect()
        .await
}

/// One item's score: its answer read and judged, or its request's error (scored Unparseable,
/// with every secret taken out of the message).
fn scored_item(
    item: &Item,
    g: Result<Generated, GenerateError>,
    format: AnswerFormat,
    secrets: &[&str],
) -> ItemScore {
    let base = ItemScore {
        id: item.id.clone(),
        expected: item.answer.clone(),
        parsed: None,
        category: Category::Unparseable,
        subject: item.category.clone(),
        completion_tokens: None,
        finish_reason: None,
        error: None,
    };
    match g {
        Ok(g) => {
            let hit = g.finish_reason.as_deref() == Some("length");
            ItemScore {
                parsed: match format {
                    AnswerFormat::Number => parse_number(&g.text).map(|v| v.to_string()),
                    AnswerFormat::Letter => parse_letter(&g.text).map(|c| c.to_string()),
                },
                category: score(&g.text, &item.answer, format, hit),
                completion_tokens: g.completion_tokens,
                finish_reason: g.finish_reason,
                ..base
            }
        }
        Err(e) => ItemScore {
            error: Some(redact_text(&e.to_string(), secrets)),
            ..base
        },
    }
}

/// Items per category, by the category's name in `eval.json`.
fn categories(scored: &[ItemScore]) -> BTreeMap<String, u64> {
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for s in scored {
        let name = serde_json::to_value(s.category)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "?".into());
        *out.entry(name).or_default() += 1;
    }
    out
}

/// Accuracy per subject, for the items that have one.
fn by_subject(scored: &[ItemScore]) -> BTreeMap<String, Accuracy> {
    let mut subjects: BTreeMap<&str, Vec<&ItemScore>> = BTreeMap::new();
    for s in scored {
        if let Some(sub) = &s.subject {
            subjects.entry(sub).or_default().push(s);
        }
    }
    subjects
        .into_iter()
        .map(|(k, v)| (k.to_string(), Accuracy::of(v)))
        .collect()
}

fn per_s(tokens: u64, wall_s: f64) -> f64 {
    if wall_s > 0.0 {
        tokens as f64 / wall_s
    } else {
        0.0
    }
}

/// The run's line on stdout, and a note on stderr when requests failed.
fn print_outcome(summary: &EvalSummary, output: &Path, errors: usize) {
    let acc = &summary.accuracy;
    let (lo, hi) = acc.wilson_95.unwrap_or((0.0, 0.0));
    let _ = writeln!(
        std::io::stdout(),
        "{}: {}/{} correct, accuracy {:.1}% (95% CI {:.1}–{:.1}%), {:?}, {:.0} tok/s; results in {}",
        summary.profile,
        acc.correct,
        acc.n,
        acc.accuracy * 100.0,
        lo * 100.0,
        hi * 100.0,
        summary.categories,
        summary.tok_per_s,
        output.display()
    );
    if errors > 0 {
        let _ = writeln!(
            std::io::stderr(),
            "note: {errors} request(s) failed; they score as unparseable (items.jsonl has each error)"
        );
    }
}

/// Writes `eval.md` and `eval.html` (the accuracy section) into `dir`.
fn write_accuracy_pages(dir: &Path, s: &EvalSummary, items: &[ItemScore]) -> Result<(), EvalError> {
    let view = llmib_report::AccuracyView::new(s, items);
    write(dir, "eval.md", view.markdown())?;
    write(dir, "eval.html", view.html()?)
}

/// Writes an eval run's pages again from its `eval.json` and `items.jsonl` (`report` on an
/// eval directory); returns the files written.
pub fn rewrite_reports(dir: &Path) -> Result<Vec<PathBuf>, EvalError> {
    let p = dir.join("eval.json");
    let text = std::fs::read_to_string(&p).map_err(EvalError::io("read", &p))?;
    let s: EvalSummary = serde_json::from_str(&text).map_err(|source| EvalError::Json {
        path: p.clone(),
        line: None,
        what: "an eval summary",
        source,
    })?;
    write_accuracy_pages(dir, &s, &load_items(dir)?)?;
    Ok(vec![dir.join("eval.md"), dir.join("eval.html")])
}

/// Whether `dir` holds an eval run.
pub fn is_eval_dir(dir: &Path) -> bool {
    dir.join("eval.json").is_file()
}

fn load_items(dir: &Path) -> Result<Vec<ItemScore>, EvalError> {
    read_jsonl(&dir.join("items.jsonl"), "a scored item")
}

/// The paired A/B comparison of two eval runs, as text.
pub fn compare(a: &Path, b: &Path) -> Result<String, EvalError> {
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
