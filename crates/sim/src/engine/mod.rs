//! The simulated engine: a continuous-batching scheduler on its own thread, and the handle
//! through which HTTP handlers submit requests, abort them and read the engine's state.
//!
//! Why a dedicated OS thread rather than a tokio task: the scheduler sleeps until the next
//! step's end with `recv_timeout`, which wakes with tens of microseconds of error, while
//! tokio's timer wheel rounds to whole milliseconds and shares its workers with hundreds of
//! stream writers. One thread owns all state, so there are no locks on the hot path; it
//! publishes a small stats snapshot for `/metrics` after each iteration.

mod prefix_cache;
pub(crate) use prefix_cache::prompt_blocks;
mod scheduler;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use tokio::sync::mpsc as tmpsc;

use crate::config::SimConfig;
use crate::stamps::StampLog;

/// Why a request stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// `max_tokens` reached.
    Length,
    /// A natural EOS (only with `eos_rate` > 0 and `ignore_eos` off).
    Stop,
}

impl Finish {
    /// The OpenAI `finish_reason` string.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
}

/// What the scheduler tells a request's HTTP handler.
#[derive(Debug)]
pub(crate) struct TokenEvent {
    /// The text of the tokens of this step (one chunk, even with speculative decoding).
    pub text: String,
    /// How many tokens this step produced.
    pub n: u32,
    /// Output tokens so far, including these.
    pub completion_tokens: u32,
    /// Set on the request's last event.
    pub finish: Option<Finish>,
}

/// A request as the engine sees it.
#[derive(Debug, Clone)]
pub(crate) struct NewRequest {
    /// Prompt length in tokens.
    pub prompt_len: u64,
    /// Hash of the prompt's token ids (the output text's seed).
    pub prompt_hash: u64,
    /// The prompt's prefix-cache blocks (`prefix_cache::prompt_blocks`).
    pub blocks: Vec<prefix_cache::Block>,
    /// Output tokens to generate at most.
    pub max_tokens: u32,
    /// No natural EOS before this many tokens.
    pub min_tokens: u32,
    /// Never stop before `max_tokens`.
    pub ignore_eos: bool,
    /// A fixed answer (`answer_accuracy`): these words are the output, then a natural stop
    /// (the length limit still cuts it).
    pub script: Option<Vec<String>>,
}

/// A snapshot of the engine's state, published after every scheduler iteration.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stats {
    /// Requests admitted (prefilling or decoding).
    pub running: usize,
    /// Requests waiting for KV capacity.
    pub queued: usize,
    /// KV tokens the engine schedules with.
    pub capacity: u64,
    /// Prompt + max_tokens of admitted requests (the admission rule's left side).
    pub reserved: u64,
    /// KV tokens actually written by admitted requests (prompt + generated so far).
    pub used: u64,
    /// Tokens held by the prefix cache.
    pub cached: u64,
    /// Prompt tokens prefilled or served from cache, cumulative.
    pub prompt_tokens_total: u64,
    /// Output tokens emitted, cumulative.
    pub generation_tokens_total: u64,
    /// Prompt tokens looked up in the prefix cache, cumulative.
    pub cache_query_tokens: u64,
    /// Prompt tokens found in the prefix cache, cumulative.
    pub cache_hit_tokens: u64,
    /// Requests that ran to their end, cumulative.
    pub finished_requests: u64,
    /// Requests aborted (client gone), cumulative.
    pub aborted_requests: u64,
    /// Output tokens per second of the last decode step.
    pub last_gen_throughput: f64,
}

enum Cmd {
    Submit {
        id: u64,
        req: NewRequest,
        events: tmpsc::UnboundedSender<TokenEvent>,
    },
    Abort(u64),
    FlushCache,
    Stop,
}

/// The handle to the scheduler thread. Dropping it stops the thread, which ends every open
/// stream (their event channels close).
pub(crate) struct Engine {
    tx: mpsc::Sender<Cmd>,
    stats: Arc<Mutex<Stats>>,
    next_id: AtomicU64,
    thread: Option<JoinHandle<()>>,
}

/// Aborts its request in the engine when dropped, unless disarmed: this is how a client
/// disconnect (hyper drops the response body) frees the request's KV.
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
            let _ = self.tx.send(Cmd::Abort(self.id));
        }
    }
}

impl Engine {
    /// Starts the scheduler thread for `cfg`; with `stamp_chunks` on it logs every pass into
    /// `stamps`.
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
                let log = cfg.stamp_chunks.then_some(stamps);
                scheduler::run(&cfg, &rx, &thread_stats, log.as_deref())
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
            eprintln!(
                "simulator: the scheduler thread had panicked; its last requests ended early"
            );
        }
    }
}
