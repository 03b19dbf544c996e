//! Known answers of what has room on the server: the default 8K prefill and the contexts whose
//! session cells fit, with the words of each one that does not.

use super::*;
use crate::length::LengthSpec;
use crate::plan::Settings;

const K: u64 = 1024;

#[test]
fn the_default_prefill_is_planned_only_where_it_fits() {
    let eight = vec![ContextSpec::Tokens(8 * K)];
    assert_eq!(
        default_prefill_contexts(None),
        eight,
        "unknown limit: tried"
    );
    assert_eq!(default_prefill_contexts(Some(1024 * K)), eight);
    assert_eq!(default_prefill_contexts(Some(8 * K + 1)), eight);
    // 8,192 tokens need a context longer than 8,192 (prompt + its one token, strictly below).
    assert!(default_prefill_contexts(Some(8 * K)).is_empty());
    assert!(default_prefill_contexts(Some(4 * K)).is_empty());
}

/// The documented example: tiny-vllm's 4K context, histories 1K and 2K, turns of 128
/// tokens asking 32, and the default `--max-output` of 4096.
fn sessions_plan(contexts: &[u64], limit: u64) -> Plan {
    let mut st = SessionSettings::new(vec![1, 4, 8]);
    st.turn_input = LengthSpec::Fixed(128);
    st.turn_output = 32;
    st.system_prompt_tokens = 256;
    let settings = Settings {
        contexts: contexts.iter().map(|&c| ContextSpec::Tokens(c)).collect(),
        prefill_contexts: Vec::new(),
        max_output: 4096,
        sessions: Some(st),
        ..Settings::default()
    };
    Plan::build(settings, Some(limit), Some(100_000))
}

#[test]
fn a_sessions_room_comes_from_its_own_lengths_not_max_output() {
    let plan = sessions_plan(&[K, 2 * K], 4 * K);
    // Neither context has room for a 4,096-token answer: no decode cell would run there.
    assert!(plan.contexts.iter().all(|c| !c.decode));
    let (fit, not) = session_contexts(&plan);
    let tokens: Vec<u64> = fit.iter().map(|c| c.tokens).collect();
    assert_eq!(
        tokens,
        [K, 2 * K],
        "1K + 128 + 2 × 32 = 1,216 and 2,240 < 4,096"
    );
    assert!(not.is_empty());
}

#[test]
fn a_context_without_room_for_a_turn_says_which_flag_fits_it() {
    // 3,904 + 128 + 64 = 4,096: not strictly below the limit.
    let plan = sessions_plan(&[K, 3_904], 4 * K);
    let (fit, not) = session_contexts(&plan);
    assert_eq!(fit.len(), 1);
    assert_eq!(
        not,
        [NoSessionRoom::TooLong {
            label: "3904".into(),
            history: 3_904,
            turn_input: 128,
            turn_output: 32,
            needs: 4 * K,
            limit: 4 * K,
        }]
    );
    assert_eq!(
        not[0].to_string(),
        "sessions not run at 3904: history 3904 + turn 128 + 2 × 32 output = 4K tokens does not fit the server's context length of 4K; pass smaller --contexts, --turn-input-len or --turn-output-len"
    );
    // One token less fits.
    let plan = sessions_plan(&[3_903], 4 * K);
    let (fit, not) = session_contexts(&plan);
    assert_eq!((fit.len(), not.len()), (1, 0));
}

#[test]
fn a_full_context_and_a_run_without_sessions_run_no_session_cell() {
    let mut plan = sessions_plan(&[K], 4 * K);
    plan.contexts.push(PlannedContext {
        tokens: 4 * K - 2,
        label: "4K".into(),
        decode: false,
        spec: ContextSpec::Full,
    });
    let (fit, not) = session_contexts(&plan);
    assert_eq!(fit.len(), 1);
    assert!(matches!(&not[..], [NoSessionRoom::PrefillOnly { label }] if label == "4K"));
    plan.settings.sessions = None;
    let (fit, not) = session_contexts(&plan);
    assert!(fit.is_empty() && not.is_empty());
}

#[test]
fn an_unknown_context_length_tries_every_explicit_context() {
    let st = SessionSettings::new(vec![1]);
    let ctx = PlannedContext {
        tokens: 1024 * K,
        label: "1M".into(),
        decode: true,
        spec: ContextSpec::Tokens(1024 * K),
    };
    assert_eq!(session_room(&ctx, None, &st), Ok(()));
}
