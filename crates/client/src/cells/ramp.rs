//! A decode window's start and ramp: the drain barrier's wait for an idle server (or, on a
//! shard, for the slot's origin) and its check at the end, the ramp watched until the readiness judge (`llmib_core::readiness`) opens
//! the window, and a timetabled window's fixed opening instant. Apart from `crate::cells::window` so
//! that the window keeps to what it measures once open; the rule the judge applies is the
//! window's settings, made there (`ReadinessRule`), and the ramp only feeds it observations.

use crate::progress::events::{Progress, ProgressEvent};
use crate::progress::live::LiveWindow;
use crate::server::engine::Engine;
use crate::wire::stream::RequestSpec;
use llmib_core::{
    BarrierCheck, Outcome, RampObservation, ReadinessBy, ReadinessJudge, ReadinessRule,
    RequestRecord, redact_text,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How often the ramp is observed (gauges and first-token flags).
const RAMP_POLL: Duration = Duration::from_millis(20);

/// A window whose instants are fixed in advance (a shard's slot): its streams start at
/// `origin` and it opens at `open`, whatever the readiness judge says (its verdict is kept).
#[derive(Debug, Clone, Copy)]
pub struct WindowAt {
    /// When the streams start.
    pub origin: Instant,
    /// When the window opens.
    pub open: Instant,
}

/// The drain barrier's start (`llmib_core::drain`): waits until the gauges show no running
/// and no waiting request, at most `limit`, and says what they showed last. `None` when the
/// engine has no gauges (nothing to wait for) or none could be read.
async fn wait_idle(
    engine: &Engine,
    limit: Duration,
    cancel: &CancellationToken,
) -> Option<BarrierCheck> {
    if engine.info().capabilities.queue_gauge != Some(true) {
        return None;
    }
    let t0 = Instant::now();
    let mut last = None;
    loop {
        // A failed read is no observation: the last one stands (none: no barrier), and the
        // wait ends, as a server whose metrics fail would keep failing for the whole limit.
        let Ok(g) = engine.gauges().await else { break };
        if let Some(check) = BarrierCheck::read(g.running, g.waiting) {
            last = Some(check);
            if check.idle {
                break;
            }
        }
        if t0.elapsed() >= limit || cancel.is_cancelled() {
            break;
        }
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = tokio::time::sleep(Duration::from_millis(10)) => {}
        }
    }
    // Cancelled while busy: the window's ramp sees the cancellation; not a busy server.
    last.map(|c| BarrierCheck {
        waited_s: t0.elapsed().as_secs_f64(),
        idle: c.idle || cancel.is_cancelled(),
        ..c
    })
}

/// The drain barrier's end: the gauges once, right after the window's streams were closed
/// (and aborted where the engine can), so the row says what the next cell may wait for.
pub(crate) async fn end_check(engine: &Engine) -> Option<BarrierCheck> {
    if engine.info().capabilities.queue_gauge != Some(true) {
        return None;
    }
    let g = engine.gauges().await.ok()?;
    BarrierCheck::read(g.running, g.waiting)
}

/// What the ramp showed: the decision, and when each condition first held.
pub(crate) struct Ramp {
    /// `None`: interrupted before the window opened.
    pub by: Option<ReadinessBy>,
    /// When the gauges alone first showed N running and none waiting (ns from the origin).
    pub gauges_ready_ns: Option<u64>,
    /// When every stream first had a token (ns from the origin).
    pub all_tokens_ns: Option<u64>,
}

impl Ramp {
    /// Writes what the ramp showed into the window's queue observation, the window opening
    /// `open_s` after the origin.
    pub(crate) fn note(&self, queue: &mut llmib_core::QueueObservation, open_s: f64) {
        let s = |ns: u64| ns as f64 / 1e9;
        queue.readiness_s = Some(open_s);
        queue.gauges_ready_s = self.gauges_ready_ns.map(s);
        queue.all_streams_token_s = self.all_tokens_ns.map(s);
    }
}

