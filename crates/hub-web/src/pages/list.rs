//! `GET /` (and `/api/runs`): the run list with its filters, free-text search, sortable columns
//! and pages. The filter form offers the values of the runs on the page (a datalist per field);
//! each row has a checkbox of the compare form, links to the run and its model, and a badge for
//! a standard run.

use crate::error::WebError;
use crate::pages::layout::{esc, figure, html, page as shell, text};
use crate::params::{self, FILTER_KEYS, ListQuery, SORTS};
use crate::state::AppState;
use crate::want::Want;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use llmib_hub::{ListPage, RunSummary};
use serde_json::json;

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
    let q = params::list_query(raw.as_deref())?;
    let (filter, window) = (q.filter.clone(), q.page);
    let list = state
        .with_store(move |s| Ok(s.list(&filter, &window)?))
        .await?;
    Ok(match want {
        Want::Json => crate::json::ok(json!({
            "total": list.total,
            "page": q.page_no,
            "per_page": q.page.limit,
            "runs": list.runs.iter().map(crate::json::summary).collect::<Vec<_>>(),
        })),
        Want::Html => html(StatusCode::OK, shell("Runs", "", &render(&q, &list))),
    })
}

/// A link to the list with `q`'s filters and these extra pairs.
fn link(q: &ListQuery, extra: &[(&str, &str)]) -> String {
    let mut pairs: Vec<(&str, &str)> = q
        .kept
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.extend_from_slice(extra);
    format!("/?{}", esc(&params::encode(&pairs)))
}

/// The list page's markup.
fn render(q: &ListQuery, list: &ListPage) -> String {
    let mut out = format!("<h1>Runs</h1>{}", filter_form(q, &list.runs));
    out.push_str(&format!(
        "<p class=\"muted\">{} run{} match.</p>",
        list.total,
        if list.total == 1 { "" } else { "s" }
    ));
    out.push_str(
        "<form id=\"cmp\" method=\"get\" action=\"/compare\"><button>Compare the chosen runs \
         (2 to 6)</button></form>",
    );
    out.push_str(&table(q, &list.runs));
    out.push_str(&pager(q, list.total));
    out
}

/// The value of filter `key` in the query, if set.
fn kept<'a>(q: &'a ListQuery, key: &str) -> &'a str {
    q.kept
        .iter()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

