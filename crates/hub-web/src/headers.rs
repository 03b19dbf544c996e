//! The headers every answer carries: a Content-Security-Policy that allows only the page's own
//! inline style and script (the report's pages are self-contained), no MIME sniffing, and no
//! referrer (run pages' URLs may name private models).

use axum::extract::Request;
use axum::http::HeaderValue;
use axum::http::header;
use axum::middleware::Next;
use axum::response::Response;

/// The Content-Security-Policy of every answer. Inline style and script are the report page's
/// own (its sort and copy buttons); `img-src data:` for its inline images; forms post only here.
pub(crate) const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; \
     script-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; \
     frame-ancestors 'none'";

/// Adds the security headers to the answer.
pub(crate) async fn security(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    res
}
