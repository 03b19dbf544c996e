//! A sweep from the terminal to the hub: two simulators already running side by side are
//! swept over `--urls` (nothing started or stopped), `compare SWEEP` sets them side by side,
//! `upload SWEEP` stores the runs and the sweep file as one group (again: nothing stored
//! twice), and the hub's sweep page, run pages and model page link the group together. The
//! sweep's own page and the hub's are opened in headless Chromium: table, frontier, links, no
//! script error and no request outside the page.

use crate::common::*;
use crate::hub::{Hub, http_get};
use crate::sweep::{SMALL_RUN, answers, states, sweep_json};
use serde_json::Value;
use std::path::Path;

/// What the checks read of a sweep page: rows, frontier points and line, the links of the
/// combinations.
const CHECKS: &str = r###"<script>
(function () {
  var all = function (s) { return Array.prototype.slice.call(document.querySelectorAll(s)); };
  var line = document.querySelector("#sweep-pareto polyline.frontier");
  var r = { probe: window.__llmib, rows: all("#sweep-table tbody tr").length,
    dots: all("#sweep-pareto circle.dot").length, frontier: all("#sweep-pareto circle.on-frontier").length,
    line: line ? line.getAttribute("points") : "",
    links: all("#sweep-table tbody tr td:first-child a").map(function (a) { return a.getAttribute("href"); }) };
  var pre = document.createElement("pre"); pre.id = "llmib-verdict"; pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>"###;

/// The verdict of the sweep's own page (a file in the sweep directory) with the checks.
fn file_page_verdict(chrome: &Path, dir: &Path) -> Value {
    let html = std::fs::read_to_string(dir.join("sweep.html")).expect("sweep.html");
    let work = out_dir("sweep-urls-browser");
    let page = work.join("checked.html");
    let with_probe = html.replacen("<head>", &format!("<head>\n{}", crate::report::PROBE), 1);
    let i = with_probe.rfind("</body>").expect("</body>");
    let full = format!("{}{CHECKS}{}", &with_probe[..i], &with_probe[i..]);
    std::fs::write(&page, full).expect("write page");
    let (dom, stderr) = crate::report::run_chromium(chrome, &work, &page, &["--dump-dom"]);
    crate::report::verdict(&dom, &stderr)
}

/// Two decode cells per server make four points and a frontier; the probe saw nothing wrong.
fn assert_sweep_page(v: &Value, what: &str) {
    assert_eq!(v["rows"], 2, "{what}: {v:#}");
    assert_eq!(v["dots"], 4, "{what}: two decode cells per server: {v:#}");
    assert!(
        v["frontier"].as_u64().is_some_and(|n| n >= 1),
        "{what}: {v:#}"
    );
    assert!(
        !v["line"].as_str().unwrap_or("").is_empty(),
        "{what}: {v:#}"
    );
    for k in ["errors", "alerts", "csp"] {
        assert_eq!(v["probe"][k], serde_json::json!([]), "{what}: {k}: {v:#}");
    }
}

/// Sweeps two running simulators (the second limited to one running request) into `dir`.
fn sweep_two_running_servers(dir: &Path) {
    let serial = timing_lock();
    let a = Sim::start(llmib_sim::builtin_profile("tiny").expect("tiny"));
    let mut slow = llmib_sim::builtin_profile("tiny").expect("tiny");
    slow.max_running_requests = Some(1);
    let b = Sim::start(slow);
    let d = dir.display().to_string();
    let urls = format!("{},{}", a.url, b.url);
    let mut args = vec!["sweep", "--urls", &urls, "--output", &d, "--"];
    let mut run = SMALL_RUN.to_vec();
    run[3] = "1,4";
    args.extend(run);
    args.extend(["none", "--gpus", "1"]);
    let o = run_bin(&args);
    assert!(o.status.success(), "{}", text(&o));
    let s = sweep_json(dir);
    assert_eq!(states(&s), ["measured", "measured"], "{s:#}");
    assert!(s["combinations"][0]["command"].is_null());
    assert!(
        answers(a.url.trim_end_matches('/')),
        "a running server is left running"
    );
    drop((a, b, serial));
}

/// `GET path` as JSON.
fn api(hub: &Hub, path: &str) -> Value {
    let (status, _, body) = http_get(&hub.url, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).expect("JSON")
}

/// Uploads the sweep twice (the second stores nothing new) and returns the sweep's key.
fn upload_twice(hub: &Hub, dir: &Path, key: &str) {
    let token = hub.token("sweep");
    let o = hub.upload(&[dir], Some(&token), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains(&format!("/sweeps/{key} (2 runs stored, 0 already there)")),
        "{out}"
    );
    let o = hub.upload(&[dir], Some(&token), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("(0 runs stored, 2 already there)"), "{out}");
    assert_eq!(
        crate::hub::api_runs(hub)["total"],
        2,
        "each run stored once"
    );
}

#[test]
fn running_servers_are_swept_uploaded_as_one_group_and_both_pages_open_in_a_browser() {
    let dir = out_dir("sweep-urls");
    sweep_two_running_servers(&dir);
    let d = dir.display().to_string();
    // `compare SWEEP` sets the combinations side by side, the first as the baseline.
    let o = run_bin(&["compare", &d]);
    assert!(o.status.success(), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout);
    // Each URL's combination is named by its place, host and port.
    let names: Vec<String> = sweep_json(&dir)["combinations"]
        .as_array()
        .expect("combinations")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(names[0].starts_with("1-127.0.0.1-") && names[1].starts_with("2-127.0.0.1-"));
    for name in &names {
        assert!(table.contains(name.as_str()), "{name} in {table}");
    }
    // Each run names its sweep and combination.
    let key = sweep_json(&dir)["id"]
        .as_str()
        .expect("the sweep's id")
        .to_string();
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(&names[0]).join("run.json")).expect("run.json"),
    )
    .expect("run.json");
    assert_eq!(run["sweep"]["id"], key.as_str());
    assert_eq!(run["sweep"]["combination"], names[0].as_str());

    let hub = Hub::start("hub-sweep", &[]);
    upload_twice(&hub, &dir, &key);
    let v = api(&hub, &format!("/api/sweeps/{key}"));
    let ids: Vec<i64> = names
        .iter()
        .map(|n| {
            v["runs"][n.as_str()]
                .as_i64()
                .expect("a stored run per combination")
        })
        .collect();
    let hrefs: Vec<&str> = v["report"]["combinations"]
        .as_array()
        .expect("combinations")
        .iter()
        .map(|c| c["href"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        hrefs,
        [format!("/runs/{}", ids[0]), format!("/runs/{}", ids[1])]
    );
    assert_eq!(
        v["report"]["points"].as_array().map(Vec::len),
        Some(4),
        "{v:#}"
    );
    assert_eq!(v["report"]["per_gpu"], true);
    // A run's summary names its sweep; its page links the sweep and the other combination.
    let r = api(&hub, &format!("/api/runs/{}", ids[0]));
    assert_eq!(r["summary"]["sweep"]["key"], key.as_str(), "{r:#}");
    let (_, _, page) = http_get(&hub.url, &format!("/runs/{}", ids[0]));
    assert!(
        page.contains(&format!("href=\"/sweeps/{key}\"")),
        "the sweep's link"
    );
    assert!(
        page.contains(&format!("href=\"/runs/{}\"", ids[1])),
        "the other run's link"
    );
    // The model page ranks the two configurations per GPU: the unlimited server first.
    let model = run["model"]["served_model"].as_str().expect("model");
    let m = api(&hub, &format!("/api/model?name={model}"));
    let ranked: Vec<i64> = m["configurations"]
        .as_array()
        .expect("configurations")
        .iter()
        .map(|c| c["run_id"].as_i64().unwrap_or(0))
        .collect();
    assert_eq!(ranked, ids, "{m:#}");
    let (_, _, list) = http_get(&hub.url, "/sweeps");
    assert!(list.contains(&format!("/sweeps/{key}\"")), "{list}");

    let Some(chrome) = crate::report::chromium() else {
        return;
    };
    assert_sweep_page(&file_page_verdict(&chrome, &dir), "sweep.html");
    let path = format!("/sweeps/{key}");
    let dom = crate::hub_browser::dom_of(&chrome, &hub, &path);
    assert!(
        dom.contains("id=\"sweep-table\""),
        "the hub's sweep page has its table"
    );
    let v = crate::hub_browser::probed(&chrome, &hub, &path, "sweep", Some(CHECKS));
    assert_sweep_page(&v, "the hub's sweep page");
    assert_eq!(v["links"], serde_json::json!(hrefs), "{v:#}");
}
