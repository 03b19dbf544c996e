//! A row's cost and energy figures (`economics` in `cells.jsonl`). The type lives with the row;
//! `crate::energy` computes it, so the row imports nothing of the module that fills it.

use serde::{Deserialize, Serialize};

/// Where a row's GPU count came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GpusSource {
    /// `--gpus`.
    Given,
    /// run.json's hardware (detected, or `--hardware`).
    Detected,
}

/// Which price a row's cost figures use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// `--gpu-hour-usd` × GPUs.
    GpuHour,
    /// `--node-hour-usd`.
    NodeHour,
}

/// A cell's cost and energy figures (`economics` in `cells.jsonl`). Every figure is null where
/// its input is unknown; the reasons say which.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellEconomics {
    /// GPUs the server uses (`--gpus`, else detected); null: unknown.
    pub gpus: Option<u32>,
    /// Where `gpus` came from.
    pub gpus_source: Option<GpusSource>,
    /// The cell's output tok/s (`total_tok_per_s`) ÷ `gpus`.
    pub output_tok_per_s_per_gpu: Option<f64>,
    /// Tokens per second per user (interactivity): the row's `per_request_tok_per_s`, the
    /// frontier's other axis.
    #[serde(default)]
    pub tok_per_s_per_user: Option<f64>,
    /// The server's price per hour, USD (GPU-hour price × GPUs, or the node-hour price).
    pub usd_per_hour: Option<f64>,
    /// Which price that is.
    pub price_source: Option<PriceSource>,
    /// `usd_per_hour` ÷ 3600 ÷ output tok/s × 10⁶.
    pub usd_per_m_output_tokens: Option<f64>,
    /// Prefill rows: `usd_per_hour` ÷ 3600 ÷ prompt tok/s × 10⁶.
    pub usd_per_m_input_tokens: Option<f64>,
    /// Why the cost figures are null, when they are.
    pub cost_reason: Option<String>,
    /// The span the energy was taken over, seconds from the cell's start.
    pub energy_span_s: Option<[f64; 2]>,
    /// ∫ power dt over the span, summed over the server's GPUs, joules.
    pub energy_j: Option<f64>,
    /// `energy_j` ÷ the output tokens of the span (the row's `output_tokens`).
    pub joules_per_output_token: Option<f64>,
    /// Prefill rows: `energy_j` ÷ the prompt tokens prefilled in the span.
    pub joules_per_prompt_token: Option<f64>,
    /// 3.6·10⁶ ÷ `joules_per_output_token`.
    pub output_tokens_per_kwh: Option<f64>,
    /// Whether the power samples back the energy figures.
    pub power_valid: bool,
    /// Why not, when `power_valid` is false.
    pub power_reason: Option<String>,
}
