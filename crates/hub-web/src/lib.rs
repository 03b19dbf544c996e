//! The web server of `llm-inference-bench hub`: the upload API and the pages (run list, a
//! run's page, compare, a model's ranking), each page with a JSON twin. See `docs/hub-api.md`.
//!
//! The store ([`llmib_hub::Store`]) is synchronous and not `Sync`: it lives behind one mutex
//! and is only ever called on tokio's blocking pool, never on a runtime thread (its PostgreSQL
//! backend uses the synchronous `postgres` client, which panics there). Pages are rendered on
//! the server with no build step and no external resource; every string a run or the server
//! carries is HTML-escaped by one function (`pages::layout::esc`), and every answer carries
//! a Content-Security-Policy that allows nothing but the page's own inline style and script.

mod auth;
mod error;
mod headers;
mod json;
mod pages;
mod params;
mod state;
mod upload;
mod validate;
mod want;

#[cfg(test)]
mod tests;

pub use error::WebError;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::get;
use llmib_hub::Store;
use state::AppState;

/// Serves the hub on `listener` until `shutdown` resolves (requests in flight finish first).
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Store,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), WebError> {
    axum::serve(listener, router(store))
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(WebError::Serve)
}

/// The routes, for tests and embedding.
pub fn router(store: Store) -> Router {
    let state = AppState::new(store);
    let body_limit = upload::body_limit(state.settings.max_upload_bytes);
    Router::new()
        .route("/", get(pages::list::page))
        .route(
            "/api/runs",
            get(pages::list::page)
                .post(upload::upload)
                .layer(DefaultBodyLimit::max(body_limit)),
        )
        .route("/runs/{id}", get(pages::run::page))
        .route("/api/runs/{id}", get(pages::run::page))
        .route("/runs/{id}/files/{name}", get(pages::run::file))
        .route("/api/runs/{id}/files/{name}", get(pages::run::file))
        .route("/sweeps", get(pages::sweep::list))
        .route(
            "/api/sweeps",
            get(pages::sweep::list)
                .post(upload::upload_sweep)
                .layer(DefaultBodyLimit::max(body_limit)),
        )
        .route("/sweeps/{key}", get(pages::sweep::page))
        .route("/api/sweeps/{key}", get(pages::sweep::page))
        .route("/compare", get(pages::compare::page))
        .route("/api/compare", get(pages::compare::page))
        .route("/model", get(pages::model::page))
        .route("/api/model", get(pages::model::page))
        .route("/healthz", get(pages::health))
        .route("/login", get(auth::login_form).post(auth::login))
        .fallback(pages::not_found)
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::require_read,
        ))
        .layer(axum::middleware::from_fn(headers::security))
        .with_state(state)
}
