//! `GET /runs/{id}`: a stored run's page, which is the report crate's seed page rendered from the
//! stored files, with the hub's bar on top (back to the list, each stored file to download with
//! its sha256). `/runs/{id}/files/{name}` downloads a stored file; `/api/runs/{id}` is the JSON
//! twin (summary, files, cells).

use crate::error::WebError;
use crate::pages::layout::{esc, html, inject};
use crate::state::{AppState, blocking};
use crate::want::Want;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use llmib_core::{CELLS_FILE, RUN_FILE, TELEMETRY_FILE};
use llmib_hub::{RunId, RunSummary, StoredRun};
use llmib_report::{Format, Report};
use serde_json::json;

/// A run id from the path: a 400 with one line when it is not a number.
pub(crate) fn run_id(raw: &str) -> Result<RunId, WebError> {
    raw.parse()
        .map_err(|_| WebError::BadRequest(format!("`{raw}` is not a run id: run ids are numbers")))
}

/// The handler of the page and its twin.
pub(crate) async fn page(
    State(state): State<AppState>,
    want: Want,
    Path(id): Path<String>,
) -> Response {
    match answer(state, want, id).await {
        Ok(r) => r,
        Err(e) => e.respond(want),
    }
}

async fn answer(state: AppState, want: Want, id: String) -> Result<Response, WebError> {
    let id = run_id(&id)?;
    match want {
        Want::Json => {
            let (run, cells) = state
                .with_store(move |s| Ok((s.run(id)?, s.cells_of(&[id])?)))
                .await?;
            Ok(crate::json::ok(json!({
                "summary": crate::json::summary(&run.summary),
                "files": run.files.iter().map(|f| crate::json::file(id, f)).collect::<Vec<_>>(),
                "cells": cells.iter().map(crate::json::cell).collect::<Vec<_>>(),
            })))
        }
        Want::Html => {
            let (run, siblings) = state
                .with_store(move |s| {
                    let run = s.run(id)?;
                    let siblings = match &run.summary.sweep_key {
                        Some(key) => s.sweep_runs(key)?,
                        None => Vec::new(),
                    };
                    Ok((run, siblings))
                })
                .await?;
            let page = blocking(move || render(&run, &siblings)).await?;
            Ok(html(StatusCode::OK, page))
        }
    }
}

/// The stored file `name` of `run` (empty when it has none).
pub(crate) fn stored<'a>(run: &'a StoredRun, name: &str) -> Option<&'a [u8]> {
    run.files
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.content.as_slice())
}

/// A stored run as the report crate reads a results directory.
pub(crate) fn report_of(run: &StoredRun) -> Result<Report, WebError> {
    Ok(Report::from_files(
        stored(run, RUN_FILE).unwrap_or_default(),
        stored(run, CELLS_FILE).unwrap_or_default(),
        stored(run, TELEMETRY_FILE),
    )?)
}

/// The bar's links of a run a sweep measured: its sweep, its combination, and the newest run
/// of each other combination of the same sweep.
fn sweep_links(run: &RunSummary, siblings: &[RunSummary]) -> String {
    let Some(key) = &run.sweep_key else {
        return String::new();
    };
    let mut newest: Vec<&RunSummary> = Vec::new();
    for r in siblings.iter().rev() {
        let seen = newest.iter().any(|n| n.combination == r.combination);
        if !seen && r.combination != run.combination {
            newest.push(r);
        }
    }
    newest.sort_by_key(|r| r.id);
    let others: Vec<String> = newest
        .iter()
        .map(|r| {
            format!(
                "<a href=\"/runs/{}\">{}</a>",
                r.id,
                esc(r.combination.as_deref().unwrap_or("?"))
            )
        })
        .collect();
    let others = if others.is_empty() {
        String::new()
    } else {
        format!(
            "<span class=\"sweep-others\">Other combinations: {}</span>",
            others.join(" · ")
        )
    };
    format!(
        "<a class=\"sweep-link\" href=\"/sweeps/{k}\">Sweep {k}</a><span>Combination {}</span>{others}",
        esc(run.combination.as_deref().unwrap_or("?")),
        k = esc(key),
    )
}

/// The seed page of the run with the hub's bar.
fn render(run: &StoredRun, siblings: &[RunSummary]) -> Result<String, WebError> {
    let report = report_of(run)?;
    let page = Format::Html.exporter().render(&report)?;
    let id = run.summary.id;
    let files: String = run
        .files
        .iter()
        .map(|f| {
            format!(
                "<a href=\"/runs/{id}/files/{}\" download>{}</a> <code title=\"sha256\">{}</code>",
                esc(&f.name),
                esc(&f.name),
                esc(&f.sha256)
            )
        })
        .collect::<Vec<_>>()
        .join(" · ");
    let extra = format!(
        "<span>Run #{id}</span>{}<span class=\"files\">Files: {files}</span>\
         <a href=\"/api/runs/{id}\">JSON</a>",
        sweep_links(&run.summary, siblings)
    );
    Ok(inject(&page, &extra))
}

/// `GET /runs/{id}/files/{name}`: a stored file, as an attachment.
pub(crate) async fn file(
    State(state): State<AppState>,
    want: Want,
    Path((id, name)): Path<(String, String)>,
) -> Response {
    match download(state, id, name).await {
        Ok(r) => r,
        Err(e) => e.respond(want),
    }
}

async fn download(state: AppState, id: String, name: String) -> Result<Response, WebError> {
    let id = run_id(&id)?;
    let wanted = name.clone();
    let content = state
        .with_store(move |s| {
            let run = s.run(id)?;
            Ok(run
                .files
                .into_iter()
                .find(|f| f.name == wanted)
                .map(|f| f.content))
        })
        .await?
        .ok_or_else(|| {
            WebError::NotFound(format!(
                "run {id} has no stored file `{}`: its page lists the files it has",
                llmib_core::sanitize_terminal(&name)
            ))
        })?;
    let kind = if name.ends_with(".jsonl") {
        "application/x-ndjson"
    } else {
        "text/plain; charset=utf-8"
    };
    // The name is one of the results files (the store refuses others); kept to safe characters
    // anyway, since it goes into a header.
    let safe: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || ".-_".contains(*c))
        .collect();
    let mut res = (StatusCode::OK, content).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"run-{id}-{safe}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(res)
}
