//! How many agents a server holds (METHOD.md, "Sessions": capacity in sessions): the largest
//! number of concurrent sessions whose cell holds the SLO on its per-turn figures. The search
//! is the rate search's (`crate::capacity_search`) over whole numbers: double from the start
//! while cells hold, halve while they fail, then bisect until the failing and holding counts are
//! neighbours or within the precision. Every measured cell stays a row; the answer is never a
//! count above one that failed.

use crate::capacity_search::{Capacity, RatePoint, SearchBounds, SearchStep};
use crate::cell::{CapacityFigures, CapacityPoint, CellResult, CellStatus, Phase};
use crate::plan::PlannedCell;
use crate::verdict::bare_result;

/// The search never measures more sessions than this.
pub const SESSIONS_CEILING: u32 = 4096;

/// The next step over the session counts measured so far (`rate` = S in each point):
/// `Measure(S)` with S a whole number from 1 to `ceiling`, or the answer.
pub fn next_session_step(
    points: &[RatePoint],
    start: u32,
    ceiling: u32,
    precision: f64,
) -> SearchStep {
    let failed = points
        .iter()
        .filter(|p| !p.holds)
        .map(|p| p.rate as u32)
        .min();
    let held = points
        .iter()
        .filter(|p| p.holds && failed.is_none_or(|f| (p.rate as u32) < f))
        .map(|p| p.rate as u32)
        .max();
    let found = |h: u32, f: u32| {
        SearchStep::Done(Capacity::Found {
            rate: f64::from(h),
            failed_at: f64::from(f),
        })
    };
    match (held, failed) {
        (Some(h), None) if h >= ceiling => {
            SearchStep::Done(Capacity::AtLeast { rate: f64::from(h) })
        }
        (Some(h), None) => SearchStep::Measure(f64::from(h.saturating_mul(2).min(ceiling))),
        (None, Some(f)) if f <= 1 => SearchStep::Done(Capacity::None),
        (None, Some(f)) => SearchStep::Measure(f64::from((f / 2).max(1))),
        (Some(h), Some(f)) if f - h <= 1 || f64::from(f - h) / f64::from(h) <= precision => {
            found(h, f)
        }
        (Some(h), Some(f)) => SearchStep::Measure(f64::from(h + (f - h) / 2)),
        (None, None) => SearchStep::Measure(f64::from(start.clamp(1, ceiling.max(1)))),
    }
}

/// Whether a session row held its SLO (a row the search could not run, Over capacity or
/// Failed, did not).
pub fn session_holds(r: &CellResult) -> bool {
    r.status.has_figures() && r.slo.as_ref().is_some_and(|s| s.holds)
}

/// What a session search measured over, for its capacity row: the points' axis and the words
/// of its answers.
struct Axis {
    /// `capacity.over`: `sessions` or `session_rate`.
    over: &'static str,
    /// The reason when every point up to the ceiling held (`{}` is the answer).
    at_least: &'static str,
    /// The reason when none held.
    none: &'static str,
}

/// A context's capacity row of a session search over `axis`: every measured point (`points`,
/// its axis value as `rate`) and the answer, the SLO's figures taken at the answer's point.
/// The caller names the answer in its own column. Returns the row and the answer.
fn capacity_row(
    cell: &PlannedCell,
    (slo, precision): (&crate::slo::Slo, f64),
    answer: Capacity,
    points: Vec<CapacityPoint>,
    axis: Axis,
) -> (CellResult, Option<f64>) {
    let (outcome, value, failed_at) = match answer {
        Capacity::Found { rate, failed_at } => ("found", Some(rate), Some(failed_at)),
        Capacity::AtLeast { rate } => ("at_least", Some(rate), None),
        Capacity::None => ("none", None, None),
    };
    let reason = match answer {
        Capacity::Found { .. } => None,
        Capacity::AtLeast { rate } => Some(axis.at_least.replace("{}", &rate.to_string())),
        Capacity::None => Some(axis.none.to_string()),
    };
    let mut row = bare_result(cell, CellStatus::Valid, reason);
    // The same key as a cell at that point (rates are compared as keys write them).
    let at = |x: f64| {
        let key = crate::cell::rate_mrps(x);
        points
            .iter()
            .find(|p| crate::cell::rate_mrps(p.rate) == key)
    };
    row.slo_attainment = Some(value.and_then(at).and_then(|p| p.attainment));
    row.goodput_rps = Some(value.and_then(at).and_then(|p| p.goodput_rps));
    row.goodput_tok_per_s = Some(value.and_then(at).and_then(|p| p.goodput_tok_per_s));
    row.capacity = Some(Box::new(CapacityFigures {
        slo: slo.to_string(),
        precision,
        outcome: outcome.to_string(),
        failed_at,
        points,
        synchronous_rate: None,
        saturation_rate: None,
        concurrency_goodput_rps: None,
        time_scale: None,
        over: Some(axis.over.to_string()),
    }));
    (row, value)
}

