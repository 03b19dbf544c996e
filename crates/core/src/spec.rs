//! Speculative decoding over a decode window, as the server reports it: SGLang's
//! `spec_accept_rate` / `spec_accept_length` gauges (their mean over the window's samples), or
//! vLLM's cumulative draft counters (their delta over the window: rate = accepted / draft
//! tokens, length = 1 + accepted / drafts, since each step emits the accepted tokens plus the
//! one the target model samples). Counters win where both exist: a delta covers every step of
//! the window, a gauge only the instants it was read. Pure, fed by the window's gauge loop.

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
        if let Some(r) = accept_rate.filter(|r| r.is_finite() && *r >= 0.0) {
            self.rate_sum += r;
            self.rate_n += 1;
        }
        if let Some(l) = accept_length.filter(|l| l.is_finite() && *l >= 1.0) {
            self.length_sum += l;
            self.length_n += 1;
        }
        if let Some(c) = counters.filter(|c| c.iter().all(|x| x.is_finite())) {
            self.first.get_or_insert(c);
            self.last = Some(c);
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
        })
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
}
