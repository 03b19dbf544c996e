//! One decode cell (C × N), the gathering half: warm-ups, the closed loop, readiness, the
//! window, gauge sampling, cancellation at window end. It only observes: readiness is decided
//! by `llmib_core::readiness`, and the row (status, figures) by `llmib_core::verdict`.
//!
//! The phases of [`run_window`], in order: wait for an idle server (the drain barrier), start
//! the N streams, watch
//! the ramp until the readiness judge opens the window (those two in `crate::cells::ramp`), read the
//! server's token counter, sample the gauges through the window, read the counter again, stop
//! the streams and collect, abort what the server would keep running and check the gauges.

use crate::cells::inject;
use crate::cells::ramp::{await_readiness, close_on_server, open_at_instant, wait_for_start};
use crate::cells::settle::Settle;
use crate::progress::events::{Progress, ProgressEvent, RequestErrors, Stage};
use crate::progress::live::LiveWindow;
use crate::server::engine::Engine;
use crate::wire::stream::{Measured, RequestSpec, measure};
use llmib_core::StopReason;
use llmib_core::Window;
use llmib_core::failing_window_done;
use llmib_core::redact_text;
use llmib_core::{KernelStamps, QueueObservation};
use llmib_core::{Outcome, RequestRecord};
use llmib_core::{ReadinessBy, ReadinessRule};
use llmib_core::{SpecFigures, SpecWindow};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use crate::cells::inject::Injection;
pub use crate::cells::ramp::WindowAt;

/// Consecutive ramp observations that must agree before the window opens: one sample can
/// catch a gauge between a request's admission and its first token.
const STABLE_SAMPLES: u32 = 2;

/// What a decode window measured, before figures.
#[derive(Debug)]
pub struct WindowRun {
    /// Every request of the measured phase (first wave and closed-loop re-sends).
    pub records: Vec<Measured>,
    /// The window, ns from the cell origin.
    pub window: Window,
    /// The cell origin on the process's monotonic clock (to relate the window to timestamps
    /// taken elsewhere, e.g. a simulator's emission log).
    pub origin: std::time::Instant,
    /// Which rule opened the window.
    pub readiness: ReadinessBy,
    /// Queue and readiness observations.
    pub queue: QueueObservation,
    /// Samples inside the window in which the waiting gauge was above zero, counted only when
    /// two consecutive samples show it (a closed-loop re-send sits in the queue for a moment
    /// even on an idle server; a real queue persists for a whole request).
    pub queued_samples: u64,
    /// Server generation-token counter delta over the window.
    pub server_generation_tokens: Option<f64>,
    /// Whether the run was cancelled (Ctrl-C) before the window ended.
    pub interrupted: bool,
    /// The measurement itself broke (a stream worker or the collector died): why. The records
    /// are then incomplete, and the cell must fail rather than report them.
    pub fault: Option<String>,
    /// The client's scheduling delays through the window, ms ([`crate::cells::lagprobe`]).
    pub client_delay_ms: Vec<f64>,
    /// With the raw reader, how the chunk instants of the window's requests were taken (those
    /// that ended between the streams' start and their stop: every record of the window).
    pub kernel_stamps: Option<KernelStamps>,
    /// Speculative decoding over the window, where the server reported it.
    pub speculative: Option<SpecFigures>,
    /// The wall clock (ns since the Unix epoch) when the origin was taken: a shard's records
    /// are placed on the other shards' clock by it.
    pub origin_unix_ns: u64,
    /// A timetabled window ([`WindowSpec::at`]): whether the readiness judge had opened the
    /// window (by a ready rule) when the fixed instant came.
    pub ready_at_open: Option<bool>,
    /// The injected request (`WindowSpec::inject`), on the window's clock.
    pub injected: Option<Measured>,
}

