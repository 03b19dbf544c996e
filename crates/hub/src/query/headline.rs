//! A model's page: per stored run and context, the headline figures (Valid cells only) that
//! rank hardware and engines: decode throughput at N = 1 and at the largest Valid N, prefill
//! throughput, and the capacity under the run's SLO where the run measured one.
//!
//! Capacity comes from the context's capacity row (`phase` `capacity` in cells.jsonl, one per
//! context of a run planned with an SLO): the largest request rate and the largest
//! concurrency that hold the SLO. The SLO itself is the run's (its plan in run.json), so
//! capacities of runs with different SLOs are not comparable; standard runs share one.

use crate::error::StoreError;
use crate::sql::{Row, SqlValue};
use crate::{RunId, Store};
use std::cmp::Ordering;

/// One run's headline figures at one context, for a model's ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Headline {
    /// The run.
    pub run_id: RunId,
    /// Engine name.
    pub engine: Option<String>,
    /// Engine version.
    pub engine_version: Option<String>,
    /// Weight quantization.
    pub quantization: Option<String>,
    /// GPU model name.
    pub gpu_name: Option<String>,
    /// Number of GPUs.
    pub gpu_count: Option<u32>,
    /// The standard matrix version the run follows (`v1`); `None` for a free-form run, whose
    /// cells need not match another run's.
    pub standard: Option<String>,
    /// C.
    pub context_tokens: u64,
    /// `8K`.
    pub context_label: String,
    /// Valid decode throughput at N = 1, tok/s.
    pub decode_c1_tok_per_s: Option<f64>,
    /// The largest N with a Valid decode cell.
    pub peak_concurrency: Option<u32>,
    /// Decode throughput at that N, tok/s.
    pub peak_decode_tok_per_s: Option<f64>,
    /// Valid prefill throughput, tok/s.
    pub prefill_tok_per_s: Option<f64>,
    /// The largest request rate (requests/s) that holds the run's SLO at this context; `None`
    /// when the run measured no capacity here or no rate held.
    pub capacity_request_rate: Option<f64>,
    /// The largest concurrency that holds the run's SLO at this context; `None` when the run
    /// measured no capacity here or no concurrency held.
    pub capacity_concurrency: Option<u32>,
}

/// One Valid cell joined with its run, as the query returns it.
struct Joined {
    head: Headline,
    phase: String,
    concurrency: u32,
    total: Option<f64>,
    prompt: Option<f64>,
    capacity_rate: Option<f64>,
    capacity_n: Option<u32>,
}

fn joined(r: &Row) -> Result<Joined, StoreError> {
    Ok(Joined {
        head: Headline {
            run_id: r.i64(0)?,
            engine: r.opt_text(1)?,
            engine_version: r.opt_text(2)?,
            quantization: r.opt_text(3)?,
            gpu_name: r.opt_text(4)?,
            gpu_count: r.opt_int(5)?,
            standard: r.opt_text(6)?,
            context_tokens: r.int(7)?,
            context_label: r.text(8)?,
            decode_c1_tok_per_s: None,
            peak_concurrency: None,
            peak_decode_tok_per_s: None,
            prefill_tok_per_s: None,
            capacity_request_rate: None,
            capacity_concurrency: None,
        },
        phase: r.text(9)?,
        concurrency: r.int(10)?,
        total: r.opt_f64(11)?,
        prompt: r.opt_f64(12)?,
        capacity_rate: r.opt_f64(13)?,
        capacity_n: r.opt_int(14)?,
    })
}

/// Folds a cell into its (run, context) headline: rows come ordered by run, context, N, so a
/// later decode row is a larger N.
fn fold(out: &mut Vec<Headline>, j: Joined) {
    let same = out
        .last()
        .is_some_and(|h| h.run_id == j.head.run_id && h.context_tokens == j.head.context_tokens);
    if !same {
        out.push(j.head);
    }
    let Some(h) = out.last_mut() else { return };
    match j.phase.as_str() {
        "prefill" => h.prefill_tok_per_s = j.prompt.or(h.prefill_tok_per_s),
        "decode" if j.total.is_some() => {
            if j.concurrency == 1 {
                h.decode_c1_tok_per_s = j.total;
            }
            h.peak_concurrency = Some(j.concurrency);
            h.peak_decode_tok_per_s = j.total;
        }
        "capacity" => {
            h.capacity_request_rate = j.capacity_rate.or(h.capacity_request_rate);
            h.capacity_concurrency = j.capacity_n.or(h.capacity_concurrency);
        }
        _ => {}
    }
}

/// The model page's order: standard runs first, grouped by standard version (the later
/// version first), then free-form runs; within a group, best peak decode first (contexts
/// without a Valid decode cell last), then by run.
fn rank(a: &Headline, b: &Headline) -> Ordering {
    let peak = |h: &Headline| h.peak_decode_tok_per_s.unwrap_or(f64::NEG_INFINITY);
    // `Some` sorts after `None`, so comparing b to a puts standard runs (and later versions)
    // first.
    b.standard
        .cmp(&a.standard)
        .then_with(|| peak(b).total_cmp(&peak(a)))
        .then(a.run_id.cmp(&b.run_id))
        .then(a.context_tokens.cmp(&b.context_tokens))
}

impl Store {
    /// The headline figures of every stored run of `model`, per context: standard runs first
    /// (grouped by standard version, the later first), then free-form runs; within each group
    /// best peak decode throughput first (contexts without a Valid decode cell last).
    pub fn headlines(&self, model: &str) -> Result<Vec<Headline>, StoreError> {
        let rows = self.db().query(
            "SELECT r.id, r.engine, r.engine_version, r.quantization, r.gpu_name, r.gpu_count,
                r.standard, c.context_tokens, c.context_label, c.phase, c.concurrency,
                c.total_tok_per_s, c.prompt_tok_per_s, c.capacity_request_rate,
                c.capacity_concurrency
             FROM runs r JOIN cells c ON c.run_id = r.id
             WHERE r.model = ? AND c.status = 'valid'
                AND c.phase IN ('prefill', 'decode', 'capacity')
             ORDER BY r.id, c.context_tokens, c.concurrency",
            &[SqlValue::from(model)],
        )?;
        let mut out = Vec::new();
        for r in &rows {
            fold(&mut out, joined(r)?);
        }
        out.sort_by(rank);
        Ok(out)
    }
}
