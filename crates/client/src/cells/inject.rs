//! The injected request of a mixed-prefill window (`llmib_core::mixed`): once the window is
//! open, it waits `before`, sends one prompt on the window's clock (so its send and first
//! token fall on the same time line as the streams' chunks), waits `after` past its end and
//! closes the window. Apart from `window` because the decode cell never injects; the window
//! only starts it and collects it.

use crate::server::engine::Engine;
use crate::wire::stream::{Measured, RequestSpec, measure};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The stream index the injected request's record carries (no decode stream has it).
pub(crate) const INJECTED_STREAM: u32 = u32::MAX;

/// A request sent into a running window, and the spans around it.
#[derive(Debug, Clone)]
pub struct Injection {
    /// The request (`max_tokens = 1`: its first token ends it).
    pub request: RequestSpec,
    /// From the window's open to the send.
    pub before: Duration,
    /// From the request's end to the window's close.
    pub after: Duration,
}

/// A started injection: its task, and the switch that ends its request when the window
/// closes first (the window's own limit, or Ctrl-C).
pub(crate) struct Injector {
    task: JoinHandle<Measured>,
    stop: CancellationToken,
}

/// Starts `inj` for a window opened at `start` whose records count from `origin`; `close`
/// fires `after` past the request's end. Nothing starts when the window measures nothing.
pub(crate) fn start(
    engine: &Arc<Engine>,
    inj: Option<&Injection>,
    measured: bool,
    (origin, start): (Instant, Instant),
    run_cancel: &CancellationToken,
    close: &CancellationToken,
) -> Option<Injector> {
    let inj = inj.filter(|_| measured)?.clone();
    let stop = run_cancel.child_token();
    let (engine, close, token) = (engine.clone(), close.clone(), stop.clone());
    let task = tokio::spawn(async move {
        tokio::select! {
            _ = token.cancelled() => {}
            _ = tokio::time::sleep_until(start + inj.before) => {}
        }
        let m = measure(
            engine.client(),
            &inj.request,
            INJECTED_STREAM,
            origin,
            &token,
            None,
        )
        .await;
        tokio::select! {
            _ = token.cancelled() => {}
            _ = tokio::time::sleep(inj.after) => {}
        }
        close.cancel();
        m
    });
    Some(Injector { task, stop })
}

/// The injected request's measurement once the window has closed: a request still open is
/// cancelled (its record says so); a task that died is the `Err`.
pub(crate) async fn finish(
    injector: Option<Injector>,
) -> Option<Result<Measured, tokio::task::JoinError>> {
    let i = injector?;
    i.stop.cancel();
    Some(i.task.await)
}

/// The injected request's measurement from [`finish`]; a task that died is said in `fault`
/// (the window's, which fails the cell), never an injection silently missing.
pub(crate) fn measured(
    finished: Option<Result<Measured, tokio::task::JoinError>>,
    fault: &mut Option<String>,
) -> Option<Measured> {
    match finished? {
        Ok(m) => Some(m),
        Err(e) => {
            fault.get_or_insert_with(|| format!("the injected request's task died: {e}"));
            None
        }
    }
}
