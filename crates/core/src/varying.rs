//! Rate cells whose requests vary (issue 20): each request's prompt and output length, drawn
//! from `--input-len` / `--output-len`, sampled from a ShareGPT file or replayed from a trace,
//! and the row's account of what was asked and what was sent (a summary, a histogram and the
//! Kolmogorov–Smirnov statistic of each side).
//!
//! Draws are seeded: input lengths and output lengths come from two SplitMix64 streams of the
//! cell's seed (so `--output-len` never changes the prompts a seed gives), and a ShareGPT
//! sample picks rows with replacement from a third, as vLLM's and SGLang's dataset benchmarks
//! do. A trace is replayed whole, in file order. The user's own prompts (`prompts:FILE`) are
//! sampled as ShareGPT's rows are; their lengths are the server's counts, known once sent.

use crate::gof::{ks_critical_1pct, ks_statistic};
use crate::length::LengthSpec;
use crate::record::RequestRecord;
use crate::rng::SplitMix64;
use crate::workload::{UserPrompts, Workload};
use serde::{Deserialize, Serialize};

/// One request of a rate cell: its lengths and the prefix blocks it shares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CellRequest {
    /// Prompt tokens to build.
    pub input_tokens: u64,
    /// Output tokens to ask for (`max_tokens`, with EOS ignored as for fixed cells).
    pub output_tokens: u64,
    /// Mooncake `hash_ids`: the prompt's shared blocks, in order (empty elsewhere).
    pub prefix_blocks: Vec<u64>,
    /// The user's prompt it sends as written (`prompts:FILE`: its index in the file's
    /// prompts; `input_tokens` is then only its estimate); `None`: a prompt built to
    /// `input_tokens`.
    pub prompt: Option<usize>,
}

/// Where a cell's request lengths come from.
#[derive(Debug, Clone, Copy)]
pub enum LengthSource<'a> {
    /// Drawn from these distributions.
    Specs {
        /// Prompt lengths.
        input: LengthSpec,
        /// Output lengths.
        output: LengthSpec,
    },
    /// Sampled with replacement from a workload's requests (ShareGPT: lengths only).
    Sample(&'a Workload),
    /// Every request of a trace, in file order (the count asked is ignored).
    Replay(&'a Workload),
    /// The user's own prompts, sampled with replacement; a line without `max_tokens` draws
    /// its output length from `output`.
    Prompts {
        /// The file's prompts.
        prompts: &'a UserPrompts,
        /// The output lengths of lines without their own.
        output: LengthSpec,
    },
}

/// Seeds of the three streams, apart so one never repeats another's draws.
const INPUT_STREAM: u64 = 0x1A7E_5EED_0000_0001;
const OUTPUT_STREAM: u64 = 0x1A7E_5EED_0000_0002;
const SAMPLE_STREAM: u64 = 0x1A7E_5EED_0000_0003;

/// The lengths of a cell's `n` requests from `src` and `seed` (a replay gives every row).
pub fn cell_requests(src: LengthSource<'_>, n: usize, seed: u64) -> Vec<CellRequest> {
    let of = |r: &crate::workload::WorkloadRequest| CellRequest {
        input_tokens: r.input_tokens,
        output_tokens: r.output_tokens,
        prefix_blocks: r.prefix_blocks.clone(),
        prompt: None,
    };
    match src {
        LengthSource::Specs { input, output } => {
            let mut ri = SplitMix64::new(seed ^ INPUT_STREAM);
            let mut ro = SplitMix64::new(seed ^ OUTPUT_STREAM);
            (0..n)
                .map(|_| CellRequest {
                    input_tokens: input.sample(&mut ri),
                    output_tokens: output.sample(&mut ro),
                    prefix_blocks: Vec::new(),
                    prompt: None,
                })
                .collect()
        }
        LengthSource::Sample(w) if !w.requests.is_empty() => {
            let mut rs = SplitMix64::new(seed ^ SAMPLE_STREAM);
            (0..n)
                .map(|_| of(&w.requests[rs.below(w.requests.len() as u64) as usize]))
                .collect()
        }
        LengthSource::Sample(_) => Vec::new(),
        LengthSource::Replay(w) => w.requests.iter().map(of).collect(),
        LengthSource::Prompts { prompts, output } => sample_prompts(prompts, output, n, seed),
    }
}

/// `n` of the user's prompts, picked with replacement from the sample stream (as ShareGPT's
/// rows are); a line's own `max_tokens`, else a draw of `output` from the output stream.
fn sample_prompts(
    prompts: &UserPrompts,
    output: LengthSpec,
    n: usize,
    seed: u64,
) -> Vec<CellRequest> {
    let all = &prompts.prompts;
    if all.is_empty() {
        return Vec::new();
    }
    let mut rs = SplitMix64::new(seed ^ SAMPLE_STREAM);
    let mut ro = SplitMix64::new(seed ^ OUTPUT_STREAM);
    (0..n)
        .map(|_| {
            let i = rs.below(all.len() as u64) as usize;
            let p = &all[i];
            CellRequest {
                input_tokens: p.approx_tokens,
                output_tokens: p
                    .max_tokens
                    .map_or_else(|| output.sample(&mut ro), u64::from),
                prefix_blocks: Vec::new(),
                prompt: Some(i),
            }
        })
        .collect()
}

/// The prompt lengths a cell of the user's prompts is checked against, per request (index =
/// `stream`, `n` requests): the server's own counts, 0 where it reported none. Nothing was
/// built to a length, so nothing can disagree: the row's prompt check then holds the server's
/// counts (their mean as `expected`, their range), and no request fails it.
pub fn server_counted_prompts(records: &[RequestRecord], n: usize) -> Vec<u64> {
    let mut out = vec![0; n];
    for r in records {
        if let (Some(slot), Some(c)) = (out.get_mut(r.stream as usize), r.prompt_tokens_reported) {
            *slot = c;
        }
    }
    out
}

/// One bin of a length histogram: lengths `lo ..= hi`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LengthBin {
    /// Shortest length in the bin.
    pub lo: u64,
    /// Longest length in the bin.
    pub hi: u64,
    /// Requests sent with a length in the bin.
    pub sent: u64,
    /// Requests the requested distribution puts in the bin (of as many as were sent).
    pub expected: f64,
}

