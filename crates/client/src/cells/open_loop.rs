//! Sending an open-loop rate cell: each request at its scheduled instant (the [`Pacer`]),
//! whatever is still running, at most `max_concurrency` in flight where a cap is given (a
//! request that finds the cap full waits, and that wait is client queue time), then the drain:
//! requests still running when the schedule ends are waited for up to the drain limit and
//! then cut (each counts as failed). Also the closed batches that find a context's
//! synchronous rate and saturation throughput. Nothing here judges a figure: the records go to
//! `llmib_core::rate_result`.

use crate::cells::pacer::Pacer;
use crate::progress::live::OpenLoopLive;
use crate::server::engine::Engine;
use crate::wire::stream::{Measured, RequestSpec, measure};
use llmib_core::{RequestRecord, RequestSample, Slo};
use llmib_core::{StableInput, StableSample, StableSeries, stable_cadence, stable_series};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How one rate cell sends.
#[derive(Debug, Clone)]
pub(crate) struct OpenLoopSpec {
    /// The cell origin, where it is fixed in advance (a shard's slot); else the moment
    /// sending starts.
    pub origin: Option<Instant>,
    /// Due instants, ns from the cell origin, ascending (`llmib_core::schedule`).
    pub due_ns: Arc<[u64]>,
    /// At most this many requests in flight.
    pub max_concurrency: Option<u32>,
    /// How long requests still running after the last due instant are waited for.
    pub drain: Duration,
    /// `--until-stable`: the target (a fraction) and the window the schedule spans, seconds.
    pub until_stable: Option<(f64, f64)>,
}

/// What a rate cell's sending gathered.
pub(crate) struct OpenLoopRun {
    /// One per request sent, in schedule order; `record.stream` is the request's index.
    pub measured: Vec<Measured>,
    /// Per scheduled request: it found the cap full and waited.
    pub waited: Vec<bool>,
    /// Most requests in flight at once.
    pub max_in_flight: u64,
    /// Ctrl-C stopped it.
    pub interrupted: bool,
    /// The measurement itself broke (a request task died): why.
    pub fault: Option<String>,
    /// Requests the pacer sent (the schedule's first `fired`; fewer than scheduled when the
    /// cell stopped early).
    pub fired: usize,
    /// `--until-stable` stopped the schedule early.
    pub stable: bool,
}

/// How long before a request's due instant the pacer hands it to the runtime. The hand-off
/// (a cross-thread wake-up of a runtime worker) takes 30–80 µs; the task then waits out the
/// rest on the monotonic clock itself, so the send lands on the due instant instead of one
/// wake-up after it (docs/benchmarks.md).
const HAND_OFF_LEAD: Duration = Duration::from_micros(150);

/// Shared by the request tasks of one cell.
struct Shared {
    /// Each request's due instant, ns from `origin`.
    due: Arc<[u64]>,
    engine: Arc<Engine>,
    requests: Arc<[RequestSpec]>,
    origin: Instant,
    cut: CancellationToken,
    cap: Option<Arc<Semaphore>>,
    live: Arc<OpenLoopLive>,
    max_in_flight: AtomicU64,
    slo: Option<Slo>,
}

/// One request task: wait for the cap if there is one, then send and measure.
async fn one_request(s: Arc<Shared>, i: usize, tx: tokio::sync::mpsc::UnboundedSender<Done>) {
    // Handed over up to HAND_OFF_LEAD early: wait out the rest here. A bounded spin on this
    // worker (never longer than the lead), because a timer would round it to a millisecond.
    let due_at = s.origin + Duration::from_nanos(s.due.get(i).copied().unwrap_or(0));
    while Instant::now() < due_at && !s.cut.is_cancelled() {
        std::hint::spin_loop();
    }
    let mut waited = false;
    // A request that gets a slot at once had no cap to wait for; one that does not waits, and
    // says so (trying first, so the flag and the wait cannot disagree).
    let _permit = match &s.cap {
        Some(cap) => match cap.clone().try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                waited = true;
                s.live.waiting.fetch_add(1, Ordering::Relaxed);
                let p = tokio::select! {
                    p = cap.clone().acquire_owned() => p.ok(),
                    _ = s.cut.cancelled() => None,
                };
                s.live.waiting.fetch_sub(1, Ordering::Relaxed);
                // Cut while still waiting for the cap (or with the slot it got at the cut):
                // never sent. Its record says so, rather than a send at the cut instant that
                // would skew the achieved rate and the queue times.
                if p.is_none() || s.cut.is_cancelled() {
                    let at = s.origin.elapsed().as_nanos() as u64;
                    let m = Measured::of_record(RequestRecord::never_sent(i as u32, at));
                    s.live.ended.fetch_add(1, Ordering::Relaxed);
                    s.live.errors.fetch_add(1, Ordering::Relaxed);
                    let _ = tx.send(Done { i, waited, m });
                    return;
                }
                p
            }
        },
        None => None,
    };
    let now = s.live.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
    s.max_in_flight.fetch_max(now, Ordering::Relaxed);
    let spec = &s.requests[i];
    let m = measure(s.engine.client(), spec, i as u32, s.origin, &s.cut, None).await;
    s.live.in_flight.fetch_sub(1, Ordering::Relaxed);
    s.live.ended.fetch_add(1, Ordering::Relaxed);
    if m.record.is_error() {
        s.live.errors.fetch_add(1, Ordering::Relaxed);
    }
    s.live.latency.observe(&m.record);
    if s.slo
        .as_ref()
        .is_some_and(|slo| slo.meets(&RequestSample::of_record(&m.record)))
    {
        s.live.met.fetch_add(1, Ordering::Relaxed);
    }
    // The receiver lives until every fired request has reported or the cell gave up.
    let _ = tx.send(Done { i, waited, m });
}

