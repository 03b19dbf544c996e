//! The sweep report: a sweep directory (`sweep.json` and a results directory per combination)
//! as one table of each combination's settings against its headline figures, the Pareto
//! frontier of output tok/s per GPU against tok/s per user over every measured cell of every
//! combination, and for each capacity search the combination that holds the SLO best. Written
//! as `sweep.md`, `sweep.html` (self-contained, auto-escaped) and `sweep-report.json`. The
//! frontier and the picks are `llmib_core`'s (`frontier_points`, `slo_picks`).

use crate::chart_frame::{Frame, H, W, r1};
use crate::html::{self, render_template, ser};
use crate::markdown::escape;
use crate::{ReportError, number};
use llmib_core::{
    CellResult, ComboRecord, ComboRows, ComboState, FrontierPoint, Phase, RunDir, RunInfo,
    SWEEP_FILE, SloPick, SweepFile, frontier_points, slo_picks,
};
use minijinja::Value;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// One combination's line of the table.
#[derive(Debug, Clone, Serialize)]
pub struct ComboLine {
    /// Its name (its results directory).
    pub name: String,
    /// Its run's page (`NAME/report.html` in a sweep directory, `/runs/ID` on a hub), where it
    /// was measured.
    pub href: Option<String>,
    /// `name=value` of each parameter.
    pub settings: String,
    /// `measured`, `failed_to_start`, …
    pub state: String,
    /// Why, where it says.
    pub reason: Option<String>,
    /// GPUs, where known.
    pub gpus: Option<u32>,
    /// The best prefill tok/s and its context.
    pub prefill: Option<String>,
    /// The best decode total tok/s and its cell.
    pub decode: Option<String>,
    /// The best total tok/s per GPU over every measured cell.
    pub best_tok_per_s_per_gpu: Option<f64>,
    /// Each capacity row's answer (`8K ttft_p99=2s: 12.5 req/s`).
    pub capacity: Vec<String>,
    /// The lowest $ per million output tokens of its cells, where a price was given.
    pub usd_per_m_output_tokens: Option<f64>,
    /// The lowest joules per output token of its cells, where the power samples back it.
    pub joules_per_output_token: Option<f64>,
    /// Seconds the server took to answer after its start.
    pub start_s: Option<f64>,
    /// The last lines of its server's log, where it failed.
    pub log_tail: Vec<String>,
}

/// The whole sweep report, as `sweep-report.json` holds it.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    /// The server command template (redacted), or none for a list of URLs.
    pub serve: Option<String>,
    /// The run flags every combination was measured with (redacted).
    pub run_args: Vec<String>,
    /// Every combination's line, in run order.
    pub combinations: Vec<ComboLine>,
    /// Every measured cell as a point; `on_frontier` marks the frontier.
    pub points: Vec<FrontierPoint>,
    /// For each capacity search: the best combination, its margin, and who never held it.
    pub picks: Vec<SloPick>,
    /// Whether throughput is per GPU (every GPU count known) or per server.
    pub per_gpu: bool,
}

/// Reads a sweep directory into its report.
pub fn sweep_report(dir: &Path) -> Result<SweepReport, ReportError> {
    let path = dir.join(SWEEP_FILE);
    let text = std::fs::read_to_string(&path).map_err(|source| ReportError::Read {
        path: path.clone(),
        source,
    })?;
    let file: SweepFile = serde_json::from_str(&text)?;
    Ok(sweep_report_of(
        &file,
        |c| rows_of(dir, c),
        |c| Some(format!("{}/report.html", c.name)),
    ))
}

