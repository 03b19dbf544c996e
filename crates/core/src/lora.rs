//! LoRA adapters (`run --lora a,b,c`): one base model serving many adapters, each request's
//! `model` one of them. What is decided here, without sockets:
//! - **which adapter a request names** ([`LoraSettings::adapter_index`]): by its key, the
//!   stream index of a closed loop (a decode or burst stream resends one request, so the stream
//!   keeps its adapter) or the request's own index in a context's open load (so consecutive
//!   arrivals take consecutive adapters); round-robin (key mod K) or seeded random per key;
//! - **whether the server serves them** ([`LoraSettings::check_served`]), against
//!   `/v1/models`, before anything is measured;
//! - **the figures per adapter** ([`lora_figures`]) beside the row's total, each adapter's
//!   share over the row's own span, so the shares add up to the total.

use serde::{Deserialize, Serialize};

use crate::figures::{Window, decode_figures};
use crate::meta::EngineKind;
use crate::record::RequestRecord;
use crate::rng::SplitMix64;
use crate::stats::Summary;

/// How requests are spread over the adapters (`--lora-assign`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoraAssign {
    /// Key k takes adapter k mod K.
    #[default]
    RoundRobin,
    /// Key k takes an adapter drawn from the run's seed and k: the same on every shard and on
    /// resume, independent from one key to the next.
    Random,
}

impl LoraAssign {
    /// The flag's word: `round-robin` or `random`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoraAssign::RoundRobin => "round-robin",
            LoraAssign::Random => "random",
        }
    }
}

/// The adapters of a run and how they are assigned, as run.json keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoraSettings {
    /// Adapter names, as the server lists them in `/v1/models`; at least one, no repeats.
    pub adapters: Vec<String>,
    /// Round-robin or seeded random.
    pub assign: LoraAssign,
    /// The seed of the random assignment (drawn with the run's prompt seed, kept on resume).
    pub seed: u64,
}

/// Why the adapters cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoraError {
    /// No adapter name was given.
    #[error("--lora takes at least one adapter name (comma-separated)")]
    Empty,
    /// A name is empty, has spaces, or is given twice.
    #[error("--lora: `{0}` is not a usable adapter name (empty, spaces, or given twice)")]
    BadName(String),
    /// The server does not list an adapter.
    #[error("LoRA adapter `{adapter}` is not served: the server's /v1/models lists {}", served.join(", "))]
    NotServed {
        /// The adapter asked for.
        adapter: String,
        /// Every model id the server lists.
        served: Vec<String>,
    },
}

impl LoraSettings {
    /// Checks the names (at least one, none empty or repeated) into settings.
    pub fn new(
        adapters: Vec<String>,
        assign: LoraAssign,
        seed: u64,
    ) -> Result<LoraSettings, LoraError> {
        if adapters.is_empty() {
            return Err(LoraError::Empty);
        }
        for (i, a) in adapters.iter().enumerate() {
            if a.is_empty() || a.contains(char::is_whitespace) || adapters[..i].contains(a) {
                return Err(LoraError::BadName(a.clone()));
            }
        }
        Ok(LoraSettings {
            adapters,
            assign,
            seed,
        })
    }

    /// The index in `adapters` of the adapter that key `key` takes (module docs).
    pub fn adapter_index(&self, key: u32) -> usize {
        let k = self.adapters.len().max(1) as u64;
        let i = match self.assign {
            LoraAssign::RoundRobin => u64::from(key) % k,
            // One generator per key, seeded by both: a key's draw never depends on how many
            // keys came before it (a shard or a resumed run sees only some of them).
            LoraAssign::Random => {
                SplitMix64::new(self.seed ^ u64::from(key).wrapping_mul(0xA24B_AED4_963E_E407))
                    .below(k)
            }
        };
        i as usize
    }

    /// The name of the adapter that key `key` takes.
    pub fn adapter(&self, key: u32) -> &str {
        &self.adapters[self.adapter_index(key)]
    }

    /// Every adapter is one of the model ids the server lists in `/v1/models`; a server that
    /// lists none is trusted, as a given `--model` is.
    pub fn check_served(&self, served: &[String]) -> Result<(), LoraError> {
        if served.is_empty() {
            return Ok(());
        }
        match self.adapters.iter().find(|a| !served.contains(a)) {
            Some(a) => Err(LoraError::NotServed {
                adapter: a.clone(),
                served: served.to_vec(),
            }),
            None => Ok(()),
        }
    }
}

