//! The simulated engine: a continuous-batching scheduler on its own thread, and the handle
//! through which HTTP handlers submit requests, abort them and read the engine's state.
//!
//! Why a dedicated OS thread rather than a tokio task: the scheduler sleeps until the next
//! step's end with `recv_timeout`, which wakes with tens of microseconds of error, while
//! tokio's timer wheel rounds to whole milliseconds and shares its workers with hundreds of
//! stream writers. One thread owns all state, so there are no locks on the hot path; it
//! publishes a small stats snapshot for `/metrics` after each iteration.

mod messages;
mod prefix_cache;
pub(crate) use prefix_cache::{CACHE_BLOCK_TOKENS, prompt_blocks, prompt_tail};
mod scheduler;
mod spec;
pub(crate) use spec::accept_for;

use messages::Cmd;
pub(crate) use messages::{Finish, NewRequest, Stats, TokenEvent};
use std::io::Write as _;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::mpsc as tmpsc;

use crate::config::SimConfig;
use crate::stamps::StampLog;

/// The handle to the scheduler thread. Dropping it stops the thread, which ends every open
/// stream (their event channels close).
pub(crate) struct Engine {
    tx: mpsc::Sender<Cmd>,
    stats: Arc<Mutex<Stats>>,
    next_id: AtomicU64,
    thread: Option<JoinHandle<()>>,
}

/// Tells the engine its request's client is gone when dropped, unless disarmed: this is how a
/// client disconnect (hyper drops the response body) frees the request's KV (at once, or
/// after `drop_keeps_running_ms`).
pub(crate) struct AbortGuard {
    id: u64,
    tx: mpsc::Sender<Cmd>,
    armed: bool,
}

impl AbortGuard {
    /// The engine's id of the request.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The request finished normally: nothing to abort.
    pub(crate) fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for AbortGuard {
    fn drop(&mut self) {
        if self.armed {
            // The engine may already be gone at shutdown; then there is nothing to free.
            let _ = self.tx.send(Cmd::Dropped(self.id));
        }
    }
}

impl Engine {
    /// Starts the scheduler thread for `cfg`; with `stamp_chunks` on it logs every pass into
    /// `stamps`, and it always logs aborted requests there.
    pub(crate) fn start(cfg: Arc<SimConfig>, stamps: Arc<StampLog>) -> std::io::Result<Engine> {
        let (tx, rx) = mpsc::channel();
        let stats = Arc::new(Mutex::new(Stats {
            capacity: cfg.effective_kv_capacity(),
            ..Stats::default()
        }));
        let thread_stats = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name("llmib-sim-scheduler".into())
            .spawn(move || {
                let log = cfg.stamp_chunks.then_some(&*stamps);
                scheduler::run(&cfg, &rx, &thread_stats, log, &stamps)
            })?;
        Ok(Engine {
            tx,
            stats,
            next_id: AtomicU64::new(1),
            thread: Some(thread),
        })
    }

    /// Queues a request; its tokens arrive on the returned channel. Keep the guard alive for
    /// as long as the client is there.
    pub(crate) fn submit(
        &self,
        req: NewRequest,
    ) -> (tmpsc::UnboundedReceiver<TokenEvent>, AbortGuard) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (etx, erx) = tmpsc::unbounded_channel();
        // A send error means the engine stopped; the receiver then closes at once.
        let _ = self.tx.send(Cmd::Submit {
            id,
            req,
            events: etx,
        });
        let guard = AbortGuard {
            id,
            tx: self.tx.clone(),
            armed: true,
        };
        (erx, guard)
    }

    /// The latest state snapshot.
    pub(crate) fn stats(&self) -> Stats {
        match self.stats.lock() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Stops the scheduler: every open stream ends (its event channel closes).
    pub(crate) fn stop(&self) {
        let _ = self.tx.send(Cmd::Stop);
    }

    /// Aborts the requests whose `rid` is one of `rids` (every request with `all`), as
    /// SGLang's `POST /abort_request`; answers how many were aborted once the engine's state
    /// shows it (a `/metrics` read after the answer sees them gone).
    pub(crate) async fn abort_rids(&self, rids: Vec<String>, all: bool) -> usize {
        let (done, rx) = tokio::sync::oneshot::channel();
        if self.tx.send(Cmd::AbortRids { rids, all, done }).is_err() {
            return 0;
        }
        rx.await.unwrap_or(0)
    }

    /// Empties the prefix cache (entries in use stay until their requests end).
    pub(crate) fn flush_cache(&self) {
        let _ = self.tx.send(Cmd::FlushCache);
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.tx.send(Cmd::Stop);
        // A scheduler that panicked must not vanish with the engine: say so in one line.
        if let Some(Err(_)) = self.thread.take().map(std::thread::JoinHandle::join) {
            let _ = writeln!(
                std::io::stderr(),
                "simulator: the scheduler thread had panicked; its last requests ended early"
            );
        }
    }
}
