//! Telemetry over time: what this machine's GPUs and CPU and the server's Prometheus counters
//! and gauges did through each cell, as time series, one line per cell in `telemetry.jsonl`
//! beside `cells.jsonl` ([`CellTelemetry`]). The hardware monitor samples twice a second and the
//! server sampler once a second (both in `llmib-client`); what they read is laid out here in
//! columns, rounded, so a line stays a few kilobytes, and read back by the report, which draws
//! one small multiple per cell.
//!
//! Each series has its own time column (`t`, seconds from the cell's start): the two samplers
//! run on their own clocks, and a sample is placed where it was taken. A column the source never
//! reported is left out of the line and reads back as all-null; a single missing reading is a
//! `null` in its column, never 0. The cell's hardware verdict is decided from the GPU series by
//! [`hardware_verdict`] (`telemetry/verdict.rs`).

mod columns;
mod verdict;

pub use verdict::{
    ClockEvents, HardwareVerdict, VERDICT_MIN_FRACTION, VERDICT_MIN_SAMPLES, hardware_verdict,
};

use crate::cell::CellKey;
use crate::hw::{CpuReading, GpuReading, HwSample};
use columns::{Col, all_none, compact, compact_times, round};
use serde::{Deserialize, Serialize};

/// A stage the cell entered, seconds from its start, and the stage's word (`warm-up`,
/// `window`, `counting`, …, as the progress protocol names it).
pub type PhaseMark = (f64, String);

/// One cell's telemetry: one line of `telemetry.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellTelemetry {
    /// The cell, as its row in `cells.jsonl` names it.
    pub cell: CellKey,
    /// When the cell started (RFC 3339), the origin of every `t` below.
    pub t0: String,
    /// Seconds the recording covered (the cell's whole length).
    pub dur: f64,
    /// The stages the cell went through, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ph: Vec<PhaseMark>,
    /// A decode cell's measured window: when it opened and closed, seconds from the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub win: Option<[f64; 2]>,
    /// This machine's GPUs and CPU, where the hardware monitor ran (the server runs here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hw: Option<HwSeries>,
    /// The server's counters and gauges, where its metrics could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub srv: Option<ServerSeries>,
}

impl CellTelemetry {
    /// A line for `cell` started at `t0`, with no series yet.
    pub fn new(cell: CellKey, t0: String) -> Self {
        CellTelemetry {
            cell,
            t0,
            dur: 0.0,
            ph: Vec::new(),
            win: None,
            hw: None,
            srv: None,
        }
    }

    /// Whether the line has any series to draw.
    pub fn has_series(&self) -> bool {
        self.hw.as_ref().is_some_and(|h| !h.t.is_empty())
            || self.srv.as_ref().is_some_and(|s| !s.t.is_empty())
    }
}

/// The hardware monitor's samples of one cell, in columns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HwSeries {
    /// Seconds from the cell's start of each sample (two decimals).
    #[serde(serialize_with = "compact_times")]
    pub t: Vec<f64>,
    /// Where the GPU readings came from (`nvml`, `nvidia-smi`, `none`).
    pub src: String,
    /// One series per GPU, each column as long as `t`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuSeries>,
    /// The CPU.
    #[serde(default, skip_serializing_if = "CpuSeries::is_empty")]
    pub cpu: CpuSeries,
}

/// One GPU through a cell. Units: MHz, W, °C, percent, MB/s.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuSeries {
    /// The GPU's index, as the driver numbers it.
    pub i: u32,
    /// SM clock, MHz.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub sm: Col,
    /// Memory clock, MHz.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub mclk: Col,
    /// Board power, W.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub w: Col,
    /// Enforced power limit, W.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub wl: Col,
    /// Core temperature, °C.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub c: Col,
    /// SM utilisation, percent.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub u: Col,
    /// PCIe receive, MB/s (NVML only).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub rx: Col,
    /// PCIe transmit, MB/s (NVML only).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub tx: Col,
    /// Clock event reasons, NVML's bitmask ([`ClockEvents`]).
    #[serde(default, skip_serializing_if = "all_none")]
    pub r: Vec<Option<u64>>,
}

impl GpuSeries {
    fn columns(&mut self) -> [&mut Col; 8] {
        [
            &mut self.sm,
            &mut self.mclk,
            &mut self.w,
            &mut self.wl,
            &mut self.c,
            &mut self.u,
            &mut self.rx,
            &mut self.tx,
        ]
    }