/// The request `model` that names adapter `adapter` of base model `base` on an engine of
/// `kind`: SGLang's OpenAI routes take `base:adapter` (a bare adapter name would be served by
/// the base model); vLLM, and every other engine, the adapter's own name.
pub fn lora_request_model(kind: Option<EngineKind>, base: &str, adapter: &str) -> String {
    match kind {
        Some(EngineKind::Sglang) => format!("{base}:{adapter}"),
        _ => adapter.to_string(),
    }
}

/// One adapter's figures in a row (or the row's total over every adapter).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraAdapterFigures {
    /// The adapter's name (`total` for the sum over adapters).
    pub adapter: String,
    /// Requests sent: a decode row's sent before its window closed, another row's sent at all.
    pub requests: u64,
    /// Output tokens: a decode row's inside its window, another row's all.
    pub output_tokens: u64,
    /// The adapter's share of the row's output tok/s: its tokens over the row's own span (a
    /// decode window; last end − first send of the whole cell otherwise).
    pub output_tok_per_s: Option<f64>,
    /// Median TTFT of its requests that had a first token, ms.
    pub ttft_ms_p50: Option<f64>,
}

/// A row's figures per adapter (`CellResult::lora`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoraFigures {
    /// How the requests were assigned.
    pub assign: LoraAssign,
    /// One per adapter, in the order given to `--lora` (an adapter no request took included).
    pub adapters: Vec<LoraAdapterFigures>,
    /// The same figures over every request of the row.
    pub total: LoraAdapterFigures,
}

/// The span the shares are taken over: a decode row's window (tokens and requests clipped to
/// it, as the row's own figures are), or the whole cell (burst and rate rows: every request,
/// over last end − first send of the cell).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoraSpan {
    /// A decode window.
    Window(Window),
    /// The whole cell.
    Cell,
}

/// The figures per adapter of a row's `records`; `key_of` gives a record's assignment key
/// (its stream, or the request's index in the open load), `None` for a record of no adapter.
pub fn lora_figures(
    records: &[RequestRecord],
    key_of: impl Fn(&RequestRecord) -> Option<u32>,
    s: &LoraSettings,
    span: LoraSpan,
) -> LoraFigures {
    let span_s = match span {
        LoraSpan::Window(w) => w.secs(),
        LoraSpan::Cell => cell_span_s(records),
    };
    let figures = |name: &str, rs: Vec<RequestRecord>| part_figures(name, &rs, span, span_s);
    let adapters = s
        .adapters
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mine = records
                .iter()
                .filter(|r| key_of(r).is_some_and(|k| s.adapter_index(k) == i))
                .cloned()
                .collect();
            figures(name, mine)
        })
        .collect();
    LoraFigures {
        assign: s.assign,
        adapters,
        total: figures("total", records.to_vec()),
    }
}

/// Last end − first send over the cell's sent requests, seconds (0 without any).
fn cell_span_s(records: &[RequestRecord]) -> f64 {
    let first = records
        .iter()
        .filter(|r| r.was_sent())
        .map(|r| r.sent_ns)
        .min();
    let last = records.iter().map(|r| r.end_ns).max();
    match (first, last) {
        (Some(f), Some(l)) => l.saturating_sub(f) as f64 / 1e9,
        _ => 0.0,
    }
}

/// The figures of one adapter's records over the row's span.
fn part_figures(
    name: &str,
    rs: &[RequestRecord],
    span: LoraSpan,
    span_s: f64,
) -> LoraAdapterFigures {
    let per_s = |tokens: u64| (span_s > 0.0).then(|| tokens as f64 / span_s);
    match span {
        LoraSpan::Window(w) => {
            let f = decode_figures(rs, w);
            LoraAdapterFigures {
                adapter: name.to_string(),
                requests: f.requests_sent,
                output_tokens: f.output_tokens,
                output_tok_per_s: per_s(f.output_tokens),
                ttft_ms_p50: f.ttft_ms.map(|t| t.p50),
            }
        }
        LoraSpan::Cell => {
            let sent: Vec<&RequestRecord> = rs.iter().filter(|r| r.was_sent()).collect();
            let tokens: u64 = sent.iter().map(|r| r.tokens()).sum();
            let mut ttft: Vec<f64> = sent
                .iter()
                .filter_map(|r| r.ttft_ns())
                .map(|t| t as f64 / 1e6)
                .collect();
            LoraAdapterFigures {
                adapter: name.to_string(),
                requests: sent.len() as u64,
                output_tokens: tokens,
                output_tok_per_s: per_s(tokens),
                ttft_ms_p50: Summary::of_vec(&mut ttft).map(|t| t.p50),
            }
        }
    }
}

#[cfg(test)]
#[path = "tests/lora.rs"]
mod tests;
