//! Speculative decoding's bookkeeping: how many tokens each decode step emits per request
//! (`spec_tokens`, `spec_accept_length`), and the figures the engines export about the steps
//! the engine really ran:
//! - vLLM's cumulative counters: one *draft* per request-step, of `spec_tokens - 1` draft
//!   tokens, of which the tokens the step emitted less one (the token the target model samples
//!   itself) were accepted, and the accepted ones by position;
//! - SGLang's gauges, recomputed every [`LOG_INTERVAL`] decode batches from the steps in
//!   between (its `decode_log_interval`): `spec_accept_length` = tokens emitted / request-steps,
//!   `spec_accept_rate` = tokens emitted / (request-steps × `spec_tokens`), SGLang dividing by
//!   `speculative_num_draft_tokens`, the step's whole width. Until the first interval is
//!   complete they show the steps so far.
//!
//! A step cut short by `max_tokens` or an EOS counts what it emitted.

use super::messages::Stats;

/// SGLang's default `--decode-log-interval`: its acceptance gauges cover this many decode
/// batches.
pub(super) const LOG_INTERVAL: u32 = 40;

/// Tokens the next decode step of a request emits: `k` when every draft is accepted (`mean`
/// `None`), otherwise whole tokens that average `mean` over the request's steps, from a running
/// credit and without randomness (2.5 gives 2, 3, 2, 3, ...).
pub(super) fn step_tokens(credit: &mut f64, mean: Option<f64>, k: u32) -> u32 {
    let Some(mean) = mean else { return k };
    *credit += mean;
    // The epsilon keeps 0.2 + 0.2 + ... from landing a hair under a whole token.
    let n = ((*credit + 1e-9).floor() as u32).clamp(1, k.max(1));
    *credit -= f64::from(n);
    n
}

/// The mean tokens per step of a request whose JSON `body` is this: the first
/// `spec_accept_by_text` rule whose text is in one of the body's strings (so JSON escapes never
/// hide a match), else `None` (the engine's `spec_accept_length`). No rule, no parse.
pub(crate) fn accept_for(rules: &[crate::config::SpecAcceptRule], body: &[u8]) -> Option<f64> {
    if rules.is_empty() {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let mut texts = Vec::new();
    strings(&v, &mut texts);
    rules
        .iter()
        .find(|r| texts.iter().any(|t| t.contains(r.contains.as_str())))
        .map(|r| r.length)
}

/// Every string value in `v`, depth first.
fn strings<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match v {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// SGLang's current log interval.
#[derive(Debug, Default)]
pub(super) struct SpecInterval {
    /// Decode batches so far.
    batches: u32,
    /// Request-steps (SGLang's `spec_num_forward_ct`).
    steps: u64,
    /// Tokens those steps emitted (SGLang's accepted tokens, the sampled one included).
    tokens: u64,
    /// A whole interval has been published.
    published: bool,
}

impl SpecInterval {
    /// One request's decode step emitted `n` tokens (`n` ≥ 1) with `k` per step at most.
    pub(super) fn record(&mut self, stats: &mut Stats, n: u32, k: u32) {
        let drafted = k.saturating_sub(1) as usize;
        let accepted = n.saturating_sub(1).min(k.saturating_sub(1));
        stats.spec_drafts += 1;
        stats.spec_draft_tokens += drafted as u64;
        stats.spec_accepted_tokens += u64::from(accepted);
        if stats.spec_accepted_per_pos.len() < drafted {
            stats.spec_accepted_per_pos.resize(drafted, 0);
        }
        for pos in stats
            .spec_accepted_per_pos
            .iter_mut()
            .take(accepted as usize)
        {
            *pos += 1;
        }
        self.steps += 1;
        self.tokens += u64::from(n);
    }

    /// A decode batch ended: the gauges show the interval so far until the first one is
    /// complete, then each completed interval.
    pub(super) fn end_batch(&mut self, stats: &mut Stats, k: u32) {
        self.batches += 1;
        let complete = self.batches >= LOG_INTERVAL;
        if (complete || !self.published) && self.steps > 0 {
            let length = self.tokens as f64 / self.steps as f64;
            stats.spec_accept_length = length;
            stats.spec_accept_rate = length / f64::from(k.max(1));
        }
        if complete {
            *self = SpecInterval {
                published: true,
                ..SpecInterval::default()
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_average_the_accept_length_in_whole_tokens() {
        let mut credit = 0.0;
        let steps: Vec<u32> = (0..6)
            .map(|_| step_tokens(&mut credit, Some(2.5), 3))
            .collect();
        assert_eq!(steps, [2, 3, 2, 3, 2, 3]);
        let mut credit = 0.0;
        let n: u32 = (0..1000)
            .map(|_| step_tokens(&mut credit, Some(2.2), 4))
            .sum();
        assert_eq!(n, 2200, "no drift over many steps");
        assert_eq!(step_tokens(&mut 0.0, None, 3), 3, "every draft accepted");
        assert_eq!(step_tokens(&mut 0.0, Some(1.0), 3), 1);
    }

    #[test]
    fn the_first_rule_in_the_prompt_sets_the_accept_length() {
        let rule = |c: &str, l: f64| crate::config::SpecAcceptRule {
            contains: c.into(),
            length: l,
        };
        let rules = [
            rule("def ", 3.0),
            rule("\"quoted\"", 2.5),
            rule("poem", 1.0),
        ];
        let chat = br#"{"messages": [{"role": "user", "content": [{"type": "text", "text": "a poem with def inside"}]}]}"#;
        assert_eq!(accept_for(&rules, chat), Some(3.0), "first rule wins");
        let escaped = br#"{"prompt": "say \"quoted\" twice"}"#;
        assert_eq!(accept_for(&rules, escaped), Some(2.5), "matched unescaped");
        assert_eq!(accept_for(&rules, br#"{"prompt": "prose"}"#), None);
        assert_eq!(accept_for(&[], br#"{"prompt": "def "}"#), None);
        assert_eq!(accept_for(&rules, b"not json"), None);
    }

    #[test]
    fn counters_and_gauges_follow_the_steps_emitted() {
        let mut stats = Stats::default();
        let mut iv = SpecInterval::default();
        // 3 per step at most: a full step, a step of 2, a step cut to 1 by max_tokens.
        for n in [3, 2, 1] {
            iv.record(&mut stats, n, 3);
        }
        iv.end_batch(&mut stats, 3);
        assert_eq!(
            (
                stats.spec_drafts,
                stats.spec_draft_tokens,
                stats.spec_accepted_tokens
            ),
            (3, 6, 3)
        );
        assert_eq!(stats.spec_accepted_per_pos, [2, 1]);
        // The first interval shows itself before it is complete: 6 tokens over 3 steps.
        assert!((stats.spec_accept_length - 2.0).abs() < 1e-12);
        assert!((stats.spec_accept_rate - 2.0 / 3.0).abs() < 1e-12);
        // A completed interval replaces it; a partial one after it does not show.
        for _ in 1..LOG_INTERVAL {
            iv.record(&mut stats, 3, 3);
            iv.end_batch(&mut stats, 3);
        }
        let full = (6.0 + 3.0 * f64::from(LOG_INTERVAL - 1)) / f64::from(LOG_INTERVAL + 2);
        assert!((stats.spec_accept_length - full).abs() < 1e-12);
        iv.record(&mut stats, 1, 3);
        iv.end_batch(&mut stats, 3);
        assert!(
            (stats.spec_accept_length - full).abs() < 1e-12,
            "held until complete"
        );
    }
}