/// A sweep's report from its file, each combination's measured rows (`rows_of`: `None` where
/// it has none) and the link to its run's page (`href_of`, for a combination with rows): the
/// sweep directory's own files, or a hub's stored runs.
pub fn sweep_report_of(
    file: &SweepFile,
    rows_of: impl Fn(&ComboRecord) -> Option<ComboRows>,
    href_of: impl Fn(&ComboRecord) -> Option<String>,
) -> SweepReport {
    let combos: Vec<(ComboRecord, Option<ComboRows>)> = file
        .combinations
        .iter()
        .map(|c| (c.clone(), rows_of(c)))
        .collect();
    let measured: Vec<ComboRows> = combos.iter().filter_map(|(_, r)| r.clone()).collect();
    let per_gpu = !measured.is_empty() && measured.iter().all(|c| c.gpus.is_some());
    SweepReport {
        serve: file.spec.serve.clone(),
        run_args: file.spec.run_args.clone(),
        combinations: combos
            .iter()
            .map(|(c, r)| {
                let href = r.as_ref().and_then(|_| href_of(c));
                line(c, r.as_ref(), href)
            })
            .collect(),
        points: frontier_points(&measured),
        picks: slo_picks(&measured),
        per_gpu,
    }
}

/// A combination's rows as the report reads them from its run: its cells and the GPU count
/// of its figures per GPU (`--gpus`, given to every combination's run, else the count
/// detected on the server's machine).
pub fn combo_rows(name: &str, info: &RunInfo, cells: Vec<CellResult>) -> ComboRows {
    ComboRows {
        name: name.to_string(),
        gpus: info.plan.settings.economics.server_gpus().map(|g| g.0),
        rows: cells,
    }
}

/// A combination's rows and GPU count, where its run wrote a results directory.
fn rows_of(dir: &Path, c: &ComboRecord) -> Option<ComboRows> {
    if c.state == ComboState::Pending {
        return None;
    }
    let run = RunDir::open(dir.join(&c.name)).ok()?.load().ok()?;
    Some(combo_rows(&c.name, &run.info, run.cells))
}

/// The best row of `rows` by `figure`, in words with its cell.
fn best(
    rows: &[CellResult],
    phase: Phase,
    figure: fn(&CellResult) -> Option<f64>,
) -> Option<String> {
    rows.iter()
        .filter(|r| r.phase == phase && r.status.has_figures())
        .filter_map(|r| figure(r).map(|v| (v, r)))
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(v, r)| match phase {
            Phase::Prefill => format!("{} at {}", number::rate(v), r.context_label),
            _ => format!(
                "{} at {} × {}",
                number::rate(v),
                r.context_label,
                r.concurrency
            ),
        })
}

/// A capacity row's answer in words.
fn capacity_words(r: &CellResult) -> Option<String> {
    if r.phase != Phase::Capacity {
        return None;
    }
    let slo = r.capacity.as_ref().map_or("", |f| f.slo.as_str());
    let answer = match (r.session.capacity_sessions, r.capacity_request_rate) {
        (Some(Some(s)), _) => format!("{s} sessions"),
        (Some(None), _) | (None, Some(None)) => "never held".to_string(),
        (None, Some(Some(rate))) => format!("{} req/s", number::rate(rate)),
        (None, None) => match r.session.capacity_session_rate? {
            Some(rate) => format!("{} sessions/s", number::rate(rate)),
            None => "never held".to_string(),
        },
    };
    Some(format!("{} {slo}: {answer}", r.context_label))
}

/// The lowest of a cost or energy figure over the measured cells.
fn lowest(rows: &[CellResult], f: fn(&llmib_core::CellEconomics) -> Option<f64>) -> Option<f64> {
    rows.iter()
        .filter(|r| r.status.has_figures() && r.phase != Phase::Prefill)
        .filter_map(|r| r.economics.as_deref().and_then(f))
        .filter(|v| v.is_finite())
        .reduce(f64::min)
}

