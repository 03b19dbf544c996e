//! `eval --profile mt-bench`: speculative decoding's acceptance per category (issue 45).
//! MT-Bench's 80 questions (8 categories of 10, the set EAGLE and Spec-Bench report on; pinned
//! by sha256 and cached like every eval dataset, [`crate::datasets`]) are sent one category at a
//! time: each category's questions, `--concurrency` conversations at once, each question's two
//! turns in order (the second with the first and the model's own answer before it, as EAGLE's
//! and Spec-Bench's runs ask them), temperature 0, ending where the model stops, form a window
//! of their own, so the server's acceptance over it belongs to that category alone
//! (`llmib_core::spec_category_row`).
//!
//! What is read from the server, per window: its metrics once before the first request and once
//! after the last answer (vLLM's cumulative draft counters: their delta is the category's),
//! and every `gauge_interval` in between (SGLang's acceptance gauges, averaged; the samples
//! before and after are counters only, since a gauge read then still shows the previous
//! category's batches). Token counts are each answer's `usage`. Nothing else may load the
//! server meanwhile: its counters are server-wide.
//!
//! Writes `spec.json` (`llmib_core::SpecBenchSummary`) and `spec.md` (the per-category table).

use crate::datasets::{Locate, obtain};
use crate::error::EvalError;
use crate::formats::Item;
use crate::jsonl::write;
use crate::server::{Server, answering_engine};
use futures_util::StreamExt;
use llmib_client::{Engine, Gauges, PromptInput, answer_of};
use llmib_core::{
    Profile, SpecBenchSummary, SpecCategoryRow, SpecRequestOutcome, SpecWindow, group_by_category,
    redact_text, spec_category_row, strip_url_userinfo,
};
use serde_json::{Value, json};
use std::io::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What a speculative-decoding run does.
#[derive(Debug, Clone)]
pub struct SpecRun {
    /// Where its dataset is.
    pub locate: Locate,
    /// Send only N questions, evenly spread over the set (so over the categories).
    pub limit: Option<usize>,
    /// Conversations in flight within a category's window (each one request at a time).
    pub concurrency: usize,
    /// `max_tokens` of each answer.
    pub max_output: u32,
    /// How often the server's metrics are read during a window.
    pub gauge_interval: Duration,
    /// Results directory.
    pub output: PathBuf,
}

/// Runs MT-Bench against `server`, one window per category, and writes the results.
pub async fn run_spec(server: &Server, run: &SpecRun) -> Result<(), EvalError> {
    let (items, dataset) = obtain(Profile::MtBench, &run.locate, run.limit).await?;
    let engine = answering_engine(server, &run.output).await?;
    let cats: Vec<Option<&str>> = items.iter().map(|i| i.category.as_deref()).collect();
    let mut rows = Vec::new();
    for (name, idx) in group_by_category(&cats) {
        let chosen: Vec<&Item> = idx.iter().map(|&i| &items[i]).collect();
        rows.push(category_window(&engine, &name, &chosen, run).await);
    }
    if rows.iter().all(|r| r.failed == r.requests) {
        return Err(EvalError::Requests(format!(
            "every request failed (first: {})",
            rows.iter()
                .find_map(|r| r.first_error.as_deref())
                .unwrap_or("unknown")
        )));
    }
    let summary = SpecBenchSummary {
        profile: Profile::MtBench,
        model: engine.model().served_model.clone(),
        url: strip_url_userinfo(&server.url),
        concurrency: run.concurrency.max(1),
        max_output: run.max_output,
        dataset,
        categories: rows,
    };
    write(
        &run.output,
        "spec.json",
        serde_json::to_string_pretty(&summary)?,
    )?;
    write(&run.output, "spec.md", markdown(&summary))?;
    print_outcome(&summary, run);
    Ok(())
}

/// The cumulative (drafts, draft tokens, accepted tokens) in `g`, where the engine counts them.
fn counters(g: &Gauges) -> Option<[f64; 3]> {
    g.spec_counters
        .map(|c| [c.drafts, c.draft_tokens, c.accepted_tokens])
}

/// One category's window: metrics before, its questions sent while the gauges are sampled,
/// metrics after; its row.
async fn category_window(
    engine: &Engine,
    name: &str,
    items: &[&Item],
    run: &SpecRun,
) -> SpecCategoryRow {
    let mut window = SpecWindow::default();
    if let Ok(g) = engine.gauges().await {
        window.observe(None, None, counters(&g));
    }
    let secrets = engine.secrets();
    let t0 = Instant::now();
    let sends = futures_util::stream::iter(items.iter())
        .map(|item| converse(engine, item, run.max_output, &secrets))
        .buffer_unordered(run.concurrency.max(1))
        .collect::<Vec<_>>();
    tokio::pin!(sends);
    let mut tick = tokio::time::interval_at(
        tokio::time::Instant::now() + run.gauge_interval,
        run.gauge_interval.max(Duration::from_millis(10)),
    );
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let outcomes: Vec<SpecRequestOutcome> = loop {
        tokio::select! {
            out = &mut sends => break out.into_iter().flatten().collect(),
            _ = tick.tick() => {
                if let Ok(g) = engine.gauges().await {
                    window.observe(g.spec_accept_rate, g.spec_accept_length, counters(&g));
                }
            }
        }
    };
    let wall_s = t0.elapsed().as_secs_f64();
    if let Ok(g) = engine.gauges().await {
        window.observe(None, None, counters(&g));
    }
    spec_category_row(name, &outcomes, &window, wall_s)
}

