//! What a sweep's combinations say together: every measured cell as a point of output tok/s
//! per GPU against tok/s per user, the Pareto frontier through the points no other point beats
//! on both, and for each capacity search (one per context and SLO) the combination that holds
//! it with the highest capacity, by how much it beats the next, and the ones that never hold
//! it. Pure functions over the combinations' rows, with known answers.

use crate::cell::{CellResult, CellStatus, Phase};
use serde::{Deserialize, Serialize};

/// One combination's measured rows, as the sweep report reads them.
#[derive(Debug, Clone)]
pub struct ComboRows {
    /// The combination's name.
    pub name: String,
    /// GPUs the server uses (`None`: unknown, so its points are per server).
    pub gpus: Option<u32>,
    /// Its rows (`cells.jsonl`, the latest row of each cell).
    pub rows: Vec<CellResult>,
}

/// One measured cell as a point of the frontier chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontierPoint {
    /// The combination.
    pub combination: String,
    /// The cell, in words (`decode 8K × 16`, `rate 8K @ 4/s`, `sessions 8K × 8`).
    pub cell: String,
    /// Tokens per second per user (the row's per-request tok/s, median).
    pub tok_per_s_per_user: f64,
    /// Output tokens per second per GPU (per server where the GPU count is unknown).
    pub tok_per_s_per_gpu: f64,
    /// Whether no other point beats it on both axes.
    pub on_frontier: bool,
}

/// The cell's words in a chart label.
fn cell_words(r: &CellResult) -> Option<String> {
    let c = &r.context_label;
    Some(match r.phase {
        Phase::Decode => format!("decode {c} × {}", r.concurrency),
        Phase::Burst => format!("burst {c} × {}", r.concurrency),
        Phase::Rate => format!("rate {c} @ {}/s", r.key().request_rate()?),
        Phase::Session if r.concurrency > 0 => format!("sessions {c} × {}", r.concurrency),
        Phase::Session => format!("sessions {c} @ {}/s", r.key().request_rate()?),
        Phase::Prefill | Phase::Capacity | Phase::MixedPrefill => return None,
    })
}

/// A cell's tok/s per user on a frontier (METHOD.md, "Sweeps"): the row's
/// `per_request_tok_per_s`, except on a closed-loop cell (decode, burst, concurrent sessions)
/// marked Requests queued, where it is the cell's output tok/s ÷ N. There the per-request rate
/// is that of the requests the server ran, while the others waited: N users each at that rate
/// would sum to more than the server sent, an impossible point (a single-slot server at N = 4
/// would sit beside its N = 1 point at four times the users). Each of N closed-loop users gets
/// a share of what was sent. `None` without the figures.
pub fn frontier_tok_per_s_per_user(r: &CellResult) -> Option<f64> {
    let user = r.per_request_tok_per_s.filter(|v| v.is_finite())?;
    let closed = matches!(r.phase, Phase::Decode | Phase::Burst | Phase::Session);
    if r.status == CellStatus::RequestsQueued && closed && r.concurrency > 0 {
        let total = r.total_tok_per_s.filter(|v| v.is_finite())?;
        return Some(user.min(total / f64::from(r.concurrency)));
    }
    Some(user)
}

/// Every measured cell with both figures as a point, frontier marked (see [`mark_frontier`]);
/// tok/s per user by [`frontier_tok_per_s_per_user`].
pub fn frontier_points(combos: &[ComboRows]) -> Vec<FrontierPoint> {
    let mut points: Vec<FrontierPoint> = combos
        .iter()
        .flat_map(|c| {
            let per = f64::from(c.gpus.unwrap_or(1).max(1));
            c.rows
                .iter()
                .filter(|r| r.status.has_figures())
                .filter_map(move |r| {
                    let user = frontier_tok_per_s_per_user(r)?;
                    let total = r.total_tok_per_s.filter(|v| v.is_finite())?;
                    Some(FrontierPoint {
                        combination: c.name.clone(),
                        cell: cell_words(r)?,
                        tok_per_s_per_user: user,
                        tok_per_s_per_gpu: total / per,
                        on_frontier: false,
                    })
                })
        })
        .collect();
    mark_frontier(&mut points);
    points
}

/// The indexes of the points `(x, y)` that no other point dominates (at least as large on both
/// axes, larger on one), ascending by x. Equal points are both kept. The one frontier rule of
/// the tool: a run's Pareto chart and a sweep's both draw it.
pub fn pareto_frontier(points: &[(f64, f64)]) -> Vec<usize> {
    let dominated = |i: usize| {
        let (x, y) = points[i];
        points
            .iter()
            .any(|&(a, b)| a >= x && b >= y && (a > x || b > y))
    };
    let mut idx: Vec<usize> = (0..points.len()).filter(|&i| !dominated(i)).collect();
    idx.sort_by(|&a, &b| points[a].0.total_cmp(&points[b].0));
    idx
}

/// Marks the points on the [`pareto_frontier`] of tok/s per user against tok/s per GPU.
pub fn mark_frontier(points: &mut [FrontierPoint]) {
    let xy: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.tok_per_s_per_user, p.tok_per_s_per_gpu))
        .collect();
    for i in pareto_frontier(&xy) {
        points[i].on_frontier = true;
    }
}

/// One combination's answer to one capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityEntry {
    /// The combination.
    pub combination: String,
    /// Its capacity (requests/s, or sessions), `None` where even the first point broke the SLO.
    pub capacity: Option<f64>,
    /// Per GPU, where the GPU count is known.
    pub capacity_per_gpu: Option<f64>,
    /// `found`, `at_least` (the ceiling held) or `none`.
    pub outcome: String,
}

