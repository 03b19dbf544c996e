//! What every handler shares ([`AppState`]: the configuration, the engine, the seeded draws,
//! the stamps), and the clock its timestamps are read from. The server builds it; the
//! generation, info and metrics handlers all read it from here.

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use crate::config::SimConfig;
use crate::engine::Engine;
use crate::rng::Rng;
use crate::stamps::StampLog;

/// What every handler shares.
pub(crate) struct AppState {
    /// The configuration the server runs with.
    pub cfg: Arc<SimConfig>,
    /// The scheduler.
    pub engine: Engine,
    /// Ids and fault decisions, drawn in arrival order.
    pub rng: Mutex<Rng>,
    /// The address the server listens on.
    pub addr: SocketAddr,
    /// Unix seconds at start (`created` of model cards, `_created` metric samples).
    pub started: u64,
    /// Chunk stamps, recorded when `cfg.stamp_chunks` is on.
    pub stamps: Arc<StampLog>,
    /// Generation requests received so far (`faults.refuse_after_requests`).
    pub generate_requests: AtomicU64,
    /// Answers under a grammar so far (`grammar_break_every`; `crate::structured`).
    pub structured_answers: AtomicU64,
}

/// Seconds since the Unix epoch.
pub(crate) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
