//! `GET /model?name=<model id>`: a model's ranking of hardware and engines on the headline
//! figures of every stored run of it, per context: decode tok/s at N = 1 and at the largest
//! Valid N, prefill tok/s, and the capacity at the run's SLO where it measured one. Runs of a
//! standard matrix are ranked in their own table, apart from free-form runs, since only they
//! measured like with like. Then the configurations sweeps measured of it, ranked by decode
//! tok/s per GPU, each linked to its sweep. `/api/model?name=` is the JSON twin.

use crate::error::WebError;
use crate::pages::layout::{esc, figure, html, page as shell, text};
use crate::state::AppState;
use crate::want::Want;
use axum::extract::{RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use llmib_hub::{Headline, RankedConfiguration, Store};
use serde_json::{Value, json};

/// One ranked row: a run's headline at one context, with its standard and capacity.
#[derive(Debug, Clone)]
struct Ranked {
    head: Headline,
    standard: Option<String>,
    capacity: Option<(Option<f64>, Option<u32>)>,
}

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

fn model_name(raw: Option<&str>) -> Result<String, WebError> {
    crate::params::pairs(raw)?
        .into_iter()
        .find(|(k, v)| k == "name" && !v.trim().is_empty())
        .map(|(_, v)| v)
        .ok_or_else(|| {
            WebError::BadRequest(
                "the model page needs ?name=<model id>: follow a model link in the run list".into(),
            )
        })
}

async fn answer(state: AppState, want: Want, raw: Option<String>) -> Result<Response, WebError> {
    let model = model_name(raw.as_deref())?;
    let wanted = model.clone();
    let (ranked, configs) = state
        .with_store(move |s| Ok((ranked(s, &wanted)?, s.configurations_of(&wanted)?)))
        .await?;
    Ok(match want {
        Want::Json => {
            let (std, free): (Vec<&Ranked>, Vec<&Ranked>) =
                ranked.iter().partition(|r| r.standard.is_some());
            crate::json::ok(json!({
                "model": model,
                "standard": std.iter().map(|r| row_json(r)).collect::<Vec<_>>(),
                "free_form": free.iter().map(|r| row_json(r)).collect::<Vec<_>>(),
                "configurations": configs.iter().map(config_json).collect::<Vec<_>>(),
            }))
        }
        Want::Html => {
            let body = format!("{}{}", render(&model, &ranked), configurations(&configs));
            html(StatusCode::OK, shell(&model, "", &body))
        }
    })
}

/// The headlines of `model`: the store gives each its run's standard and its context's
/// capacity row.
fn ranked(s: &Store, model: &str) -> Result<Vec<Ranked>, WebError> {
    Ok(s.headlines(model)?
        .into_iter()
        .map(|head| Ranked {
            standard: head.standard.clone(),
            capacity: (head.capacity_request_rate.is_some() || head.capacity_concurrency.is_some())
                .then_some((head.capacity_request_rate, head.capacity_concurrency)),
            head,
        })
        .collect())
}

fn row_json(r: &Ranked) -> Value {
    let h = &r.head;
    json!({
        "run_id": h.run_id,
        "url": format!("/runs/{}", h.run_id),
        "standard": r.standard,
        "engine": h.engine,
        "engine_version": h.engine_version,
        "quantization": h.quantization,
        "gpu_name": h.gpu_name,
        "gpu_count": h.gpu_count,
        "context_tokens": h.context_tokens,
        "context_label": h.context_label,
        "decode_c1_tok_per_s": h.decode_c1_tok_per_s,
        "peak_concurrency": h.peak_concurrency,
        "peak_decode_tok_per_s": h.peak_decode_tok_per_s,
        "prefill_tok_per_s": h.prefill_tok_per_s,
        "capacity_request_rate": r.capacity.and_then(|c| c.0),
        "capacity_concurrency": r.capacity.and_then(|c| c.1),
    })
}

fn render(model: &str, ranked: &[Ranked]) -> String {
    let mut out = format!(
        "<h1>{}</h1><p class=\"muted\">Every stored run of this model, ranked per context by decode \
         throughput at the largest Valid concurrency. <a href=\"/?{}\">Its runs</a></p>",
        esc(model),
        esc(&crate::params::encode(&[("model", model)])),
    );
    let (std, free): (Vec<&Ranked>, Vec<&Ranked>) =
        ranked.iter().partition(|r| r.standard.is_some());
    if ranked.is_empty() {
        out.push_str("<p>No stored run of this model has a Valid prefill or decode cell.</p>");
    }
    if !std.is_empty() {
        out.push_str("<h2>Standard matrix runs</h2><p class=\"muted\">Measured with the same fixed matrix: like with like.</p>");
        out.push_str(&tables(&std));
    }
    if !free.is_empty() {
        out.push_str("<h2>Free-form runs</h2><p class=\"muted\">Each run's own settings: compare with care.</p>");
        out.push_str(&tables(&free));
    }
    out
}

/// One table per context, ascending, each in the store's rank order (best peak decode first).
fn tables(rows: &[&Ranked]) -> String {
    let mut contexts: Vec<(u64, &str)> = rows
        .iter()
        .map(|r| (r.head.context_tokens, r.head.context_label.as_str()))
        .collect();
    contexts.sort_unstable();
    contexts.dedup_by_key(|c| c.0);
    let mut out = String::new();
    for (tokens, label) in contexts {
        out.push_str(&format!(
            "<h3>Context {}</h3><table class=\"rank\"><thead><tr><th>#</th><th>Run</th><th>Engine</th>\
             <th>Quantization</th><th>GPU</th><th>Decode tok/s at N = 1</th><th>Largest Valid N</th>\
             <th>Decode tok/s there</th><th>Prefill tok/s</th><th>Capacity (req/s, N) at SLO</th></tr></thead><tbody>",
            esc(label)
        ));
        for (i, r) in rows
            .iter()
            .filter(|r| r.head.context_tokens == tokens)
            .enumerate()
        {
            out.push_str(&rank_row(i + 1, r));
        }
        out.push_str("</tbody></table>");
    }
    out
}

fn rank_row(rank: usize, r: &Ranked) -> String {
    let h = &r.head;
    let engine = [h.engine.as_deref(), h.engine_version.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" ");
    let gpu = match (&h.gpu_name, h.gpu_count) {
        (Some(g), Some(n)) => format!("{} ×{n}", esc(g)),
        (g, _) => text(g.as_deref()),
    };
    let capacity = match r.capacity {
        Some((rate, n)) => format!(
            "{} · {}",
            figure(rate),
            n.map_or("—".to_string(), |n| n.to_string())
        ),
        None => "—".to_string(),
    };
    let badge = r
        .standard
        .as_deref()
        .map(|s| format!(" <span class=\"badge\">standard {}</span>", esc(s)))
        .unwrap_or_default();
    format!(
        "<tr><td>{rank}</td><td><a href=\"/runs/{id}\">#{id}</a>{badge}</td><td>{}</td><td>{}</td><td>{gpu}</td>\
         <td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{capacity}</td></tr>",
        text(Some(&engine)),
        text(h.quantization.as_deref()),
        figure(h.decode_c1_tok_per_s),
        h.peak_concurrency
            .map_or("—".to_string(), |n| n.to_string()),
        figure(h.peak_decode_tok_per_s),
        figure(h.prefill_tok_per_s),
        id = h.run_id,
    )
}

fn config_json(c: &RankedConfiguration) -> Value {
    let r = &c.run;
    json!({
        "run_id": r.id,
        "url": format!("/runs/{}", r.id),
        "sweep": r.sweep_key,
        "sweep_url": r.sweep_key.as_ref().map(|k| format!("/sweeps/{k}")),
        "combination": r.combination,
        "engine": r.engine,
        "gpu_name": r.gpu_name,
        "gpu_count": r.gpu_count,
        "best_decode_tok_per_s": r.best_decode_tok_per_s,
        "decode_tok_per_s_per_gpu": c.tok_per_s_per_gpu.filter(|_| c.per_gpu),
        "decode_tok_per_s_per_server": c.tok_per_s_per_gpu.filter(|_| !c.per_gpu),
    })
}

/// The configurations sweeps measured of this model, ranked by best decode tok/s per GPU
/// (`llmib_hub::rank_configurations`); nothing when no sweep measured it.
fn configurations(configs: &[RankedConfiguration]) -> String {
    if configs.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<h2 id=\"configurations\">Configurations</h2><p class=\"muted\">Every combination a \
         sweep measured of this model, ranked by its best Valid decode tok/s per GPU (per server \
         where no run knows its GPU count); a sweep's page has its frontier and its picks at \
         each SLO.</p><table class=\"rank\" id=\"configurations-table\"><thead><tr><th>#</th>\
         <th>Run</th><th>Sweep</th><th>Combination</th><th>Engine</th><th>GPU</th>\
         <th>Best decode tok/s</th><th>Per GPU</th></tr></thead><tbody>",
    );
    for (i, c) in configs.iter().enumerate() {
        let r = &c.run;
        let rank = if c.tok_per_s_per_gpu.is_some() {
            (i + 1).to_string()
        } else {
            "—".to_string()
        };
        let sweep = r.sweep_key.as_deref().map_or("—".to_string(), |k| {
            format!("<a href=\"/sweeps/{k}\">{k}</a>", k = esc(k))
        });
        let gpu = match (&r.gpu_name, r.gpu_count) {
            (Some(g), Some(n)) => format!("{} ×{n}", esc(g)),
            (g, _) => text(g.as_deref()),
        };
        let per = if c.per_gpu {
            figure(c.tok_per_s_per_gpu)
        } else {
            "— (GPUs unknown)".to_string()
        };
        out.push_str(&format!(
            "<tr><td>{rank}</td><td><a href=\"/runs/{id}\">#{id}</a></td><td>{sweep}</td><td>{}</td>\
             <td>{}</td><td>{gpu}</td><td class=\"num\">{}</td><td class=\"num\">{per}</td></tr>",
            text(r.combination.as_deref()),
            text(r.engine.as_deref()),
            figure(r.best_decode_tok_per_s),
            id = r.id,
        ));
    }
    out.push_str("</tbody></table>");
    out
}