    /// Pads every column with nulls to `n` samples (a GPU missing from some samples).
    fn pad(&mut self, n: usize) {
        for c in self.columns() {
            c.resize(n, None);
        }
        self.r.resize(n, None);
    }

    fn push(&mut self, g: &GpuReading, reasons: Option<u64>) {
        let mb = |b: Option<f64>| round(b.map(|v| v / 1e6), 1);
        let values = [
            g.sm_clock_mhz.map(f64::from),
            g.mem_clock_mhz.map(f64::from),
            round(g.power_w, 1),
            round(g.power_limit_w, 1),
            round(g.temp_c, 0),
            round(g.util_pct, 0),
            mb(g.pcie_rx_bytes_per_s),
            mb(g.pcie_tx_bytes_per_s),
        ];
        for (c, v) in self.columns().into_iter().zip(values) {
            c.push(v);
        }
        self.r.push(reasons);
    }

    /// Power as a percentage of the enforced limit at sample `k`.
    pub fn power_pct(&self, k: usize) -> Option<f64> {
        let (w, l) = (
            column_at(&self.w, k)?,
            column_at(&self.wl, k).filter(|l| *l > 0.0)?,
        );
        Some(w / l * 100.0)
    }
}

/// The CPU through a cell.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuSeries {
    /// Utilisation over all cores, percent.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub u: Col,
    /// Mean core frequency, MHz.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub f: Col,
    /// Package temperature, °C.
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub c: Col,
}

impl CpuSeries {
    /// Whether no sample read anything.
    pub fn is_empty(&self) -> bool {
        all_none(&self.u) && all_none(&self.f) && all_none(&self.c)
    }

    fn push(&mut self, c: Option<&CpuReading>) {
        self.u.push(round(c.and_then(|c| c.util_pct), 1));
        self.f.push(c.and_then(|c| c.freq_mhz).map(|f| f as f64));
        self.c.push(round(c.and_then(|c| c.temp_c), 1));
    }
}

impl HwSeries {
    /// Adds the sample taken `t` seconds after the cell's start, with each GPU's clock event
    /// reasons in the order of `s.gpus` (`reasons` may be shorter: the rest are unknown).
    pub fn push(&mut self, t: f64, s: &HwSample, reasons: &[Option<u64>]) {
        let n = self.t.len();
        if n == 0 {
            self.src = s.gpu_source.clone();
        }
        self.t.push(round(Some(t), 2).unwrap_or(0.0));
        for (k, g) in s.gpus.iter().enumerate() {
            let pos = match self.gpus.iter().position(|x| x.i == g.index) {
                Some(p) => p,
                None => {
                    self.gpus.push(GpuSeries {
                        i: g.index,
                        ..GpuSeries::default()
                    });
                    self.gpus.len() - 1
                }
            };
            let series = &mut self.gpus[pos];
            series.pad(n);
            series.push(g, reasons.get(k).copied().flatten());
        }
        for series in &mut self.gpus {
            series.pad(n + 1);
        }
        self.cpu.push(s.cpu.as_ref());
    }

    /// Every GPU's clock event reasons at sample `k`, ORed (any GPU that slowed counts);
    /// `None` when no GPU reported them then.
    pub fn reasons_at(&self, k: usize) -> Option<u64> {
        self.gpus
            .iter()
            .filter_map(|g| g.r.get(k).copied().flatten())
            .reduce(|a, b| a | b)
    }

    /// The cell's hardware verdict ([`hardware_verdict`]) over the samples inside `span`
    /// (seconds from the start: the measured window), or over all of them when no sample lies
    /// inside it or there is none.
    pub fn verdict(&self, span: Option<[f64; 2]>) -> Option<HardwareVerdict> {
        let all: Vec<usize> = (0..self.t.len()).collect();
        let inside: Vec<usize> = match span {
            Some([a, b]) => all
                .iter()
                .copied()
                .filter(|k| self.t[*k] >= a && self.t[*k] <= b)
                .collect(),
            None => Vec::new(),
        };
        let pick = if inside.is_empty() { all } else { inside };
        let masks: Vec<Option<u64>> = pick.iter().map(|k| self.reasons_at(*k)).collect();
        hardware_verdict(&masks)
    }
}

