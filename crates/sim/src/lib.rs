//! A simulated continuous-batching inference engine that speaks SGLang's or vLLM's HTTP dialect.
//! It shares no code with the client crates, so that a client bug is never mirrored here.
//!
//! The pieces, in the order a request meets them:
//! - `config`: every knob ([`SimConfig`]), and `profiles` ([`builtin_profile`]) that fill them;
//! - `http`, `request`, `info`, `metrics`: the server, its endpoints and each engine's bodies;
//! - `tokenizer`: the simulator's own deterministic tokenizer (not one token per character);
//! - `engine`: the scheduler thread (KV admission, prefix cache, prefill, decode steps);
//! - `wire`: the exact JSON and SSE bytes each engine writes;
//! - `faults`: seeded fault decisions;
//! - `stamps` and `emitted`: when requests arrived and what the engine really emitted when, and
//!   the figures of a window or of each request computed from that (the oracle of the
//!   client's timing tests).
//!
//! Start it in-process with [`spawn`] (tests, demos) or [`serve`] (your own listener and
//! shutdown signal). `docs/simulator.md` describes the model and shows transcripts.

pub mod answers;
mod config;
mod emitted;
mod engine;
mod faults;
mod http;
mod info;
mod metrics;
mod profiles;
mod reply;
mod request;
mod rng;
mod stamps;
mod state;
mod tokenizer;
mod wire;

#[cfg(test)]
#[path = "tests/open_load.rs"]
mod open_load_tests;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub use config::{FaultConfig, Flavor, SimConfig};
pub use emitted::{EmittedFigures, ServedRequest, served_requests};
pub use profiles::{builtin_profile, builtin_profile_names, load_profile, profile_from_toml};
pub use stamps::{ArrivalStamp, ChunkStamp, PassStamp};

/// Everything that can go wrong starting or configuring the simulator.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A knob has an impossible value; the message names it and what is allowed.
    #[error("invalid simulator configuration: {0}")]
    Invalid(String),
    /// A profile name or file could not be used.
    #[error("simulator profile {0}")]
    Profile(String),
    /// Binding or serving failed.
    #[error("simulator I/O error: {0} (is the port free?)")]
    Io(#[from] std::io::Error),
}

/// Serves `config` on `listener` until `shutdown` completes.
///
/// On shutdown the engine stops first, which ends every open stream (without `[DONE]`), then
/// the server waits for connections to close.
pub async fn serve(
    listener: TcpListener,
    config: SimConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), SimError> {
    serve_with(listener, config, shutdown, Arc::default()).await
}

/// [`serve`], recording chunk stamps (when `stamp_chunks` is on) into `stamps`.
async fn serve_with(
    listener: TcpListener,
    config: SimConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
    stamps: Arc<stamps::StampLog>,
) -> Result<(), SimError> {
    config.validate()?;
    let addr = listener.local_addr()?;
    let cfg = Arc::new(config);
    let engine = engine::Engine::start(Arc::clone(&cfg), Arc::clone(&stamps))?;
    let state = Arc::new(state::AppState {
        rng: Mutex::new(rng::Rng::new(cfg.seed)),
        cfg,
        engine,
        addr,
        started: state::unix_now(),
        stamps,
        generate_requests: Default::default(),
    });
    let app = http::router(Arc::clone(&state));
    let stopper = Arc::clone(&state);
    // TCP_NODELAY, as uvicorn (vLLM, SGLang) sets it: without it Nagle's algorithm holds a
    // small chunk written right after the headers until the client's delayed ACK (~40 ms), and
    // every stream's first tokens would arrive in a burst.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stopper.engine.stop();
        })
        .await?;
    Ok(())
}

/// A simulator running in the background on `127.0.0.1`. Dropping it shuts the server down.
pub struct SimHandle {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), SimError>>>,
    stamps: Arc<stamps::StampLog>,
}

impl SimHandle {
    /// The bound address (port chosen by the OS).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Removes and returns the chunk stamps recorded so far, in the order they were taken
    /// (always empty unless the config has `stamp_chunks` on).
    pub fn take_chunk_stamps(&self) -> Vec<ChunkStamp> {
        self.stamps.take()
    }

    /// Removes and returns the arrival stamps recorded so far (empty unless the config has
    /// `stamp_chunks` on): when each generation request reached the engine, in that order.
    pub fn take_arrival_stamps(&self) -> Vec<ArrivalStamp> {
        self.stamps.take_arrivals()
    }

    /// Removes and returns the scheduler's pass log recorded so far (empty unless the config
    /// has `stamp_chunks` on): what the engine really ran, and when.
    pub fn take_pass_stamps(&self) -> Vec<PassStamp> {
        self.stamps.take_passes()
    }

    /// Stops the server gracefully and waits until it has: open streams end, the port is
    /// released. (Serving errors cannot happen after a successful bind: axum retries failed
    /// accepts, so there is nothing to report.)
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
    }
}

/// Starts `config` on `127.0.0.1:0` in a background task (needs a tokio runtime).
pub async fn spawn(config: SimConfig) -> Result<SimHandle, SimError> {
    config.validate()?;
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    let (tx, rx) = oneshot::channel::<()>();
    let stamps = Arc::new(stamps::StampLog::default());
    let task = tokio::spawn(serve_with(
        listener,
        config,
        async move {
            // A dropped handle closes the channel: that also means stop.
            let _ = rx.await;
        },
        Arc::clone(&stamps),
    ));
    Ok(SimHandle {
        addr,
        stop: Some(tx),
        task: Some(task),
        stamps,
    })
}