/// The values of a filter field among `runs`, distinct and sorted.
fn values_of(key: &str, runs: &[RunSummary]) -> Vec<String> {
    let mut v: Vec<String> = runs
        .iter()
        .filter_map(|r| match key {
            "model" => Some(r.model.clone()),
            "engine" => r.engine.clone(),
            "engine_version" => r.engine_version.clone(),
            "quantization" => r.quantization.clone(),
            "gpu" => r.gpu_name.clone(),
            "gpu_count" => r.gpu_count.map(|n| n.to_string()),
            "tool_version" => Some(r.tool_version.clone()),
            "standard" => r.standard.clone(),
            _ => None,
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn filter_form(q: &ListQuery, runs: &[RunSummary]) -> String {
    let mut out = String::from("<form class=\"filters\" method=\"get\" action=\"/\">");
    for key in FILTER_KEYS {
        let (label, kind) = match key {
            "q" => ("Search", "search"),
            "from" => ("Started from", "date"),
            "to" => ("Started to", "date"),
            "gpu_count" => ("GPUs", "number"),
            k => (k, "text"),
        };
        let options: String = values_of(key, runs)
            .iter()
            .map(|v| format!("<option value=\"{}\">", esc(v)))
            .collect();
        let list_attr = if options.is_empty() {
            String::new()
        } else {
            format!(" list=\"dl-{key}\"")
        };
        out.push_str(&format!(
            "<label>{}<input type=\"{kind}\" name=\"{key}\" value=\"{}\"{list_attr}></label>",
            esc(&label.replace('_', " ")),
            esc(kept(q, key)),
        ));
        if !options.is_empty() {
            out.push_str(&format!("<datalist id=\"dl-{key}\">{options}</datalist>"));
        }
    }
    out.push_str(&format!(
        "<input type=\"hidden\" name=\"sort\" value=\"{}\"><button>Filter</button> \
         <a href=\"/\">Clear</a></form>",
        esc(q.sort)
    ));
    out
}

/// A column header that sorts by `name` (a second click flips the direction).
fn sort_header(q: &ListQuery, name: &str, title: &str) -> String {
    let current = q.sort == name;
    let dir = if current && q.page.descending {
        "asc"
    } else {
        "desc"
    };
    let dir = if current {
        dir
    } else if matches!(name, "model" | "engine" | "gpu" | "tool") {
        "asc"
    } else {
        "desc"
    };
    let mark = match (current, q.page.descending) {
        (true, true) => " ▼",
        (true, false) => " ▲",
        _ => "",
    };
    format!(
        "<th><a href=\"{}\">{}{mark}</a></th>",
        link(q, &[("sort", name), ("dir", dir)]),
        esc(title)
    )
}

fn table(q: &ListQuery, runs: &[RunSummary]) -> String {
    let titles = [
        "Uploaded",
        "Started",
        "Model",
        "Engine",
        "GPU",
        "Tool",
        "Best decode tok/s",
        "Best prefill tok/s",
    ];
    let mut out = String::from("<table id=\"runs\"><thead><tr><th>Compare</th><th>Run</th>");
    for ((name, _), title) in SORTS.iter().zip(titles) {
        out.push_str(&sort_header(q, name, title));
    }
    out.push_str("<th>Quantization</th><th>State</th></tr></thead><tbody>");
    for r in runs {
        out.push_str(&row(r));
    }
    out.push_str("</tbody></table>");
    out
}

fn row(r: &RunSummary) -> String {
    let model_link = format!(
        "/model?{}",
        esc(&params::encode(&[("name", r.model.as_str())]))
    );
    let badge = r
        .standard
        .as_deref()
        .map(|s| format!(" <span class=\"badge\">standard {}</span>", esc(s)))
        .unwrap_or_default();
    let engine = match (&r.engine, &r.engine_version) {
        (Some(e), Some(v)) => format!("{} {}", esc(e), esc(v)),
        (e, _) => text(e.as_deref()),
    };
    let gpu = match (&r.gpu_name, r.gpu_count) {
        (Some(g), Some(n)) => format!("{} ×{n}", esc(g)),
        (g, _) => text(g.as_deref()),
    };
    format!(
        "<tr><td><input type=\"checkbox\" name=\"ids\" value=\"{id}\" form=\"cmp\" aria-label=\"compare run {id}\"></td>\
         <td><a href=\"/runs/{id}\">#{id}</a>{badge}</td><td>{}</td><td>{}</td>\
         <td><a href=\"{model_link}\">{}</a></td><td>{engine}</td><td>{gpu}</td><td>{}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
        esc(&r.uploaded_at),
        text(r.started_at.as_deref()),
        esc(&r.model),
        esc(&r.tool_version),
        figure(r.best_decode_tok_per_s),
        figure(r.best_prefill_tok_per_s),
        text(r.quantization.as_deref()),
        esc(&r.state),
        id = r.id,
    )
}

fn pager(q: &ListQuery, total: u64) -> String {
    let per = u64::from(q.page.limit.max(1));
    let pages = total.div_ceil(per).max(1);
    let here = u64::from(q.page_no);
    let sort_dir = if q.page.descending { "desc" } else { "asc" };
    let to = |n: u64| {
        link(
            q,
            &[
                ("sort", q.sort),
                ("dir", sort_dir),
                ("per_page", &q.page.limit.to_string()),
                ("page", &n.to_string()),
            ],
        )
    };
    let mut out = String::from("<p class=\"pager\">");
    if here > 1 {
        out.push_str(&format!(
            "<a href=\"{}\" rel=\"prev\">← Previous page</a>",
            to(here - 1)
        ));
    }
    out.push_str(&format!("<span>Page {here} of {pages}</span>"));
    if here < pages {
        out.push_str(&format!(
            "<a href=\"{}\" rel=\"next\">Next page →</a>",
            to(here + 1)
        ));
    }
    out.push_str("</p>");
    out
}