/// The window's queue observation, begun by the drain barrier's start: requests of the
/// previous cell or of the warm-up may still be finishing (an abort takes time to free KV),
/// and engines that count tokens when a request is released (llama.cpp) would add them to this
/// window's counter delta. `Err`: the server was still busy at `--busy-timeout` (another
/// client's load), and the window must not start (`llmib_core::drain`).
async fn start_queue(
    engine: &Engine,
    spec: &WindowSpec,
    cancel: &CancellationToken,
) -> Result<QueueObservation, QueueObservation> {
    let start_barrier = wait_for_start(engine, spec.at, spec.busy_timeout, cancel).await;
    let queue = QueueObservation {
        idle_wait_s: start_barrier.map(|b| b.waited_s),
        start_barrier,
        ..Default::default()
    };
    match start_barrier {
        Some(b) if !b.idle => Err(queue),
        _ => Ok(queue),
    }
}

impl WindowRun {
    /// A window the drain barrier kept from starting: no stream ran, `queue` says why.
    fn not_started(queue: QueueObservation) -> WindowRun {
        WindowRun {
            records: Vec::new(),
            window: Window {
                start_ns: 0,
                end_ns: 0,
            },
            origin: std::time::Instant::now(),
            readiness: ReadinessBy::Timeout,
            queue,
            queued_samples: 0,
            server_generation_tokens: None,
            interrupted: false,
            fault: None,
            client_delay_ms: Vec::new(),
            kernel_stamps: None,
            speculative: None,
            origin_unix_ns: crate::cells::shard::unix_now_ns(),
            ready_at_open: None,
            injected: None,
        }
    }
}

/// Settings of one window.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    /// N.
    pub concurrency: u32,
    /// Window length.
    pub duration: Duration,
    /// Longest wait for readiness.
    pub readiness_timeout: Duration,
    /// Gauge sampling interval.
    pub gauge_interval: Duration,
    /// A single-flight server: the window opens once tokens flow on one stream.
    pub serial_server: bool,
    /// The context's warm TTFT (its N = 1 cell), where known: the gauge-less first-token
    /// stall waits at least 4 × it + 50 ms.
    pub warm_ttft: Option<Duration>,
    /// `--until-stable`: close the window early once its output tok/s settles (a fraction).
    pub until_stable: Option<f64>,
    /// `--respect-eos`: answers end at EOS (the short-answer readiness rule).
    pub respect_eos: bool,
    /// Each request's stream index in the records (a shard runs streams i ≡ I mod N); `None`:
    /// 0..n.
    pub stream_ids: Option<Arc<[u32]>>,
    /// Fixed instants (a shard's slot), instead of an idle wait and the judge's opening.
    pub at: Option<WindowAt>,
    /// The drain barrier's limit: how long to wait for an idle server before the cell is
    /// Failed: server busy (`--busy-timeout`).
    pub busy_timeout: Duration,
    /// A request sent into the open window, which then closes `after` past its end
    /// (mixed-prefill cells; `crate::cells::inject`).
    pub inject: Option<Injection>,
}

/// Sends each request once, all at once, so that the window's TTFT mostly excludes prefill.
/// Returns the warm-up records (not measured figures).
pub async fn warm_up(
    engine: &Engine,
    requests: &[(u32, RequestSpec)],
    cancel: &CancellationToken,
) -> Vec<Measured> {
    let origin = Instant::now();
    let futs = requests
        .iter()
        .map(|(stream, spec)| measure(engine.client(), spec, *stream, origin, cancel, None));
    futures_util::future::join_all(futs).await
}

/// The wait after the `n`-th consecutive failure of a stream: 50 ms doubling, capped at 5 s.
fn backoff(n: u32) -> Duration {
    Duration::from_millis(
        50u64
            .saturating_mul(1 << n.saturating_sub(1).min(7))
            .min(5000),
    )
}

/// A failed request of the closed loop, sent once per failed request (never per chunk) to
/// the window's [`Reporter`].
struct Issue {
    stream: u32,
    kind: String,
    message: String,
    retry_in: Duration,
    retry_after: bool,
}

/// Turns the streams' failed requests into progress events from the window's own task (the
/// workers only send to a channel).
struct Reporter<'a> {
    errors: RequestErrors<'a>,
    rx: tokio::sync::mpsc::UnboundedReceiver<Issue>,
    secrets: Vec<String>,
}

