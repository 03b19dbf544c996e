//! The hub's pages in headless Chromium, served by the real binary: three runs uploaded (two
//! engines, one with a hostile model id), the list filtered to one engine, a run's page (the
//! seed page), the compare page and the model page.
//!
//! Each page is loaded over HTTP and dumped (`--dump-dom`): what the browser built is checked
//! (rows, sections, columns), the hostile model id must be text only (as many `script` and
//! `img` elements as the same page without it, the id present as escaped text), and Chromium's
//! log must hold no console line. A page served over HTTP cannot take the report tests' probe,
//! so the list and the run page are also fetched, the probe (and for the run page the report's
//! own checks) injected, and loaded as files, where a script error or an alert is recorded.
//! Every page's answer carries the Content-Security-Policy.
//!
//! Chromium as in `report.rs`: skipped with a message outside CI when missing.

use crate::hub::{Hub, http_get, results_dir};
use crate::report::{PROBE, chromium, instrumented, run_chromium, run_chromium_at, verdict};
use serde_json::Value;
use std::path::Path;

/// A model id that becomes markup and runs script wherever it is not escaped.
const HOSTILE: &str = r#"<script>alert(1)</script>"><img src=x onerror=alert(2)>"#;

/// A hub holding three runs: `alpha` (sglang), `beta` (vllm), and the hostile one (sglang).
struct Three {
    hub: Hub,
    alpha: i64,
    beta: i64,
    hostile: i64,
}

fn three_runs(name: &str) -> Three {
    let hub = Hub::start(name, &[]);
    let token = hub.token("browser");
    let run = |dir: &str, engine: &'static str, model: &'static str| {
        results_dir(&hub.dir, dir, |r| {
            r["engine"]["kind"] = engine.into();
            r["engine"]["name"] = engine.into();
            r["model"]["served_model"] = model.into();
            r["model"]["model_path"] = model.into();
        })
    };
    let dirs = [
        run("alpha", "sglang", "org/alpha"),
        run("beta", "vllm", "org/beta"),
        run("hostile", "sglang", HOSTILE),
    ];
    let refs: Vec<&Path> = dirs.iter().map(|d| d.as_path()).collect();
    let o = hub.upload(&refs, Some(&token), &[]);
    assert!(o.status.success(), "{}", crate::common::text(&o));
    let ids: Vec<i64> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.rsplit("/runs/").next()?.trim().parse().ok())
        .collect();
    assert_eq!(ids.len(), 3, "{}", crate::common::text(&o));
    Three {
        hub,
        alpha: ids[0],
        beta: ids[1],
        hostile: ids[2],
    }
}

/// A query value, percent-encoded.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// How a text node holding `s` is serialised in the dumped DOM.
fn as_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// How many `tag` elements serialised HTML holds. Tags are read with their attributes skipped
/// as quoted values and the contents of `script` and `style` skipped as raw text, so a string
/// inside an attribute or a text node counts as no element, whatever the serialiser escapes.
fn element_count(html: &str, tag: &str) -> usize {
    let lower = html.to_ascii_lowercase();
    let b = lower.as_bytes();
    let (mut i, mut n) = (0, 0);
    while let Some(off) = lower[i..].find('<') {
        let start = i + off + 1;
        let name_end = lower[start..]
            .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
            .map_or(lower.len(), |e| start + e);
        let name = &lower[start..name_end];
        // The end of the tag: the first `>` outside a quoted value.
        let (mut j, mut quote) = (name_end, None);
        while j < b.len() {
            match (quote, b[j]) {
                (None, b'"' | b'\'') => quote = Some(b[j]),
                (Some(q), c) if c == q => quote = None,
                (None, b'>') => break,
                _ => {}
            }
            j += 1;
        }
        if name == tag {
            n += 1;
        }
        i = (j + 1).min(lower.len());
        if name == "script" || name == "style" {
            let close = format!("</{name}");
            i = lower[i..].find(&close).map_or(lower.len(), |e| i + e);
        }
    }
    n
}

