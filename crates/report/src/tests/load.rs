//! The Load section on known answers: the golden run plus open-loop rows built with
//! llmib_core's own row functions (rate cells at 8K, a capacity row at 8K and one at 16K where
//! no rate holds), through the Markdown, CSV, JSON and HTML exporters and `compare`.

use crate::pareto::frontier;
use crate::{Comparison, Format, Report};
use llmib_core::{
    ArrivalPattern, Capacity, CapacityInputs, CellResult, Chunk, CountReport, Outcome,
    RequestRecord, Slo, TokenCountSource,
};
use llmib_core::{RateObservation, capacity_cell, capacity_result, rate_cell, rate_result};
use std::path::Path;

const MS: u64 = 1_000_000;
pub(crate) const SLO: &str = "ttft_p99=400ms,tpot_p50=20ms";

fn golden() -> Report {
    Report::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run"))
        .expect("golden run")
}

/// `n` requests due every 1/rate s; request i is sent `late_ms × i` late, gets its first token
/// `ttft_ms` after the send and then `tokens − 1` more, `tpot_ms` apart.
pub(crate) fn rate_row(
    ctx: (u64, &str),
    rate: f64,
    ttft_ms: u64,
    tpot_ms: u64,
    late_ms: u64,
) -> CellResult {
    let n = 8u32;
    let tokens = 20u64;
    let gap = (1000.0 / rate) as u64;
    let due: Vec<u64> = (0..u64::from(n)).map(|i| i * gap * MS).collect();
    let records: Vec<RequestRecord> = (0..n)
        .map(|i| {
            let sent = due[i as usize] + u64::from(i) * late_ms * MS;
            let first = sent + ttft_ms * MS;
            let chunks: Vec<Chunk> = (0..tokens)
                .map(|k| Chunk {
                    t_ns: first + k * tpot_ms * MS,
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
                completion_tokens_reported: Some(tokens),
                cached_tokens_reported: None,
                repetition: None,
                structured: None,
                text: None,
            }
        })
        .collect();
    let slo: Slo = SLO.parse().expect("slo");
    rate_result(
        &rate_cell(ctx.0, ctx.1, rate),
        RateObservation {
            records: &records,
            scheduled_ns: &due,
            waited: &vec![false; n as usize],
            requested_rate: rate,
            arrival: ArrivalPattern::Constant,
            max_concurrency: None,
            max_in_flight: 4,
            slo: Some(&slo),
            count: CountReport::new(),
            nominal_source: TokenCountSource::ServerUsagePerChunk,
            expected_prompt_tokens: ctx.0,
            prompt_tolerance: 0,
            expected_prompts: None,
            workload: None,
            stop_reason: None,
            fault: None,
        },
    )
}

fn capacity_row(ctx: (u64, &str), answer: Capacity, points: &[CellResult]) -> CellResult {
    let slo: Slo = SLO.parse().expect("slo");
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
}

/// The golden run with open-loop rows: at 8K, rates 1, 2, 4 (all hold the SLO) and 8 (TTFT
/// p99 over 400 ms, and the client falls 30 ms further behind with each send: a pacing
/// warning); capacity 4/s at 8K, none at 16K (its one rate fails).
pub(crate) fn load_report() -> Report {
    let mut r = golden();
    let k8 = (8192, "8K");
    let k16 = (16384, "16K");
    let rates = vec![
        rate_row(k8, 1.0, 100, 10, 0),
        rate_row(k8, 2.0, 120, 12, 0),
        rate_row(k8, 4.0, 200, 15, 0),
        rate_row(k8, 8.0, 900, 30, 30),
    ];
    let at16 = vec![rate_row(k16, 1.0, 800, 25, 0)];
    let cap8 = capacity_row(
        k8,
        Capacity::Found {
            rate: 4.0,
            failed_at: 8.0,
        },
        &rates,
    );
    let cap16 = capacity_row(k16, Capacity::None, &at16);
    r.cells.extend(rates);
    r.cells.extend(at16);
    r.cells.push(cap8);
    r.cells.push(cap16);
    r.cells.sort_by_key(CellResult::key);
    r
}

fn find(r: &Report, phase: llmib_core::Phase, tokens: u64, rate: Option<f64>) -> &CellResult {
    r.cells
        .iter()
        .find(|c| c.phase == phase && c.context_tokens == tokens && c.request_rate == rate)
        .expect("row")
}

#[test]
fn the_fixture_has_the_figures_it_claims() {
    let r = load_report();
    let c = find(&r, llmib_core::Phase::Rate, 8192, Some(8.0));
    assert!(
        c.rate
            .as_ref()
            .and_then(|f| f.pacing_warning.as_ref())
            .is_some()
    );
    let a = c.achieved_request_rate.flatten().expect("achieved");
    // Sends at 0, 155, 310, … ms: 7 gaps of 155 ms.
    assert!((a - 7.0 / 1.085).abs() < 1e-9, "{a}");
    let cap = find(&r, llmib_core::Phase::Capacity, 8192, Some(4.0));
    assert_eq!(cap.capacity_request_rate, Some(Some(4.0)));
    let none = find(&r, llmib_core::Phase::Capacity, 16384, None);
    assert_eq!(none.capacity_request_rate, Some(None));
}

#[test]
fn the_pareto_frontier_of_hand_made_points() {
    // (per-user, total): (10, 100) and (50, 60) and (80, 20) are not beaten on both axes;
    // (40, 50) is beaten by (50, 60); (10, 90) by (10, 100); (80, 20) and a copy both stay.
    let pts = [
        (40.0, 50.0),
        (10.0, 100.0),
        (80.0, 20.0),
        (50.0, 60.0),
        (10.0, 90.0),
        (80.0, 20.0),
    ];
    assert_eq!(frontier(&pts), vec![1, 3, 2, 5]);
    assert_eq!(frontier(&[]), Vec::<usize>::new());
    assert_eq!(frontier(&[(1.0, 1.0)]), vec![0]);
}

#[test]
fn the_pareto_chart_mixes_decode_and_rate_cells() {
    let r = load_report();
    let pts = crate::pareto::points(&r, 8192);
    assert!(pts.iter().any(|p| p.kind == "decode"));
    assert!(pts.iter().any(|p| p.kind == "rate"));
    // The 8K × 1 decode cell is the fastest per user (190.7 tok/s total, one request).
    let xy: Vec<(f64, f64)> = pts.iter().map(|p| (p.per_user, p.total)).collect();
    for (p, &(x, y)) in pts.iter().zip(&xy) {
        let beaten = xy
            .iter()
            .any(|&(a, b)| a >= x && b >= y && (a > x || b > y));
        assert_eq!(p.on_frontier, !beaten, "{}", p.label);
    }
    // A rate cell's per-user figure is 1 / TPOT: 1 / 10 ms = 100 tok/s.
    let one = pts
        .iter()
        .find(|p| p.label == "8K at 1/s")
        .expect("rate point");
    assert!((one.per_user - 100.0).abs() < 1e-6, "{}", one.per_user);
}

#[test]
fn markdown_carries_the_capacity_and_rate_rows() {
    let md = Format::Markdown
        .exporter()
        .render(&load_report())
        .expect("md");
    assert!(md.contains("\n## Load\n"), "{md}");
    assert!(md.contains("### Capacity under the SLO"));
    // 8K: 4/s holds, 8/s fails; no decode cell was judged, so no concurrency: a dash.
    let cap8 = md
        .lines()
        .find(|l| l.starts_with("| 8K | 4/s |"))
        .expect("8K capacity row");
    assert!(cap8.contains("| — |"), "{cap8}");
    assert!(cap8.contains("| 4 |"), "4 measured points: {cap8}");
    let cap16 = md
        .lines()
        .find(|l| l.starts_with("| 16K | no rate meets the SLO |"))
        .expect("16K capacity row");
    assert!(!cap16.contains("| 0 |"), "null is a dash, never 0: {cap16}");
    // The 1/s rate cell: 8 sent, all completed, none failed; TTFT 100 ms; TPOT 10 ms; 100 %.
    let r1 = md
        .lines()
        .find(|l| l.starts_with("| 8K | 1/s | 1/s | 8 | 8 | 0 |"))
        .expect("1/s row");
    assert!(r1.contains("| 100 ms | 100 ms | 10.0 ms |"), "{r1}");
    assert!(r1.contains("| 100.0% |"), "{r1}");
    assert!(md.contains("### Pareto frontier"));
    assert!(md.contains("8K at 8/s (achieved 6.452/s): the client could not keep"));
    // Open-loop rows are in the Load section, not in All measurements.
    assert!(!md.contains("| Open-loop rate |"));
}

#[test]
fn csv_carries_a_rate_rows_figures_and_nulls_stay_empty() {
    let csv = Format::Csv.exporter().render(&load_report()).expect("csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(header[0], "Phase", "the seed's columns first");
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("{name}"))
    };
    let rate_rows: Vec<Vec<&str>> = csv
        .lines()
        .filter(|l| l.starts_with("Open-loop rate,8192,"))
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rate_rows.len(), 4);
    let r2 = rate_rows
        .iter()
        .find(|r| r[col("Request rate (req/s)")] == "2")
        .expect("2/s");
    assert_eq!(r2[col("Failed requests")], "0");
    assert_eq!(r2[col("SLO attainment")], "1");
    assert_eq!(r2[col("Rate TPOT p50 (ms)")], "12");
    assert_eq!(
        r2[col("Capacity request rate (req/s)")],
        "",
        "not a capacity row"
    );
    assert_eq!(
        r2[col("Requests at once")],
        "",
        "N does not apply: empty, not 0"
    );
    let cap16 = csv
        .lines()
        .find(|l| l.starts_with("Capacity,16384,"))
        .expect("16K capacity");
    let c: Vec<&str> = cap16.split(',').collect();
    assert_eq!(c[col("Capacity request rate (req/s)")], "", "null, not 0");
    assert_eq!(c[col("Capacity concurrency")], "");
}

