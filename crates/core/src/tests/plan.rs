//! Known answers of the plan: contexts resolved against the server, the matrix's cells,
//! tolerances, first-token limits and the KV budget.

#[test]
fn context_zero_has_decode_cells_only_and_a_loose_prompt_check() {
    let contexts = vec![planned_ctx(0), planned_ctx(8 * K)];
    let cells = matrix(&contexts, &[1, 2], None, 64);
    let at_zero: Vec<Phase> = cells
        .iter()
        .filter(|c| c.key.context_tokens == 0)
        .map(|c| c.key.phase)
        .collect();
    assert_eq!(at_zero, vec![Phase::Decode, Phase::Decode]);
    assert_eq!(cells.len(), 2 + 3);
    assert_eq!(prompt_tolerance(Targeting::Exact, 0), MINIMAL_PROMPT_SPREAD);
    assert_eq!(prompt_tolerance(Targeting::Exact, 8 * K), 0);
    assert_eq!(prompt_tolerance(Targeting::Estimate, 0), MINIMAL_PROMPT_MAX);
    assert_eq!(
        prompt_tolerance(Targeting::Estimate, 8 * K),
        estimate_tolerance(8 * K)
    );
    // Id prompts are exact by construction; their context 0 is the text tag, as exact's.
    assert_eq!(prompt_tolerance(Targeting::Ids, 0), MINIMAL_PROMPT_SPREAD);
    assert_eq!(prompt_tolerance(Targeting::Ids, 8 * K), 0);
    assert!(Targeting::Ids.is_exact() && Targeting::Exact.is_exact());
    assert!(!Targeting::Estimate.is_exact());
}

#[test]
fn token_id_prompts_need_completions_an_engine_that_takes_ids_and_its_tokenizer() {
    use crate::ids_refusal;
    assert_eq!(ids_refusal(Api::Completions, Some(true), true, false), None);
    let chat = ids_refusal(Api::Chat, Some(true), true, false).expect("chat refused");
    assert!(chat.contains("--api completions"), "{chat}");
    for unknown in [None, Some(false)] {
        let r = ids_refusal(Api::Completions, unknown, true, false).expect("refused");
        assert!(r.contains("not known to take token-id prompts"), "{r}");
    }
    let r = ids_refusal(Api::Completions, Some(true), false, false).expect("refused");
    assert!(r.contains("tokenize endpoint"), "{r}");
    let r = ids_refusal(Api::Completions, Some(true), true, true).expect("refused");
    assert!(r.contains("--prompt-text"), "{r}");
}

fn planned_ctx(tokens: u64) -> PlannedContext {
    PlannedContext {
        tokens,
        label: format_tokens(tokens),
        decode: true,
        spec: ContextSpec::Tokens(tokens),
    }
}

#[test]
fn a_kv_budget_caps_the_reported_capacity() {
    use super::budgeted_kv;
    assert_eq!(budgeted_kv(Some(100), Some(60)), Some(60));
    assert_eq!(budgeted_kv(Some(100), Some(600)), Some(100));
    assert_eq!(budgeted_kv(None, Some(60)), Some(60));
    assert_eq!(budgeted_kv(Some(100), None), Some(100));
    assert_eq!(budgeted_kv(None, None), None);
}

#[test]
fn the_first_token_limit_follows_the_prompts_sent_together() {
    use super::{Settings, first_token_default_s};
    assert_eq!(
        first_token_default_s(256, 1),
        60.0,
        "a short prompt: a minute"
    );
    assert_eq!(
        first_token_default_s(1_048_576, 1),
        524.288,
        "1M tokens at 2,000/s"
    );
    assert_eq!(
        first_token_default_s(131_072, 8),
        524.288,
        "8 cold prompts queue"
    );
    assert_eq!(first_token_default_s(1000, 0), 60.0);
    let mut s = Settings::default();
    assert_eq!(s.first_token_limit_s(1_048_576, 1), 524.288);
    s.first_token_timeout_s = Some(5.0);
    assert_eq!(
        s.first_token_limit_s(1_048_576, 1),
        5.0,
        "an explicit flag wins"
    );
}

use super::*;

const K: u64 = 1024;

#[test]
fn seed_contexts_resolve_to_1019k_and_1024k() {
    let (ctx, dropped) = resolve_contexts(&default_contexts(), Some(1024 * K), 4096);
    assert!(dropped.is_empty());
    let labels: Vec<&str> = ctx.iter().map(|c| c.label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "8K", "16K", "32K", "64K", "128K", "256K", "512K", "1019K", "1024K"
        ]
    );
    assert_eq!(ctx[7].tokens, 1019 * K);
    assert!(ctx[7].decode);
    assert_eq!(ctx[8].tokens, 1024 * K - 2);
    assert!(!ctx[8].decode);
}

