//! Skipping the cell in progress (the dashboard's `s` key, as the seed's screen mode has): a
//! switch the driver arms with a child of the run's cancellation for each cell, and the
//! dashboard fires. Firing it stops that cell only: its requests are cancelled as Ctrl-C
//! would cancel them, its row is Not run with the reason "skipped", and the run goes on.

use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// The reason a skipped cell's row gives.
pub const SKIPPED: &str = "skipped";

/// The switch: shared by the driver (which arms it per cell) and the dashboard (which fires
/// it). Cloning shares it.
#[derive(Debug, Clone, Default)]
pub struct CellSkip(Arc<Mutex<Option<CancellationToken>>>);

impl CellSkip {
    /// Skips the cell in progress; `false` when no cell is in progress (nothing to skip).
    pub fn skip(&self) -> bool {
        match self.0.lock().ok().and_then(|g| g.clone()) {
            Some(t) if !t.is_cancelled() => {
                t.cancel();
                true
            }
            _ => false,
        }
    }

    /// A cancellation for the next cell: cancelled with the run, or alone by [`Self::skip`].
    pub(crate) fn arm(&self, run: &CancellationToken) -> CancellationToken {
        let t = run.child_token();
        if let Ok(mut g) = self.0.lock() {
            *g = Some(t.clone());
        }
        t
    }

    /// No cell in progress: a key pressed now skips nothing.
    pub(crate) fn disarm(&self) {
        if let Ok(mut g) = self.0.lock() {
            *g = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_cancels_the_armed_cell_only() {
        let run = CancellationToken::new();
        let s = CellSkip::default();
        assert!(!s.skip(), "nothing armed");
        let cell = s.arm(&run);
        assert!(s.clone().skip(), "a clone fires the same switch");
        assert!(cell.is_cancelled() && !run.is_cancelled());
        assert!(!s.skip(), "a cell skips once");
        let next = s.arm(&run);
        assert!(!next.is_cancelled());
        run.cancel();
        assert!(
            next.is_cancelled(),
            "the run's cancellation reaches the cell"
        );
        s.disarm();
        assert!(!s.skip());
    }
}
