//! The open-loop pacer: fires each request of a schedule at its absolute due instant, on a
//! thread of its own.
//!
//! Why a thread and not a tokio timer: tokio's timer wheel has a 1 ms resolution, and a timer
//! on a busy runtime fires when a worker gets to it, so pacing with it rounds every send to a
//! millisecond or worse (the same limit as the Python peers' event loops). The pacer sleeps with
//! the OS timer until shortly before each deadline, then spins on the monotonic clock to the
//! deadline itself, and hands the request to the runtime (`fire`). Every wait is to an absolute
//! instant (origin + due), never a relative sleep, so a late send does not shift the next one.
//! The spin is bounded ([`SPIN`]): at 1,000 requests/s the pacer keeps about a fifth of a core.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// How close to a deadline the pacer stops sleeping and spins: more than the OS timer's usual
/// slack (50 µs default timer slack plus wake-up latency), little enough to cost a few percent
/// of a core.
pub const SPIN: Duration = Duration::from_micros(200);

/// The longest single sleep, so a cancellation is seen within this time.
const MAX_NAP: Duration = Duration::from_millis(20);

/// A running pacer: how many requests it has fired, and its thread.
pub struct Pacer {
    fired: Arc<AtomicUsize>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Pacer {
    /// Starts firing: `fire(i)` is called at `origin + due_ns[i]` for each i in order, until
    /// the schedule ends or `cancel` fires. `due_ns` must be ascending (a schedule is).
    pub fn start(
        origin: Instant,
        due_ns: Arc<[u64]>,
        cancel: CancellationToken,
        mut fire: impl FnMut(usize) + Send + 'static,
    ) -> Pacer {
        let fired = Arc::new(AtomicUsize::new(0));
        let count = fired.clone();
        let thread = std::thread::Builder::new()
            .name("llmib-pacer".into())
            .spawn(move || {
                for (i, due) in due_ns.iter().enumerate() {
                    if !wait_until(origin + Duration::from_nanos(*due), &cancel) {
                        return;
                    }
                    fire(i);
                    count.store(i + 1, Ordering::Release);
                }
            })
            .ok();
        Pacer { fired, thread }
    }

    /// Requests fired so far.
    pub fn fired(&self) -> usize {
        self.fired.load(Ordering::Acquire)
    }

    /// Waits (blocking) for the pacer to finish or stop; returns how many it fired. Call it
    /// from a blocking context (`spawn_blocking`) on a runtime.
    pub fn join(mut self) -> usize {
        if let Some(t) = self.thread.take() {
            // The pacer's closure does not panic on its own; a panic inside `fire` is the
            // caller's, and it has already stopped firing: the count says how far it got.
            let _ = t.join();
        }
        self.fired()
    }
}

/// Sleeps, then spins, until `deadline`; false when `cancel` fired first.
fn wait_until(deadline: Instant, cancel: &CancellationToken) -> bool {
    loop {
        if cancel.is_cancelled() {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        let left = deadline - now;
        if left > SPIN {
            std::thread::sleep((left - SPIN).min(MAX_NAP));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Every request fires, in order, never before its deadline; a cancel stops the rest.
    #[test]
    fn fires_in_order_never_early_and_stops_on_cancel() {
        let origin = Instant::now();
        let due: Arc<[u64]> = (1..=20u64).map(|i| i * 1_000_000).collect();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let pacer = Pacer::start(origin, due.clone(), CancellationToken::new(), move |i| {
            log.lock().expect("log").push((i, Instant::now()));
        });
        assert_eq!(pacer.join(), 20);
        let seen = seen.lock().expect("log");
        for (k, (i, at)) in seen.iter().enumerate() {
            assert_eq!(*i, k);
            assert!(
                *at >= origin + Duration::from_nanos(due[k]),
                "request {k} fired early"
            );
        }
        let cancel = CancellationToken::new();
        cancel.cancel();
        let none = Pacer::start(Instant::now(), due, cancel, |_| {});
        assert_eq!(none.join(), 0);
    }
}
