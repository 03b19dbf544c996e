//! The Sessions section on known answers: the golden run plus hand-built session rows (a valid
//! cell at two history depths, one whose cache looks off, a failed one with a hostile status
//! reason, a not-run one with null columns), through the HTML, Markdown, CSV and JSON
//! exporters and `compare`.

use crate::{Comparison, Format, Report};
use llmib_core::{CellResult, CellStatus, PerTurn, Phase, SessionColumns, SessionFigures, Summary};
use serde_json::Value;

/// A status reason a hostile server could make the row carry.
pub(crate) const HOSTILE: &str = "<script>alert('x')</script> & \"quoted\"";

/// What core appends when the server served nothing from its cache.
const CACHE_OFF: &str = "prefix caching looks off: the server reported 0 cached tokens of a \
    predicted 95.0 %";

fn summary(p50: f64, p99: f64) -> Summary {
    Summary {
        n: 12,
        min: p50 * 0.8,
        p50,
        p90: (p50 + p99) / 2.0,
        p99,
        max: p99 * 1.1,
        mean: p50 * 1.1,
        std: None,
        percentiles: Vec::new(),
    }
}

fn turn(turn: u32, prompt: u64, cached: Option<u64>, predicted: u64, ttft: f64) -> PerTurn {
    PerTurn {
        turn,
        measured: turn > 0,
        requests: 4,
        prompt_tokens: prompt,
        cached_tokens: cached,
        predicted_cached_tokens: predicted,
        ttft_ms_p50: Some(ttft),
        ttft_prefill_ms_p50: Some(ttft * 0.25),
        ttft_wait_ms_p50: Some(ttft * 0.75),
    }
}

/// A measured session cell of `s` sessions at `ctx` tokens: `tok_s` total tok/s, TTFT p50
/// `ttft` (p99 3.75 × it), hit rates `hit` measured (None: not reported) and `pred` predicted.
pub(crate) fn measured(ctx: u64, s: u32, tok_s: f64, ttft: f64, hit: Option<f64>) -> CellResult {
    let pred = 0.93;
    let label = format!("{}K", ctx / 1024);
    let mut r = CellResult::empty(Phase::Session, ctx, &label, s, CellStatus::Valid);
    let prompt = 100_000u64;
    r.total_tok_per_s = Some(tok_s);
    r.per_request_tok_per_s = Some(45.2);
    r.ttft_ms = Some(summary(ttft, ttft * 3.75));
    r.ttft_ms_p50 = Some(ttft);
    r.completed_requests = Some(12);
    r.requests_sent = Some(12);
    r.output_tokens = Some(3_000);
    r.measured_s = Some(20.0);
    let cached = hit.map(|h| (h * prompt as f64).round() as u64);
    r.session = SessionColumns {
        turns_completed: Some(Some(12)),
        prompt_tokens: Some(Some(prompt)),
        cached_tokens: Some(cached),
        predicted_cached_tokens: Some(Some(93_000)),
        cache_hit_rate: Some(hit),
        predicted_cache_hit_rate: Some(Some(pred)),
        tpot_ms: Some(Some(summary(22.1, 30.0))),
        per_turn: Some(Some(vec![
            turn(0, ctx * 4, Some(0), 0, 900.0),
            turn(1, 40_000, cached.map(|c| c / 2), 46_500, ttft),
            turn(2, 60_000, cached.map(|c| c / 2), 46_500, ttft * 1.2),
        ])),
        session_rate: Some(None),
        session: Some(Box::new(SessionFigures {
            sessions: s,
            turns_sent: 12,
            e2e_ms: Some(summary(800.0, 1500.0)),
            ttft_prefill_ms: Some(summary(30.0, 60.0)),
            ttft_wait_ms: Some(summary(90.0, 390.0)),
            prefill_tok_per_s: Some(10_000.0),
            cache_block_tokens: 16,
            cache_flushed: Some(true),
            server_cached_tokens: None,
            cache_note: None,
            working_set_tokens: 200_000,
            replay: None,
            output_tokens: 3_000,
        })),
        // Columns core adds later are written as null, as on a bare row.
        ..SessionColumns::bare()
    };
    r
}

