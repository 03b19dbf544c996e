//! The server's shared state: the store behind a mutex, and the blocking pool as the only place
//! it is called from (its PostgreSQL client is synchronous and must not run on a runtime
//! thread; SQLite's calls block too).

use crate::error::WebError;
use llmib_hub::{Settings, Store};
use std::sync::{Arc, Mutex, PoisonError};

/// What every handler shares.
#[derive(Debug, Clone)]
pub(crate) struct AppState {
    store: Arc<Mutex<Held>>,
    /// The store's settings, copied out so that reading them needs no lock.
    pub(crate) settings: Arc<Settings>,
}

impl AppState {
    /// The state of a server over `store`.
    pub(crate) fn new(store: Store) -> AppState {
        AppState {
            settings: Arc::new(store.settings().clone()),
            store: Arc::new(Mutex::new(Held(Some(store)))),
        }
    }

    /// Runs `f` with the store, on the blocking pool.
    pub(crate) async fn with_store<T, F>(&self, f: F) -> Result<T, WebError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T, WebError> + Send + 'static,
    {
        let store = Arc::clone(&self.store);
        blocking(move || {
            // A panic inside one request must not lock every later one out: the store's own
            // transactions keep its data whole, so a poisoned lock is still a usable store.
            let mut guard = store.lock().unwrap_or_else(PoisonError::into_inner);
            match guard.0.as_mut() {
                Some(store) => f(store),
                None => Err(WebError::Worker("the store was closed".into())),
            }
        })
        .await
    }
}

/// The store, closed off the runtime: the last server handle is often dropped on a runtime
/// thread (when `serve` returns), and the PostgreSQL client owns a runtime of its own, which
/// panics if dropped there. So a store dropped inside a runtime is dropped on a thread of its own.
#[derive(Debug)]
struct Held(Option<Store>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(store) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                std::thread::spawn(move || drop(store));
            } else {
                drop(store);
            }
        }
    }
}

/// Runs CPU-bound work (parsing a run, rendering a page) on the blocking pool, so that a large
/// run does not stall the runtime's threads.
pub(crate) async fn blocking<T, F>(f: F) -> Result<T, WebError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, WebError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| WebError::Worker(e.to_string()))?
}
