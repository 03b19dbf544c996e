//! An open-loop row's own figures, beside the contract's columns of its row: a rate cell's
//! schedule, pacing and latency summaries with its SLO verdict, and a capacity row's search.
//! Written to `cells.jsonl` as the row's `rate`, `capacity` and `slo` fields.

use crate::slo::{Slo, SloVerdict};
use crate::stats::Summary;
use serde::{Deserialize, Serialize};

/// One limit of an SLO as a row holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitRow {
    /// The key (`ttft_p99`).
    pub key: String,
    /// The limit: seconds for times, tok/s for `user_tok_s`.
    pub limit: f64,
    /// The cell's figure at the quantile (failed requests as the worst value).
    pub observed: Option<f64>,
    /// Whether it is within the limit.
    pub holds: bool,
}

/// A cell judged against an SLO: attainment, whether every limit holds, and each limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloRow {
    /// The SLO as given (`ttft_p99=2000ms,…`).
    pub slo: String,
    /// Requests judged.
    pub judged: u64,
    /// Of them, requests that met every limit.
    pub met: u64,
    /// `met / judged` (null: nothing judged).
    pub attainment: Option<f64>,
    /// Whether every limit holds at its quantile.
    pub holds: bool,
    /// Each limit.
    pub limits: Vec<LimitRow>,
}

impl SloRow {
    /// The row of a verdict.
    pub fn of(slo: &Slo, v: &SloVerdict) -> SloRow {
        SloRow {
            slo: slo.to_string(),
            judged: v.sent,
            met: v.met,
            attainment: v.attainment,
            holds: v.holds,
            limits: v
                .limits
                .iter()
                .map(|l| LimitRow {
                    key: format!("{}_p{}", l.limit.figure.key(), l.limit.quantile),
                    limit: l.limit.limit,
                    observed: l.observed,
                    holds: l.holds,
                })
                .collect(),
        }
    }
}

/// An open-loop cell's own figures, beside the contract's columns of its row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateFigures {
    /// The arrival pattern (`poisson`, `constant`, `gamma:0.5`).
    pub arrival: String,
    /// Requests in the schedule.
    pub scheduled: u64,
    /// The schedule's own rate, (n − 1) / (last due − first due): what a perfect client sends.
    pub schedule_rate: Option<f64>,
    /// The cap on requests in flight, if any.
    pub max_concurrency: Option<u32>,
    /// Most requests in flight at once.
    pub max_in_flight: u64,
    /// Requests still running at the drain limit, cut (counted as failed).
    pub unfinished_requests: u64,
    /// Requests still waiting for the `--max-concurrency` cap at the drain limit: never sent,
    /// so not in `requests_sent`, the achieved rate or the queue times, but counted as
    /// failed against the attainment.
    #[serde(default)]
    pub never_sent: u64,
    /// Output tokens / (last end − first send).
    pub output_tok_per_s: Option<f64>,
    /// Prompt tokens of the finished requests, by the server's usage, / the same span (vLLM's
    /// `input_throughput`); null where a finished request's usage gave no prompt count.
    #[serde(default)]
    pub input_tok_per_s: Option<f64>,
    /// Those prompt tokens and every output token / the span (vLLM's `total_token_throughput`).
    #[serde(default)]
    pub input_output_tok_per_s: Option<f64>,
    /// The most output tokens that arrived within one whole second counted from the first send
    /// (vLLM's `max_output_tokens_per_s`: one-second buckets, the last one partial), tok/s;
    /// null without a token. Below the mean on a span under a second.
    #[serde(default)]
    pub peak_output_tok_per_s: Option<f64>,
    /// Last end − first send, seconds.
    pub span_s: Option<f64>,
    /// Send to first content token, ms.
    pub ttft_ms: Option<Summary>,
    /// Per request: (last token − first token) / (output tokens − 1), ms.
    pub tpot_ms: Option<Summary>,
    /// Between consecutive tokens of a request, token-weighted, ms.
    pub itl_ms: Option<Summary>,
    /// Send to end of the requests the server finished, ms.
    pub e2e_ms: Option<Summary>,
    /// Per request 1 / TPOT, tok/s.
    pub per_user_tok_per_s: Option<Summary>,
    /// Send − scheduled instant of every request, ms (waits for the cap included).
    pub queue_ms: Option<Summary>,
    /// Send − scheduled instant of the requests with no cap to wait for, µs.
    pub pacing_error_us: Option<Summary>,
    /// The client could not keep the schedule: what it achieved, in words.
    pub pacing_warning: Option<String>,
    /// The SLO's verdict, when there is one.
    pub slo: Option<SloRow>,
    /// Requests of varying lengths (`--input-len`, `--output-len`, `--workload`): what was
    /// asked and what was sent. Absent for fixed lengths (and in rows written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<crate::varying::WorkloadFigures>,
    /// Why the cell's schedule stopped (`--until-stable`, a trace's end); absent where it ran
    /// its fixed window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<crate::stable::StopReason>,
}

/// A capacity row's search: every measured point and the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityFigures {
    /// The SLO searched for.
    pub slo: String,
    /// The stated precision (0.05 = 5 %).
    pub precision: f64,
    /// `found`, `at_least` (every rate up to the ceiling held) or `none`.
    pub outcome: String,
    /// The smallest rate above the answer that failed (found only).
    pub failed_at: Option<f64>,
    /// Every measured rate, in the order measured.
    pub points: Vec<CapacityPoint>,
    /// The synchronous rate (one request at a time), when measured.
    pub synchronous_rate: Option<f64>,
    /// The saturation throughput in requests per second, when measured.
    pub saturation_rate: Option<f64>,
    /// Goodput of the decode cell at `capacity_concurrency`, requests per second.
    pub concurrency_goodput_rps: Option<f64>,
    /// Where the search ran over a trace's replays (`--time-scale auto`): the time scale K
    /// at the capacity (the capacity rate over the trace's own rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<f64>,
    /// What the search ran over where it was not request rates: `sessions` (each point's
    /// `rate` is then its number of concurrent sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over: Option<String>,
}

/// One measured rate of a capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityPoint {
    /// Requests per second asked for.
    pub rate: f64,
    /// Whether its cell held the SLO.
    pub holds: bool,
    /// Its attainment.
    pub attainment: Option<f64>,
    /// Its goodput, requests per second.
    pub goodput_rps: Option<f64>,
    /// Its goodput, output tok/s.
    pub goodput_tok_per_s: Option<f64>,
}