struct Done {
    i: usize,
    waited: bool,
    m: Measured,
}

/// Sends `requests[i]` at `origin + due_ns[i]` and gathers every request's record.
pub(crate) async fn run_open_loop(
    engine: &Arc<Engine>,
    requests: Arc<[RequestSpec]>,
    spec: &OpenLoopSpec,
    cancel: &CancellationToken,
    live: Arc<OpenLoopLive>,
    slo: Option<Slo>,
) -> OpenLoopRun {
    let n = spec.due_ns.len().min(requests.len());
    live.scheduled.store(n, Ordering::Relaxed);
    let due: Arc<[u64]> = spec.due_ns[..n].into();
    let origin = spec.origin.unwrap_or_else(Instant::now);
    let shared = Arc::new(Shared {
        due: due.clone(),
        engine: engine.clone(),
        requests,
        origin,
        cut: cancel.child_token(),
        cap: spec
            .max_concurrency
            .map(|c| Arc::new(Semaphore::new(c.max(1) as usize))),
        live: live.clone(),
        max_in_flight: AtomicU64::new(0),
        slo,
    });
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let handle = tokio::runtime::Handle::current();
    let fire = {
        let shared = shared.clone();
        move |i: usize| {
            let at = shared.origin.elapsed().as_nanos() as u64;
            if i == 0 {
                shared.live.first_fire_ns.store(at, Ordering::Relaxed);
            }
            shared.live.last_fire_ns.store(at, Ordering::Relaxed);
            shared.live.fired.store(i + 1, Ordering::Relaxed);
            handle.spawn(one_request(shared.clone(), i, tx.clone()));
        }
    };
    let lead = HAND_OFF_LEAD.as_nanos() as u64;
    let fire_at: Arc<[u64]> = due.iter().map(|d| d.saturating_sub(lead)).collect();
    // A stop of the schedule alone (stable), not of the run.
    let stop = cancel.child_token();
    let pacer = Pacer::start(origin.into_std(), fire_at, stop.clone(), fire);
    let mut done: Vec<Done> = Vec::with_capacity(n);
    let (fired, stable) = pace_and_watch(
        tokio::task::spawn_blocking(move || pacer.join()),
        &mut rx,
        &mut done,
        spec.until_stable,
        origin,
        &stop,
    )
    .await;
    let last_due = Duration::from_nanos(due.get(fired.saturating_sub(1)).copied().unwrap_or(0));
    drain(
        &mut rx,
        &mut done,
        fired,
        origin + last_due + spec.drain,
        &shared.cut,
    )
    .await;
    let fault = (done.len() < fired).then(|| {
        format!(
            "{} of {fired} request tasks ended without a record",
            fired - done.len()
        )
    });
    let (measured, waited) = in_schedule_order(done, n);
    OpenLoopRun {
        measured,
        waited,
        max_in_flight: shared.max_in_flight.load(Ordering::Relaxed),
        interrupted: cancel.is_cancelled(),
        fault,
        fired,
        stable,
    }
}