/// One question's turns in order, each sent with the conversation so far (the user's turns
/// and the model's own answers, as MT-Bench is asked in EAGLE's and Spec-Bench's runs); what
/// each request's usage said. A failed turn ends the conversation: its later turns, which
/// would need its answer, are not sent.
async fn converse(
    engine: &Engine,
    item: &Item,
    max_tokens: u32,
    secrets: &[&str],
) -> Vec<SpecRequestOutcome> {
    let mut history: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for turn in std::iter::once(&item.question).chain(&item.followups) {
        history.push(json!({"role": "user", "content": turn}));
        let (outcome, answer) = ask(engine, &history, max_tokens, secrets).await;
        out.push(outcome);
        let Some(answer) = answer else { break };
        history.push(json!({"role": "assistant", "content": answer}));
    }
    out
}

/// Sends the conversation `history` (temperature 0, ending where the model stops); what its
/// usage said, and the answer's text (`None`: it failed).
async fn ask(
    engine: &Engine,
    history: &[Value],
    max_tokens: u32,
    secrets: &[&str],
) -> (SpecRequestOutcome, Option<String>) {
    let mut body = engine.completion_body(
        &engine.model().served_model,
        PromptInput::Messages(Value::Array(history.to_vec())),
        max_tokens,
        false,
    );
    if let Value::Object(m) = &mut body {
        m.insert("temperature".into(), Value::from(0.0));
    }
    let failed = |e: String| {
        let o = SpecRequestOutcome {
            error: Some(redact_text(&e, secrets)),
            ..Default::default()
        };
        (o, None)
    };
    let v = match engine.generate_json(&body).await {
        Ok(v) => v,
        Err(e) => return failed(e.to_string()),
    };
    let Some(answer) = answer_of(engine.api(), &v) else {
        return failed("no answer in the server's reply (no choices, content or output)".into());
    };
    let outcome = SpecRequestOutcome {
        prompt_tokens: ["/usage/prompt_tokens", "/usage/input_tokens"]
            .iter()
            .find_map(|p| v.pointer(p).and_then(Value::as_u64)),
        completion_tokens: answer.completion_tokens,
        error: None,
    };
    (outcome, Some(answer.text))
}

/// A table cell: no pipe or line break of a dataset's or server's string reaches the table.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// `spec.md`: the run, then one row per category.
fn markdown(s: &SpecBenchSummary) -> String {
    let d = &s.dataset;
    let mut out = format!(
        "# Speculative decoding per category: {}\n\nModel `{}` at {}; {} conversations in flight (each question's turns in order, with the model's own answers), max output {}, temperature 0, answers ending where the model stops.\nDataset: {} ({} questions in the set{}).\nEach category ran as a window of its own; its acceptance is the server's over that window, its token counts the server's usage.\n\n",
        s.profile,
        cell(&s.model),
        cell(&s.url),
        s.concurrency,
        s.max_output,
        cell(&d.file),
        d.items_in_set,
        d.sha256
            .as_deref()
            .map_or_else(String::new, |h| format!(", sha256 {h}")),
    );
    out.push_str("| Category | Requests | Failed | Prompt tokens | Completion tokens | Completion tok/s | Accept rate | Accept length | Acceptance source | Token counts |\n|---|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
    let num = |v: Option<u64>| v.map_or_else(|| "—".to_string(), |n| n.to_string());
    for r in &s.categories {
        let spec = r.speculative.as_ref();
        let rate = spec
            .and_then(|f| f.accept_rate)
            .map_or_else(|| "—".into(), |x| format!("{:.1}%", x * 100.0));
        let length = spec
            .and_then(|f| f.accept_length)
            .map_or_else(|| "—".into(), |x| format!("{x:.2}"));
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {rate} | {length} | {} | {} |\n",
            cell(&r.category),
            r.requests,
            r.failed,
            num(r.prompt_tokens),
            num(r.completion_tokens),
            r.completion_tok_per_s
                .map_or_else(|| "—".into(), |x| format!("{x:.1}")),
            spec.map_or("the server reported no speculative decoding", |f| &f.source),
            cell(&r.token_count_source),
        ));
    }
    out
}

/// One line per category on stdout.
fn print_outcome(s: &SpecBenchSummary, run: &SpecRun) {
    let mut o = std::io::stdout();
    for r in &s.categories {
        let f = r.speculative.as_ref();
        let _ = writeln!(
            o,
            "{}: {} requests ({} failed), accept rate {}, accept length {}",
            r.category,
            r.requests,
            r.failed,
            f.and_then(|f| f.accept_rate)
                .map_or_else(|| "—".into(), |x| format!("{:.1}%", x * 100.0)),
            f.and_then(|f| f.accept_length)
                .map_or_else(|| "—".into(), |x| format!("{x:.2}")),
        );
    }
    let _ = writeln!(o, "results in {}", run.output.display());
}
