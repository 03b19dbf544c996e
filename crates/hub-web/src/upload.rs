//! `POST /api/runs`: one results directory as JSON (and `POST /api/sweeps`: a sweep's file) (`{"files": {"run.json": "…", …}}`), checked
//! in the order the store checks (token, size, names, schema version, the loaders) plus the
//! published schema of its `results.json`, then stored in one transaction. Every refusal is a
//! JSON `{"error": …}` and stores nothing.

use crate::error::WebError;
use crate::state::{AppState, blocking};
use crate::validate;
use crate::want::Want;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use llmib_hub::UploadFiles;
use serde_json::json;
use std::collections::BTreeMap;

/// Room for the JSON around the files: each file travels as a JSON string, where escaping
/// (`"` → `\"`, a newline → `\n`) can double the bytes of a JSON-lines file. The store checks the
/// files' own size against its limit afterwards, so this only stops a body far past it.
pub(crate) fn body_limit(max_upload_bytes: u64) -> usize {
    let bytes = max_upload_bytes.saturating_mul(2).saturating_add(1 << 20);
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// The upload's body.
#[derive(Debug, serde::Deserialize)]
struct Body {
    files: BTreeMap<String, String>,
}

/// Whether `?replace=true` was asked for.
fn replace_of(raw: Option<&str>) -> Result<bool, WebError> {
    let mut replace = false;
    for (k, v) in crate::params::pairs(raw)? {
        if k == "replace" {
            replace = match v.as_str() {
                "true" | "1" | "yes" => true,
                "false" | "0" | "no" | "" => false,
                _ => {
                    return Err(WebError::BadRequest(format!(
                        "`replace` must be true or false, not `{v}`"
                    )));
                }
            };
        }
    }
    Ok(replace)
}

/// The handler: 201 `{"id", "url", "replaced"}`, or one error.
pub(crate) async fn upload(
    State(state): State<AppState>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match store_upload(state, raw, headers, body).await {
        Ok(res) => res,
        Err(e) => e.respond(Want::Json),
    }
}

/// The upload's token, checked before anything else (a stranger learns nothing about the limit
/// or what an upload must hold), and its body.
async fn token_and_body(
    state: &AppState,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<(Option<String>, Bytes), WebError> {
    let token = crate::auth::token_of(headers);
    let checked = token.clone();
    state
        .with_store(move |s| Ok(s.check_token(checked.as_deref())?))
        .await?
        .map_err(llmib_hub::UploadError::from)?;
    let limit = state.settings.max_upload_bytes;
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            WebError::BodyTooLarge { limit }
        } else {
            WebError::BadBody(rejection.body_text())
        }
    })?;
    Ok((token, body))
}

async fn store_upload(
    state: AppState,
    raw: Option<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, WebError> {
    let replace = replace_of(raw.as_deref())?;
    let (token, body) = token_and_body(&state, &headers, body).await?;
    let limit = state.settings.max_upload_bytes;
    let files = blocking(move || {
        let body: Body =
            serde_json::from_slice(&body).map_err(|e| WebError::BadBody(e.to_string()))?;
        let mut files = UploadFiles::new();
        for (name, text) in body.files {
            files.add(name, text.into_bytes());
        }
        // The schema check runs before the store is touched, so a violation stores nothing.
        validate::check(&files, limit)?;
        Ok(files)
    })
    .await?;
    let (id, replaced) = state
        .with_store(move |s| {
            // A plain upload first: a duplicate says so, and only then is it replaced (keeping
            // its id), so the answer can tell a replacement from a first upload.
            match s.upload(files.clone(), token.as_deref(), false) {
                Err(llmib_hub::UploadError::Duplicate(_)) if replace => {
                    Ok((s.upload(files, token.as_deref(), true)?, true))
                }
                other => Ok((other?, false)),
            }
        })
        .await?;
    let body = json!({ "id": id, "url": format!("/runs/{id}"), "replaced": replaced });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}

/// `POST /api/sweeps`: a sweep's `sweep.json` as `{"files": {"sweep.json": "…"}}`, stored (or
/// replacing the same sweep's earlier upload). 201 `{"id", "key", "url", "replaced"}`.
pub(crate) async fn upload_sweep(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match store_sweep(state, headers, body).await {
        Ok(res) => res,
        Err(e) => e.respond(Want::Json),
    }
}

async fn store_sweep(
    state: AppState,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, WebError> {
    let (token, body) = token_and_body(&state, &headers, body).await?;
    let file = blocking(move || {
        let mut body: Body =
            serde_json::from_slice(&body).map_err(|e| WebError::BadBody(e.to_string()))?;
        let file = body.files.remove(llmib_hub::SWEEP_FILE);
        match (file, body.files.keys().next()) {
            (Some(f), None) => Ok(f.into_bytes()),
            (_, Some(other)) => Err(WebError::BadBody(format!(
                "`{}` is not part of a sweep upload: send sweep.json alone (each run goes to /api/runs)",
                llmib_core::sanitize_terminal(other)
            ))),
            (None, None) => Err(WebError::BadBody("no sweep.json in the upload".into())),
        }
    })
    .await?;
    let up = state
        .with_store(move |s| Ok(s.upload_sweep(&file, token.as_deref())?))
        .await?;
    let body = json!({
        "id": up.id,
        "key": up.key,
        "url": format!("/sweeps/{}", up.key),
        "replaced": up.replaced,
    });
    Ok((StatusCode::CREATED, axum::Json(body)).into_response())
}