/// One side (input or output) of a cell's lengths: what was asked and what was sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LengthFigures {
    /// The distribution asked for, as written (`4K:normal:512`), or the file it came from.
    pub requested: String,
    /// Requests sent.
    pub count: u64,
    /// Shortest length sent.
    pub min: u64,
    /// Median length sent.
    pub p50: u64,
    /// Longest length sent.
    pub max: u64,
    /// Mean length sent.
    pub mean: f64,
    /// Kolmogorov–Smirnov statistic of the sent lengths against the requested distribution.
    pub ks: Option<f64>,
    /// Its 1 % critical value for this many requests (below it: no evidence of a misfit).
    pub ks_critical_1pct: Option<f64>,
    /// Sent and expected counts over the sent range, [`HISTOGRAM_BINS`] bins at most.
    pub histogram: Vec<LengthBin>,
}

/// Most bins of a length histogram.
pub const HISTOGRAM_BINS: u64 = 16;

/// The figures of `sent` lengths against the requested distribution `cdf` (P(length ≤ x)),
/// named `requested`. `None` with nothing sent.
pub fn length_figures(
    requested: &str,
    cdf: &dyn Fn(u64) -> f64,
    sent: &[u64],
) -> Option<LengthFigures> {
    let mut v = sent.to_vec();
    v.sort_unstable();
    let (min, max) = (*v.first()?, *v.last()?);
    let n = v.len() as u64;
    let width = (max - min)
        .saturating_add(1)
        .div_ceil(HISTOGRAM_BINS)
        .max(1);
    let mut histogram = Vec::new();
    let mut lo = min;
    while lo <= max {
        let hi = lo.saturating_add(width - 1).min(max);
        let below = if lo == 0 { 0.0 } else { cdf(lo - 1) };
        histogram.push(LengthBin {
            lo,
            hi,
            sent: v.iter().filter(|x| (lo..=hi).contains(*x)).count() as u64,
            expected: (cdf(hi) - below).max(0.0) * n as f64,
        });
        match hi.checked_add(1) {
            Some(next) if hi < max => lo = next,
            _ => break,
        }
    }
    Some(LengthFigures {
        requested: requested.to_string(),
        count: n,
        min,
        p50: v[(v.len() - 1) / 2],
        max,
        mean: v.iter().map(|x| *x as f64).sum::<f64>() / n as f64,
        ks: ks_statistic(&v, cdf),
        ks_critical_1pct: Some(ks_critical_1pct(v.len())),
        histogram,
    })
}

