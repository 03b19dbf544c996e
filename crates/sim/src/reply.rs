//! The responses every endpoint shares: a JSON body with its status, and an error in the
//! engine's own shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::config::SimConfig;
use crate::request::Reject;
use crate::wire;

/// A JSON response with the given status.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut r = (status, body).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// An error response in the engine's shape.
pub(crate) fn reject(cfg: &SimConfig, r: &Reject) -> Response {
    let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
    json_response(
        status,
        wire::error_json(cfg.flavor, &r.message, r.err_type, r.status),
    )
}