/// Loads `path` from the hub in Chromium and returns the DOM it built, after checking the page
/// logged nothing to the console and its answer carries the CSP.
pub(crate) fn dom_of(chrome: &Path, hub: &Hub, path: &str) -> String {
    let (status, head, body) = http_get(&hub.url, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    assert!(
        head.contains("content-security-policy: default-src 'none'"),
        "GET {path} has no CSP:\n{head}"
    );
    let work = hub.dir.join(format!("chromium-{}", encode(path)));
    std::fs::create_dir_all(&work).expect("work dir");
    let url = format!("{}{path}", hub.url);
    let (dom, stderr) = run_chromium_at(
        chrome,
        &work,
        &url,
        &["--window-size=1280,900", "--dump-dom"],
    );
    let console: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "{path}: console output: {console:#?}");
    assert!(dom.contains("</html>"), "{path}: no DOM\n{stderr}");
    dom
}

/// The hostile id is only text in `dom`: no element more than in `plain` (the same page
/// without it), and the id there as escaped text.
fn assert_only_text(dom: &str, plain: &str, what: &str) {
    for tag in ["script", "img", "iframe", "svg"] {
        assert_eq!(
            element_count(dom, tag),
            element_count(plain, tag),
            "{what}: the hostile id made <{tag}> elements"
        );
    }
    assert!(
        !dom.contains("onerror=\"alert(2)\""),
        "{what}: a live onerror"
    );
    for part in ["<script>alert(1)</script>", "<img src=x onerror=alert(2)>"] {
        assert!(
            dom.contains(&as_text(part)),
            "{what}: `{part}` is not shown as text"
        );
    }
}