impl Reporter<'_> {
    /// Reports what the streams sent since the last call.
    fn drain(&mut self) {
        while let Ok(i) = self.rx.try_recv() {
            let secrets = &self.secrets;
            self.errors.report(
                i.stream,
                &i.kind,
                || {
                    let secrets: Vec<&str> = secrets.iter().map(String::as_str).collect();
                    redact_text(&i.message, &secrets)
                },
                Some(i.retry_in.as_secs_f64()),
                i.retry_after,
            );
        }
    }

    /// Reports the rest, and how many were not listed.
    fn finish(&mut self) {
        self.drain();
        self.errors.finish();
    }
}

/// The N closed-loop streams of a window.
struct Streams {
    workers: Vec<JoinHandle<()>>,
    collector: JoinHandle<Vec<Measured>>,
    /// First-token flags, token and error counts, shared with live views.
    live: Arc<LiveWindow>,
    stop: CancellationToken,
}

/// Starts one closed-loop worker per request: a finished request is sent again at once.
fn start_streams(
    engine: &Arc<Engine>,
    requests: &[RequestSpec],
    ids: Option<&[u32]>,
    origin: Instant,
    live: Arc<LiveWindow>,
    issues: tokio::sync::mpsc::UnboundedSender<Issue>,
) -> Streams {
    let n = requests.len();
    let stop = CancellationToken::new();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Measured>(n.max(1) * 4);
    let mut workers = Vec::with_capacity(n);
    for (i, spec) in requests.iter().enumerate() {
        let id = ids.and_then(|v| v.get(i).copied()).unwrap_or(i as u32);
        let (engine, spec, stop, tx) = (engine.clone(), spec.clone(), stop.clone(), tx.clone());
        let (live, issues) = (live.clone(), issues.clone());
        workers.push(tokio::spawn(async move {
            let mut failures = 0u32;
            while !stop.is_cancelled() {
                let m = measure(engine.client(), &spec, id, origin, &stop, live.stream(i)).await;
                let failed = m.record.is_error();
                let asked = m.retry_after;
                // Back off so a failing server is not hammered: what it asked for
                // (`Retry-After`), else 50 ms doubling per consecutive failure, up to 5 s.
                let wait = failed.then(|| {
                    failures += 1;
                    asked.unwrap_or_else(|| backoff(failures))
                });
                if let (Some(wait), Outcome::Error { kind, message }) = (wait, &m.record.outcome) {
                    // Per failed request only; a closed reporter is no reason to stop.
                    let _ = issues.send(Issue {
                        stream: id,
                        kind: kind.clone(),
                        message: message.clone(),
                        retry_in: wait,
                        retry_after: asked.is_some(),
                    });
                }
                // After the issue is sent: a judge that sees the error count then finds the
                // error in the channel, so the log shows it before the readiness it caused.
                if !matches!(m.record.outcome, Outcome::Cancelled) {
                    live.request_ended(failed);
                }
                live.latency.observe(&m.record);
                if tx.send(m).await.is_err() {
                    break;
                }
                if let Some(wait) = wait {
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(wait) => {}
                    }
                } else {
                    failures = 0;
                }
            }
        }));
    }
    // Collect records concurrently so workers never block on a full channel.
    let collector = tokio::spawn(async move {
        let mut v = Vec::new();
        while let Some(m) = rx.recv().await {
            v.push(m);
        }
        v
    });
    Streams {
        workers,
        collector,
        live,
        stop,
    }
}

/// The readiness judge's rule for a window of `spec`.
fn readiness_rule(spec: &WindowSpec) -> ReadinessRule {
    ReadinessRule {
        concurrency: spec.concurrency,
        stable_samples: STABLE_SAMPLES,
        // A queue that stays while the running count stops growing will not drain before
        // requests finish (a slot or KV limit): waiting out the whole limit would measure
        // nothing more.
        stall_ns: (spec.gauge_interval.saturating_mul(8))
            .max(Duration::from_secs(2))
            .as_nanos() as u64,
        // A timetabled window opens at its instant, never by the judge's own limit.
        timeout_ns: match spec.at {
            Some(_) => u64::MAX,
            None => spec.readiness_timeout.as_nanos() as u64,
        },
        serial: spec.serial_server,
        warm_ttft_ns: spec.warm_ttft.map(|w| w.as_nanos() as u64),
        respect_eos: spec.respect_eos,
    }
}

/// The server's cumulative generation-token counter, if it has one.
async fn read_counter(engine: &Engine) -> Option<f64> {
    engine
        .gauges()
        .await
        .ok()
        .and_then(|g| g.generation_tokens_total)
}