/// The combinations' answers to one capacity search (a context and an SLO), best first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloPick {
    /// The context's label.
    pub context: String,
    /// The SLO, as the capacity row states it.
    pub slo: String,
    /// What was searched: `requests/s` or `sessions`.
    pub unit: String,
    /// The combination with the highest capacity (per GPU where every GPU count is known).
    pub best: Option<String>,
    /// How much the best beats the next holding one: best / next − 1 (`None`: no second).
    pub margin: Option<f64>,
    /// Combinations that never held the SLO.
    pub never: Vec<String>,
    /// Every combination's answer, best first, then the ones that never held it.
    pub entries: Vec<CapacityEntry>,
}

/// A capacity row's answer and unit.
fn capacity_of(r: &CellResult) -> Option<(Option<f64>, &'static str)> {
    if r.phase != Phase::Capacity {
        return None;
    }
    if let Some(s) = r.session.capacity_sessions {
        return Some((s.map(f64::from), "sessions"));
    }
    if let Some(rate) = r.session.capacity_session_rate {
        return Some((rate, "sessions/s"));
    }
    r.capacity_request_rate.map(|c| (c, "requests/s"))
}

/// For each capacity search the combinations ran (the same context and SLO), the best
/// combination and its margin. Capacities compare per GPU where every combination's GPU count
/// is known (a 2-GPU server must hold twice the rate to win), per server otherwise.
pub fn slo_picks(combos: &[ComboRows]) -> Vec<SloPick> {
    let mut picks: Vec<SloPick> = Vec::new();
    let per_gpu = combos.iter().all(|c| c.gpus.is_some());
    for c in combos {
        for r in &c.rows {
            let Some((cap, unit)) = capacity_of(r) else {
                continue;
            };
            let slo = r.capacity.as_ref().map_or(String::new(), |f| f.slo.clone());
            let outcome = r
                .capacity
                .as_ref()
                .map_or("none".to_string(), |f| f.outcome.clone());
            let entry = CapacityEntry {
                combination: c.name.clone(),
                capacity: cap,
                capacity_per_gpu: cap.zip(c.gpus).map(|(v, g)| v / f64::from(g.max(1))),
                outcome,
            };
            let at = picks
                .iter()
                .position(|p| p.context == r.context_label && p.slo == slo && p.unit == unit);
            match at {
                Some(i) => picks[i].entries.push(entry),
                None => picks.push(SloPick {
                    context: r.context_label.clone(),
                    slo,
                    unit: unit.to_string(),
                    best: None,
                    margin: None,
                    never: Vec::new(),
                    entries: vec![entry],
                }),
            }
        }
    }
    picks.extend(throughput_picks(combos));
    for p in &mut picks {
        rank(p, per_gpu);
    }
    picks
}

/// Without a capacity search (METHOD.md, "Sweeps"): per SLO the rows were judged against, each
/// combination's highest output tok/s per GPU among its cells whose every limit holds; a
/// combination none of whose cells holds it is an entry without a figure.
fn throughput_picks(combos: &[ComboRows]) -> Vec<SloPick> {
    let mut picks: Vec<SloPick> = Vec::new();
    for c in combos {
        for r in c.rows.iter().filter(|r| r.status.has_figures()) {
            let Some(slo) = &r.slo else { continue };
            let figure = r.total_tok_per_s.filter(|v| slo.holds && v.is_finite());
            let at = match picks.iter().position(|p| p.slo == slo.slo) {
                Some(i) => i,
                None => {
                    picks.push(SloPick {
                        context: "every".into(),
                        slo: slo.slo.clone(),
                        unit: "output tok/s".into(),
                        best: None,
                        margin: None,
                        never: Vec::new(),
                        entries: Vec::new(),
                    });
                    picks.len() - 1
                }
            };
            let entries = &mut picks[at].entries;
            let i = match entries.iter().position(|e| e.combination == c.name) {
                Some(i) => i,
                None => {
                    entries.push(CapacityEntry {
                        combination: c.name.clone(),
                        capacity: None,
                        capacity_per_gpu: None,
                        outcome: "none".into(),
                    });
                    entries.len() - 1
                }
            };
            let e = &mut entries[i];
            if figure > e.capacity {
                e.capacity = figure;
                e.capacity_per_gpu = figure.zip(c.gpus).map(|(v, g)| v / f64::from(g.max(1)));
                e.outcome = format!("{} × {}", r.context_label, r.concurrency);
            }
        }
    }
    picks
}

/// Orders a pick's entries best first and names the best, its margin and the never-holding.
fn rank(p: &mut SloPick, per_gpu: bool) {
    let key = |e: &CapacityEntry| {
        if per_gpu {
            e.capacity_per_gpu
        } else {
            e.capacity
        }
    };
    p.entries.sort_by(|a, b| {
        key(b)
            .unwrap_or(f64::NEG_INFINITY)
            .total_cmp(&key(a).unwrap_or(f64::NEG_INFINITY))
            .then_with(|| a.combination.cmp(&b.combination))
    });
    let holding: Vec<f64> = p
        .entries
        .iter()
        .filter_map(key)
        .filter(|v| *v > 0.0)
        .collect();
    p.best = p
        .entries
        .first()
        .filter(|e| key(e).is_some_and(|v| v > 0.0))
        .map(|e| e.combination.clone());
    p.margin = match holding.as_slice() {
        [a, b, ..] => Some(a / b - 1.0),
        _ => None,
    };
    p.never = p
        .entries
        .iter()
        .filter(|e| !key(e).is_some_and(|v| v > 0.0))
        .map(|e| e.combination.clone())
        .collect();
}

#[cfg(test)]
#[path = "tests/sweep_pick.rs"]
mod tests;
