//! Cost and energy per token, as figures of each measured cell (`economics` in `cells.jsonl`).
//!
//! Energy is ∫ P dt of the server's GPUs over the cell's measured span, from the power column
//! of the cell's hardware series ([`HwSeries`]), by the trapezoid rule per GPU and summed over
//! GPUs ([`window_energy`]). A figure that the samples cannot back (none, too sparse, a GPU
//! missing) is no figure: the row says `power_valid: false` and why ([`PowerInvalid`]), and the
//! energy fields are null, never an estimate presented as a measurement.
//!
//! Cost is the user's price of the server per hour ([`CostSettings`]: per GPU-hour × GPUs, or
//! per node-hour) over the cell's throughput. The exact rules are in docs/method-notes.md, "Cost
//! and energy per token".

use crate::cell::{CellEconomics, CellResult, GpusSource, Phase, PriceSource};
use crate::telemetry::{GpuSeries, HwSeries, PhaseMark};
use serde::{Deserialize, Serialize};

/// The longest stretch of the measured span without a power sample, seconds (METHOD.md,
/// "Sweeps"): edges included, so an edge held at its nearest sample is held at most this long.
pub const MAX_POWER_GAP_S: f64 = 2.0;

/// Joules in a kilowatt-hour.
const J_PER_KWH: f64 = 3.6e6;

/// The price and GPU count the cost figures use (`--gpu-hour-usd`, `--node-hour-usd`,
/// `--gpus`; `economics` in run.json's settings).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CostSettings {
    /// Price of one GPU for an hour, USD (`--gpu-hour-usd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_hour_usd: Option<f64>,
    /// Price of the whole server (node) for an hour, USD (`--node-hour-usd`); excludes
    /// `gpu_hour_usd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_hour_usd: Option<f64>,
    /// GPUs the server uses, as the user gave them (`--gpus`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus: Option<u32>,
    /// GPUs detected on the server's machine (run.json's hardware), used when `gpus` is not
    /// given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_detected: Option<u32>,
}

/// Why a row has no cost figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CostUnknown {
    /// Neither price flag was given.
    #[error("no price given (--gpu-hour-usd or --node-hour-usd)")]
    NoPrice,
    /// A GPU-hour price without a GPU count.
    #[error("GPU count unknown (pass --gpus)")]
    NoGpus,
}

impl CostSettings {
    /// Whether nothing was given or detected (then run.json leaves it out).
    pub fn is_empty(&self) -> bool {
        *self == CostSettings::default()
    }

    /// The GPUs the server uses: `--gpus`, else the detected count.
    pub fn server_gpus(&self) -> Option<(u32, GpusSource)> {
        match (self.gpus, self.gpus_detected) {
            (Some(g), _) => Some((g, GpusSource::Given)),
            (None, Some(g)) => Some((g, GpusSource::Detected)),
            (None, None) => None,
        }
    }

    /// The server's price per hour, USD, and which price it is.
    pub fn usd_per_hour(&self) -> Result<(f64, PriceSource), CostUnknown> {
        if let Some(n) = self.node_hour_usd {
            return Ok((n, PriceSource::NodeHour));
        }
        let per_gpu = self.gpu_hour_usd.ok_or(CostUnknown::NoPrice)?;
        let (g, _) = self.server_gpus().ok_or(CostUnknown::NoGpus)?;
        Ok((per_gpu * f64::from(g), PriceSource::GpuHour))
    }
}

/// Why a cell's power samples do not back an energy figure (`power_reason`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PowerInvalid {
    /// No GPU power reading at all (no GPU, a remote server, the monitor off).
    #[error("no GPU power samples")]
    NoSamples,
    /// The cell marked no measured span (interrupted, or a phase without one).
    #[error("no measurement window")]
    NoWindow,
    /// Fewer GPUs reported power than the server uses.
    #[error("power samples cover {seen} of the server's {gpus} GPUs")]
    TooFewGpus {
        /// GPUs with a power reading.
        seen: u32,
        /// GPUs the server uses.
        gpus: u32,
    },
    /// A GPU's power is missing from a sample the integral needs.
    #[error("GPU {gpu} has no power reading at {t:.2} s")]
    MissingReading {
        /// The GPU's index.
        gpu: u32,
        /// The sample's time, seconds from the cell's start.
        t: f64,
    },
    /// A stretch of the span without a sample longer than [`MAX_POWER_GAP_S`].
    #[error(
        "a gap of {gap_s:.2} s without power samples (from {from:.2} s to {to:.2} s; at most 2 s)"
    )]
    Gap {
        /// Its length, seconds.
        gap_s: f64,
        /// Where it starts, seconds from the cell's start.
        from: f64,
        /// Where it ends.
        to: f64,
    },
    /// Fewer samples inside the span than one a second.
    #[error(
        "{samples} power samples in a {window_s:.2} s window (at least {needed}: one a second)"
    )]
    TooSparse {
        /// Samples inside the span.
        samples: usize,
        /// The span's length, seconds.
        window_s: f64,
        /// Samples it needs.
        needed: usize,
    },
}