/// One reading of the server's metrics, as the server sampler takes it (`None`: the engine
/// does not report it, or the read failed for it).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ServerSample {
    /// Seconds from the cell's start to when the read was sent.
    pub t: f64,
    /// Cumulative generated tokens.
    pub generation_tokens: Option<f64>,
    /// Cumulative prompt tokens.
    pub prompt_tokens: Option<f64>,
    /// Cumulative prompt tokens served from the prefix cache (hits).
    pub cached_prompt_tokens: Option<f64>,
    /// Cumulative prompt tokens looked up in the prefix cache (queries).
    pub prefix_cache_queries: Option<f64>,
    /// Requests running.
    pub running: Option<f64>,
    /// Requests waiting.
    pub waiting: Option<f64>,
    /// KV cache in use, fraction of capacity.
    pub kv_usage: Option<f64>,
    /// Cumulative preemptions (vLLM) or retractions (SGLang).
    pub preemptions: Option<f64>,
    /// Speculative decoding: acceptance rate, as the engine's gauge reports it.
    pub spec_accept_rate: Option<f64>,
    /// Speculative decoding: mean tokens per step, as the engine's gauge reports it.
    pub spec_accept_length: Option<f64>,
    /// Speculative decoding counters: drafts, draft tokens, accepted tokens (cumulative).
    pub spec_counters: Option<[f64; 3]>,
}

/// The server sampler's readings of one cell, in columns. Counters are cumulative, as the
/// server reports them (a reader takes deltas: [`ServerSeries::rate`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSeries {
    /// Seconds from the cell's start of each read (two decimals).
    #[serde(serialize_with = "compact_times")]
    pub t: Vec<f64>,
    /// Generated tokens (counter).
    #[serde(
        rename = "gen",
        default,
        skip_serializing_if = "all_none",
        serialize_with = "compact"
    )]
    pub gen_tokens: Col,
    /// Prompt tokens (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub prompt: Col,
    /// Prefix-cache hit tokens (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub hit: Col,
    /// Prefix-cache queried tokens (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub query: Col,
    /// Requests running (gauge).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub run: Col,
    /// Requests waiting (gauge).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub wait: Col,
    /// KV cache usage, fraction (gauge).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub kv: Col,
    /// Preemptions (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub pre: Col,
    /// Speculative acceptance rate (gauge).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub acc: Col,
    /// Speculative tokens per step (gauge).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub acc_len: Col,
    /// Speculative drafts (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub drafts: Col,
    /// Speculative draft tokens (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub draft_tok: Col,
    /// Speculative accepted tokens (counter).
    #[serde(default, skip_serializing_if = "all_none", serialize_with = "compact")]
    pub acc_tok: Col,
}

impl ServerSeries {
    /// Adds one reading.
    pub fn push(&mut self, s: &ServerSample) {
        self.t.push(round(Some(s.t), 2).unwrap_or(0.0));
        let c = s.spec_counters;
        let values: [(&mut Col, Option<f64>, i32); 13] = [
            (&mut self.gen_tokens, s.generation_tokens, 3),
            (&mut self.prompt, s.prompt_tokens, 3),
            (&mut self.hit, s.cached_prompt_tokens, 3),
            (&mut self.query, s.prefix_cache_queries, 3),
            (&mut self.run, s.running, 2),
            (&mut self.wait, s.waiting, 2),
            (&mut self.kv, s.kv_usage, 4),
            (&mut self.pre, s.preemptions, 3),
            (&mut self.acc, s.spec_accept_rate, 4),
            (&mut self.acc_len, s.spec_accept_length, 3),
            (&mut self.drafts, c.map(|c| c[0]), 3),
            (&mut self.draft_tok, c.map(|c| c[1]), 3),
            (&mut self.acc_tok, c.map(|c| c[2]), 3),
        ];
        for (col, v, decimals) in values {
            col.push(round(v, decimals));
        }
    }

    /// A counter's rate between consecutive reads that both have it: (the interval's midpoint,
    /// units per second). A counter that went down (the server restarted) gives no point.
    pub fn rate(&self, counter: &Col) -> Vec<(f64, f64)> {
        let mut out = Vec::new();
        for k in 1..self.t.len() {
            let (t0, t1) = (self.t[k - 1], self.t[k]);
            if let (Some(a), Some(b)) = (column_at(counter, k - 1), column_at(counter, k))
                && t1 > t0
                && b >= a
            {
                out.push(((t0 + t1) / 2.0, (b - a) / (t1 - t0)));
            }
        }
        out
    }
}

/// The value of column `c` at sample `k` (`None`: missing, or past the column's end, as a
/// column left out of the line reads back empty).
pub fn column_at(c: &[Option<f64>], k: usize) -> Option<f64> {
    c.get(k).copied().flatten()
}

#[cfg(test)]
#[path = "tests/telemetry.rs"]
mod tests;
