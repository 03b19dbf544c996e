//! The probe behind `llmib_core::lag`: a task on the client's runtime that, every few
//! milliseconds, yields and times how long it waits to run again. That wait is what a stream
//! whose socket just became readable waits before its chunk is stamped, so it
//! estimates how late the client's stamps were (it samples the runtime's queue, not each read);
//! the verdict on it is `llmib_core::client_lag`.

use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Time between probes: 100 samples a second, enough for the p90 the verdict reads over any
/// window. Each tick wakes the runtime's workers two or three times (the timer, the yield,
/// the other worker looking for work): at 4 ms the ticks were about 650 of the 1,130 context
/// switches a second of a run at N = 1 and 10 tok/s, the client's largest fixed cost
/// (issue 44); at 10 ms, about 230 of 480 (`/proc/PID/task/*/status`, debug build).
const EVERY: Duration = Duration::from_millis(10);

/// Starts probing until `stop` is cancelled; the handle yields the delays, ms.
pub fn spawn(stop: CancellationToken) -> JoinHandle<Vec<f64>> {
    tokio::spawn(async move {
        let mut delays = Vec::new();
        let mut tick = tokio::time::interval(EVERY);
        // Only the yield is timed: the timer's own lateness is mostly its 1 ms granularity, which
        // would drown the runtime's delay. A stalled runtime shows in the yield that spans the
        // stall; catch-up ticks after it would count one stall many times.
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                _ = tick.tick() => {}
            }
            let t0 = Instant::now();
            tokio::task::yield_now().await;
            delays.push(t0.elapsed().as_secs_f64() * 1e3);
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
        let h = spawn(stop.clone());
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        let d = h.await.expect("probe");
        assert!(!d.is_empty(), "samples were taken");
        assert!(d.iter().all(|x| x.is_finite() && *x >= 0.0), "{d:?}");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_blocked_runtime_shows_in_the_delays() {
        let stop = CancellationToken::new();
        let h = spawn(stop.clone());
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