/// One gauge sample's speculative-decoding figures into the window's: the gauges, vLLM's
/// counters and its accepted tokens per draft position, all from the same page.
fn observe_spec(speculative: &mut SpecWindow, g: &crate::server::engine::Gauges) {
    let counters = g
        .spec_counters
        .map(|c| [c.drafts, c.draft_tokens, c.accepted_tokens]);
    let per_pos = g
        .spec_counters
        .map(|c| c.accepted_per_pos)
        .unwrap_or_default();
    speculative.observe_with_positions(
        g.spec_accept_rate,
        g.spec_accept_length,
        counters,
        per_pos.as_slice(),
    );
}

/// Samples the gauges every interval for the window's length from `start`; returns the queued-sample count and whether
/// the run was cancelled.
async fn sample_window(
    ctx: &SpanContext<'_>,
    start: Instant,
    queue: &mut QueueObservation,
    speculative: &mut SpecWindow,
    rep: &mut Reporter<'_>,
) -> (u64, bool) {
    let (engine, spec, cancel, live) = (ctx.engine, ctx.spec, ctx.cancel, ctx.live);
    let end = start + spec.duration;
    let mut queued_samples = 0u64;
    let mut prev_waiting = false;
    let mut next_sample = start;
    let (mut waiting_sum, mut waiting_n) = (0.0, 0u32);
    let mean = |queue: &mut QueueObservation, sum: f64, n: u32| {
        queue.mean_waiting = (n > 0).then(|| sum / f64::from(n));
    };
    let mut first_error: Option<Instant> = None;
    let mut settle = spec
        .until_stable
        .map(|t| Settle::new(t, spec.duration, start, live.tokens()));
    loop {
        rep.drain();
        let now = Instant::now();
        if let Some(s) = settle.as_mut()
            && s.observe(now, live.tokens())
        {
            mean(queue, waiting_sum, waiting_n);
            queue.stop_reason = Some(StopReason::Stable);
            return (queued_samples, false);
        }
        if first_error.is_none() && live.errors() > 0 {
            first_error = Some(now);
        }
        let error_age = first_error.map(|t| now.duration_since(t).as_secs_f64());
        // `close`: the injected request's `after` has passed (a mixed-prefill window).
        if now >= end || ctx.close.is_cancelled() || failing_window_done(error_age) {
            mean(queue, waiting_sum, waiting_n);
            queue.stop_reason = settle
                .as_ref()
                .filter(|_| now >= end)
                .map(|_| StopReason::Duration);
            return (queued_samples, false);
        }
        if now >= next_sample {
            if let Ok(g) = engine.gauges().await {
                live.set_gauges(g, std::time::Instant::now());
                queue.samples += 1;
                if let Some(w) = g.waiting {
                    waiting_sum += w;
                    waiting_n += 1;
                    queue.max_waiting = Some(queue.max_waiting.map_or(w, |m: f64| m.max(w)));
                    let waiting = w > 0.0;
                    if waiting && prev_waiting {
                        queued_samples += 1;
                    }
                    prev_waiting = waiting;
                }
                if let Some(r) = g.running {
                    queue.min_running = Some(queue.min_running.map_or(r, |m: f64| m.min(r)));
                }
                observe_spec(speculative, &g);
            }
            next_sample += spec.gauge_interval;
        }
        tokio::select! {
            _ = cancel.cancelled() => {
                mean(queue, waiting_sum, waiting_n);
                return (queued_samples, true);
            }
            _ = ctx.close.cancelled() => {}
            _ = tokio::time::sleep_until(
                next_sample.min(end).min(settle.as_ref().map_or(end, |s| s.next))
            ) => {}
        }
    }
}

/// Closes every open request (the connection drops and the server frees its KV) and collects
/// the records. A worker or collector that died is a fault, never an empty record list.
async fn stop_streams(s: Streams) -> (Vec<Measured>, Option<String>) {
    s.stop.cancel();
    let mut fault = None;
    for w in s.workers {
        if let Err(e) = w.await {
            fault.get_or_insert_with(|| format!("a stream worker died: {e}"));
        }
    }
    match s.collector.await {
        Ok(records) => (records, fault),
        Err(e) => (
            Vec::new(),
            Some(fault.unwrap_or_else(|| format!("the record collector died: {e}"))),
        ),
    }
}

