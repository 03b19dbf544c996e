//! Speculative decoding over a decode window, as the server reports it: SGLang's
//! `spec_accept_rate` / `spec_accept_length` gauges (their mean over the window's samples), or
//! vLLM's cumulative draft counters (their delta over the window: rate = accepted / draft
//! tokens, length = 1 + accepted / drafts, since each step emits the accepted tokens plus the
//! one the target model samples). Counters win where both exist: a delta covers every step of
//! the window, a gauge only the instants it was read. Pure, fed by the window's gauge loop.
//!
//! Where vLLM also counts the accepted tokens per draft position
//! (`vllm:spec_decode_num_accepted_tokens_per_pos{position="k"}`), the window's delta of each
//! over its drafts' delta is the acceptance rate at position k (vllm-bench's
//! `spec_decode_per_position_acceptance_rates`).

use crate::cell::SpecFigures;

/// What the window's gauge samples showed of speculative decoding.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecWindow {
    rate_sum: f64,
    rate_n: u32,
    length_sum: f64,
    length_n: u32,
    /// (drafts, draft tokens, accepted tokens) at the first and the last sample.
    first: Option<[f64; 3]>,
    last: Option<[f64; 3]>,
    /// Accepted tokens per draft position at the same two samples (empty where not counted).
    first_pos: Vec<f64>,
    last_pos: Vec<f64>,
}

impl SpecWindow {
    /// One gauge sample inside the window: the gauges where the engine has them, and the
    /// cumulative (drafts, draft tokens, accepted tokens) where it counts them.
    pub fn observe(
        &mut self,
        accept_rate: Option<f64>,
        accept_length: Option<f64>,
        counters: Option<[f64; 3]>,
    ) {
        self.observe_with_positions(accept_rate, accept_length, counters, &[]);
    }

    /// [`SpecWindow::observe`] with vLLM's cumulative accepted tokens per draft position
    /// (index k: `position="k"`), read from the same page as `counters`.
    pub fn observe_with_positions(
        &mut self,
        accept_rate: Option<f64>,
        accept_length: Option<f64>,
        counters: Option<[f64; 3]>,
        per_pos: &[f64],
    ) {
        if let Some(r) = accept_rate.filter(|r| r.is_finite() && *r >= 0.0) {
            self.rate_sum += r;
            self.rate_n += 1;
        }
        if let Some(l) = accept_length.filter(|l| l.is_finite() && *l >= 1.0) {
            self.length_sum += l;
            self.length_n += 1;
        }
        if let Some(c) = counters.filter(|c| c.iter().all(|x| x.is_finite())) {
            // Positions start with the counters' first sample, so both deltas span one interval.
            if self.first.is_none() {
                self.first = Some(c);
                self.first_pos = per_pos.to_vec();
            }
            self.last = Some(c);
            self.last_pos = per_pos.to_vec();
        }
    }

    /// The window's figures; `None` when the server showed no speculative decoding (no gauge,
    /// or counters that did not move).
    pub fn figures(&self) -> Option<SpecFigures> {
        if let (Some(a), Some(b)) = (self.first, self.last) {
            let [drafts, draft_tokens, accepted] = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
            if drafts > 0.0 && draft_tokens > 0.0 && accepted >= 0.0 && accepted <= draft_tokens {
                return Some(SpecFigures {
                    accept_rate: Some(accepted / draft_tokens),
                    accept_length: Some(1.0 + accepted / drafts),
                    source: "server counters (delta over the window)".into(),
                    per_position_accept_rate: per_position_rates(
                        &self.first_pos,
                        &self.last_pos,
                        drafts,
                        accepted,
                    ),
                });
            }
        }
        if self.rate_n == 0 && self.length_n == 0 {
            return None;
        }
        let mean = |sum: f64, n: u32| (n > 0).then(|| sum / f64::from(n));
        Some(SpecFigures {
            accept_rate: mean(self.rate_sum, self.rate_n),
            accept_length: mean(self.length_sum, self.length_n),
            source: format!(
                "server gauges (mean of {} samples in the window)",
                self.rate_n.max(self.length_n)
            ),
            per_position_accept_rate: Vec::new(),
        })
    }
}