/// A session row as a capacity point at `rate` (its S, or its session rate).
fn point(r: &CellResult, rate: f64) -> CapacityPoint {
    CapacityPoint {
        rate,
        holds: session_holds(r),
        attainment: r.slo_attainment.flatten(),
        goodput_rps: r.goodput_rps.flatten(),
        goodput_tok_per_s: r.goodput_tok_per_s.flatten(),
    }
}

/// A context's capacity row for sessions: the largest S whose cell holds the SLO
/// (`capacity_sessions`, null when none does) and every measured point (`capacity.points`,
/// each point's `rate` being its S; `capacity.over` says `sessions`).
pub fn session_capacity_result(
    cell: &PlannedCell,
    slo: &crate::slo::Slo,
    precision: f64,
    answer: Capacity,
    rows: &[CellResult],
) -> CellResult {
    let points = rows
        .iter()
        .filter(|r| r.phase == Phase::Session && r.context_tokens == cell.key.context_tokens)
        .filter(|r| r.key().rate_mrps == 0)
        .map(|r| point(r, f64::from(r.concurrency)))
        .collect();
    let axis = Axis {
        over: "sessions",
        at_least: "every session count up to {} held the SLO: capacity is at least that",
        none: "no number of sessions meets the SLO",
    };
    let (mut row, s) = capacity_row(cell, (slo, precision), answer, points, axis);
    row.session.capacity_sessions = Some(s.map(|s| s as u32));
    row
}

/// The concurrency a context's capacity row over session *rates* is keyed with: the search over
/// session counts (and the load section's over request rates) keeps 0, so both rows of a
/// context that searched both are kept apart, on resume too.
pub const SESSION_RATE_CAPACITY: u32 = 1;

/// The most sessions per second the rate search measures.
pub const SESSION_RATE_CEILING: f64 = 1000.0;

/// The planned capacity row of a context's search over session rates.
pub fn session_rate_capacity_cell(context_tokens: u64, label: &str) -> PlannedCell {
    let mut cell = crate::load::capacity_cell(context_tokens, label);
    cell.key.concurrency = SESSION_RATE_CAPACITY;
    cell
}

/// The bounds of a search over session rates from `start` (the first `--session-rate`): 64
/// times either way, as the request-rate search's, and at most [`SESSION_RATE_CEILING`].
pub fn session_rate_bounds(start: f64, precision: f64) -> SearchBounds {
    let start = crate::load::round_rate(start.clamp(0.001, SESSION_RATE_CEILING));
    SearchBounds {
        start,
        precision,
        ceiling: (start * 64.0).min(SESSION_RATE_CEILING),
        floor: start / 64.0,
    }
}

/// The open-loop session rows of a context as the rate search's points (`rate`: sessions/s).
pub fn session_rate_points(rows: &[CellResult], context_tokens: u64) -> Vec<RatePoint> {
    rows.iter()
        .filter(|r| r.phase == Phase::Session && r.context_tokens == context_tokens)
        .filter_map(|r| {
            Some(RatePoint {
                rate: r.key().request_rate()?,
                holds: session_holds(r),
            })
        })
        .collect()
}

/// The next step of the search over session rates (`crate::capacity_search::next_step`), its
/// rate written as a cell key writes it (`crate::load::round_rate`). A rate that rounds to one
/// measured already ends the search: the bracket is as narrow as rates are written, and the
/// answer is the points' own.
pub fn next_session_rate_step(points: &[RatePoint], bounds: SearchBounds) -> SearchStep {
    match crate::capacity_search::next_step(points, bounds) {
        SearchStep::Measure(r) => {
            let r = crate::load::round_rate(r);
            let key = crate::cell::rate_mrps(r);
            if points.iter().all(|p| crate::cell::rate_mrps(p.rate) != key) {
                return SearchStep::Measure(r);
            }
            let loose = SearchBounds {
                precision: f64::INFINITY,
                ..bounds
            };
            match crate::capacity_search::next_step(points, loose) {
                SearchStep::Done(c) => SearchStep::Done(c),
                SearchStep::Measure(_) => SearchStep::Done(Capacity::None),
            }
        }
        done => done,
    }
}

/// A context's capacity row over session rates: the largest rate whose open-loop cell holds
/// the SLO (`capacity_session_rate`, null when none does) and every measured point
/// (`capacity.over` says `session_rate`).
pub fn session_rate_capacity_result(
    cell: &PlannedCell,
    slo: &crate::slo::Slo,
    precision: f64,
    answer: Capacity,
    rows: &[CellResult],
) -> CellResult {
    let points = rows
        .iter()
        .filter(|r| r.phase == Phase::Session && r.context_tokens == cell.key.context_tokens)
        .filter_map(|r| Some(point(r, r.key().request_rate()?)))
        .collect();
    let axis = Axis {
        over: "session_rate",
        at_least: "every session rate up to {}/s held the SLO: capacity is at least that",
        none: "no session rate meets the SLO",
    };
    let (mut row, rate) = capacity_row(cell, (slo, precision), answer, points, axis);
    row.session.capacity_session_rate = Some(rate);
    row
}