/// The table's line of one combination.
fn line(c: &ComboRecord, rows: Option<&ComboRows>, href: Option<String>) -> ComboLine {
    let empty = Vec::new();
    let cells = rows.map_or(&empty, |r| &r.rows);
    let per = f64::from(rows.and_then(|r| r.gpus).unwrap_or(1).max(1));
    ComboLine {
        name: c.name.clone(),
        href,
        settings: c
            .params
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        state: serde_json::to_value(c.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        reason: c.reason.clone(),
        gpus: rows.and_then(|r| r.gpus),
        prefill: best(cells, Phase::Prefill, |r| r.prompt_tok_per_s),
        decode: best(cells, Phase::Decode, |r| r.total_tok_per_s),
        best_tok_per_s_per_gpu: cells
            .iter()
            .filter(|r| r.status.has_figures() && r.phase != Phase::Prefill)
            .filter_map(|r| r.total_tok_per_s)
            .map(|v| v / per)
            .reduce(f64::max),
        capacity: cells.iter().filter_map(capacity_words).collect(),
        usd_per_m_output_tokens: lowest(cells, |e| e.usd_per_m_output_tokens),
        joules_per_output_token: lowest(cells, |e| {
            e.power_valid.then_some(e.joules_per_output_token).flatten()
        }),
        start_s: c.start_s,
        log_tail: c.log_tail.clone(),
    }
}

/// The sweep as Markdown.
pub fn sweep_markdown(r: &SweepReport) -> String {
    let mut md = String::from("# Sweep\n\n");
    if let Some(s) = &r.serve {
        md.push_str(&format!("Server command: `{}`\n\n", s.replace('`', "'")));
    }
    md.push_str(&format!(
        "Run flags: `{}`\n\n",
        r.run_args.join(" ").replace('`', "'")
    ));
    let unit = if r.per_gpu { "GPU" } else { "server" };
    md.push_str(&format!(
        "| Combination | Settings | State | Prefill tok/s | Best decode tok/s | Best tok/s per {unit} | Capacity | $ / M output tokens | J / output token | Start |\n|---|---|---|---|---|---|---|---|---|---|\n"
    ));
    for c in &r.combinations {
        let state = match &c.reason {
            Some(why) => format!("{}: {}", c.state, why),
            None => c.state.clone(),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            escape(&c.name),
            escape(&c.settings),
            escape(&state),
            c.prefill.as_deref().unwrap_or("—"),
            c.decode.as_deref().unwrap_or("—"),
            c.best_tok_per_s_per_gpu.map_or("—".into(), number::rate),
            escape(&c.capacity.join("; ")),
            c.usd_per_m_output_tokens
                .map_or("—".into(), |v| format!("${v:.3}")),
            c.joules_per_output_token
                .map_or("—".into(), |v| format!("{v:.3} J")),
            c.start_s.map_or("—".into(), |s| format!("{s:.1} s")),
        ));
    }
    md.push_str(&picks_markdown(r));
    md.push_str(&frontier_markdown(r, unit));
    md
}

/// The SLO picks in words.
fn picks_markdown(r: &SweepReport) -> String {
    let mut md = String::new();
    if r.picks.is_empty() {
        return md;
    }
    md.push_str("\n## Best at each SLO\n\n");
    for p in &r.picks {
        let best = match (&p.best, p.margin) {
            (Some(b), Some(m)) => format!("**{}**, {:+.1} % over the next", escape(b), m * 100.0),
            (Some(b), None) => format!("**{}** (the only one that holds it)", escape(b)),
            (None, _) => "none holds it".to_string(),
        };
        md.push_str(&format!(
            "- {} context, {} ({}): {best}",
            p.context,
            escape(&p.slo),
            p.unit
        ));
        if !p.never.is_empty() {
            md.push_str(&format!("; never held by {}", escape(&p.never.join(", "))));
        }
        md.push('\n');
    }
    md
}

/// The frontier's points in a list, best per-user speed first.
fn frontier_markdown(r: &SweepReport, unit: &str) -> String {
    let mut on: Vec<&FrontierPoint> = r.points.iter().filter(|p| p.on_frontier).collect();
    if on.is_empty() {
        return String::new();
    }
    on.sort_by(|a, b| b.tok_per_s_per_user.total_cmp(&a.tok_per_s_per_user));
    let mut md = format!(
        "\n## Pareto frontier: output tok/s per {unit} against tok/s per user\n\n{} points measured, {} on the frontier:\n\n| Combination | Cell | tok/s per user | tok/s per {unit} |\n|---|---|---|---|\n",
        r.points.len(),
        on.len()
    );
    for p in on {
        md.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            escape(&p.combination),
            escape(&p.cell),
            number::rate(p.tok_per_s_per_user),
            number::rate(p.tok_per_s_per_gpu)
        ));
    }
    md
}