/// The acceptance rate at each draft position over the window: the delta of the accepted
/// tokens at position k over the delta of `drafts` (a position the first sample lacked started
/// at 0, as a counter whose label appeared later). Empty where the server does not count
/// positions, or where the deltas contradict each other: a rate outside 0..=1 or positions
/// that do not add up to the `accepted` delta (vLLM counts each accepted token at its
/// position once, so they must: a mismatch is a reset or a partial read, not a figure).
fn per_position_rates(first: &[f64], last: &[f64], drafts: f64, accepted: f64) -> Vec<f64> {
    if last.is_empty() || first.len() > last.len() || drafts <= 0.0 {
        return Vec::new();
    }
    let deltas: Vec<f64> = (last.iter().enumerate())
        .map(|(k, b)| b - first.get(k).copied().unwrap_or(0.0))
        .collect();
    let rates: Vec<f64> = deltas.iter().map(|d| d / drafts).collect();
    let in_range = rates
        .iter()
        .all(|r| r.is_finite() && (0.0..=1.0).contains(r));
    // Counters are whole tokens: half a token absorbs float noise and nothing real.
    let adds_up = (deltas.iter().sum::<f64>() - accepted).abs() < 0.5;
    if in_range && adds_up {
        rates
    } else {
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_give_the_windows_delta_and_gauges_their_mean() {
        let mut w = SpecWindow::default();
        assert_eq!(w.figures(), None, "nothing seen");
        // vLLM: 100 drafts of 3 tokens, 240 accepted over the window.
        w.observe(None, None, Some([1000.0, 3000.0, 2000.0]));
        w.observe(None, None, Some([1050.0, 3150.0, 2120.0]));
        w.observe(None, None, Some([1100.0, 3300.0, 2240.0]));
        let f = w.figures().expect("counters");
        assert!((f.accept_rate.expect("rate") - 0.8).abs() < 1e-12);
        assert!((f.accept_length.expect("length") - 3.4).abs() < 1e-12);
        assert!(f.source.contains("counters"));
        // SGLang: gauges only, averaged.
        let mut g = SpecWindow::default();
        g.observe(Some(0.6), Some(2.5), None);
        g.observe(Some(0.8), Some(3.5), None);
        g.observe(Some(f64::NAN), Some(0.2), None);
        let f = g.figures().expect("gauges");
        assert!((f.accept_rate.expect("rate") - 0.7).abs() < 1e-12);
        assert!((f.accept_length.expect("length") - 3.0).abs() < 1e-12);
        assert!(f.source.contains("2 samples"), "{}", f.source);
        // Counters that did not move (no speculative decoding): nothing to say.
        let mut still = SpecWindow::default();
        still.observe(None, None, Some([5.0, 15.0, 10.0]));
        still.observe(None, None, Some([5.0, 15.0, 10.0]));
        assert_eq!(still.figures(), None);
    }

    #[test]
    fn per_position_rates_are_the_windows_deltas_over_its_drafts() {
        // Recorded deltas: 100 drafts of 3 tokens, 240 accepted = 90 + 80 + 70 by position.
        let mut w = SpecWindow::default();
        w.observe_with_positions(
            None,
            None,
            Some([1000.0, 3000.0, 2000.0]),
            &[900.0, 700.0, 400.0],
        );
        w.observe_with_positions(
            None,
            None,
            Some([1050.0, 3150.0, 2120.0]),
            &[945.0, 740.0, 435.0],
        );
        w.observe_with_positions(
            None,
            None,
            Some([1100.0, 3300.0, 2240.0]),
            &[990.0, 780.0, 470.0],
        );
        let f = w.figures().expect("counters");
        let want = [0.9, 0.8, 0.7];
        assert_eq!(f.per_position_accept_rate.len(), 3);
        for (got, want) in f.per_position_accept_rate.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{got} against {want}");
        }
        // Their mean over the positions is the acceptance rate.
        let mean = f.per_position_accept_rate.iter().sum::<f64>() / 3.0;
        assert!((mean - f.accept_rate.unwrap_or(0.0)).abs() < 1e-12);
        // A position first seen at the last sample started at 0.
        assert_eq!(
            per_position_rates(&[10.0], &[60.0, 40.0], 100.0, 90.0),
            [0.5, 0.4]
        );
        // Without the family (older vLLM, SGLang's gauges): none.
        let mut plain = SpecWindow::default();
        plain.observe(None, None, Some([0.0, 0.0, 0.0]));
        plain.observe(None, None, Some([10.0, 30.0, 20.0]));
        assert!(
            plain
                .figures()
                .is_some_and(|f| f.per_position_accept_rate.is_empty())
        );
    }

    #[test]
    fn contradictory_position_deltas_give_no_rates() {
        // Positions that do not add up to the accepted delta (a reset between reads).
        assert!(per_position_rates(&[0.0, 0.0], &[50.0, 20.0], 100.0, 90.0).is_empty());
        // A position above its drafts, or a counter that went back.
        assert!(per_position_rates(&[0.0, 0.0], &[150.0, 0.0], 100.0, 150.0).is_empty());
        assert!(per_position_rates(&[50.0, 0.0], &[10.0, 30.0], 100.0, -10.0).is_empty());
        // No drafts in the window; more positions at the start than at the end.
        assert!(per_position_rates(&[0.0], &[0.0], 0.0, 0.0).is_empty());
        assert!(per_position_rates(&[0.0, 0.0], &[5.0], 10.0, 5.0).is_empty());
        // The same deltas that add up are kept.
        assert_eq!(
            per_position_rates(&[0.0, 0.0], &[50.0, 40.0], 100.0, 90.0),
            [0.5, 0.4]
        );
    }
}
