//! `compare` for the open-loop rows: rate cells are paired by context and request rate (their
//! `CellKey` holds the rate), capacity rows by context. Each entry shows the figures a reader
//! compares at a load (achieved rate, goodput, SLO attainment, TTFT p99; a capacity row's
//! largest rate and concurrency) with its difference from the baseline's, where both have it.

use crate::load::{self, percent};
use crate::number::req_rate;
use crate::number::{self, NULL};
use llmib_core::{CellResult, Phase};

/// A number with at most three decimals, trailing zeros dropped (`2`, `0.5`).
fn plain(v: f64) -> String {
    let s = number::grouped(v, 3);
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// ` (+0.5)` / ` (−1.2 pp)`: `this − base` through `fmt` (of its size), empty when either is
/// missing or there is no baseline to compare with.
fn delta(this: Option<f64>, base: Option<f64>, fmt: fn(f64) -> String) -> String {
    match (this, base) {
        (Some(t), Some(b)) if t.is_finite() && b.is_finite() => {
            let d = t - b;
            let sign = if d < 0.0 { "−" } else { "+" };
            format!(" ({sign}{})", fmt(d.abs()))
        }
        _ => String::new(),
    }
}

/// One figure with its delta: `goodput 9.1/s (+0.5)`.
fn figure(
    name: &str,
    this: Option<f64>,
    base: Option<f64>,
    show: fn(f64) -> String,
    diff: fn(f64) -> String,
) -> String {
    format!(
        "{name} {}{}",
        number::or_null(this, show),
        delta(this, base, diff)
    )
}

fn ttft_p99(c: &CellResult) -> Option<f64> {
    c.rate.as_ref()?.ttft_ms.as_ref().map(|s| s.p99)
}

/// A rate cell's comparison text; `base` is the baseline's row (None: this is the baseline,
/// or the baseline lacks it).
fn rate_text(c: &CellResult, base: Option<&CellResult>) -> String {
    let b = |f: fn(&CellResult) -> Option<f64>| base.and_then(f);
    let pp = |d: f64| format!("{} pp", number::decimal1(d * 100.0));
    [
        figure(
            "achieved",
            c.achieved_request_rate.flatten(),
            b(|c| c.achieved_request_rate.flatten()),
            req_rate,
            plain,
        ),
        figure(
            "goodput",
            c.goodput_rps.flatten(),
            b(|c| c.goodput_rps.flatten()),
            req_rate,
            plain,
        ),
        figure(
            "attainment",
            c.slo_attainment.flatten(),
            b(|c| c.slo_attainment.flatten()),
            percent,
            pp,
        ),
        figure(
            "TTFT p99",
            ttft_p99(c),
            b(ttft_p99),
            number::ttft_ms,
            number::ttft_ms,
        ),
    ]
    .join(" · ")
}

/// A capacity row's comparison text.
fn capacity_text(c: &CellResult, base: Option<&CellResult>) -> String {
    let rate = c.capacity_request_rate.flatten();
    let base_rate = base.and_then(|b| b.capacity_request_rate.flatten());
    let rate_text = match rate {
        Some(_) => format!(
            "max rate {}{}",
            load::capacity_rate_text(c),
            delta(rate, base_rate, plain)
        ),
        None => load::capacity_rate_text(c),
    };
    let n = c.capacity_concurrency.flatten().map(f64::from);
    let base_n = base.and_then(|b| b.capacity_concurrency.flatten().map(f64::from));
    let n_text = format!(
        "max N {}{}",
        number::or_null(n, plain),
        delta(n, base_n, plain)
    );
    let goodput = figure(
        "goodput",
        c.goodput_rps.flatten(),
        base.and_then(|b| b.goodput_rps.flatten()),
        req_rate,
        plain,
    );
    format!("{rate_text} · {n_text} · {goodput}")
}

/// The text of an open-loop row in a comparison, or `None` for the other phases. A row whose
/// status has no figures shows its status.
pub(crate) fn entry_value(c: &CellResult, base: Option<&CellResult>) -> Option<String> {
    if !crate::model::is_load(c) {
        return None;
    }
    if !c.status.has_figures() && c.phase == Phase::Rate {
        return Some(c.status.label().to_string());
    }
    let base = base.filter(|b| !std::ptr::eq(*b, c) && b.phase == c.phase);
    let text = match c.phase {
        Phase::Capacity => capacity_text(c, base),
        _ => rate_text(c, base),
    };
    Some(if c.status == llmib_core::CellStatus::Valid {
        text
    } else {
        format!("{text} ({})", c.status.label())
    })
}

/// What the "Requests at once" column of a comparison shows for a row: N, a rate cell's
/// requested rate, or a dash for a capacity row.
pub(crate) fn load_column(phase: Phase, concurrency: u32, rate: Option<f64>) -> String {
    match phase {
        Phase::Rate => number::or_null(rate, req_rate),
        Phase::Capacity => NULL.to_string(),
        _ => concurrency.to_string(),
    }
}