#[test]
fn contexts_over_the_limit_are_dropped_not_failed() {
    let specs = [
        ContextSpec::Tokens(8 * K),
        ContextSpec::Tokens(64 * K),
        ContextSpec::Tokens(4 * K),
    ];
    let (ctx, dropped) = resolve_contexts(&specs, Some(32 * K), 4096);
    assert_eq!(
        ctx.iter().map(|c| c.tokens).collect::<Vec<_>>(),
        vec![4 * K, 8 * K]
    );
    assert_eq!(dropped.len(), 1);
}

/// The seed's staircase: with KV capacity between 2,113,536 and 2,129,920 tokens, exactly
/// the seed's cells are Over capacity.
#[test]
fn seed_staircase_from_kv_capacity() {
    let (ctx, _) = resolve_contexts(&default_contexts(), Some(1024 * K), 4096);
    let cells = matrix(&ctx, &default_concurrency(), Some(2_120_000), 4096);
    let over_at = |label: &str| -> Vec<u32> {
        cells
            .iter()
            .filter(|c| c.label == label && c.key.phase == Phase::Decode && c.over_capacity)
            .map(|c| c.key.concurrency)
            .collect()
    };
    assert_eq!(over_at("8K"), Vec::<u32>::new());
    assert_eq!(over_at("16K"), vec![128]);
    assert_eq!(over_at("32K"), vec![64, 128]);
    assert_eq!(over_at("64K"), vec![32, 64, 128]);
    assert_eq!(over_at("128K"), vec![16, 32, 64, 128]);
    assert_eq!(over_at("256K"), vec![8, 16, 32, 64, 128]);
    assert_eq!(over_at("512K"), vec![8, 16, 32, 64, 128]);
    assert_eq!(over_at("1019K"), vec![4, 8, 16, 32, 64, 128]);
    // 9 prefills + 8 decode rows × 8.
    assert_eq!(cells.len(), 9 + 8 * 8);
}

/// The reasons a dropped context gives are the words `plan.json` keeps, each naming the flag
/// that would make the context fit.
#[test]
fn dropped_contexts_keep_their_reasons() {
    let reason = |spec: ContextSpec, limit: Option<u64>, m: u32| {
        let (_, dropped) = resolve_contexts(&[spec], limit, m);
        dropped.into_iter().map(|d| d.reason).collect::<Vec<_>>()
    };
    assert_eq!(
        reason(ContextSpec::Tokens(64 * K), Some(32 * K), 4096),
        ["64K tokens does not fit the server's context length of 32K; pass smaller --contexts"]
    );
    assert_eq!(
        reason(ContextSpec::Max, None, 4096),
        ["the server's context length is unknown; pass explicit sizes"]
    );
    assert_eq!(
        reason(ContextSpec::Max, Some(100), 4096),
        ["max output 4096 leaves no room in a context of 100; pass a smaller --max-output"]
    );
    assert_eq!(
        reason(ContextSpec::Full, Some(2), 1),
        ["context length too small"]
    );
}

/// A prefill-only size that does not fit names its own flag, not `--contexts`.
#[test]
fn a_dropped_prefill_context_names_its_own_flag() {
    let settings = Settings {
        contexts: vec![ContextSpec::Tokens(K)],
        prefill_contexts: vec![ContextSpec::Tokens(64 * K)],
        ..Settings::default()
    };
    let plan = Plan::build(settings, Some(32 * K), None);
    let reasons: Vec<&str> = plan
        .dropped_contexts
        .iter()
        .map(|d| d.reason.as_str())
        .collect();
    assert_eq!(
        reasons,
        [
            "64K tokens does not fit the server's context length of 32K; pass smaller --prefill-contexts"
        ]
    );
}

#[test]
fn decode_cells_that_cannot_fit_are_listed_with_why() {
    use crate::planned::decode_drops;
    let k = |n: u64| ContextSpec::Tokens(n * K);
    let specs = [k(1), k(60), k(64), k(1), k(60)];
    // 60K + 4,096 reaches 64K: prefill only. 64K itself is dropped elsewhere (too long).
    let d = decode_drops(&specs, Some(64 * K), 4096, false);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0].spec, k(60));
    assert!(
        d[0].reason.contains("60K tokens and a max output of 4096")
            && d[0].reason.contains("measured by prefill only"),
        "{}",
        d[0].reason
    );
    let skipped = decode_drops(&specs, Some(64 * K), 4096, true);
    assert!(skipped[0].reason.contains("nothing is measured at it"));
    // One token of room is enough; without a known length nothing is predicted.
    assert!(decode_drops(&[k(60)], Some(64 * K), 4095, false).is_empty());
    assert!(decode_drops(&specs, None, 4096, false).is_empty());

    let mut s = Settings {
        contexts: vec![k(1)],
        max_output: 100_000,
        skip_prefill: true,
        ..Settings::default()
    };
    let plan = Plan::build(s.clone(), Some(64 * K), None);
    assert!(plan.cells.is_empty());
    assert_eq!(plan.decode_dropped.len(), 1);
    s.prefill_only = true;
    let plan = Plan::build(s, Some(64 * K), None);
    assert!(plan.decode_dropped.is_empty(), "prefill only was asked for");
}