/// The four rows: 8K × 4 valid, 32K × 4 valid with caching off, 8K × 16 failed (hostile
/// reason), 32K × 16 not run (null columns).
pub(crate) fn session_rows() -> Vec<CellResult> {
    let ok = measured(8192, 4, 1234.5, 120.0, Some(0.921));
    let mut off = measured(32768, 4, 800.0, 480.0, Some(0.0));
    off.status_reason = Some(CACHE_OFF.to_string());
    if let Some(f) = off.session.session.as_mut() {
        f.cache_note = Some(CACHE_OFF.to_string());
    }
    let mut failed = CellResult::empty(Phase::Session, 8192, "8K", 16, CellStatus::Failed);
    failed.session = SessionColumns::bare();
    failed.status_reason = Some(HOSTILE.to_string());
    failed.first_error = Some("HTTP 500: <b>overloaded</b>".to_string());
    let mut not_run = CellResult::empty(Phase::Session, 32768, "32K", 16, CellStatus::NotRun);
    not_run.session = SessionColumns::bare();
    not_run.status_reason = Some("budget spent".to_string());
    vec![ok, off, failed, not_run]
}

/// The golden run with the session rows.
pub(crate) fn session_report() -> Report {
    let mut run = crate::model::tests::golden();
    run.cells.extend(session_rows());
    Report::from_loaded(run)
}

/// `s` as the page prints it: minijinja's escaping writes `/` as `&#x2f;`; the tags of `s`
/// are ours and keep theirs.
fn slash(s: &str) -> String {
    s.replace('/', "&#x2f;").replace("<&#x2f;", "</")
}

fn render(r: &Report, f: Format) -> String {
    f.exporter().render(r).expect("renders")
}

#[test]
fn the_page_has_the_session_matrix_with_hit_rates_and_escapes_reasons() {
    let html = render(&session_report(), Format::Html);
    assert!(html.contains("id=\"sessions\""), "no section");
    assert!(html.contains("id=\"session-matrix\""));
    let cell = html
        .split("data-cell=\"session\"")
        .find(|s| s.contains("data-context=\"8K\" data-sessions=\"4\""))
        .expect("the 8K × 4 cell");
    let cell = &cell[..cell.find("</td>").expect("cell end")];
    assert!(cell.contains("data-status=\"valid\""), "{cell}");
    assert!(
        cell.contains(&slash(
            "<span class=\"hit-rate\">hit 92.1 % / 93.0 %</span>"
        )),
        "{cell}"
    );
    assert!(cell.contains(&slash("<span class=\"l1\">1,234.5 tok/s</span>")));
    assert!(cell.contains(&slash("<span class=\"ttft\">TTFT 120 / 450 ms</span>")));
    assert!(cell.contains("<span class=\"turns\">12 turns</span>"));
    // The failed and not-run cells carry the decode matrix's status classes.
    assert!(html.contains("class=\"cell s-failed\" data-cell=\"session\""));
    assert!(html.contains("class=\"cell s-not_run\" data-cell=\"session\""));
    // The caching note sits beside its cell; the hostile reason is text, never markup.
    assert!(html.contains("<span class=\"cell-note\">prefix caching looks off"));
    assert!(!html.contains("<script>alert("), "unescaped reason");
    assert!(!html.contains("<b>overloaded"), "unescaped first error");
    assert!(html.contains("&lt;script&gt;alert("), "the reason is shown");
    // Per-turn table with the warm-up marked, and the two charts (two depths at S = 4).
    assert!(html.contains("id=\"session-turns\""));
    assert!(html.contains("class=\"s-valid warmup\""));
    assert!(html.contains("0 (warm-up, not measured)"));
    assert!(html.contains("id=\"session-ttft\""));
    assert!(html.contains("id=\"session-hit-rate\""));
    assert!(html.contains("data-series=\"S = 4\""));
    // The legend lists the statuses of session cells only (the golden run's Over capacity
    // decode cells are not among them).
    let legend = &html[html.find("id=\"session-legend\"").expect("legend")..];
    let legend = &legend[..legend.find("</ul>").expect("legend end")];
    assert!(
        legend.contains("s-failed") && legend.contains("s-not_run"),
        "{legend}"
    );
    assert!(!legend.contains("s-over_capacity"), "{legend}");
}

#[test]
fn a_run_without_session_rows_has_no_sessions_section() {
    let r = Report::from_loaded(crate::model::tests::golden());
    assert!(!render(&r, Format::Html).contains("id=\"sessions\""));
    assert!(!render(&r, Format::Markdown).contains("## Sessions"));
}