/// A point as drawn on the page's chart.
#[derive(Debug, Clone, Serialize)]
struct Dot {
    x: f64,
    y: f64,
    on_frontier: bool,
    /// The combination's index, for its colour.
    series: usize,
    title: String,
}

/// The page's chart: every point, coloured by combination, and the frontier's line.
#[derive(Debug, Clone, Serialize)]
struct Chart {
    width: f64,
    height: f64,
    frame: Frame,
    dots: Vec<Dot>,
    frontier: String,
}

fn chart(r: &SweepReport, unit: &str) -> Option<Chart> {
    if r.points.is_empty() {
        return None;
    }
    let x_max = r
        .points
        .iter()
        .map(|p| p.tok_per_s_per_user)
        .fold(0.0, f64::max);
    let y_max = r
        .points
        .iter()
        .map(|p| p.tok_per_s_per_gpu)
        .fold(0.0, f64::max);
    let frame = Frame::new(
        x_max,
        y_max,
        "tok/s per user",
        &format!("output tok/s per {unit}"),
    );
    let series = |name: &str| {
        r.combinations
            .iter()
            .position(|c| c.name == name)
            .unwrap_or(0)
    };
    let dots: Vec<Dot> = r
        .points
        .iter()
        .map(|p| Dot {
            x: frame.sx(p.tok_per_s_per_user),
            y: frame.sy(p.tok_per_s_per_gpu),
            on_frontier: p.on_frontier,
            series: series(&p.combination) % 8,
            title: format!(
                "{} · {}: {} tok/s per user, {} tok/s per {unit}",
                p.combination,
                p.cell,
                number::rate(p.tok_per_s_per_user),
                number::rate(p.tok_per_s_per_gpu)
            ),
        })
        .collect();
    let mut on: Vec<&Dot> = dots.iter().filter(|d| d.on_frontier).collect();
    on.sort_by(|a, b| a.x.total_cmp(&b.x));
    let frontier = on
        .iter()
        .map(|d| format!("{},{}", r1(d.x), r1(d.y)))
        .collect::<Vec<_>>()
        .join(" ");
    Some(Chart {
        width: W,
        height: H,
        frame,
        dots,
        frontier,
    })
}

/// The sweep as one self-contained HTML page.
pub fn sweep_html(r: &SweepReport) -> Result<String, ReportError> {
    let unit = if r.per_gpu { "GPU" } else { "server" };
    let ctx = minijinja::context! {
        r => ser(r),
        unit => unit,
        chart => ser(chart(r, unit)),
        generator => html::generator(),
        css => Value::from_safe_string(html::CSS.to_string()),
        js => Value::from_safe_string(html::JS.to_string()),
    };
    render_template("sweep.html", ctx)
}

/// The results directories of a sweep's measured combinations, in run order (`compare SWEEP`
/// sets them side by side); `None` when `dir` is not a sweep.
pub fn sweep_runs(dir: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(dir.join(SWEEP_FILE)).ok()?;
    let file: SweepFile = serde_json::from_str(&text).ok()?;
    Some(
        file.combinations
            .iter()
            .filter(|c| c.state == ComboState::Measured)
            .map(|c| dir.join(&c.name))
            .filter(|d| d.join("run.json").is_file())
            .collect(),
    )
}

/// Writes `sweep.md`, `sweep.html` and `sweep-report.json` into the sweep directory.
pub fn write_sweep_report(dir: &Path) -> Result<Vec<PathBuf>, ReportError> {
    let r = sweep_report(dir)?;
    let files = [
        ("sweep.md", sweep_markdown(&r)),
        ("sweep.html", sweep_html(&r)?),
        ("sweep-report.json", serde_json::to_string_pretty(&r)?),
    ];
    let mut written = Vec::new();
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| ReportError::Write {
            path: path.clone(),
            source,
        })?;
        written.push(path);
    }
    Ok(written)
}
