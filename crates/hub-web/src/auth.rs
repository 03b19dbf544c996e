//! Tokens on requests: `Authorization: Bearer <token>` or the `llmib_hub_token` cookie that the
//! login form sets. Uploads always need one (the upload handler checks it); reads need one only
//! when the store's `read_needs_token` is set, checked here for every route but the login form
//! and the health check.

use crate::error::WebError;
use crate::pages::layout;
use crate::state::AppState;
use crate::want::Want;
use axum::extract::{Form, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

/// The cookie the login form sets.
pub(crate) const COOKIE: &str = "llmib_hub_token";

/// The token a request carries: the bearer header first, then the cookie.
pub(crate) fn token_of(headers: &HeaderMap) -> Option<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| !t.is_empty());
    if let Some(t) = bearer {
        return Some(t.to_string());
    }
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// Routes anyone may reach: logging in, the health probe, and the upload (which checks its own
/// token, so that a refusal is the upload's JSON error).
fn open_route(method: &Method, path: &str) -> bool {
    path == "/login"
        || path == "/healthz"
        || (method == Method::POST && (path == "/api/runs" || path == "/api/sweeps"))
}

/// Refuses reads without a valid token when the store says reading needs one.
pub(crate) async fn require_read(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if !state.settings.read_needs_token || open_route(req.method(), req.uri().path()) {
        return next.run(req).await;
    }
    let want = Want::of(req.uri().path(), req.headers());
    let token = token_of(req.headers());
    match state
        .with_store(move |s| Ok(s.authorize_read(token.as_deref())))
        .await
    {
        Ok(Ok(())) => next.run(req).await,
        Ok(Err(e)) => {
            let login = " (in a browser, log in at /login)";
            WebError::Unauthorized(format!("{e}{login}")).respond(want)
        }
        Err(e) => e.respond(want),
    }
}

/// The login form: a token field posted to `/login`.
pub(crate) async fn login_form() -> Response {
    layout::html(
        StatusCode::OK,
        layout::page("Log in", "", &login_body(None)),
    )
}

fn login_body(problem: Option<&str>) -> String {
    let problem = problem
        .map(|p| format!("<p class=\"problem\">{}</p>", layout::esc(p)))
        .unwrap_or_default();
    format!(
        "<h1>Log in</h1>{problem}<p>This hub needs a token to read. Paste one created with \
         <code>llm-inference-bench hub token create</code>; it is kept in a cookie of this \
         browser.</p><form method=\"post\" action=\"/login\"><label>Token \
         <input type=\"password\" name=\"token\" autocomplete=\"off\" required></label> \
         <button>Log in</button></form>"
    )
}

/// The login form's fields.
#[derive(Debug, serde::Deserialize)]
pub(crate) struct LoginForm {
    token: String,
}

/// Checks the posted token and, when it is live, keeps it in a cookie and goes to the list.
pub(crate) async fn login(State(state): State<AppState>, Form(form): Form<LoginForm>) -> Response {
    let token = form.token.trim().to_string();
    // Only a token's own characters go into the cookie header (secrets are `llmib_` + hex).
    if token.is_empty() || !token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return layout::html(
            StatusCode::UNAUTHORIZED,
            layout::page("Log in", "", &login_body(Some("That is not a hub token."))),
        );
    }
    let checked = token.clone();
    match state
        .with_store(move |s| Ok(s.check_token(Some(&checked))?))
        .await
    {
        Ok(Ok(_)) => {
            let cookie = format!("{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict");
            let mut res = Redirect::to("/").into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                res.headers_mut().insert(header::SET_COOKIE, v);
            }
            res
        }
        Ok(Err(e)) => layout::html(
            StatusCode::UNAUTHORIZED,
            layout::page("Log in", "", &login_body(Some(&e.to_string()))),
        ),
        Err(e) => e.respond(Want::Html),
    }
}