/// The records in schedule order, and per scheduled request whether it waited for the cap.
fn in_schedule_order(mut done: Vec<Done>, n: usize) -> (Vec<Measured>, Vec<bool>) {
    done.sort_by_key(|d| d.i);
    let mut waited = vec![false; n];
    for d in &done {
        if let Some(w) = waited.get_mut(d.i) {
            *w = d.waited;
        }
    }
    (done.into_iter().map(|d| d.m).collect(), waited)
}

/// Gathers the records of the `fired` requests, cutting those still running at `until`.
async fn drain(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Done>,
    done: &mut Vec<Done>,
    fired: usize,
    until: Instant,
    cut: &CancellationToken,
) {
    while done.len() < fired {
        tokio::select! {
            d = rx.recv() => match d {
                Some(d) => done.push(d),
                // Every sender is gone: a request task died without reporting.
                None => break,
            },
            _ = tokio::time::sleep_until(until), if !cut.is_cancelled() => cut.cancel(),
        }
    }
}

/// Waits for the pacer to send the schedule, gathering the records that come back meanwhile;
/// with `--until-stable`, looks at them every interval (`llmib_core::stable_cadence`) and stops
/// the schedule (`stop`) once `llmib_core::stability` says its series have settled. Returns
/// how many requests were sent and whether it stopped on stability.
async fn pace_and_watch(
    pacer: tokio::task::JoinHandle<usize>,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Done>,
    done: &mut Vec<Done>,
    until_stable: Option<(f64, f64)>,
    origin: Instant,
    stop: &CancellationToken,
) -> (usize, bool) {
    let (interval_s, min_s) = until_stable.map_or((1.0, 0.0), |(_, d)| stable_cadence(d));
    let mut tick = tokio::time::interval(Duration::from_secs_f64(interval_s));
    let mut stable = false;
    tokio::pin!(pacer);
    loop {
        tokio::select! {
            fired = &mut pacer => return (fired.unwrap_or(0), stable),
            Some(d) = rx.recv() => done.push(d),
            _ = tick.tick(), if until_stable.is_some() && !stable => {
                let target = until_stable.map_or(0.0, |(t, _)| t);
                if settled(done, origin, interval_s, min_s, target) {
                    stable = true;
                    stop.cancel();
                }
            }
        }
    }
}

/// Whether the records so far have settled (`llmib_core::stability` over output tok/s and
/// the p99 TTFT per interval).
fn settled(done: &[Done], origin: Instant, interval_s: f64, min_s: f64, target: f64) -> bool {
    let samples: Vec<StableSample> = done
        .iter()
        .filter(|d| !d.m.record.is_error())
        .map(|d| StableSample {
            sent_ns: d.m.record.sent_ns,
            end_ns: d.m.record.end_ns,
            tokens: d.m.record.tokens(),
            ttft_ns: d.m.record.ttft_ns(),
        })
        .collect();
    let now = origin.elapsed();
    let [tok_s, ttft] = stable_series(&samples, (interval_s * 1e9) as u64, now.as_nanos() as u64);
    let series = [
        StableSeries {
            name: "output_tok_s",
            values: &tok_s,
        },
        StableSeries {
            name: "ttft_p99_ms",
            values: &ttft,
        },
    ];
    StableInput {
        elapsed_s: now.as_secs_f64(),
        series: &series,
        min_s,
    }
    .settled(target)
}

/// Sends each request of `requests` at most once, at most `slots` at a time, each slot taking
/// the next as soon as its last ends, none started after `within` (a closed batch: the synchronous rate with one slot, the
/// saturation throughput with many). Records share one clock, started here.
pub(crate) async fn send_each(
    engine: &Arc<Engine>,
    requests: Arc<[RequestSpec]>,
    slots: u32,
    within: Duration,
    cancel: &CancellationToken,
) -> Vec<Measured> {
    let origin = Instant::now();
    // No slot takes a new request after `within` (the ones running finish): a batch on a slow
    // server is bounded by the window, not by its request count.
    let last_start = origin + within;
    let next = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for _ in 0..slots.max(1) {
        let (engine, requests, next, cancel) = (
            engine.clone(),
            requests.clone(),
            next.clone(),
            cancel.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= requests.len() || cancel.is_cancelled() || Instant::now() >= last_start {
                    return out;
                }
                let m = measure(
                    engine.client(),
                    &requests[i],
                    i as u32,
                    origin,
                    &cancel,
                    None,
                );
                out.push(m.await);
            }
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        // A slot that died leaves its requests out: the rate is then of fewer requests, and
        // the caller only uses it to place the sweep, never as a figure of a row.
        if let Ok(v) = t.await {
            all.extend(v);
        }
    }
    all
}