/// P(X ≤ x) of the empirical distribution of `values` (a file's lengths): the requested
/// distribution of a sample drawn from it.
pub fn empirical_cdf(values: &[u64]) -> Box<dyn Fn(u64) -> f64 + Send + Sync> {
    let mut v = values.to_vec();
    v.sort_unstable();
    Box::new(move |x| {
        if v.is_empty() {
            return 1.0;
        }
        v.partition_point(|y| *y <= x) as f64 / v.len() as f64
    })
}

/// What a rate cell of varying requests asked for and sent, on its row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadFigures {
    /// `lengths` (from `--input-len` / `--output-len`) or the workload (`mooncake:FILE`).
    pub source: String,
    /// Prompt lengths.
    pub input: LengthFigures,
    /// Output lengths asked (`max_tokens`).
    pub output: LengthFigures,
    /// A trace's replay speed K (rows sent at t / K).
    pub time_scale: Option<f64>,
    /// The trace's own mean rate, requests per second (the cell's rate is K times it).
    pub trace_rate: Option<f64>,
    /// Prompt tokens a perfect prefix cache serves from the trace's shared blocks
    /// (`predicted_cached_tokens`).
    pub predicted_cached_tokens: Option<u64>,
    /// Cached prompt tokens the server reported in its usage, summed (where it reports them).
    pub cached_tokens_reported: Option<u64>,
}

/// A cell's [`WorkloadFigures`] from its length source and the requests it sent; the trace's
/// time scale, rate and prefix prediction are the caller's to add. `None` with nothing sent.
/// For the user's prompts ([`LengthSource::Prompts`]) each sent request's `input_tokens` must be
/// the server's count of it (the caller's to set from the records: only the server counts
/// them), and the input side has no KS (no length was asked: each bin expects what it holds).
pub fn workload_figures(src: LengthSource<'_>, sent: &[&CellRequest]) -> Option<WorkloadFigures> {
    let ins: Vec<u64> = sent.iter().map(|r| r.input_tokens).collect();
    let outs: Vec<u64> = sent.iter().map(|r| r.output_tokens).collect();
    let (source, input, output) = match src {
        LengthSource::Specs { input, output } => (
            "lengths".to_string(),
            length_figures(&input.to_string(), &|x| input.cdf(x), &ins)?,
            length_figures(&output.to_string(), &|x| output.cdf(x), &outs)?,
        ),
        LengthSource::Sample(w) | LengthSource::Replay(w) => {
            let name = w.source.to_string();
            let file_in: Vec<u64> = w.requests.iter().map(|r| r.input_tokens).collect();
            let file_out: Vec<u64> = w.requests.iter().map(|r| r.output_tokens).collect();
            (
                name.clone(),
                length_figures(&name, &*empirical_cdf(&file_in), &ins)?,
                length_figures(&name, &*empirical_cdf(&file_out), &outs)?,
            )
        }
        LengthSource::Prompts { prompts, output } => {
            let name = prompts.source.to_string();
            let mut input = length_figures(
                &format!("{name}, counted by the server"),
                &*empirical_cdf(&ins),
                &ins,
            )?;
            (input.ks, input.ks_critical_1pct) = (None, None);
            let (asked, cdf) = prompts_output(prompts, output);
            (name, input, length_figures(&asked, &*cdf, &outs)?)
        }
    };
    Some(WorkloadFigures {
        source,
        input,
        output,
        time_scale: None,
        trace_rate: None,
        predicted_cached_tokens: None,
        cached_tokens_reported: None,
    })
}

/// The output lengths a prompts file asks for, named, with their distribution: each line's own
/// `max_tokens` where it has one, else `output`, each line equally likely (a sample picks them
/// so).
fn prompts_output(
    prompts: &UserPrompts,
    output: LengthSpec,
) -> (String, Box<dyn Fn(u64) -> f64 + Send + Sync>) {
    let mut own: Vec<u64> = prompts
        .prompts
        .iter()
        .filter_map(|p| p.max_tokens.map(u64::from))
        .collect();
    own.sort_unstable();
    let n = prompts.prompts.len().max(1) as f64;
    let rest = prompts.prompts.len() - own.len();
    let name = prompts.source.to_string();
    let asked = match (own.len(), rest) {
        (_, 0) => name,
        (0, _) => output.to_string(),
        _ => format!("{name}, else {output}"),
    };
    let cdf =
        move |x: u64| (own.partition_point(|y| *y <= x) as f64 + rest as f64 * output.cdf(x)) / n;
    (asked, Box::new(cdf))
}

#[cfg(test)]
#[path = "tests/varying.rs"]
mod tests;
