//! The hub's pages, each answering HTML or its JSON twin (see `crate::want`): the run list, a
//! run's page and files, compare, a model's ranking, a sweep's
//! page and the list of sweeps; the health check and the not-found answer.

pub(crate) mod compare;
pub(crate) mod layout;
pub(crate) mod list;
pub(crate) mod model;
pub(crate) mod run;
pub(crate) mod sweep;

use crate::error::WebError;
use crate::state::AppState;
use crate::want::Want;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// `GET /healthz`: 200 `ok` when the store answers.
pub(crate) async fn health(State(state): State<AppState>) -> Response {
    match state.with_store(|s| Ok(s.schema_version()?)).await {
        Ok(_) => (StatusCode::OK, "ok").into_response(),
        Err(e) => e.respond(Want::Json),
    }
}

/// Anything else: 404.
pub(crate) async fn not_found(want: Want) -> Response {
    WebError::NotFound("no such page in this hub: start from the run list at /".into())
        .respond(want)
}