/// The samples a span needs: each inside `[a, b]`, and the nearest outside on each side (an
/// edge between two samples is interpolated). Indices into the series, ascending.
fn used_samples(t: &[f64], a: f64, b: f64) -> Vec<usize> {
    let first_in = t.partition_point(|&x| x < a);
    let past_end = t.partition_point(|&x| x <= b);
    let lo = first_in.saturating_sub(1);
    let hi = (past_end + 1).min(t.len());
    (lo..hi).collect()
}

/// Power of `g` at the samples `idx`, or the first sample that has none.
fn powers(g: &GpuSeries, t: &[f64], idx: &[usize]) -> Result<Vec<f64>, PowerInvalid> {
    idx.iter()
        .map(|&k| {
            g.w.get(k)
                .copied()
                .flatten()
                .ok_or(PowerInvalid::MissingReading { gpu: g.i, t: t[k] })
        })
        .collect()
}

/// Linear interpolation of `(t, p)` at `x`, held at the nearest sample outside the samples'
/// span.
fn value_at(t: &[f64], p: &[f64], x: f64) -> f64 {
    let k = t.partition_point(|&v| v < x);
    if k == 0 {
        return p[0];
    }
    if k == t.len() {
        return p[k - 1];
    }
    let (t0, t1) = (t[k - 1], t[k]);
    if t1 <= t0 {
        return p[k];
    }
    p[k - 1] + (p[k] - p[k - 1]) * (x - t0) / (t1 - t0)
}

/// ∫ p dt over `[a, b]` by the trapezoid rule through the samples inside and the edges'
/// values: interpolated between the samples either side, or held at the nearest sample where
/// none lies beyond the edge.
pub fn trapezoid(t: &[f64], p: &[f64], a: f64, b: f64) -> f64 {
    if t.is_empty() || t.len() != p.len() || b <= a {
        return 0.0;
    }
    let mut pts = vec![(a, value_at(t, p, a))];
    pts.extend(
        t.iter()
            .zip(p)
            .filter(|(x, _)| **x > a && **x < b)
            .map(|(x, y)| (*x, *y)),
    );
    pts.push((b, value_at(t, p, b)));
    pts.windows(2)
        .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
        .sum()
}

/// Checks that the samples cover `[a, b]`: no stretch without one longer than
/// [`MAX_POWER_GAP_S`] (the edges included), and at least one inside per whole second, less
/// one (a 1 Hz sampler's phase may leave one out of a window), and never none.
fn check_coverage(t: &[f64], idx: &[usize], a: f64, b: f64) -> Result<(), PowerInvalid> {
    let mut marks: Vec<f64> = Vec::with_capacity(idx.len() + 2);
    let times: Vec<f64> = idx.iter().map(|&k| t[k]).collect();
    if times.first().is_none_or(|&x| x > a) {
        marks.push(a);
    }
    marks.extend(&times);
    if times.last().is_none_or(|&x| x < b) {
        marks.push(b);
    }
    for w in marks.windows(2) {
        // Only the part of a stretch inside the span counts: a sample far before the window
        // that happens to be its nearest outside does not make the window sparse.
        let (from, to) = (w[0].max(a), w[1].min(b));
        if to - from > MAX_POWER_GAP_S + 1e-9 {
            return Err(PowerInvalid::Gap {
                gap_s: to - from,
                from,
                to,
            });
        }
    }
    let inside = times.iter().filter(|&&x| x >= a && x <= b).count();
    let needed = ((b - a).floor() as usize).saturating_sub(1).max(1);
    if inside < needed {
        return Err(PowerInvalid::TooSparse {
            samples: inside,
            window_s: b - a,
            needed,
        });
    }
    Ok(())
}

