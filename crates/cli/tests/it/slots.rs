//! How much of the machine each end-to-end test holds while it runs, so that the suite can run
//! tests side by side without one test's load moving another's figures (issue 47).
//!
//! Most end-to-end tests sleep through fixed-length cells: measured on CI's 2-core machine, the
//! 114 timed tests against the simulator used 19 % of one core on average (138 s of CPU in
//! 712 s), so several of them fit on two cores at once. A few keep both cores busy (a real
//! llama.cpp or vLLM server, Chromium, the real peer tools, a million-token prompt); beside one of
//! them a timed test would measure its load. So a test takes one of two kinds of slot:
//!
//! - [`timing_lock`]: a *timed* test. At most `LLMIB_TEST_TIMED_AT_ONCE` of them run at once
//!   (default 1, as before this module; `scripts/test-all.sh` sets 4 with five test threads).
//! - [`exclusive`]: a *heavy* test: no timed test runs beside it, and it waits for those running
//!   to end. Tests that start a real engine, a browser or a peer tool check that they hold one
//!   ([`assert_exclusive`]), so a new such test cannot forget it.
//!
//! Tests that take no slot (refusals, parsing, short untimed checks) run beside anything.
//! A waiting heavy test goes first: timed tests asking after it wait behind it.
//!
//! With `LLMIB_TEST_TIMES=FILE` each slot appends `held_s  waited_s  kind  test` to FILE when it
//! is released; `scripts/test-all.sh` prints the slowest (a harness running tests side by side
//! cannot time them by its output lines).

use std::cell::Cell;
use std::io::Write;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// What a slot is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A test whose figures depend on timing.
    Timed,
    /// A test that keeps the machine's cores busy.
    Heavy,
}

/// The share of the machine a running test holds; released when dropped.
#[must_use = "the slot is released when dropped: bind it for the test's whole length"]
pub struct Slot {
    kind: Kind,
    pool: &'static Pool,
    waited_s: f64,
    since: Instant,
}

/// The slots of one test process: how many timed tests hold one, whether a heavy test holds
/// one, and how many heavy tests wait.
pub struct Pool {
    state: Mutex<State>,
    freed: Condvar,
    timed_at_once: usize,
}

struct State {
    timed: usize,
    heavy: bool,
    heavy_waiting: usize,
}

thread_local! {
    /// The slot this thread holds: libtest runs each test on a thread of its own.
    static HELD: Cell<Option<Kind>> = const { Cell::new(None) };
}

impl Pool {
    /// A pool that lets `timed_at_once` timed tests run together (at least one).
    pub const fn new(timed_at_once: usize) -> Pool {
        Pool {
            state: Mutex::new(State {
                timed: 0,
                heavy: false,
                heavy_waiting: 0,
            }),
            freed: Condvar::new(),
            timed_at_once: if timed_at_once == 0 { 1 } else { timed_at_once },
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock leaves the counts right (they change
        // only after the wait): the poison carries no broken state.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for a slot of `kind` and holds it until the returned `Slot` drops.
    ///
    /// Panics if this thread already holds one: a test that waits for a second slot while
    /// holding the first can wait for itself (a heavy slot waits for every timed one to end).
    pub fn take(&'static self, kind: Kind) -> Slot {
        if let Some(held) = HELD.with(Cell::get) {
            panic!(
                "this test already holds a {held:?} slot and asked for a {kind:?} one: take one \
                 slot, once, for the whole test (a heavy test calls `exclusive()` instead of \
                 `timing_lock()`)"
            );
        }
        let asked = Instant::now();
        let mut s = self.lock();
        match kind {
            Kind::Heavy => {
                s.heavy_waiting += 1;
                while s.heavy || s.timed > 0 {
                    s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
                }
                s.heavy_waiting -= 1;
                s.heavy = true;
            }
            Kind::Timed => {
                while s.heavy || s.heavy_waiting > 0 || s.timed >= self.timed_at_once {
                    s = self.freed.wait(s).unwrap_or_else(|p| p.into_inner());
                }
                s.timed += 1;
            }
        }
        drop(s);
        HELD.with(|h| h.set(Some(kind)));
        Slot {
            kind,
            pool: self,
            waited_s: asked.elapsed().as_secs_f64(),
            since: Instant::now(),
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        {
            let mut s = self.pool.lock();
            match self.kind {
                Kind::Heavy => s.heavy = false,
                Kind::Timed => s.timed = s.timed.saturating_sub(1),
            }
        }
        self.pool.freed.notify_all();
        HELD.with(|h| h.set(None));
        log_time(self);
    }
}

/// Appends the slot's times to `LLMIB_TEST_TIMES`, when set (best effort: a test never fails
/// for its timing log).
fn log_time(slot: &Slot) {
    let Some(path) = std::env::var_os("LLMIB_TEST_TIMES") else {
        return;
    };
    let thread = std::thread::current();
    let line = format!(
        "{:.1}\t{:.1}\t{:?}\t{}\n",
        slot.since.elapsed().as_secs_f64(),
        slot.waited_s,
        slot.kind,
        thread.name().unwrap_or("?")
    );
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = f.write_all(line.as_bytes());
    }
}

/// The test process's pool, sized by `LLMIB_TEST_TIMED_AT_ONCE` (default 1).
fn pool() -> &'static Pool {
    static POOL: std::sync::OnceLock<Pool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::env::var("LLMIB_TEST_TIMED_AT_ONCE")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(1);
        Pool::new(n)
    })
}

