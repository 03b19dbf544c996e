//! Stop when stable (`--until-stable 2%`, issue 20): a rate cell runs until its figures have
//! settled instead of for a fixed time, judged by the method of batch means.
//!
//! The driver keeps one series per figure, one value per interval: e.g. output tokens in each
//! second, and the p99 TTFT of the requests started in each second (an interval with no request
//! is left out of that series, not counted as 0). [`batch_means`] cuts a series into
//! [`STABLE_BATCHES`] consecutive batches of equal length (the oldest values that do not fill a
//! batch are dropped: the start of a run is its warm-up side), takes each batch's mean, and
//! gives the 95 % confidence half-width of the mean of those batch means, t(0.975, k − 1) · s /
//! √k, with Student's t for k batches (exact table to 30 degrees of freedom, 1.96 above).
//!
//! Why 10 batches: means of batches long enough are near independent and near normal, which is
//! what the interval assumes; 10 leaves each batch long (a tenth of the run) while keeping the
//! t quantile (2.262) close to the normal's. The batches grow with the run, so the half-width
//! of a stationary series shrinks like 1/√(run length) while a drifting series keeps its batch
//! means apart and never looks stable. No verdict comes before [`MIN_STABLE_S`] seconds and
//! [`MIN_BATCH_OBS`] values in every batch of every series: too few values make even a noisy
//! series look settled by chance.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// Batches a series is cut into.
pub const STABLE_BATCHES: usize = 10;

/// Fewest values in each batch before a verdict (30 per-second values for 10 batches).
pub const MIN_BATCH_OBS: usize = 3;

/// Fewest seconds a cell runs before it can be stable.
pub const MIN_STABLE_S: f64 = 30.0;

/// Student's t quantile at 0.975 for 1 to 30 degrees of freedom.
const T_975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// Student's t quantile at 0.975 for `df` degrees of freedom (the normal's 1.96 above 30;
/// infinite for 0, where there is no interval).
pub fn t_975(df: usize) -> f64 {
    match df {
        0 => f64::INFINITY,
        1..=30 => T_975[df - 1],
        _ => 1.96,
    }
}

/// The batch means of one series and the 95 % confidence half-width of their mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatchMeans {
    /// Batches used.
    pub batches: usize,
    /// Values in each batch.
    pub batch_len: usize,
    /// Mean of the batch means.
    pub mean: f64,
    /// 95 % confidence half-width of `mean`.
    pub half_width: f64,
}

impl BatchMeans {
    /// The half-width relative to the mean (0.02 = ±2 %); `None` for a mean of 0.
    pub fn relative(&self) -> Option<f64> {
        (self.mean != 0.0).then(|| self.half_width / self.mean.abs())
    }
}

/// Cuts the finite values of `values` into `batches` (≥ 2) batches of equal length, the oldest
/// remainder dropped, and gives their means' mean and half-width. `None` with fewer values than
/// batches or fewer than 2 batches.
pub fn batch_means(values: &[f64], batches: usize) -> Option<BatchMeans> {
    let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if batches < 2 || v.len() < batches {
        return None;
    }
    let batch_len = v.len() / batches;
    let kept = &v[v.len() - batch_len * batches..];
    let means: Vec<f64> = kept
        .chunks(batch_len)
        .map(|c| c.iter().sum::<f64>() / batch_len as f64)
        .collect();
    let k = batches as f64;
    let mean = means.iter().sum::<f64>() / k;
    let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (k - 1.0);
    Some(BatchMeans {
        batches,
        batch_len,
        mean,
        half_width: t_975(batches - 1) * (var / k).sqrt(),
    })
}

/// One figure's per-interval values.
#[derive(Debug, Clone, Copy)]
pub struct StableSeries<'a> {
    /// The figure's name, for the verdict (`output_tok_s`, `ttft_p99_ms`).
    pub name: &'static str,
    /// One value per interval, oldest first.
    pub values: &'a [f64],
}

/// What a running cell has observed so far.
#[derive(Debug, Clone, Copy)]
pub struct StableInput<'a> {
    /// Seconds since the cell's schedule started.
    pub elapsed_s: f64,
    /// Every figure that must settle; the cell is stable when all of them are.
    pub series: &'a [StableSeries<'a>],
    /// No verdict before this many seconds ([`stable_cadence`]'s, at most [`MIN_STABLE_S`]).
    pub min_s: f64,
}

impl StableInput<'_> {
    /// Whether the cell may stop now: [`stability`] over [`STABLE_BATCHES`] batches says
    /// `Stable` at `target` (a fraction). The one verdict every stopping window uses.
    pub fn settled(&self, target: f64) -> bool {
        matches!(
            stability(self, target, STABLE_BATCHES),
            StableVerdict::Stable { .. }
        )
    }
}

/// How a cell of `duration_s` is watched: (interval between observations, seconds; the
/// earliest a verdict may come, seconds). The interval is a 120th of the window, within
/// [0.1 s, 1 s], so that even a short cell has the 30 values (10 batches of 3) a verdict
/// needs by a quarter of its length; the earliest verdict is that quarter, at most
/// [`MIN_STABLE_S`]. A cell may stop early only once its series fill their batches, so a short
/// window never stops on a handful of values.
pub fn stable_cadence(duration_s: f64) -> (f64, f64) {
    let interval = (duration_s / 120.0).clamp(0.1, 1.0);
    let min_s = (duration_s / 4.0).min(MIN_STABLE_S).max(interval * 30.0);
    (interval, min_s)
}

