//! Which twin of a page the client asked for: JSON under `/api/…` or with an
//! `Accept: application/json` header, HTML otherwise.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use std::convert::Infallible;

/// The answer's form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want {
    /// A page for a browser.
    Html,
    /// The JSON twin.
    Json,
}

impl Want {
    /// From the path and the `Accept` header.
    pub(crate) fn of(path: &str, headers: &HeaderMap) -> Want {
        let accepts_json = headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.contains("application/json"));
        if path.starts_with("/api/") || accepts_json {
            Want::Json
        } else {
            Want::Html
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Want {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Want::of(parts.uri.path(), &parts.headers))
    }
}