/// The energy of the server's GPUs over `win` (seconds from the cell's start), joules: per GPU
/// the trapezoid of its power ([`trapezoid`]), summed. `gpus` is the server's GPU count: the
/// first `gpus` GPUs by index are summed and each must report power; unknown, every GPU that
/// reported power is. Errors say why the samples do not back a figure.
pub fn window_energy(
    hw: Option<&HwSeries>,
    win: Option<[f64; 2]>,
    gpus: Option<u32>,
) -> Result<f64, PowerInvalid> {
    let hw = hw.ok_or(PowerInvalid::NoSamples)?;
    let mut with_power: Vec<&GpuSeries> = hw
        .gpus
        .iter()
        .filter(|g| g.w.iter().any(Option::is_some))
        .collect();
    if hw.t.is_empty() || with_power.is_empty() {
        return Err(PowerInvalid::NoSamples);
    }
    let [a, b] = win
        .filter(|[a, b]| a.is_finite() && b.is_finite() && b > a)
        .ok_or(PowerInvalid::NoWindow)?;
    with_power.sort_by_key(|g| g.i);
    if let Some(g) = gpus {
        let seen = with_power.len() as u32;
        if seen < g {
            return Err(PowerInvalid::TooFewGpus { seen, gpus: g });
        }
        with_power.truncate(g as usize);
    }
    let idx = used_samples(&hw.t, a, b);
    check_coverage(&hw.t, &idx, a, b)?;
    let t: Vec<f64> = idx.iter().map(|&k| hw.t[k]).collect();
    let mut total = 0.0;
    for g in with_power {
        total += trapezoid(&t, &powers(g, &hw.t, &idx)?, a, b);
    }
    Ok(total)
}

/// The span a cell's energy is taken over, seconds from its start: the measured window where
/// the cell marked one (decode), else the stage that holds the cell's measured requests, from
/// its mark to the next mark or the cell's end (`prefill`, `burst`, `open loop` for rate and
/// session cells). `None`: no such mark (a capacity row, or an interrupted cell).
pub fn measured_span(
    phase: Phase,
    win: Option<[f64; 2]>,
    ph: &[PhaseMark],
    dur: f64,
) -> Option<[f64; 2]> {
    if win.is_some() {
        return win;
    }
    let stage = match phase {
        Phase::Prefill => "prefill",
        Phase::Burst => "burst",
        Phase::Rate | Phase::Session => "open loop",
        Phase::Decode | Phase::Capacity | Phase::MixedPrefill => return None,
    };
    let k = ph.iter().rposition(|(_, s)| s == stage)?;
    let end = ph.get(k + 1).map_or(dur, |(t, _)| *t);
    Some([ph[k].0, end])
}

/// USD per million tokens at `tok_per_s` for a server that costs `usd_per_hour`.
pub fn usd_per_m_tokens(usd_per_hour: f64, tok_per_s: f64) -> Option<f64> {
    (tok_per_s > 0.0 && tok_per_s.is_finite()).then(|| usd_per_hour / 3600.0 / tok_per_s * 1e6)
}

/// `num ÷ den` where the denominator is a positive count.
fn per(num: f64, den: Option<u64>) -> Option<f64> {
    den.filter(|d| *d > 0).map(|d| num / d as f64)
}

/// The figures of a finished row: cost from `cost`, energy from `energy` over `span` (what
/// [`window_energy`] gave). `None` for rows without measured figures (not run, failed, over
/// capacity, capacity rows).
pub fn cell_economics(
    row: &CellResult,
    cost: &CostSettings,
    span: Option<[f64; 2]>,
    energy: Result<f64, PowerInvalid>,
) -> Option<CellEconomics> {
    if !row.status.has_figures() || row.phase == Phase::Capacity {
        return None;
    }
    let mut e = CellEconomics {
        energy_span_s: span,
        // METHOD.md's interactivity: the row's per-request decode speed (a rate or session
        // row's is the median of (tokens − 1) ÷ (E2E − TTFT) over its requests).
        tok_per_s_per_user: row.per_request_tok_per_s.filter(|v| v.is_finite()),
        ..CellEconomics::default()
    };
    if let Some((g, source)) = cost.server_gpus() {
        e.gpus = Some(g);
        e.gpus_source = Some(source);
        e.output_tok_per_s_per_gpu = row
            .total_tok_per_s
            .filter(|_| g > 0)
            .map(|t| t / f64::from(g));
    }
    match cost.usd_per_hour() {
        Ok((usd, source)) => {
            e.usd_per_hour = Some(usd);
            e.price_source = Some(source);
            e.usd_per_m_output_tokens = row.total_tok_per_s.and_then(|t| usd_per_m_tokens(usd, t));
            e.usd_per_m_input_tokens = row.prompt_tok_per_s.and_then(|t| usd_per_m_tokens(usd, t));
        }
        Err(why) => e.cost_reason = Some(why.to_string()),
    }
    match energy {
        Ok(j) => {
            e.power_valid = true;
            e.energy_j = Some(j);
            e.joules_per_output_token = per(j, row.output_tokens);
            e.output_tokens_per_kwh = e
                .joules_per_output_token
                .filter(|x| *x > 0.0)
                .map(|x| J_PER_KWH / x);
            if row.phase == Phase::Prefill {
                let prompts = row.requests_sent.unwrap_or(1);
                e.joules_per_prompt_token = per(j, Some(row.context_tokens * prompts));
            }
        }
        Err(why) => e.power_reason = Some(why.to_string()),
    }
    Some(e)
}

#[cfg(test)]
#[path = "tests/energy.rs"]
mod tests;