/// Runs the closed loop for one cell (one request per stream, `requests.len()` = N) and
/// measures its window. `progress` gets the readiness decision and the failed requests (from
/// this task, a few times a second at most: the streams only send to a channel).
pub async fn run_window(
    engine: Arc<Engine>,
    requests: &[RequestSpec],
    spec: &WindowSpec,
    run_cancel: &CancellationToken,
    live: Arc<LiveWindow>,
    progress: &dyn Progress,
) -> WindowRun {
    // Start from an idle server (the drain barrier; a busy one is not measured).
    let mut queue = match start_queue(&engine, spec, run_cancel).await {
        Ok(q) => q,
        Err(busy) => return WindowRun::not_started(busy),
    };
    // From the streams' start: the responses counted by the stop are the window's records.
    let stamps = engine.raw_window_start();
    let origin = Instant::now();
    let origin_unix_ns = crate::cells::shard::unix_now_ns();
    let (issues, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut rep = Reporter {
        errors: RequestErrors::new(progress, Stage::Window),
        rx,
        secrets: engine.secrets().into_iter().map(String::from).collect(),
    };
    let ids = spec.stream_ids.as_deref();
    let streams = start_streams(&engine, requests, ids, origin, live, issues);
    let (rule, live) = (readiness_rule(spec), &streams.live);
    let drain = &mut || rep.drain();
    let ramp = await_readiness(&engine, rule, spec.at, live, origin, run_cancel, drain).await;
    let ready_at_open = open_at_instant(spec.at, ramp.by, run_cancel).await;
    let secs = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
    let w_start = Instant::now();
    rep.drain();
    if let Some(by) = ramp.by {
        report_readiness(progress, &streams.live, spec, by, secs(w_start));
    }
    ramp.note(&mut queue, secs(w_start));

    // A request that errored in the ramp fails the cell: no window is measured.
    let measure_window = ramp.by.is_some() && ramp.by != Some(ReadinessBy::RequestsErrored);
    let ctx = SpanContext {
        engine: &engine,
        spec,
        origin,
        cancel: run_cancel,
        live: &streams.live,
        close: &CancellationToken::new(),
    };
    let mut span = measure_span(&ctx, w_start, measure_window, &mut queue, &mut rep).await;
    // After the stop: every response has been dropped, and so counted.
    let (records, mut fault) = stop_streams(streams).await;
    let kernel_stamps = engine.raw_window_stamps(stamps);
    let ended = records.iter().map(|m| &m.record);
    let closed = close_on_server(&engine, requests, ids, ended, progress).await;
    (queue.aborted_requests, queue.end_barrier) = closed;
    rep.finish();
    let client_delay_ms = probe_delays(span.probe, progress).await;
    let ns = |t: Instant| t.saturating_duration_since(origin).as_nanos() as u64;
    WindowRun {
        records,
        window: Window {
            start_ns: ns(w_start),
            end_ns: ns(span.end),
        },
        origin: origin.into_std(),
        readiness: ramp.by.unwrap_or(ReadinessBy::Timeout),
        queue,
        queued_samples: span.queued_samples,
        server_generation_tokens: span.server_generation_tokens,
        interrupted: ramp.by.is_none() || span.interrupted,
        injected: inject::measured(span.injected.take(), &mut fault),
        fault,
        client_delay_ms,
        kernel_stamps,
        speculative: span.speculative,
        origin_unix_ns,
        ready_at_open,
    }
}

/// Tells `progress` how the window opens: the rule, when, and what the ramp showed then.
fn report_readiness(
    progress: &dyn Progress,
    live: &LiveWindow,
    spec: &WindowSpec,
    by: ReadinessBy,
    after_s: f64,
) {
    let g = live.gauges().map(|(_, g)| g);
    progress.event(ProgressEvent::Readiness {
        by,
        after_s,
        streams_with_token: live.streams_with_token(),
        concurrency: spec.concurrency,
        running: g.and_then(|g| g.running),
        waiting: g.and_then(|g| g.waiting),
    });
}

/// What [`measure_span`] works with: the window's engine, settings, clock and live state.
struct SpanContext<'a> {
    engine: &'a Arc<Engine>,
    spec: &'a WindowSpec,
    origin: Instant,
    cancel: &'a CancellationToken,
    live: &'a LiveWindow,
    /// Closes the window before its length (the injected request's `after` has passed).
    close: &'a CancellationToken,
}