#[test]
fn json_carries_the_open_loop_rows() {
    let text = Format::Json
        .exporter()
        .render(&load_report())
        .expect("json");
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let cells = v["cells"].as_array().expect("cells");
    let cap = cells
        .iter()
        .find(|c| c["phase"] == "capacity" && c["context_tokens"] == 16384)
        .expect("capacity row");
    assert!(cap["capacity_request_rate"].is_null());
    assert!(
        cells
            .iter()
            .any(|c| c["phase"] == "rate" && c["request_rate"] == 8.0)
    );
}

#[test]
fn html_has_the_load_section_and_escapes_server_strings() {
    let mut r = load_report();
    for c in &mut r.cells {
        if let Some(f) = c.rate.as_mut().filter(|f| f.pacing_warning.is_some()) {
            f.pacing_warning = Some("<img src=x onerror=alert(2)>".into());
        }
        if let Some(f) = c.capacity.as_mut() {
            f.slo = "<script>alert(1)</script>".into();
        }
    }
    let html = Format::Html.exporter().render(&r).expect("html");
    for id in [
        "id=\"load\"",
        "id=\"capacity-table\"",
        "id=\"rate-table\"",
        "id=\"pareto-0\"",
    ] {
        assert!(html.contains(id), "{id}");
    }
    assert!(html.contains("class=\"frontier\""));
    assert!(html.contains("id=\"load-0-ttft\"") && html.contains("id=\"load-0-attainment\""));
    assert!(
        html.contains("class=\"achieved\""),
        "the achieved rate is marked"
    );
    assert!(html.contains("no rate meets the SLO"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"));
    assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"));
    assert!(!html.contains("<script>alert(1)") && !html.contains("<img src=x"));
    let md = Format::Markdown.exporter().render(&r).expect("md");
    assert!(md.contains("\\<script\\>alert(1)\\</script\\>"), "{md}");
    // Without open-loop rows there is no Load section.
    let plain = Format::Html.exporter().render(&golden()).expect("html");
    assert!(!plain.contains("id=\"load\""));
}

#[test]
fn compare_pairs_rate_cells_by_rate_and_capacity_rows_by_context() {
    let a = load_report();
    let mut b = load_report();
    for c in &mut b.cells {
        if c.phase == llmib_core::Phase::Rate && c.request_rate == Some(4.0) {
            c.goodput_rps = Some(c.goodput_rps.flatten().map(|g| g + 0.5));
        }
        if c.phase == llmib_core::Phase::Capacity && c.context_tokens == 8192 {
            c.capacity_request_rate = Some(Some(6.0));
            c.capacity_concurrency = Some(Some(16));
        }
    }
    let cmp = Comparison::new(vec![("a".into(), a), ("b".into(), b)]).expect("compare");
    let rates: Vec<_> = cmp
        .rows
        .iter()
        .filter(|r| r.phase == llmib_core::Phase::Rate)
        .collect();
    assert_eq!(
        rates.len(),
        5,
        "4 rates at 8K, 1 at 16K: paired, not merged"
    );
    let r4 = rates
        .iter()
        .find(|r| r.request_rate == Some(4.0))
        .expect("4/s");
    assert!(r4.entries.iter().all(|(c, _)| c.is_some()));
    let text = cmp.to_text();
    assert!(text.contains("goodput"), "{text}");
    assert!(text.contains("(+0.5)"), "goodput delta: {text}");
    assert!(text.contains("max rate 6/s (+2)"), "{text}");
    assert!(text.contains("max N 16"), "{text}");
    assert!(text.contains("no rate meets the SLO"), "{text}");
    let html = cmp.to_html().expect("html");
    // minijinja escapes `/` too.
    assert!(html.contains("max rate 6&#x2f;s (+2)"), "{html}");
}

#[test]
fn planned_open_loop_rows_without_a_result_show_as_not_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/seed-run");
    let mut run = llmib_core::RunDir::open(dir)
        .and_then(|d| d.load())
        .expect("golden");
    run.info.plan.cells.push(rate_cell(8192, "8K", 2.5));
    run.info.plan.cells.push(capacity_cell(8192, "8K"));
    let r = Report::from_loaded(run);
    let rate = find(&r, llmib_core::Phase::Rate, 8192, Some(2.5));
    assert_eq!(rate.status, llmib_core::CellStatus::NotRun);
    let md = Format::Markdown.exporter().render(&r).expect("md");
    assert!(md.contains("| 8K | 2.5/s | — | — | — | — |"), "{md}");
    // A capacity row that was never searched says so, not "no rate meets the SLO".
    assert!(md.contains("| 8K | Not run | — |"), "{md}");
    // With a rate cell at 8K in the last key position, the rows stay in key order.
    let keys: Vec<_> = r.cells.iter().map(CellResult::key).collect();
    assert!(keys.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn a_capacity_that_reached_the_ceiling_is_at_least() {
    let rows = vec![rate_row((8192, "8K"), 1.0, 100, 10, 0)];
    let c = capacity_row((8192, "8K"), Capacity::AtLeast { rate: 1.0 }, &rows);
    assert_eq!(crate::load::capacity_rate_text(&c), "≥ 1/s");
}

/// A Failed cell says why in the notes of every report (the table says only "Failed"; the
/// reason was left in cells.jsonl).
#[test]
fn a_failed_cells_reason_is_in_the_notes() {
    let mut r = load_report();
    let mut stalled = CellResult::empty(
        llmib_core::Phase::Decode,
        8192,
        "8K",
        4,
        llmib_core::CellStatus::Failed,
    );
    stalled.status_reason = Some("the window stalled: no token for 2 s".into());
    r.cells.push(stalled);
    let mut rate = find(&r, llmib_core::Phase::Rate, 8192, Some(2.0)).clone();
    rate.status = llmib_core::CellStatus::Failed;
    rate.first_error = Some("HTTP 500: <boom>".into());
    r.cells.push(rate);
    let md = Format::Markdown.exporter().render(&r).expect("md");
    assert!(
        md.contains("Sustained decode 8K × 4 failed: the window stalled: no token for 2 s"),
        "{md}"
    );
    assert!(
        md.contains("Open-loop rate 8K at 2/s failed: HTTP 500"),
        "{md}"
    );
    let html = Format::Html.exporter().render(&r).expect("html");
    assert!(html.contains("the window stalled: no token for 2 s"));
    assert!(!html.contains("<boom>"), "server text is escaped");
}

/// The run's request controls are in the Run card of every report, only when set.
#[test]
fn request_controls_are_shown_when_set() {
    let mut r = golden();
    let plain = Format::Markdown.exporter().render(&r).expect("md");
    assert!(!plain.contains("Request controls"));
    r.info.plan.settings.request.temperature = Some(0.6);
    r.info.plan.settings.request.seed = Some(7);
    let md = Format::Markdown.exporter().render(&r).expect("md");
    assert!(md.contains("Request controls"), "{md}");
    assert!(md.contains("temperature 0.6, seed 7"), "{md}");
}

/// Speculative decoding per decode cell: a table in Markdown (and a CSV column) where a row
/// shows it; none where no row does.
#[test]
fn speculative_decoding_is_a_table_where_the_server_reports_it() {
    let mut r = golden();
    let plain = Format::Markdown.exporter().render(&r).expect("md");
    assert!(!plain.contains("Speculative decoding"));
    let c = r
        .cells
        .iter_mut()
        .find(|c| c.phase == llmib_core::Phase::Decode && c.status.has_figures())
        .expect("a measured decode row");
    c.speculative = Some(llmib_core::SpecFigures {
        accept_rate: Some(0.8),
        accept_length: Some(3.4),
        source: "server counters (delta over the window)".into(),
        per_position_accept_rate: Vec::new(),
    });
    c.tokens_per_chunk = Some(3.38);
    let md = Format::Markdown.exporter().render(&r).expect("md");
    assert!(md.contains("## Speculative decoding"), "{md}");
    assert!(md.contains("| 80.0% | 3.40 | 3.38 |"), "{md}");
    let csv = Format::Csv.exporter().render(&r).expect("csv");
    assert!(
        csv.lines()
            .next()
            .expect("header")
            .split(',')
            .any(|h| h == "Tokens per chunk")
    );
    assert!(csv.contains(",0.8,3.4,3.38"), "{csv}");
}
