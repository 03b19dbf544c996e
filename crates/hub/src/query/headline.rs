//! A model's page: per stored run and context, the headline figures (Valid cells only) that
//! rank hardware and engines: decode throughput at N = 1 and at the largest Valid N, and
//! prefill throughput.

use super::u64_at;
use crate::error::StoreError;
use crate::{RunId, Store};

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
}

/// One Valid cell joined with its run, as the query returns it.
struct Joined {
    head: Headline,
    phase: String,
    concurrency: u32,
    total: Option<f64>,
    prompt: Option<f64>,
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
        _ => {}
    }
}

impl Store {
    /// The headline figures of every stored run of `model`, per context, best peak decode
    /// throughput first (contexts without a Valid decode cell last).
    pub fn headlines(&self, model: &str) -> Result<Vec<Headline>, StoreError> {
        let mut st = self.sqlite().prepare(
            "SELECT r.id, r.engine, r.engine_version, r.quantization, r.gpu_name, r.gpu_count,
                c.context_tokens, c.context_label, c.phase, c.concurrency, c.total_tok_per_s,
                c.prompt_tok_per_s
             FROM runs r JOIN cells c ON c.run_id = r.id
             WHERE r.model = ? AND c.status = 'valid' AND c.phase IN ('prefill', 'decode')
             ORDER BY r.id, c.context_tokens, c.concurrency",
        )?;
        let rows = st.query_map([model], |r| {
            Ok(Joined {
                head: Headline {
                    run_id: r.get(0)?,
                    engine: r.get(1)?,
                    engine_version: r.get(2)?,
                    quantization: r.get(3)?,
                    gpu_name: r.get(4)?,
                    gpu_count: r.get(5)?,
                    context_tokens: u64_at(r, 6)?,
                    context_label: r.get(7)?,
                    decode_c1_tok_per_s: None,
                    peak_concurrency: None,
                    peak_decode_tok_per_s: None,
                    prefill_tok_per_s: None,
                },
                phase: r.get(8)?,
                concurrency: r.get(9)?,
                total: r.get(10)?,
                prompt: r.get(11)?,
            })
        })?;
        let mut out = Vec::new();
        for row in rows {
            fold(&mut out, row?);
        }
        out.sort_by(|a, b| {
            let key = |h: &Headline| h.peak_decode_tok_per_s.unwrap_or(f64::NEG_INFINITY);
            key(b).total_cmp(&key(a)).then(a.run_id.cmp(&b.run_id))
        });
        Ok(out)
    }
}
