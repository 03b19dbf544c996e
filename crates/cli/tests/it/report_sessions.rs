//! The Sessions section of the HTML report in a real headless Chromium: a real session run
//! against the simulator (two history depths × two session counts) rendered, loaded, and checked
//! from inside the page: the matrix's cells with their hit rates, the per-turn table, the two
//! charts, and no error, alert or request.

use crate::common::*;
use crate::report::{artifacts, chromium, run_chromium};
use serde_json::Value;

const CHECKS: &str = r###"<script>
window.__errors = [];
window.addEventListener("error", function (e) { __errors.push(String(e.message || e.type)); }, true);
window.alert = function (m) { __errors.push("alert " + m); };
</script>"###;

const READ: &str = r###"<script>
(function () {
  var all = function (sel) { return Array.prototype.slice.call(document.querySelectorAll(sel)); };
  var r = { errors: window.__errors };
  r.section = !!document.querySelector("section#sessions");
  r.cells = all("#session-matrix td.cell[data-cell=session]").map(function (td) {
    var hit = td.querySelector("span.hit-rate");
    return { context: td.getAttribute("data-context"), sessions: td.getAttribute("data-sessions"),
      status: td.getAttribute("data-status"), hit: hit ? hit.textContent : null };
  });
  r.turnRows = all("#session-turns tbody tr").length;
  r.warmupRows = all("#session-turns tr.warmup").length;
  r.charts = all("#session-charts figure").map(function (f) { return f.id; });
  r.points = all("#session-charts circle.pt").length;
  r.resources = performance.getEntriesByType("resource").length;
  var pre = document.createElement("pre");
  pre.id = "verdict";
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>"###;

#[test]
fn browser_sessions_section_shows_the_matrix_turns_and_charts() {
    let Some(chrome) = chromium() else { return };
    let mut cfg = llmib_sim::builtin_profile("tiny-vllm").expect("tiny-vllm profile");
    cfg.context_length = 8192;
    cfg.kv_capacity_tokens = 200_000;
    cfg.prefix_cache_tokens = 200_000;
    let sim = Sim::start(cfg);
    let html = crate::sessions::chat_sessions(&sim.url, "1K,2K")
        .set("--sessions", "1,2")
        .set("--turns", "2")
        .set("--duration", "30s")
        .set("--format", "html")
        .out("report-sessions-run")
        .ok()
        .file("report.html");
    std::fs::write(artifacts().join("sessions.html"), &html).expect("keep the page");
    let work = out_dir("report-sessions-browser");
    let page = work.join("checked.html");
    let with = html.replacen("<head>", &format!("<head>\n{CHECKS}"), 1);
    let at = with.rfind("</body>").expect("</body>");
    std::fs::write(&page, format!("{}{READ}{}", &with[..at], &with[at..])).expect("write page");
    let (dom, stderr) = run_chromium(&chrome, &work, &page, &["--dump-dom"]);
    let start = dom
        .find("<pre id=\"verdict\">")
        .unwrap_or_else(|| panic!("{dom}\n{stderr}"));
    let body = &dom[start + "<pre id=\"verdict\">".len()..];
    let json = body[..body.find("</pre>").expect("end")].replace("&amp;", "&");
    let v: Value = serde_json::from_str(&json).expect("verdict");
    assert_eq!(v["errors"], serde_json::json!([]), "{v}");
    assert_eq!(v["resources"], 0, "no request leaves the page: {v}");
    assert_eq!(v["section"], true, "{v}");
    let cells = v["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(cells.len(), 4, "2 depths × 2 session counts: {v}");
    for c in &cells {
        assert!(
            matches!(c["status"].as_str(), Some("valid" | "requests_queued")),
            "{c}"
        );
        let hit = c["hit"].as_str().unwrap_or_default();
        assert!(hit.starts_with("hit ") && hit.contains('%'), "{c}");
    }
    // Turn 0 (the warm-up) and two measured turns, for each of the 4 cells.
    assert_eq!(v["turnRows"], 12, "{v}");
    assert_eq!(v["warmupRows"], 4, "{v}");
    assert_eq!(
        v["charts"],
        serde_json::json!(["session-ttft", "session-hit-rate"]),
        "{v}"
    );
    assert!(v["points"].as_u64().unwrap_or(0) >= 8, "{v}");
}