/// A timed test's slot: at most `LLMIB_TEST_TIMED_AT_ONCE` timed tests run at once, never beside
/// a heavy one.
pub fn timing_lock() -> Slot {
    pool().take(Kind::Timed)
}

/// A heavy test's slot: no timed test runs beside it.
pub fn exclusive() -> Slot {
    pool().take(Kind::Heavy)
}

/// A heavy slot, or `None` where this thread already holds one: for a helper (the browser) that
/// a heavy test calls as well as a test without a slot. Under a timed slot it panics as
/// [`Pool::take`] does.
pub fn exclusive_unless_held() -> Option<Slot> {
    match HELD.with(Cell::get) {
        Some(Kind::Heavy) => None,
        _ => Some(exclusive()),
    }
}

/// Panics unless this thread holds a heavy slot: called where a test starts something that
/// keeps the cores busy (`what`), so that a test doing so without `exclusive()` fails at once
/// instead of moving the figures of the timed tests beside it.
pub fn assert_exclusive(what: &str) {
    let held = HELD.with(Cell::get);
    assert!(
        held == Some(Kind::Heavy),
        "{what} keeps the cores busy: the test must hold `exclusive()` (it holds {held:?}); \
         see crates/cli/tests/it/slots.rs"
    );
}

#[cfg(test)]
mod tests {
    //! The rules on a pool of the tests' own (the process's pool serves the suites).
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A thread holding a timed slot of `pool` for `ms`, counting itself in `inside` while it
    /// does and raising `most` to the most seen inside at once.
    fn hold_timed(
        pool: &'static Pool,
        inside: &Arc<AtomicUsize>,
        most: &Arc<AtomicUsize>,
        ms: u64,
    ) -> std::thread::JoinHandle<()> {
        let (inside, most) = (inside.clone(), most.clone());
        std::thread::spawn(move || {
            let _s = pool.take(Kind::Timed);
            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
            most.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(ms));
            inside.fetch_sub(1, Ordering::SeqCst);
        })
    }

    /// Waits (at most 10 s) until `ready` holds: the tests order their threads by what the pool
    /// shows, not by sleeps a loaded machine could outlast.
    fn until(ready: impl Fn() -> bool) {
        let start = std::time::Instant::now();
        while !ready() {
            assert!(start.elapsed() < Duration::from_secs(10), "never came");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_heavy_slot_waits_for_the_timed_ones_and_holds_them_off() {
        // Room for three timed slots: the third asks with room left, so only the waiting
        // heavy slot can hold it back.
        static POOL: Pool = Pool::new(3);
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let a = hold_timed(&POOL, &inside, &most, 150);
        let b = hold_timed(&POOL, &inside, &most, 150);
        until(|| inside.load(Ordering::SeqCst) == 2);
        let heavy = std::thread::spawn({
            let inside = inside.clone();
            move || {
                let _s = POOL.take(Kind::Heavy);
                // Both timed slots were taken before: the heavy one starts after both ended.
                assert_eq!(inside.load(Ordering::SeqCst), 0);
                assert_exclusive("the test's heavy part");
                std::thread::sleep(Duration::from_millis(100));
                inside.fetch_add(100, Ordering::SeqCst);
            }
        });
        until(|| {
            let s = POOL.lock();
            s.heavy_waiting == 1 || s.heavy
        });
        // Asked while the heavy test waits: it goes after the heavy one.
        let c = std::thread::spawn({
            let inside = inside.clone();
            move || {
                let _s = POOL.take(Kind::Timed);
                assert_eq!(
                    inside.load(Ordering::SeqCst),
                    100,
                    "ran before the heavy one"
                );
            }
        });
        for t in [a, b, heavy, c] {
            t.join().expect("no rule broken");
        }
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "two timed tests ran at once"
        );
    }

    #[test]
    fn no_more_timed_tests_run_at_once_than_allowed() {
        static POOL: Pool = Pool::new(1);
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| hold_timed(&POOL, &inside, &most, 40))
            .collect();
        for t in threads {
            t.join().expect("joined");
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_second_slot_on_one_thread_and_a_heavy_start_without_one_are_refused() {
        static POOL: Pool = Pool::new(1);
        let nested = std::thread::spawn(|| {
            let _s = POOL.take(Kind::Timed);
            let _t = POOL.take(Kind::Heavy);
        })
        .join();
        let msg = nested.expect_err("a second slot must panic");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(msg.contains("already holds a Timed slot"), "{msg}");
        // The first slot was released as the thread unwound: the pool is free again.
        drop(POOL.take(Kind::Heavy));

        let timed_only = std::thread::spawn(|| {
            let _s = POOL.take(Kind::Timed);
            assert_exclusive("a planted llama-server");
        })
        .join();
        let msg = timed_only.expect_err("a heavy start under a timed slot must panic");
        let msg = msg.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            msg.contains("a planted llama-server keeps the cores busy"),
            "{msg}"
        );
    }
}
