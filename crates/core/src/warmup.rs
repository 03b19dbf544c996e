//! Where the hidden decode warm-up (`--decode-warmup-seconds`) runs: a pure choice from the
//! plan, so it is tested with known answers.
//!
//! Why a decode warm-up at all: the first decode cell of a run can read low on engines that
//! capture CUDA graphs or grow allocators on first use of a batch size or a long KV cache (the
//! seed tool added it for a first-cell cold-start artifact on MTP/EAGLE servers). Why at the
//! largest context and the largest concurrency that fits: that cell touches the most KV and the
//! largest batch, so every cell after it finds the server's one-off costs paid. Its prompts
//! share no prefix with any measured prompt, so no cell's prefill or warm-up is served from a
//! cache it filled.

use crate::cell::{CellKey, Phase};
use crate::plan::Plan;

/// The decode cell the hidden warm-up imitates: the largest decode context of the plan, at
/// the largest concurrency planned there that fits the KV capacity (or is measured anyway
/// with `--show-capacity-limited-values`). `None` when the plan has no such cell or the
/// warm-up is off.
pub fn decode_warmup_cell(plan: &Plan) -> Option<CellKey> {
    if plan.settings.decode_warmup_s <= 0.0 {
        return None;
    }
    plan.cells
        .iter()
        .filter(|c| matches!(c.key.phase, Phase::Decode | Phase::Burst))
        .filter(|c| plan.measures(c))
        .map(|c| c.key)
        .max_by_key(|k| (k.context_tokens, k.concurrency))
        .map(|k| CellKey {
            phase: Phase::Decode,
            ..k
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Settings;
    use crate::size::ContextSpec;

    fn plan(warmup_s: f64, kv: Option<u64>) -> Plan {
        let settings = Settings {
            contexts: vec![ContextSpec::Tokens(1024), ContextSpec::Tokens(8192)],
            concurrency: vec![1, 4, 16],
            max_output: 64,
            decode_warmup_s: warmup_s,
            ..Settings::default()
        };
        Plan::build(settings, Some(65_536), kv)
    }

    #[test]
    fn the_warm_up_takes_the_largest_context_and_the_largest_fitting_n() {
        assert_eq!(decode_warmup_cell(&plan(0.0, None)), None, "off by default");
        let k = decode_warmup_cell(&plan(5.0, None)).expect("a cell");
        assert_eq!(
            (k.phase, k.context_tokens, k.concurrency),
            (Phase::Decode, 8192, 16)
        );
        // 16 × (8192 + 64) does not fit 100K tokens; 4 × 8256 does.
        let k = decode_warmup_cell(&plan(5.0, Some(100_000))).expect("a cell");
        assert_eq!((k.context_tokens, k.concurrency), (8192, 4));
        // Nothing fits: no warm-up.
        assert_eq!(decode_warmup_cell(&plan(5.0, Some(1_000))), None);
    }
}
