//! The KV-cache need of a decode cell, in one place: the plan predicts Over capacity from it,
//! the driver's skip event and the stored row's reason both quote it (METHOD.md, "Over
//! capacity"). Keeping the formula here means the prediction and its explanation cannot drift.

/// The KV tokens a decode cell of `concurrency` streams holds at its peak: every stream's prompt
/// of `context` tokens plus its full `max_output` answer. Computed in `u128`, so no plan of
/// `u32` streams and `u64` contexts can overflow.
pub fn kv_tokens_needed(concurrency: u32, context: u64, max_output: u32) -> u128 {
    u128::from(concurrency) * (u128::from(context) + u128::from(max_output))
}

/// Whether a cell needing `needed` tokens exceeds a known capacity (an unknown capacity never
/// predicts Over capacity: the cell is run and measured).
pub fn exceeds(needed: u128, kv_capacity: Option<u64>) -> bool {
    kv_capacity.is_some_and(|kv| needed > u128::from(kv))
}

/// The one-line reason an Over capacity cell is never run, as stored in its row.
pub fn over_capacity_reason(
    concurrency: u32,
    context: u64,
    max_output: u32,
    kv_capacity: u64,
) -> String {
    format!(
        "{concurrency} × ({context} + {max_output}) tokens exceeds the KV capacity of {kv_capacity}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_is_streams_times_prompt_plus_answer() {
        assert_eq!(kv_tokens_needed(4, 8192, 4096), 4 * 12_288);
        assert_eq!(kv_tokens_needed(1, 0, 0), 0);
        // No overflow at the extremes of the plan's types.
        let max = kv_tokens_needed(u32::MAX, u64::MAX, u32::MAX);
        assert_eq!(
            max,
            u128::from(u32::MAX) * (u128::from(u64::MAX) + u128::from(u32::MAX))
        );
    }

    #[test]
    fn only_a_known_smaller_capacity_predicts_over_capacity() {
        assert!(exceeds(100, Some(99)));
        assert!(!exceeds(100, Some(100)));
        assert!(!exceeds(u128::MAX, None));
    }

    #[test]
    fn reason_quotes_the_formula() {
        assert_eq!(
            over_capacity_reason(8, 131_072, 4096, 1_000_000),
            "8 × (131072 + 4096) tokens exceeds the KV capacity of 1000000"
        );
    }
}