/// What the window's span showed, before the streams are stopped.
struct Span {
    /// When the window closed.
    end: Instant,
    queued_samples: u64,
    /// Ctrl-C inside the window.
    interrupted: bool,
    server_generation_tokens: Option<f64>,
    /// The client-lag probe, stopped, with its samples.
    probe: Option<JoinHandle<Vec<f64>>>,
    /// Speculative decoding over the window, where the server reported it.
    speculative: Option<SpecFigures>,
    /// The injected request (`WindowSpec::inject`), ended or cut with the window.
    injected: Option<Result<Measured, tokio::task::JoinError>>,
}

/// The window from `start` (when `measure` holds; else it closes at once): the server's token
/// counter read around it, the gauges sampled through it, the client-lag probe beside it.
/// The streams still run when it returns.
async fn measure_span(
    ctx: &SpanContext<'_>,
    start: Instant,
    measure: bool,
    queue: &mut QueueObservation,
    rep: &mut Reporter<'_>,
) -> Span {
    let secs = |t: Instant| t.saturating_duration_since(ctx.origin).as_secs_f64();
    let (read_before, gen_before) = (Instant::now(), read_counter(ctx.engine).await);
    let mut queued_samples = 0;
    let mut interrupted = false;
    let probe_stop = CancellationToken::new();
    let probe = measure.then(|| {
        crate::cells::lagprobe::spawn(
            probe_stop.clone(),
            ctx.engine
                .raw_target()
                .map(|r| r as Arc<dyn crate::cells::lagprobe::UnstampedCount>),
        )
    });
    let inj = ctx.spec.inject.as_ref();
    let times = (ctx.origin, start);
    let injector = inject::start(ctx.engine, inj, measure, times, ctx.cancel, ctx.close);
    let mut speculative = SpecWindow::default();
    if measure {
        (queued_samples, interrupted) =
            sample_window(ctx, start, queue, &mut speculative, rep).await;
    }
    let end = Instant::now();
    probe_stop.cancel();
    let injected = inject::finish(injector).await;
    ctx.live.close(end.into_std());
    // The counter is read before the open requests are cancelled. llama.cpp adds a request's
    // tokens to its counter only when the request's slot is released, and a cancellation
    // releases it: read after the cancel, the delta would count (or, racing with the
    // cancellation, sometimes not count) whole requests cut at window end, tokens from before
    // the window included. Read first, it counts exactly the requests that ended inside the
    // window; engines that count every token lose nothing.
    let (read_after, gen_after) = (Instant::now(), read_counter(ctx.engine).await);
    if gen_before.is_some() && gen_after.is_some() {
        queue.counter_reads_s = Some([secs(read_before), secs(read_after)]);
    }
    Span {
        end,
        queued_samples,
        interrupted,
        server_generation_tokens: match (gen_before, gen_after) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        },
        probe,
        speculative: speculative.figures(),
        injected,
    }
}

/// The client-lag probe's samples. A probe that died leaves none, and so no verdict on the
/// client's lateness (it cannot touch the figures, which come from the records alone): said
/// in a note, never silently.
async fn probe_delays(probe: Option<JoinHandle<Vec<f64>>>, progress: &dyn Progress) -> Vec<f64> {
    let Some(probe) = probe else {
        return Vec::new();
    };
    match probe.await {
        Ok(v) => v,
        Err(e) => {
            progress.event(ProgressEvent::Note(format!(
                "the client-lag probe died ({e}): this cell has no verdict on the client's lateness"
            )));
            Vec::new()
        }
    }
}

/// Extracts plain records (after deferred counting has fixed chunk tokens).
pub fn into_records(ms: Vec<Measured>) -> Vec<RequestRecord> {
    ms.into_iter().map(|m| m.record).collect()
}

#[cfg(test)]
#[path = "window_tests.rs"]
mod tests;
