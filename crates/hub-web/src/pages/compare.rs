//! `GET /compare?ids=…`: 2 to 6 stored runs side by side, the report crate's compare view (each
//! measurement with its ratio to the first run), with the hub's bar on top. `/api/compare` is the
//! JSON twin: the runs and, per measurement, each run's status, throughput and verdict.

use crate::error::WebError;
use crate::pages::layout::{html, inject};
use crate::pages::run::report_of;
use crate::state::{AppState, blocking};
use crate::want::Want;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use llmib_hub::{RunId, StoredRun};
use llmib_report::Comparison;
use serde_json::{Value, json};

/// The handler.
pub(crate) async fn page(
    State(state): State<AppState>,
    want: Want,
    RawQuery(raw): RawQuery,
) -> Response {
    match answer(state, want, raw).await {
        Ok(r) => r,
        Err(e) => e.respond(want),
    }
}

async fn answer(state: AppState, want: Want, raw: Option<String>) -> Result<Response, WebError> {
    let ids = crate::params::compare_ids(raw.as_deref())?;
    let wanted = ids.clone();
    let runs = state
        .with_store(move |s| {
            wanted
                .iter()
                .map(|id| Ok(s.run(*id)?))
                .collect::<Result<Vec<_>, WebError>>()
        })
        .await?;
    let body = blocking(move || {
        let cmp = comparison(&runs)?;
        match want {
            Want::Json => Ok(Body::Json(to_json(&ids, &runs, &cmp))),
            Want::Html => {
                let links: String = ids
                    .iter()
                    .map(|id| format!("<a href=\"/runs/{id}\">Run #{id}</a>"))
                    .collect();
                let query: Vec<String> = ids.iter().map(|id| format!("ids={id}")).collect();
                let extra = format!(
                    "{links}<a href=\"/api/compare?{}\">JSON</a>",
                    query.join("&amp;")
                );
                Ok(Body::Html(inject(&cmp.to_html()?, &extra)))
            }
        }
    })
    .await?;
    Ok(match body {
        Body::Json(v) => crate::json::ok(v),
        Body::Html(s) => html(StatusCode::OK, s),
    })
}

/// A rendered answer (built on the blocking pool).
enum Body {
    Json(Value),
    Html(String),
}

/// The runs lined up, each named by its id and model (the first is the baseline).
fn comparison(runs: &[StoredRun]) -> Result<Comparison, WebError> {
    let reports = runs
        .iter()
        .map(|r| {
            Ok((
                format!("run {} · {}", r.summary.id, r.summary.model),
                report_of(r)?,
            ))
        })
        .collect::<Result<Vec<_>, WebError>>()?;
    Ok(Comparison::new(reports)?)
}

fn to_json(ids: &[RunId], runs: &[StoredRun], cmp: &Comparison) -> Value {
    let rows: Vec<Value> = cmp
        .rows
        .iter()
        .map(|row| {
            let entries: Vec<Value> = row
                .entries
                .iter()
                .zip(ids)
                .map(|((cell, verdict), id)| {
                    json!({
                        "run_id": id,
                        "status": cell.as_ref().map(|c| c.status),
                        "total_tok_per_s": cell.as_ref().and_then(|c| c.total_tok_per_s),
                        "prompt_tok_per_s": cell.as_ref().and_then(|c| c.prompt_tok_per_s),
                        "verdict": verdict,
                    })
                })
                .collect();
            json!({
                "phase": row.phase,
                "context_tokens": row.context_tokens,
                "context_label": row.context_label,
                "concurrency": row.concurrency,
                "request_rate": row.request_rate,
                "entries": entries,
            })
        })
        .collect();
    json!({
        "baseline": ids.first(),
        "runs": runs.iter().zip(&cmp.runs).map(|(r, e)| {
            let mut v = crate::json::summary(&r.summary);
            v["letter"] = json!(e.letter);
            v
        }).collect::<Vec<_>>(),
        "rows": rows,
    })
}
