//! A sweep on the hub. `GET /sweeps/{key}`: the report crate's sweep page (the combinations'
//! table, the frontier of output tok/s per GPU against tok/s per user, the picks at each SLO)
//! built from the stored sweep file and the stored run of each measured combination, each
//! combination linked to its run's page, with the hub's bar on top. `GET /sweeps`: the stored
//! sweeps. `/api/…` are the JSON twins. A combination the sweep measured whose run was not
//! uploaded is said so in its row rather than left out.

use crate::error::WebError;
use crate::pages::layout::{esc, html, inject, page as shell, text};
use crate::state::{AppState, blocking};
use crate::want::Want;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use llmib_core::{CELLS_FILE, ComboRows, ComboState, RUN_FILE, RunInfo};
use llmib_hub::{StoredRun, StoredSweep, SweepSummary};
use llmib_report::{SweepReport, combo_rows, sweep_html, sweep_report_of};
use serde_json::json;
use std::collections::BTreeMap;

/// A measured combination's stored run, read back as the report reads a results directory.
struct Measured {
    id: i64,
    rows: ComboRows,
}

/// The stored run's rows (`None`: its run.json does not read, which the store's checks at
/// upload make impossible short of a hand-edited database).
fn measured(run: &StoredRun, combination: &str) -> Option<Measured> {
    let run_json = crate::pages::run::stored(run, RUN_FILE)?;
    let info: RunInfo = serde_json::from_slice(run_json).ok()?;
    let cells = llmib_core::parse_cells(crate::pages::run::stored(run, CELLS_FILE)?).0;
    Some(Measured {
        id: run.summary.id,
        rows: combo_rows(combination, &info, cells),
    })
}

/// The sweep's report from the store: rows and links from the stored runs; a combination the
/// sweep measured without a stored run says so.
fn report(sweep: &StoredSweep, runs: &BTreeMap<String, Measured>) -> SweepReport {
    let mut file = sweep.file.clone();
    for c in &mut file.combinations {
        if c.state == ComboState::Measured && !runs.contains_key(&c.name) {
            let why = "its run is not uploaded to this hub (upload the sweep directory again)";
            c.reason = Some(match c.reason.take() {
                Some(r) => format!("{r}; {why}"),
                None => why.to_string(),
            });
        }
    }
    sweep_report_of(
        &file,
        |c| runs.get(&c.name).map(|m| m.rows.clone()),
        |c| runs.get(&c.name).map(|m| format!("/runs/{}", m.id)),
    )
}

/// `GET /sweeps/{key}` and its twin.
pub(crate) async fn page(
    State(state): State<AppState>,
    want: Want,
    Path(key): Path<String>,
) -> Response {
    match answer(state, want, key).await {
        Ok(r) => r,
        Err(e) => e.respond(want),
    }
}

async fn answer(state: AppState, want: Want, key: String) -> Result<Response, WebError> {
    let (sweep, runs) = state
        .with_store(move |s| {
            let sweep = s.sweep(&key)?;
            let mut runs = BTreeMap::new();
            for r in &sweep.runs {
                let name = r.combination.clone().unwrap_or_default();
                if let Some(m) = measured(&s.run(r.id)?, &name) {
                    runs.insert(name, m);
                }
            }
            Ok((sweep, runs))
        })
        .await?;
    let report = report(&sweep, &runs);
    match want {
        Want::Json => {
            let ids: BTreeMap<&String, i64> = runs.iter().map(|(k, m)| (k, m.id)).collect();
            Ok(crate::json::ok(json!({
                "key": sweep.key,
                "uploaded_at": sweep.uploaded_at,
                "sha256": sweep.sha256,
                "runs": ids,
                "report": report,
            })))
        }
        Want::Html => {
            let page = blocking(move || {
                let page = sweep_html(&report)?;
                let extra = format!(
                    "<span>Sweep {}</span><span class=\"muted\">{} of {} combinations stored</span><a href=\"/api/sweeps/{}\">JSON</a>",
                    esc(&sweep.key),
                    runs.len(),
                    sweep.file.combinations.len(),
                    esc(&sweep.key)
                );
                Ok(inject(&page, &extra))
            })
            .await?;
            Ok(html(StatusCode::OK, page))
        }
    }
}

/// `GET /sweeps` and its twin: the stored sweeps, newest upload first.
pub(crate) async fn list(State(state): State<AppState>, want: Want) -> Response {
    match state.with_store(|s| Ok(s.sweeps()?)).await {
        Ok(sweeps) => match want {
            Want::Json => crate::json::ok(json!({
                "sweeps": sweeps.iter().map(summary_json).collect::<Vec<_>>(),
            })),
            Want::Html => html(StatusCode::OK, shell("Sweeps", "", &list_body(&sweeps))),
        },
        Err(e) => e.respond(want),
    }
}

fn summary_json(s: &SweepSummary) -> serde_json::Value {
    json!({
        "key": s.key,
        "url": format!("/sweeps/{}", s.key),
        "uploaded_at": s.uploaded_at,
        "started_at": s.started_at,
        "combinations": s.combination_count,
        "runs": s.run_count,
    })
}

fn list_body(sweeps: &[SweepSummary]) -> String {
    let mut out = String::from(
        "<h1>Sweeps</h1><p class=\"muted\">Each sweep started the server in every combination \
         of its settings and measured it; its page ranks them.</p>",
    );
    if sweeps.is_empty() {
        out.push_str(
            "<p>No sweep is stored yet: `llm-inference-bench upload SWEEP_DIR` uploads one.</p>",
        );
        return out;
    }
    out.push_str(
        "<table id=\"sweeps\"><thead><tr><th>Sweep</th><th>Started</th><th>Uploaded</th>\
         <th>Combinations</th><th>Runs stored</th></tr></thead><tbody>",
    );
    for s in sweeps {
        out.push_str(&format!(
            "<tr><td><a href=\"/sweeps/{k}\">{k}</a></td><td>{}</td><td>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            text(s.started_at.as_deref()),
            esc(&s.uploaded_at),
            s.combination_count,
            s.run_count,
            k = esc(&s.key),
        ));
    }
    out.push_str("</tbody></table>");
    out
}