/// Observes the ramp every [`RAMP_POLL`] and feeds the readiness judge, under `rule`, until it
/// opens the window (or the run is cancelled; a timetabled window, `at`, opens at its instant
/// at the latest). `drain` runs before each observation: the window reports its streams'
/// failed requests by it, so the log shows an error before the readiness it caused.
pub(crate) async fn await_readiness(
    engine: &Engine,
    rule: ReadinessRule,
    at: Option<WindowAt>,
    live: &LiveWindow,
    origin: Instant,
    cancel: &CancellationToken,
    drain: &mut dyn FnMut(),
) -> Ramp {
    let use_gauges = engine.info().capabilities.queue_gauge == Some(true);
    let mut judge = ReadinessJudge::new(rule, use_gauges);
    let by = loop {
        drain();
        if cancel.is_cancelled() {
            break None;
        }
        let gauges = if use_gauges {
            // A failed gauge read is no observation of the queue: the judge waits for the next
            // (or for its limit), never opens on it.
            engine.gauges().await.ok().and_then(|g| {
                live.set_gauges(g, std::time::Instant::now());
                g.running.zip(g.waiting)
            })
        } else {
            None
        };
        let (ended, errored) = live.ended();
        let o = RampObservation {
            t_ns: Instant::now().saturating_duration_since(origin).as_nanos() as u64,
            streams_with_token: live.streams_with_token(),
            errored_requests: errored,
            gauges,
            finished_requests: ended.saturating_sub(errored),
        };
        if let Some(opened) = judge.observe(o) {
            live.open(opened.by, std::time::Instant::now());
            break Some(opened.by);
        }
        if at.is_some_and(|a| Instant::now() >= a.open) {
            live.open(ReadinessBy::Timeout, std::time::Instant::now());
            break Some(ReadinessBy::Timeout);
        }
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = tokio::time::sleep(RAMP_POLL) => {}
        }
    };
    Ramp {
        by,
        gauges_ready_ns: judge.gauges_ready_at_ns(),
        all_tokens_ns: judge.all_tokens_at_ns(),
    }
}

/// Waits until the window's streams may start: for an idle server (how long that took, s),
/// or, timetabled, for its origin (every shard's previous slot ended together).
pub(crate) async fn wait_for_start(
    engine: &Engine,
    at: Option<WindowAt>,
    busy_timeout: Duration,
    cancel: &CancellationToken,
) -> Option<BarrierCheck> {
    let Some(at) = at else {
        return wait_idle(engine, busy_timeout, cancel).await;
    };
    // Cancelled: the ramp that follows sees it and stops.
    crate::cells::shard::sleep_until_precise(at.origin, cancel).await;
    None
}

/// A timetabled window: waits for its instant when the judge opened it earlier; whether the
/// judge had said ready (`None` for a window that opens when the judge says).
pub(crate) async fn open_at_instant(
    at: Option<WindowAt>,
    by: Option<ReadinessBy>,
    cancel: &CancellationToken,
) -> Option<bool> {
    let at = at?;
    // Cancelled: the window's span sees it and ends the cell as interrupted.
    crate::cells::shard::sleep_until_precise(at.open, cancel).await;
    Some(by.is_some_and(ReadinessBy::is_ready))
}

/// The window's close on the server: the requests it cancelled, aborted by id where the
/// engine keeps a dropped stream running (SGLang), then the end barrier's look at the gauges.
/// Returns (requests aborted, the end check); an abort the server refused is a note, since the
/// end check then shows what it left running.
pub(crate) async fn close_on_server(
    engine: &Engine,
    requests: &[RequestSpec],
    ids: Option<&[u32]>,
    records: impl Iterator<Item = &RequestRecord>,
    progress: &dyn Progress,
) -> (Option<u64>, Option<BarrierCheck>) {
    let aborted = if engine.aborts_by_id() {
        let rids = cancelled_rids(requests, ids, records);
        match engine.abort_requests(&rids).await {
            Ok(n) => Some(n),
            Err(e) => {
                let e = redact_text(&e.to_string(), &engine.secrets());
                progress.event(ProgressEvent::Note(format!(
                    "the server refused to abort the window's cancelled requests: {e}"
                )));
                Some(0)
            }
        }
    } else {
        None
    };
    (aborted, end_check(engine).await)
}

/// The ids of the requests the window's stop cancelled: each stream's last request, where it
/// was still running (a stream re-sends one spec, so its id names its one request in flight).
fn cancelled_rids<'a>(
    requests: &[RequestSpec],
    ids: Option<&[u32]>,
    records: impl Iterator<Item = &'a RequestRecord>,
) -> Vec<Arc<str>> {
    let index = |stream: u32| match ids {
        Some(v) => v.iter().position(|&s| s == stream),
        None => Some(stream as usize),
    };
    let mut rids: Vec<Arc<str>> = records
        .filter(|r| r.outcome == Outcome::Cancelled)
        .filter_map(|r| requests.get(index(r.stream)?)?.rid.clone())
        .collect();
    rids.sort();
    rids.dedup();
    rids
}
