//! Repeated runs (`run --num-runs K`): the same plan measured K times, each run its own results
//! directory, and per cell the spread of each headline figure over the runs that measured it:
//! mean, sample standard deviation, minimum, maximum and coefficient of variation (vLLM's
//! `--num-runs` reports the same five). A pure function of the runs' rows, so that `run` and a
//! test compute it alike.

use crate::cell::{CellKey, CellResult};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The spread of one figure over the runs that measured it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Runs that measured it.
    pub n: u32,
    /// Their mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1 in the denominator: K runs are a sample of the runs
    /// one could make); `None` for one run.
    pub std: Option<f64>,
    /// The least.
    pub min: f64,
    /// The most.
    pub max: f64,
    /// `std / mean`: the run-to-run noise as a share of the figure; `None` for one run or a
    /// mean of 0.
    pub cv: Option<f64>,
}

/// The spread of `values`; `None` for none (or a value that is not finite: no figure is).
pub fn spread(values: &[f64]) -> Option<Spread> {
    if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let std = (values.len() > 1).then(|| {
        let ss: f64 = values.iter().map(|v| (v - mean).powi(2)).sum();
        (ss / (n - 1.0)).sqrt()
    });
    Some(Spread {
        n: values.len() as u32,
        mean,
        std,
        min: values.iter().copied().fold(f64::INFINITY, f64::min),
        max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        cv: std.filter(|_| mean != 0.0).map(|s| s / mean.abs()),
    })
}

/// One cell over the repeated runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatedCell {
    /// The cell.
    pub key: CellKey,
    /// Its context as the tables show it (`8K`, `≈8K`).
    pub context_label: String,
    /// Runs that had a row for it.
    pub runs: u32,
    /// Runs whose row had figures (Valid or Requests queued).
    pub measured: u32,
    /// Each headline figure ([`FIGURES`]) the cell has, by name.
    pub figures: BTreeMap<String, Spread>,
}

/// A figure of a row, by name.
type Figure = (&'static str, fn(&CellResult) -> Option<f64>);

/// The headline figures whose spread a repeated run reports: each phase's throughput and its
/// latencies' medians and tails, as the matrix and the load tables show them.
pub const FIGURES: &[Figure] = &[
    ("prompt_tok_per_s", |c| c.prompt_tok_per_s),
    ("total_tok_per_s", |c| c.total_tok_per_s),
    ("per_request_tok_per_s", |c| c.per_request_tok_per_s),
    ("ttft_ms_p50", |c| c.ttft_ms.as_ref().map(|s| s.p50)),
    ("ttft_ms_p99", |c| c.ttft_ms.as_ref().map(|s| s.p99)),
    ("tbt_ms_p50", |c| c.tbt_ms.as_ref().map(|s| s.p50)),
    ("rate_output_tok_per_s", |c| {
        c.rate.as_ref().and_then(|r| r.output_tok_per_s)
    }),
    ("rate_ttft_ms_p50", |c| {
        c.rate
            .as_ref()
            .and_then(|r| r.ttft_ms.as_ref())
            .map(|s| s.p50)
    }),
    ("rate_ttft_ms_p99", |c| {
        c.rate
            .as_ref()
            .and_then(|r| r.ttft_ms.as_ref())
            .map(|s| s.p99)
    }),
    ("rate_tpot_ms_p50", |c| {
        c.rate
            .as_ref()
            .and_then(|r| r.tpot_ms.as_ref())
            .map(|s| s.p50)
    }),
    ("rate_request_per_s", |c| {
        let r = c.rate.as_ref()?;
        let span = r.span_s.filter(|s| *s > 0.0)?;
        Some(c.completed_requests? as f64 / span)
    }),
];

/// Each cell of the repeated runs (`runs[i]` the rows of run i), in key order: how many runs
/// had it and measured it, and the spread of each figure over the rows with figures. A figure
/// no run measured is left out; a cell no run measured keeps no figures (the table says
/// "0 of K measured").
pub fn repeated_cells(runs: &[Vec<CellResult>]) -> Vec<RepeatedCell> {
    let mut by_key: BTreeMap<CellKey, Vec<&CellResult>> = BTreeMap::new();
    for run in runs {
        for row in run {
            by_key.entry(row.key()).or_default().push(row);
        }
    }
    by_key
        .into_iter()
        .map(|(key, rows)| {
            let measured: Vec<&&CellResult> =
                rows.iter().filter(|r| r.status.has_figures()).collect();
            let figures = FIGURES
                .iter()
                .filter_map(|(name, of)| {
                    let values: Vec<f64> = measured.iter().filter_map(|r| of(r)).collect();
                    Some((name.to_string(), spread(&values)?))
                })
                .collect();
            RepeatedCell {
                key,
                context_label: rows[0].context_label.clone(),
                runs: rows.len() as u32,
                measured: measured.len() as u32,
                figures,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "tests/repeats.rs"]
mod tests;