#[test]
fn markdown_has_the_session_matrix_notes_and_turns() {
    let md = render(&session_report(), Format::Markdown);
    assert!(md.contains("\n## Sessions\n"), "{md}");
    assert!(
        md.contains("| History | 4 sessions | 16 sessions |"),
        "{md}"
    );
    assert!(
        md.contains(
            "| 8K | 1,234.5 tok/s<br>TTFT 120 / 450 ms<br>45.2 tok/s per request<br>hit 92.1 % / \
             93.0 %<br>12 turns | Failed |"
        ),
        "{md}"
    );
    assert!(md.contains("| 32K | 800.0 tok/s<br>"), "{md}");
    assert!(md.contains("| Not run |"), "{md}");
    assert!(md.contains("- 32K × 4: prefix caching looks off"), "{md}");
    // Server text is escaped: no raw tag reaches the Markdown.
    assert!(
        md.contains("- 8K × 16: \\<script\\>alert('x')\\</script\\>"),
        "{md}"
    );
    assert!(!md.contains("<script>"));
    assert!(md.contains("### Turns"), "{md}");
    assert!(
        md.contains(
            "| 8K | 4 | 0 (warm-up, not measured) | 4 | 32,768 | 0 | 0 | 900 ms | 225 ms | 675 ms |"
        ),
        "{md}"
    );
    assert!(
        md.contains("| 8K | 4 | 1 | 4 | 40,000 | 46,050 | 46,500 | 120 ms | 30 ms | 90 ms |"),
        "{md}"
    );
}

#[test]
fn csv_has_the_session_columns() {
    let csv = render(&session_report(), Format::Csv);
    let header: Vec<&str> = csv.lines().next().expect("header").split(',').collect();
    let at = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name} in {header:?}"))
    };
    let row: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("Sessions,8192,4,Valid,"))
        .expect("the 8K × 4 row")
        .split(',')
        .collect();
    assert_eq!(row[at("Session turns completed")], "12");
    assert_eq!(row[at("Session prompt tokens")], "100000");
    assert_eq!(row[at("Session cached tokens")], "92100");
    assert_eq!(row[at("Session predicted cached tokens")], "93000");
    assert_eq!(row[at("Session cache hit rate")], "0.921");
    assert_eq!(row[at("Session predicted cache hit rate")], "0.93");
    assert_eq!(row[at("Session TPOT p50 (ms)")], "22.1");
    // A not-run row's session columns are empty, never 0.
    let not_run: Vec<&str> = csv
        .lines()
        .find(|l| l.starts_with("Sessions,32768,16,Not run,"))
        .expect("the not-run row")
        .split(',')
        .collect();
    assert_eq!(not_run[at("Session turns completed")], "");
    assert_eq!(not_run[at("Session cache hit rate")], "");
    assert!(csv.lines().all(|l| l.split(',').count() >= header.len()));
}

#[test]
fn session_rows_validate_against_the_schema() {
    let doc: Value = serde_json::from_str(&render(&session_report(), Format::Json)).expect("JSON");
    let sessions: Vec<&Value> = doc["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| c["phase"] == "session")
        .collect();
    assert_eq!(sessions.len(), 4);
    let errs = super::schema::errors(&doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let at = doc["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .position(|c| c["phase"] == "session" && c["status"] == "valid")
        .expect("a valid session row");
    let mut broken = doc.clone();
    if let Some(o) = broken["cells"][at].as_object_mut() {
        o.remove("cache_hit_rate");
    }
    assert!(
        !super::schema::errors(&broken).is_empty(),
        "a missing column"
    );
    let mut broken = doc.clone();
    broken["cells"][at]["per_turn"][0]["measured"] = Value::from("no");
    assert!(
        !super::schema::errors(&broken).is_empty(),
        "a bad per-turn row"
    );
    let not_run = doc["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .position(|c| c["phase"] == "session" && c["status"] == "not_run")
        .expect("a not-run session row");
    let mut broken = doc.clone();
    broken["cells"][not_run]["turns_completed"] = Value::from(0);
    assert!(
        !super::schema::errors(&broken).is_empty(),
        "0 instead of null"
    );
}

/// B: every session cell twice as fast with half the TTFT; both runs have the matrix.
#[test]
fn compare_shows_both_runs_session_matrices_with_ratios() {
    let a = session_report();
    let mut b = session_report();
    for c in b.cells.iter_mut().filter(|c| c.phase == Phase::Session) {
        c.total_tok_per_s = c.total_tok_per_s.map(|v| v * 2.0);
        c.ttft_ms_p50 = c.ttft_ms_p50.map(|v| v * 0.5);
    }
    let cmp = Comparison::new(vec![("a".into(), a), ("b".into(), b)]).expect("two runs");
    let text = cmp.to_text();
    let line = text
        .lines()
        .find(|l| l.starts_with("Sessions") && l.contains(" 8K ") && l.contains("1,234.5"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("1,234.5 tok/s · TTFT p50 120 ms"), "{line}");
    assert!(
        line.contains("2,469.0 tok/s ×2.00 · TTFT p50 60 ms ×0.50"),
        "{line}"
    );
    let html = cmp.to_html().expect("html");
    assert!(html.contains("id=\"compare-session-matrix\""), "no matrix");
    assert!(html.contains(&slash("2,469.0 tok/s ×2.00 · TTFT p50 60 ms ×0.50")));
    assert!(!html.contains("<script>alert("));
}