/// The rows of the list page's table of runs.
fn list_rows(dom: &str) -> Vec<String> {
    let table = dom.find("id=\"runs\"").expect("the runs table");
    let body = &dom[table..];
    let start = body.find("<tbody>").expect("tbody") + "<tbody>".len();
    let end = body.find("</tbody>").expect("tbody end");
    body[start..end]
        .split("<tr")
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Fetches `path`, injects the probe at the top of `<head>` and `checks` at the end of
/// `<body>`, loads the copy as a file and returns the verdict the checks wrote.
pub(crate) fn probed(
    chrome: &Path,
    hub: &Hub,
    path: &str,
    name: &str,
    checks: Option<&str>,
) -> Value {
    let (_, _, html) = http_get(&hub.url, path);
    let work = hub.dir.join(format!("probe-{name}"));
    std::fs::create_dir_all(&work).expect("work dir");
    let page = work.join(format!("{name}.html"));
    match checks {
        // The report's own checks (and its probe).
        None => instrumented(&html, &page),
        Some(checks) => {
            let with_probe = html.replacen("<head>", &format!("<head>\n{PROBE}"), 1);
            let end = with_probe.rfind("</body>").expect("</body>");
            let full = format!("{}{checks}{}", &with_probe[..end], &with_probe[end..]);
            std::fs::write(&page, full).expect("write the probed page");
        }
    }
    let (dom, stderr) = run_chromium(chrome, &work, &page, &["--dump-dom"]);
    let v = verdict(&dom, &stderr);
    assert_eq!(
        v["probe"]["errors"],
        serde_json::json!([]),
        "{name}: page errors"
    );
    assert_eq!(
        v["probe"]["alerts"],
        serde_json::json!([]),
        "{name}: alerts ran"
    );
    v
}

/// The list page's checks: rows, the text of the first column of models, elements.
const LIST_CHECKS: &str = r##"<script>
(function () {
  var rows = document.querySelectorAll("#runs tbody tr");
  var r = { probe: window.__llmib, rows: rows.length,
    text: document.querySelector("#runs tbody").textContent,
    scripts: document.scripts.length, images: document.images.length };
  var pre = document.createElement("pre");
  pre.id = "llmib-verdict";
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>"##;

#[test]
fn the_list_filters_to_one_engine_and_shows_a_hostile_model_id_as_text() {
    let Some(chrome) = chromium() else { return };
    let t = three_runs("hub-browser-list");
    let vllm = dom_of(&chrome, &t.hub, "/?engine=vllm");
    let rows = list_rows(&vllm);
    assert_eq!(rows.len(), 1, "only the vllm run: {rows:#?}");
    assert!(rows[0].contains("org/beta") && rows[0].contains(&format!("/runs/{}", t.beta)));
    let sglang = dom_of(&chrome, &t.hub, "/?engine=sglang");
    let rows = list_rows(&sglang);
    assert_eq!(rows.len(), 2, "the two sglang runs: {rows:#?}");
    assert!(rows.iter().all(|r| !r.contains("org/beta")), "{rows:#?}");
    assert!(rows.iter().any(|r| r.contains("org/alpha")), "{rows:#?}");
    assert_only_text(&sglang, &vllm, "list");

    // The same page with the probe: no script error, no alert, the id read back as text.
    let (_, _, served) = http_get(&t.hub.url, "/?engine=sglang");
    let v = probed(
        &chrome,
        &t.hub,
        "/?engine=sglang",
        "list",
        Some(LIST_CHECKS),
    );
    assert_eq!(v["rows"], 2);
    assert!(
        v["text"].as_str().is_some_and(|s| s.contains(HOSTILE)),
        "{v}"
    );
    let own = element_count(&served, "script") as u64;
    assert_eq!(
        v["scripts"].as_u64(),
        Some(own + 2),
        "the page's and the two injected"
    );
    assert_eq!(
        v["images"].as_u64(),
        Some(element_count(&served, "img") as u64)
    );
}

#[test]
fn a_runs_page_is_the_seed_page_and_the_model_page_escapes_the_id() {
    let Some(chrome) = chromium() else { return };
    let t = three_runs("hub-browser-run");
    let plain = dom_of(&chrome, &t.hub, &format!("/runs/{}", t.alpha));
    let hostile = dom_of(&chrome, &t.hub, &format!("/runs/{}", t.hostile));
    for id in [
        "summary",
        "cards",
        "prefill",
        "decode",
        "legend",
        "all-measurements",
    ] {
        let want = format!("id=\"{id}\"");
        assert!(plain.contains(&want), "the run page has no #{id}");
        assert!(
            hostile.contains(&want),
            "the hostile run's page has no #{id}"
        );
    }
    assert!(plain.contains("org/alpha"));
    assert_only_text(&hostile, &plain, "run page");

    // The report's own checks on the served page: every section, sorting, no errors.
    let v = probed(
        &chrome,
        &t.hub,
        &format!("/runs/{}", t.hostile),
        "run",
        None,
    );
    assert_eq!(v["missing"], serde_json::json!([]), "missing sections");
    assert_eq!(v["images"].as_u64(), Some(0), "img elements");
    assert_eq!(v["iframes"].as_u64(), Some(0), "embedded documents");

    let model = dom_of(&chrome, &t.hub, &format!("/model?name={}", encode(HOSTILE)));
    let plain_model = dom_of(&chrome, &t.hub, "/model?name=org%2Falpha");
    assert_only_text(&model, &plain_model, "model page");
}

#[test]
fn the_compare_page_sets_two_runs_side_by_side() {
    let Some(chrome) = chromium() else { return };
    let t = three_runs("hub-browser-compare");
    let (a, b, h) = (t.alpha, t.beta, t.hostile);
    let plain = dom_of(&chrome, &t.hub, &format!("/compare?ids={a},{b}"));
    for (id, model) in [(a, "org/alpha"), (b, "org/beta")] {
        assert!(
            plain.contains(&format!("run {id} · {model}")),
            "run {id}'s column"
        );
        assert!(plain.contains(&format!("/runs/{id}\"")), "run {id}'s link");
    }
    let hostile = dom_of(&chrome, &t.hub, &format!("/compare?ids={a},{h}"));
    assert!(
        hostile.contains(&format!("run {a} · org/alpha")),
        "the first run's column"
    );
    assert!(
        hostile.contains(&format!("run {h} · ")),
        "the hostile run's column"
    );
    assert_only_text(&hostile, &plain, "compare page");
}

#[test]
fn element_counts_skip_attributes_and_raw_text() {
    let html =
        r#"<p title="<img src=x>">&lt;img&gt;</p><script>if (a<b) {}</script><img src="y"><IMG>"#;
    assert_eq!(element_count(html, "img"), 2);
    assert_eq!(element_count(html, "script"), 1);
    assert_eq!(element_count(html, "p"), 1);
}