/// One finished request, as the stop-when-stable series see it (ns from the cell origin).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StableSample {
    /// When it was sent.
    pub sent_ns: u64,
    /// When it ended.
    pub end_ns: u64,
    /// Its output tokens.
    pub tokens: u64,
    /// Its time to first token, where it had one.
    pub ttft_ns: Option<u64>,
}

/// The two series a rate cell settles on, over the whole intervals before `now_ns`: output
/// tokens per second (of the requests that ended in each interval) and the p99 TTFT, ms, of
/// the requests sent in each interval (intervals where none was sent, or none got a token,
/// left out).
pub fn stable_series(samples: &[StableSample], interval_ns: u64, now_ns: u64) -> [Vec<f64>; 2] {
    let interval_ns = interval_ns.max(1);
    let n = (now_ns / interval_ns) as usize;
    let mut tokens = vec![0.0; n];
    let mut ttfts: Vec<Vec<f64>> = vec![Vec::new(); n];
    for s in samples {
        if let Some(t) = tokens.get_mut((s.end_ns / interval_ns) as usize) {
            *t += s.tokens as f64;
        }
        if let (Some(v), Some(ttft)) =
            (ttfts.get_mut((s.sent_ns / interval_ns) as usize), s.ttft_ns)
        {
            v.push(ttft as f64 / 1e6);
        }
    }
    let per_s = 1e9 / interval_ns as f64;
    let tok_s = tokens.into_iter().map(|t| t * per_s).collect();
    let p99 = ttfts
        .into_iter()
        .filter_map(|mut v| crate::stats::Summary::of_vec(&mut v).map(|s| s.p99))
        .collect();
    [tok_s, p99]
}

/// Whether a cell may stop.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StableVerdict {
    /// Not yet: too early, too few values, or a half-width above the target.
    Continue {
        /// The widest relative half-width so far, percent (`None` before every series has
        /// enough values, or where a mean is 0).
        half_width_pct: Option<f64>,
    },
    /// Every series' relative half-width is within the target.
    Stable {
        /// The widest relative half-width, percent.
        half_width_pct: f64,
        /// The series it belongs to.
        widest: &'static str,
    },
}

/// The stop decision: stable when at least `min_s` seconds have passed and every series, cut
/// into `batches` batches (use [`STABLE_BATCHES`]) of at least [`MIN_BATCH_OBS`] values, has a
/// relative 95 % half-width of at most `target` (a fraction: 0.02 for `2%`). A series list that
/// is empty is never stable.
pub fn stability(obs: &StableInput, target: f64, batches: usize) -> StableVerdict {
    let mut widest: Option<(f64, &'static str)> = None;
    let mut all_measured = true;
    for s in obs.series {
        let rel = batch_means(s.values, batches)
            .filter(|b| b.batch_len >= MIN_BATCH_OBS)
            .and_then(|b| b.relative());
        match rel {
            Some(r) if widest.is_none_or(|(w, _)| r > w) => widest = Some((r, s.name)),
            Some(_) => {}
            None => all_measured = false,
        }
    }
    let early = obs.series.is_empty() || obs.elapsed_s < obs.min_s;
    match widest {
        Some((w, name)) if all_measured && !early && w <= target => StableVerdict::Stable {
            half_width_pct: w * 100.0,
            widest: name,
        },
        _ => StableVerdict::Continue {
            half_width_pct: widest.filter(|_| all_measured).map(|(w, _)| w * 100.0),
        },
    }
}

/// The `--until-stable` target: a relative half-width, written in percent (`2%` or `2`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StableTarget {
    /// As a fraction (0.02 for 2 %).
    pub fraction: f64,
}

/// A target that is not a percentage above 0 and below 100.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a stability target: write a percentage above 0 and below 100, e.g. 2%")]
pub struct StableTargetError(pub String);

impl FromStr for StableTarget {
    type Err = StableTargetError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let num = t.strip_suffix('%').unwrap_or(t).trim();
        match num.parse::<f64>() {
            Ok(p) if p > 0.0 && p < 100.0 => Ok(StableTarget {
                fraction: p / 100.0,
            }),
            _ => Err(StableTargetError(s.to_string())),
        }
    }
}

impl fmt::Display for StableTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Through the percent's shortest text, so `2%` prints back as `2%`, not 2.0000000004%.
        let pct = (self.fraction * 100.0 * 1e9).round() / 1e9;
        write!(f, "{pct}%")
    }
}

/// Why a cell's schedule stopped, for its row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// `--until-stable` judged every figure settled.
    Stable,
    /// The cell's `--duration` ran out (with `--until-stable`: before the figures settled).
    Duration,
    /// A trace replay sent its last row.
    TraceEnd,
    /// Sending stopped and requests still running at the drain limit were cut.
    DrainCut,
    /// The user interrupted the run.
    Interrupted,
}

#[cfg(test)]
#[path = "tests/stable.rs"]
mod tests;
