//! The report as a user meets it: the `report` and `compare` commands, and the HTML page opened
//! in headless Chromium, checked from inside the page and screenshotted.
//!
//! The browser is driven without a protocol client: the test writes a copy of the page with two
//! injected scripts (a probe at the top of `<head>` that records errors, alerts and CSP
//! violations; the checks at the end of `<body>`, which click and read the DOM and write a JSON
//! verdict into it), and reads the verdict back with `--dump-dom`. The page's own CSP
//! (`default-src 'none'`) turns any network request into a recorded violation.
//!
//! Chromium is Debian's `chromium` (`/usr/bin/chromium`, or `LLMIB_CHROMIUM`). Without it the
//! browser tests skip with a message, except under CI (`CI` set), where they fail.

use crate::common::out_dir;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) fn seed_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run")
}

fn seed_page() -> String {
    std::fs::read_to_string(seed_dir().join("seed-page.txt")).expect("seed page text")
}

/// Screenshots and pages are kept here for people to look at: `target/test-output/report/`.
pub(crate) fn artifacts() -> PathBuf {
    let tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp
        .parent()
        .map_or_else(|| tmp.clone(), Path::to_path_buf)
        .join("test-output/report");
    std::fs::create_dir_all(&dir).expect("artifact dir");
    dir
}

/// Chromium, or None (skip) when it is missing outside CI.
pub(crate) fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("LLMIB_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from))
        .find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium is missing: install Debian's `chromium` package (apt-get install -y \
             chromium) or set LLMIB_CHROMIUM to a Chromium binary"
        );
        eprintln!(
            "SKIPPED browser test: chromium not found (apt-get install -y chromium, or set \
             LLMIB_CHROMIUM); it is required when CI is set"
        );
    }
    found
}

/// Runs headless Chromium on `page` with `extra` arguments; returns (stdout, stderr).
pub(crate) fn run_chromium(
    chrome: &Path,
    work: &Path,
    page: &Path,
    extra: &[&str],
) -> (String, String) {
    run_chromium_at(chrome, work, &format!("file://{}", page.display()), extra)
}

/// Runs headless Chromium on `target` (a URL: a served page, or `file://…`).
pub(crate) fn run_chromium_at(
    chrome: &Path,
    work: &Path,
    target: &str,
    extra: &[&str],
) -> (String, String) {
    // Chromium loads both cores for a moment: keep it off the timing-sensitive tests.
    let _heavy = crate::slots::exclusive_unless_held();
    let profile = work.join(format!("profile-{}", extra.len()));
    let out = work.join("chromium.stdout");
    let err = work.join("chromium.stderr");
    let mut child = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            "--mute-audio",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(target)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).expect("stdout file"))
        .stderr(std::fs::File::create(&err).expect("stderr file"))
        .spawn()
        .expect("start chromium");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait for chromium").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish within 120 s on {target}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (read(&out), read(&err))
}

pub(crate) const PROBE: &str = r#"<script>
window.__llmib = { errors: [], alerts: [], csp: [] };
window.addEventListener("error", function (e) { __llmib.errors.push(String(e.message || e.type)); }, true);
window.addEventListener("unhandledrejection", function (e) { __llmib.errors.push("rejection: " + String(e.reason)); });
document.addEventListener("securitypolicyviolation", function (e) { __llmib.csp.push(e.violatedDirective + " " + e.blockedURI); });
(function () {
  var orig = console.error;
  console.error = function () { __llmib.errors.push(Array.prototype.join.call(arguments, " ")); return orig.apply(console, arguments); };
})();
window.alert = window.confirm = window.prompt = function (m) { __llmib.alerts.push(String(m)); };
</script>"#;

