//! Starting the simulator: the engine thread, the shared state and the HTTP server on a
//! listener ([`serve`]), or all of it in the background on a free local port ([`spawn`], whose
//! [`SimHandle`] reads the stamps and shuts it down).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::SimConfig;
use crate::error::SimError;
use crate::stamps::{AbortRecord, ArrivalStamp, ChunkStamp, PassStamp};
use crate::{engine, http, rng, stamps, state};

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
        structured_answers: Default::default(),
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

    /// Every request the engine aborted so far, in order (the log is kept; always recorded):
    /// by `POST /abort_request`, or because its client went away. `GET /sim/aborts` serves
    /// the same list.
    pub fn aborts(&self) -> Vec<AbortRecord> {
        self.stamps.aborts()
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
