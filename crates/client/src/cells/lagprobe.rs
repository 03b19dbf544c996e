//! The probe behind `llmib_core::lag`: a task on the client's runtime that, every few
//! milliseconds, yields and times how long it waits to run again. That wait is what a stream
//! whose socket just became readable waits before its chunk is stamped, so it
//! estimates how late the client's stamps were (it samples the runtime's queue, not each read);
//! the verdict on it is `llmib_core::client_lag`.

use crate::wire::rawhttp::RawTarget;
use llmib_core::probe_period_ms;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A live count of the pieces read without the kernel's receive time: the raw reader's
/// (`RawTarget::unstamped`).
pub trait UnstampedCount: Send + Sync {
    /// The pieces read so far without the kernel's receive time.
    fn unstamped(&self) -> u64;
}

impl UnstampedCount for RawTarget {
    fn unstamped(&self) -> u64 {
        RawTarget::unstamped(self)
    }
}

/// Starts probing until `stop` is cancelled; the handle yields the delays, ms. `raw`: the
/// raw reader of the window's streams, whose count of pieces without a kernel time sets the
/// period (`llmib_core::probe_period_ms`: 10 ms while the chunk instants are reads, 250 ms
/// while the kernel stamps every one); `None` (the reqwest reader): always 10 ms. Each
/// sample wakes the runtime's workers two or three times (the timer, the yield, the I/O
/// driver's wake): at 4 ms the samples were about 650 of the 1,130 context switches a
/// second of a run at N = 1 and 10 tok/s (`/proc/PID/task/*/status`, debug build).
pub fn spawn(
    stop: CancellationToken,
    raw: Option<Arc<dyn UnstampedCount>>,
) -> JoinHandle<Vec<f64>> {
    tokio::spawn(async move {
        let mut delays = Vec::new();
        let unstamped = || raw.as_ref().map(|r| r.unstamped());
        let mut seen = unstamped();
        let mut next = Instant::now() + Duration::from_millis(probe_period_ms(None));
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                _ = tokio::time::sleep_until(next) => {}
            }
            // Only the yield is timed: the timer's own lateness is mostly its 1 ms granularity,
            // which would drown the runtime's delay.
            let t0 = Instant::now();
            tokio::task::yield_now().await;
            delays.push(t0.elapsed().as_secs_f64() * 1e3);
            let now_seen = unstamped();
            let period = probe_period_ms(seen.zip(now_seen));
            seen = now_seen;
            // A stalled runtime shows in the yield that spans the stall; catch-up samples after
            // it would count one stall many times, so a missed sample is not made up.
            let (now, period) = (Instant::now(), Duration::from_millis(period));
            next += period;
            if next <= now {
                next = now + period;
            }
        }
        delays
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_idle_runtime_gives_small_delays() {
        let stop = CancellationToken::new();
        let h = spawn(stop.clone(), None);
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        let d = h.await.expect("probe");
        assert!(!d.is_empty(), "samples were taken");
        assert!(d.iter().all(|x| x.is_finite() && *x >= 0.0), "{d:?}");
    }

    /// A reader's count of pieces without a kernel time.
    #[derive(Default)]
    struct Count(std::sync::atomic::AtomicU64);

    impl UnstampedCount for Count {
        fn unstamped(&self) -> u64 {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    /// The probe's samples over 350 ms with `raw`, while `unstamped` moves its count (a piece
    /// without a kernel time every 5 ms) or not.
    async fn samples_in_350_ms(raw: Option<Arc<Count>>, unstamped: bool) -> usize {
        let stop = CancellationToken::new();
        let h = spawn(
            stop.clone(),
            raw.clone().map(|r| r as Arc<dyn UnstampedCount>),
        );
        let end = Instant::now() + Duration::from_millis(350);
        while Instant::now() < end {
            if let (Some(r), true) = (raw.as_ref(), unstamped) {
                r.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stop.cancel();
        h.await.expect("probe").len()
    }

    #[tokio::test]
    async fn the_probe_slows_while_the_kernel_stamps_every_piece() {
        let raw = || Some(Arc::new(Count::default()));
        // Nominally 2 samples (10 and 260 ms); a loaded host only makes fewer.
        let covered = samples_in_350_ms(raw(), false).await;
        assert!((1..=4).contains(&covered), "{covered} samples");
        // Nominally 35: a piece without a kernel time keeps the fast period, as does the
        // reqwest reader (no raw target); a third of that is left for a loaded host.
        let unstamped = samples_in_350_ms(raw(), true).await;
        assert!(unstamped >= 12, "{unstamped} samples");
        let reqwest = samples_in_350_ms(None, false).await;
        assert!(reqwest >= 12, "{reqwest} samples");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_blocked_runtime_shows_in_the_delays() {
        let stop = CancellationToken::new();
        let h = spawn(stop.clone(), None);
        // A task that keeps the only thread for 15 ms at a time, yielding in between: the
        // probe's yields land behind it.
        let hog = tokio::spawn(async {
            for _ in 0..4 {
                std::thread::sleep(Duration::from_millis(15));
                tokio::task::yield_now().await;
            }
        });
        hog.await.expect("hog");
        tokio::time::sleep(Duration::from_millis(10)).await;
        stop.cancel();
        let d = h.await.expect("probe");
        let max = d.iter().copied().fold(0.0, f64::max);
        assert!(max >= 10.0, "a 15 ms hold must show: {d:?}");
    }
}
