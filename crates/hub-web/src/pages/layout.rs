//! The hub's page shell: one escaping function for every string a run or the server carries,
//! the shared style, the navigation bar, and the error page. Kept a leaf (it imports no other
//! module of the crate) so every page and the error type can use it.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// HTML-escapes `s` for text and quoted attribute values: the escaper the report's templates use
/// (minijinja's auto-escaping), so the hub's own markup and the report's pages escape alike.
pub(crate) fn esc(s: &str) -> String {
    minijinja::HtmlEscape(s).to_string()
}

/// The hub's stylesheet (inline: pages load nothing from elsewhere).
const STYLE: &str = "
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0;color:#1c1e21;background:#fafafa}
main{padding:1rem 1.5rem;max-width:1400px}
.hubnav{display:flex;gap:1.2rem;align-items:center;padding:.55rem 1.5rem;background:#14213d;color:#fff;font:14px system-ui,sans-serif;flex-wrap:wrap}
.hubnav a{color:#fff;text-decoration:none}.hubnav a:hover{text-decoration:underline}
.hubnav .brand{font-weight:700}.hubnav .files{font-size:12px;opacity:.9}
.hubnav code{font-size:11px;opacity:.75}
table{border-collapse:collapse;background:#fff;margin:.6rem 0 1.4rem}
th,td{border:1px solid #dde1e6;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#eef1f5;white-space:nowrap}td.num{text-align:right;font-variant-numeric:tabular-nums}
th a{color:inherit}a{color:#1f5fbf}
.badge{display:inline-block;background:#2a7d3f;color:#fff;border-radius:3px;padding:0 .35rem;font-size:12px}
form.filters{display:flex;flex-wrap:wrap;gap:.5rem;align-items:end;margin:.5rem 0}
form.filters label{display:flex;flex-direction:column;font-size:12px;color:#555}
.pager a,.pager span{margin-right:.8rem}.problem{color:#a11}.muted{color:#666}
";

/// The navigation bar, with `extra` (already escaped markup) after the links.
pub(crate) fn nav(extra: &str) -> String {
    format!(
        "<nav class=\"hubnav\"><a class=\"brand\" href=\"/\">llm-inference-bench hub</a>\
         <a href=\"/\">Runs</a><a href=\"/sweeps\">Sweeps</a>{extra}</nav>"
    )
}

/// The `<style>` element of the hub's own markup (also injected into the report's pages).
pub(crate) fn style() -> String {
    format!("<style>{STYLE}</style>")
}

/// A whole page: `title` is text (escaped here), `nav_extra` and `body` are markup built with
/// [`esc`].
pub(crate) fn page(title: &str, nav_extra: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · llm-inference-bench hub</title>{}</head><body>{}<main>{body}</main></body></html>",
        esc(title),
        style(),
        nav(nav_extra),
    )
}

/// Inserts the hub's style and navigation bar into a whole page of the report crate, right
/// after its `<body …>` tag (at the start if it has none).
pub(crate) fn inject(report_page: &str, nav_extra: &str) -> String {
    let bar = format!("{}{}", style(), nav(nav_extra));
    let at = report_page
        .find("<body")
        .and_then(|b| report_page[b..].find('>').map(|e| b + e + 1))
        .unwrap_or(0);
    let mut out = String::with_capacity(report_page.len() + bar.len());
    out.push_str(&report_page[..at]);
    out.push_str(&bar);
    out.push_str(&report_page[at..]);
    out
}

/// An HTML answer.
pub(crate) fn html(status: StatusCode, body: String) -> Response {
    let mut res = (status, body).into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    res
}

/// The page of an error: its status and one line.
pub(crate) fn error_page(status: StatusCode, message: &str) -> Response {
    let title = status.canonical_reason().unwrap_or("Error");
    let body = format!(
        "<h1>{}</h1><p class=\"problem\">{}</p><p><a href=\"/\">Back to the runs</a></p>",
        esc(title),
        esc(message)
    );
    html(status, page(title, "", &body))
}

/// A figure for a table cell: `1,234.5`, or `—` when there is none.
pub(crate) fn figure(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite())
        .map(llmib_report::number::rate_compact)
        .unwrap_or_else(|| "—".to_string())
}

/// Text for a table cell: escaped, `—` for none or blank.
pub(crate) fn text(v: Option<&str>) -> String {
    match v.map(str::trim) {
        Some(s) if !s.is_empty() => esc(s),
        _ => "—".to_string(),
    }
}
