//! The responses every endpoint shares: a JSON body with its status, and an error in the
//! engine's own shape (or the route's, for `/v1/messages`).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::api::Api;
use crate::config::SimConfig;
use crate::messages_api;
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
        wire::error_json(cfg.flavor, &r.message, r.err_type, r.status, r.param),
    )
}

/// An error response in the shape of the route it answers: Anthropic's on `/v1/messages`
/// (its `type` the engine's error type, as vLLM translates it), the engine's on the OpenAI
/// routes (vLLM answers `/v1/responses` errors as chat's).
pub(crate) fn reject_on(cfg: &SimConfig, api: Api, r: &Reject) -> Response {
    match api {
        Api::Messages => {
            let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
            json_response(status, messages_api::error_json(r.err_type, &r.message))
        }
        Api::Completions | Api::Chat | Api::Responses => reject(cfg, r),
    }
}