const CHECKS: &str = r###"<script>
(function () {
  var r = { probe: window.__llmib };
  var all = function (sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); };
  var text = function (sel) { var e = document.querySelector(sel); return e ? e.textContent : null; };
  r.missing = ["title", "summary", "cards", "card-hardware", "card-engine", "card-run", "launch",
    "launch-command", "prefill", "prefill-chart", "prefill-table", "decode", "decode-matrix", "legend",
    "measurements", "all-measurements", "footnotes"].filter(function (id) { return !document.getElementById(id); });
  r.title = text("h1");
  r.summary = text("#summary");
  r.cards = all(".card").map(function (c) {
    return { title: c.querySelector("h2").textContent,
      fields: all(".field", c).map(function (f) { return [f.querySelector("dt").textContent, f.querySelector("dd").textContent]; }) };
  });
  r.launch = text("#launch-command");
  r.bars = all("#prefill-chart g.bar").map(function (g) { return all("text", g).map(function (t) { return t.textContent; }).join(""); });
  r.matrix = all("#decode-matrix tbody tr").map(function (tr) {
    return "| " + all("th, td", tr).map(function (c) { return c.textContent.trim(); }).join(" | ") + " |";
  });
  r.decodeCells = all("#decode-matrix td[data-cell=decode]").length;
  r.legend = all("#legend li").map(function (li) { return li.textContent.trim(); });
  r.footnotes = text("#footnotes");
  r.ttftNote = text("#decode .footnote");
  var table = document.getElementById("all-measurements");
  var rows = function () { return all("tbody tr", table); };
  r.tableRows = rows().map(function (tr) { return "| " + all("td", tr).map(function (c) { return c.textContent; }).join(" | ") + " |"; });
  var heads = all("thead th", table);
  var col = heads.map(function (h) { return h.textContent; }).indexOf("Total tok/s");
  var keys = function () { return rows().map(function (tr) { return tr.cells[col].getAttribute("data-sort"); }); };
  var button = heads[col].querySelector("button");
  button.click();
  r.sortAsc = keys(); r.ariaAsc = heads[col].getAttribute("aria-sort");
  button.click();
  r.sortDesc = keys(); r.ariaDesc = heads[col].getAttribute("aria-sort");
  r.firstRowAfterSort = rows()[0].cells[col].textContent;
  var copy = document.querySelector("button.copy");
  r.copyVisible = !!copy && !copy.hidden;
  if (copy) { copy.click(); }
  r.scripts = document.scripts.length;
  r.images = document.images.length;
  r.iframes = all("iframe, object, embed").length;
  r.resources = performance.getEntriesByType("resource").map(function (e) { return e.name; });
  r.height = document.documentElement.scrollHeight;
  // The Load section, where the run has open-loop rows: what each chart drew, and its size.
  var width = function (el) { return el.getBoundingClientRect().width; };
  var load = document.getElementById("load");
  r.load = !load ? null : {
    charts: all("#load svg.lchart").map(function (s) {
      return { id: s.parentNode.id, width: width(s),
        lines: all("polyline", s).map(function (p) { return p.points.numberOfItems; }),
        dots: all("circle.pt", s).length };
    }),
    paretos: all("#load svg.pchart").map(function (s) {
      var f = s.querySelector("polyline.frontier");
      return { width: width(s), frontier: f ? f.points.numberOfItems : 0,
        frontierLength: f ? f.getTotalLength() : 0,
        onFrontier: all("circle.on-frontier", s).length,
        rate: all("circle.dot.rate", s).length, decode: all("circle.dot.decode", s).length };
    }),
    achieved: all("#load g.achieved").length,
    capacity: all("#capacity-table tbody tr").map(function (tr) {
      return all("td", tr).map(function (c) { return c.textContent; });
    }),
    rates: all("#rate-table tbody tr").length,
    warnings: all("#pacing-warnings li").map(function (li) { return li.textContent; })
  };
  var pre = document.createElement("pre");
  pre.id = "llmib-verdict";
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>"###;

/// Writes the page with the probe and the checks injected, for `--dump-dom`.
/// Renders `report` as HTML (kept as the artifact `name`), loads it in the browser with the
/// page checks, and returns what they found, the browser's stderr and the page's path.
fn render_in_browser(
    chrome: &Path,
    work: &Path,
    report: &llmib_report::Report,
    name: &str,
) -> (Value, String, PathBuf) {
    let html = llmib_report::Format::Html
        .exporter()
        .render(report)
        .expect("html");
    let page = artifacts().join(name);
    std::fs::write(&page, &html).expect("write page");
    let probe_page = work.join("checked.html");
    instrumented(&html, &probe_page);
    let (dom, stderr) = run_chromium(
        chrome,
        work,
        &probe_page,
        &["--window-size=1280,900", "--dump-dom"],
    );
    (verdict(&dom, &stderr), stderr, page)
}

pub(crate) fn instrumented(html: &str, path: &Path) {
    let with_probe = html.replacen("<head>", &format!("<head>\n{PROBE}"), 1);
    let page = match with_probe.rfind("</body>") {
        Some(i) => format!("{}{CHECKS}\n{}", &with_probe[..i], &with_probe[i..]),
        None => panic!("the page has no </body>"),
    };
    std::fs::write(path, page).expect("write instrumented page");
}

/// Reads the verdict the checks wrote into the DOM.
pub(crate) fn verdict(dom: &str, stderr: &str) -> Value {
    let start = dom.find("<pre id=\"llmib-verdict\">").unwrap_or_else(|| {
        panic!("no verdict in the DOM: the checks did not run\n{dom}\n--- stderr\n{stderr}")
    }) + "<pre id=\"llmib-verdict\">".len();
    let end = dom[start..].find("</pre>").expect("verdict end") + start;
    let json = dom[start..end]
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&");
    serde_json::from_str(&json).expect("verdict is JSON")
}

/// Checks every run of the page shares: no errors, no alerts, no requests, every section.
fn assert_clean(v: &Value, stderr: &str, decode_cells: usize) {
    assert_eq!(v["probe"]["errors"], serde_json::json!([]), "page errors");
    assert_eq!(v["probe"]["alerts"], serde_json::json!([]), "alerts ran");
    assert_eq!(v["probe"]["csp"], serde_json::json!([]), "blocked requests");
    assert_eq!(v["resources"], serde_json::json!([]), "network requests");
    assert_eq!(v["missing"], serde_json::json!([]), "missing sections");
    assert_eq!(v["decodeCells"].as_u64(), Some(decode_cells as u64));
    // Our page logs nothing, so any console line is an error or a warning we must look at.
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console output: {console:#?}");
    // Only the page's own script and the two injected ones: no server string became a script.
    assert_eq!(v["scripts"].as_u64(), Some(3), "script elements");
    assert_eq!(v["images"].as_u64(), Some(0), "img elements");
    assert_eq!(v["iframes"].as_u64(), Some(0), "embedded documents");
}

/// Sort keys are numbers or empty (null); nulls last in both directions.
fn assert_sorted(keys: &Value, ascending: bool) {
    let keys: Vec<Option<f64>> = keys
        .as_array()
        .expect("keys")
        .iter()
        .map(|k| k.as_str().and_then(|s| s.parse().ok()))
        .collect();
    assert_eq!(keys.len(), 73);
    let first_null = keys.iter().position(Option::is_none).unwrap_or(keys.len());
    assert!(keys[first_null..].iter().all(Option::is_none), "nulls last");
    let nums: Vec<f64> = keys[..first_null].iter().flatten().copied().collect();
    for w in nums.windows(2) {
        assert!(
            if ascending {
                w[0] <= w[1]
            } else {
                w[0] >= w[1]
            },
            "{nums:?}"
        );
    }
}

pub(crate) fn screenshot(
    chrome: &Path,
    work: &Path,
    page: &Path,
    name: &str,
    size: &str,
    dark: bool,
) {
    let shot = artifacts().join(name);
    let _ = std::fs::remove_file(&shot);
    let mut args = vec![
        format!("--window-size={size}"),
        format!("--screenshot={}", shot.display()),
    ];
    if dark {
        args.push("--force-dark-mode".to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, stderr) = run_chromium(chrome, work, page, &args);
    let len = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
    assert!(len > 10_000, "screenshot {name} missing or empty\n{stderr}");
}

#[test]
fn browser_golden_page_matches_the_seed_and_works() {
    let Some(chrome) = chromium() else { return };
    let work = out_dir("report-browser-golden");
    let report = llmib_report::Report::load(&seed_dir()).expect("golden run");
    let (v, stderr, page) = render_in_browser(&chrome, &work, &report, "seed-run.html");
    assert_clean(&v, &stderr, 64);

    let seed = seed_page();
    let seed_lines: Vec<&str> = seed.lines().collect();
    assert_eq!(
        v["title"].as_str(),
        Some(seed_lines[1]),
        "title as the seed's"
    );
    let summary = v["summary"].as_str().expect("summary");
    // The seed's text lost the separator between `FP8` and `8 contexts`; ours has it.
    assert_eq!(
        summary.replace("FP8 · 8 contexts", "FP88 contexts"),
        seed_lines[2]
    );
    let cards = v["cards"].as_array().expect("cards");
    assert_eq!(cards.len(), 3);
    for card in cards {
        for f in card["fields"].as_array().expect("fields") {
            let (label, value) = (f[0].as_str().unwrap_or(""), f[1].as_str().unwrap_or(""));
            let i = seed_lines
                .iter()
                .position(|l| *l == format!("- {label}"))
                .unwrap_or_else(|| panic!("seed has no card field {label}"));
            // The seed prints the value on the next line (once without its dash).
            assert_eq!(seed_lines[i + 1].trim_start_matches("- "), value, "{label}");
        }
    }
    let launch = seed_lines
        .iter()
        .find(|l| l.starts_with("\"$HOME"))
        .expect("launch");
    assert_eq!(v["launch"].as_str(), Some(*launch));
    let bars = v["bars"].as_array().expect("bars");
    assert_eq!(bars.len(), 9);
    for b in bars {
        let b = b.as_str().expect("bar text");
        assert!(seed.contains(b), "prefill bar `{b}` as in the seed");
    }
    let matrix = v["matrix"].as_array().expect("matrix");
    assert_eq!(matrix.len(), 8);
    for row in matrix {
        let row = row.as_str().expect("row");
        assert!(
            seed_lines.contains(&row),
            "matrix row `{row}` as in the seed"
        );
    }
    let footnotes = v["footnotes"].as_str().expect("footnotes");
    assert_eq!(Some(footnotes), seed_lines.last().copied());
    for l in v["legend"].as_array().expect("legend") {
        assert!(footnotes.contains(l.as_str().unwrap_or("?")), "{l}");
    }
    assert!(seed.contains(v["ttftNote"].as_str().expect("ttft note")));
    let rows = v["tableRows"].as_array().expect("rows");
    let seed_rows: Vec<&str> = seed_lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("| Prefill |") || l.starts_with("| Sustained decode |"))
        .collect();
    let rows: Vec<&str> = rows.iter().filter_map(Value::as_str).collect();
    assert_eq!(rows, seed_rows, "All measurements, row for row");

    assert_eq!(v["ariaAsc"], "ascending");
    assert_eq!(v["ariaDesc"], "descending");
    assert_sorted(&v["sortAsc"], true);
    assert_sorted(&v["sortDesc"], false);
    assert_eq!(v["firstRowAfterSort"], "10.7K", "the fastest prefill first");
    assert_eq!(v["copyVisible"], true);

    let height = v["height"].as_u64().unwrap_or(4000).clamp(800, 12_000);
    screenshot(
        &chrome,
        &work,
        &page,
        "seed-run.png",
        &format!("1280,{height}"),
        false,
    );
    screenshot(
        &chrome,
        &work,
        &page,
        "seed-run-dark.png",
        "1280,1500",
        true,
    );
    screenshot(
        &chrome,
        &work,
        &page,
        "seed-run-phone.png",
        "390,2600",
        false,
    );
}

#[test]
fn browser_renders_hostile_strings_as_text() {
    let Some(chrome) = chromium() else { return };
    let work = out_dir("report-browser-xss");
    let mut report = llmib_report::Report::load(&seed_dir()).expect("golden run");
    let model = "<script>alert(1)</script>";
    let gpu = "<img src=x onerror=alert(2)>";
    let cmd = "serve </code></pre><script>alert(3)</script> --api-key <redacted>";
    report.info.model.served_model = model.to_string();
    report.info.hardware.gpu_name = Some(gpu.to_string());
    report.info.launch_command = Some(cmd.to_string());
    report.info.engine.version = Some("\"><svg onload=alert(4)>".to_string());
    if let Some(c) = report
        .cells
        .iter_mut()
        .find(|c| c.phase == llmib_core::Phase::Decode)
    {
        c.status_reason = Some("</td><script>alert(5)</script>".to_string());
    }
    let html = llmib_report::Format::Html
        .exporter()
        .render(&report)
        .expect("html");
    let page = artifacts().join("xss.html");
    std::fs::write(&page, &html).expect("write page");
    let probe_page = work.join("checked.html");
    instrumented(&html, &probe_page);
    let (dom, stderr) = run_chromium(
        &chrome,
        &work,
        &probe_page,
        &["--window-size=1280,900", "--dump-dom"],
    );
    let v = verdict(&dom, &stderr);
    assert_clean(&v, &stderr, 64);
    assert_eq!(
        v["title"].as_str(),
        Some(format!("{model} on {gpu} 96GB ×8").as_str())
    );
    assert_eq!(v["launch"].as_str(), Some(cmd));
    let fields: Vec<(String, String)> = v["cards"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|c| c["fields"].as_array().cloned().unwrap_or_default())
        .map(|f| {
            (
                f[0].as_str().unwrap_or("").into(),
                f[1].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    assert!(fields.contains(&("Served model".into(), model.into())));
    assert!(fields.contains(&("GPU".into(), gpu.into())));
    assert!(fields.contains(&("Version".into(), "\"><svg onload=alert(4)>".into())));
    screenshot(&chrome, &work, &page, "xss.png", "1280,900", false);
}

/// An open-loop rate cell built by llmib_core's own row function: 8 requests due every
/// 1/rate s (request i sent `late_ms` × i late), first token `ttft_ms` after the send, then 19
/// more `tpot_ms` apart.
fn rate_row(
    ctx: (u64, &str),
    rate: f64,
    (ttft_ms, tpot_ms, late_ms): (u64, u64, u64),
    slo: &llmib_core::Slo,
) -> llmib_core::CellResult {
    use llmib_core::{Chunk, Outcome, RateObservation, RequestRecord};
    const MS: u64 = 1_000_000;
    let gap = (1000.0 / rate) as u64;
    let due: Vec<u64> = (0..8u64).map(|i| i * gap * MS).collect();
    let records: Vec<RequestRecord> = (0..8u32)
        .map(|i| {
            let sent = due[i as usize] + u64::from(i) * late_ms * MS;
            let chunks: Vec<Chunk> = (0..20u64)
                .map(|k| Chunk {
                    t_ns: sent + (ttft_ms + k * tpot_ms) * MS,
                    tokens: 1,
                })
                .collect();
            RequestRecord {
                stream: i,
                sent_ns: sent,
                headers_ns: None,
                end_ns: chunks.last().map_or(sent, |c| c.t_ns),
                chunks,
                outcome: Outcome::Finished {
                    reason: "length".into(),
                },
                prompt_tokens_reported: Some(ctx.0),
                completion_tokens_reported: Some(20),
                cached_tokens_reported: None,
                repetition: None,
                structured: None,
                text: None,
            }
        })
        .collect();
    llmib_core::rate_result(
        &llmib_core::rate_cell(ctx.0, ctx.1, rate),
        RateObservation {
            records: &records,
            scheduled_ns: &due,
            waited: &[false; 8],
            requested_rate: rate,
            arrival: llmib_core::ArrivalPattern::Constant,
            max_concurrency: None,
            max_in_flight: 4,
            slo: Some(slo),
            count: llmib_core::CountReport::new(),
            nominal_source: llmib_core::TokenCountSource::ServerUsagePerChunk,
            expected_prompt_tokens: ctx.0,
            prompt_tolerance: 0,
            expected_prompts: None,
            workload: None,
            stop_reason: None,
            fault: None,
        },
    )
}

/// The golden run with an open-loop section: rate cells at 8K (the last one paced late) and
/// 16K, a capacity row at 8K (4/s) and one at 16K where no rate holds the SLO.
fn load_run() -> llmib_report::Report {
    use llmib_core::{Capacity, CapacityInputs, capacity_cell, capacity_result};
    let mut report = llmib_report::Report::load(&seed_dir()).expect("golden run");
    let slo: llmib_core::Slo = "ttft_p99=400ms,tpot_p50=20ms".parse().expect("slo");
    let (k8, k16) = ((8192, "8K"), (16384, "16K"));
    let at8: Vec<_> = [
        (1.0, (100, 10, 0)),
        (2.0, (120, 12, 0)),
        (4.0, (200, 15, 0)),
        (8.0, (900, 30, 30)),
    ]
    .into_iter()
    .map(|(rate, shape)| rate_row(k8, rate, shape, &slo))
    .collect();
    let at16 = vec![rate_row(k16, 1.0, (800, 25, 0), &slo)];
    let capacity = |ctx: (u64, &str), answer, points: &[llmib_core::CellResult]| {
        capacity_result(
            &capacity_cell(ctx.0, ctx.1),
            CapacityInputs {
                slo: &slo,
                precision: 0.05,
                answer,
                rate_rows: points,
                rows: &[],
                synchronous_rate: Some(1.0),
                saturation_rate: Some(10.0),
            },
        )
    };
    let found = Capacity::Found {
        rate: 4.0,
        failed_at: 8.0,
    };
    report.cells.push(capacity(k8, found, &at8));
    report.cells.push(capacity(k16, Capacity::None, &at16));
    report.cells.extend(at8);
    report.cells.extend(at16);
    report.cells.sort_by_key(llmib_core::CellResult::key);
    report
}

#[test]
fn browser_load_section_draws_its_charts_and_the_pareto_frontier() {
    let Some(chrome) = chromium() else { return };
    let work = out_dir("report-browser-load");
    let (v, stderr, page) = render_in_browser(&chrome, &work, &load_run(), "load.html");
    // The open-loop rows are in the Load section, not in All measurements.
    assert_clean(&v, &stderr, 64);
    assert_eq!(v["tableRows"].as_array().map(Vec::len), Some(73));
    let load = &v["load"];
    assert!(load.is_object(), "the Load section is shown: {v}");
    let charts = load["charts"].as_array().expect("charts");
    // 8K: TTFT, TPOT, goodput, attainment; 16K the same with one point each.
    assert_eq!(charts.len(), 8, "{charts:#?}");
    for c in charts {
        assert!(c["width"].as_f64().unwrap_or(0.0) > 100.0, "drawn: {c}");
        assert!(c["dots"].as_u64().unwrap_or(0) >= 1, "points: {c}");
    }
    let ttft = charts
        .iter()
        .find(|c| c["id"] == "load-0-ttft")
        .expect("8K TTFT chart");
    assert_eq!(
        ttft["lines"],
        serde_json::json!([4, 4]),
        "p50 and p99, 4 rates"
    );
    assert!(
        load["achieved"].as_u64().unwrap_or(0) >= 1,
        "the late rate is marked"
    );
    let paretos = load["paretos"].as_array().expect("pareto charts");
    assert_eq!(paretos.len(), 2);
    let p8 = &paretos[0];
    assert!(p8["width"].as_f64().unwrap_or(0.0) > 100.0);
    assert!(p8["decode"].as_u64().unwrap_or(0) >= 1 && p8["rate"].as_u64() == Some(4));
    assert!(p8["frontier"].as_u64().unwrap_or(0) >= 2, "{p8}");
    assert!(p8["frontierLength"].as_f64().unwrap_or(0.0) > 0.0, "{p8}");
    assert_eq!(p8["frontier"], p8["onFrontier"]);
    let capacity = load["capacity"].as_array().expect("capacity rows");
    assert_eq!(capacity.len(), 2);
    assert_eq!(capacity[0][1], "4/s");
    assert_eq!(capacity[1][1], "no rate meets the SLO");
    assert_eq!(load["rates"].as_u64(), Some(5));
    let warnings = load["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0]
            .as_str()
            .is_some_and(|w| w.starts_with("8K at 8/s (achieved 6.452/s)")),
        "{warnings:?}"
    );
    let height = v["height"].as_u64().unwrap_or(4000).clamp(800, 12_000);
    screenshot(
        &chrome,
        &work,
        &page,
        "load.png",
        &format!("1280,{height}"),
        false,
    );
    screenshot(&chrome, &work, &page, "load-phone.png", "390,3000", false);
}
