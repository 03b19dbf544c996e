//! One decode cell (C × N): warm-ups, the closed loop, readiness, the window, gauge sampling,
//! cancellation at window end, and token counting. Produces the cell's records and
//! observations; the status and figures are decided by [`crate::driver`] with the pure
//! functions of `llmib_core::figures`.

use crate::engine::{Engine, PromptInput};
use crate::stream::{Counting, Measured, measure};
use bytes::Bytes;
use llmib_core::cell::QueueObservation;
use llmib_core::figures::Window;
use llmib_core::record::RequestRecord;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// What a decode window measured, before figures.
#[derive(Debug)]
pub struct WindowRun {
    /// Every request of the measured phase (first wave and closed-loop re-sends).
    pub records: Vec<Measured>,
    /// The window, ns from the cell origin.
    pub window: Window,
    /// Queue and readiness observations.
    pub queue: QueueObservation,
    /// Samples inside the window in which the waiting gauge was above zero, counted only when
    /// two consecutive samples show it (a closed-loop re-send sits in the queue for a moment
    /// even on an idle server; a real queue persists for a whole request).
    pub queued_samples: u64,
    /// Server generation-token counter delta over the window.
    pub server_generation_tokens: Option<f64>,
    /// Whether the run was cancelled (Ctrl-C) during the window.
    pub interrupted: bool,
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
    /// How tokens are counted.
    pub counting: Counting,
}

/// Sends each prompt once with `max_tokens` (1 for the cells' warm-ups), all at once, so that the
/// window's TTFT mostly excludes prefill. Returns the warm-up records (not measured figures).
pub async fn warm_up(
    engine: &Engine,
    model: &str,
    prompts: &[(u32, PromptInput)],
    max_tokens: u32,
    cancel: &CancellationToken,
) -> Vec<Measured> {
    let origin = Instant::now();
    let url = engine.completions_url();
    let futs = prompts.iter().map(|(stream, p)| {
        let body = Bytes::from(
            serde_json::to_vec(&engine.completion_body(model, p.clone(), max_tokens, true))
                .unwrap_or_default(),
        );
        let url = url.clone();
        async move {
            measure(
                engine.client(),
                &url,
                body,
                *stream,
                origin,
                Counting::Deferred,
                cancel,
                None,
            )
            .await
        }
    });
    futures_util::future::join_all(futs).await
}

/// Waits until the gauges show no running and no waiting request, at most `limit`. Returns the
/// seconds waited, or `None` when the engine has no gauges (nothing to wait for).
async fn wait_idle(engine: &Engine, limit: Duration, cancel: &CancellationToken) -> Option<f64> {
    if engine.info().capabilities.queue_gauge != Some(true) {
        return None;
    }
    let t0 = Instant::now();
    while t0.elapsed() < limit && !cancel.is_cancelled() {
        match engine.gauges().await {
            Ok(g) if g.running.unwrap_or(0.0) <= 0.0 && g.waiting.unwrap_or(0.0) <= 0.0 => break,
            Err(_) => break,
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    Some(t0.elapsed().as_secs_f64())
}

/// Runs the closed loop for one cell and measures its window.
pub async fn run_window(
    engine: Arc<Engine>,
    model: &str,
    prompts: &[PromptInput],
    max_output: u32,
    spec: &WindowSpec,
    run_cancel: &CancellationToken,
) -> WindowRun {
    let n = spec.concurrency as usize;
    // Start from an idle server: requests of the previous cell or of the warm-up may still be
    // finishing (an abort takes time to free KV), and engines that count tokens when a request
    // is released (llama.cpp) would add them to this window's counter delta.
    let mut queue = QueueObservation {
        idle_wait_s: wait_idle(&engine, Duration::from_secs(10), run_cancel).await,
        ..Default::default()
    };
    let origin = Instant::now();
    let stop = CancellationToken::new();
    // One flag per stream, set by the stream's first content chunk (readiness without gauges).
    let first_tokens: Arc<Vec<AtomicBool>> =
        Arc::new((0..n).map(|_| AtomicBool::new(false)).collect());
    let url = engine.completions_url();
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Measured>(n.max(1) * 4);

    let mut workers = Vec::with_capacity(n);
    for (i, p) in prompts.iter().take(n).enumerate() {
        // The body is serialised once per stream: re-sends reuse the bytes (cheap clone).
        let body = Bytes::from(
            serde_json::to_vec(&engine.completion_body(model, p.clone(), max_output, true))
                .unwrap_or_default(),
        );
        let engine = engine.clone();
        let url = url.clone();
        let stop = stop.clone();
        let tx = tx.clone();
        let flags = first_tokens.clone();
        let counting = spec.counting;
        workers.push(tokio::spawn(async move {
            while !stop.is_cancelled() {
                let m = measure(
                    engine.client(),
                    &url,
                    body.clone(),
                    i as u32,
                    origin,
                    counting,
                    &stop,
                    flags.get(i),
                )
                .await;
                let failed = m.record.is_error();
                if tx.send(m).await.is_err() {
                    break;
                }
                if failed {
                    // Back off briefly so a failing server is not hammered in a tight loop.
                    tokio::select! {
                        _ = stop.cancelled() => break,
                        _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                    }
                }
            }
        }));
    }
    drop(tx);

    // Collect records concurrently so workers never block on a full channel.
    let collector = tokio::spawn(async move {
        let mut v = Vec::new();
        while let Some(m) = rx.recv().await {
            v.push(m);
        }
        v
    });

    let use_gauges = engine.info().capabilities.queue_gauge == Some(true);
    // Readiness: N running and 0 queued by the gauges, else all N streams producing tokens.
    let ready_deadline = origin + spec.readiness_timeout;
    let mut interrupted = false;
    let mut ready = false;
    // A queue that stays while the running count stops growing will not drain before requests
    // finish (a slot or KV limit): waiting out the whole readiness limit would measure nothing
    // more, so the window opens then, and the cell is marked queued.
    let stall = (spec.gauge_interval * 8).max(Duration::from_secs(2));
    let mut running_seen: (f64, Instant) = (-1.0, origin);
    loop {
        if run_cancel.is_cancelled() {
            interrupted = true;
            break;
        }
        let by_tokens = first_tokens.iter().all(|f| f.load(Ordering::Relaxed));
        if use_gauges {
            if let Ok(g) = engine.gauges().await
                && let (Some(run), Some(wait)) = (g.running, g.waiting)
            {
                if run >= n as f64 && wait <= 0.0 {
                    ready = true;
                    queue.readiness_by = Some("gauges".into());
                    break;
                }
                let now = Instant::now();
                if run > running_seen.0 {
                    running_seen = (run, now);
                } else if wait > 0.0 && now.duration_since(running_seen.1) >= stall {
                    queue.readiness_by = Some("queue_stalled".into());
                    break;
                }
            }
        } else if by_tokens {
            ready = true;
            queue.readiness_by = Some("first_tokens".into());
            break;
        }
        if Instant::now() >= ready_deadline {
            break;
        }
        tokio::select! {
            _ = run_cancel.cancelled() => {}
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    let w_start = Instant::now();
    queue.ready = ready;
    queue.readiness_s = Some(w_start.duration_since(origin).as_secs_f64());

    let read_before = Instant::now();
    let gen_before = engine
        .gauges()
        .await
        .ok()
        .and_then(|g| g.generation_tokens_total);
    let w_end_target = w_start + spec.duration;
    let mut queued_samples = 0u64;
    let mut prev_waiting = false;
    if !interrupted {
        let mut next_sample = w_start;
        loop {
            let now = Instant::now();
            if now >= w_end_target {
                break;
            }
            if now >= next_sample {
                if let Ok(g) = engine.gauges().await {
                    queue.samples += 1;
                    if let Some(w) = g.waiting {
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
                }
                next_sample += spec.gauge_interval;
            }
            let wake = next_sample.min(w_end_target);
            tokio::select! {
                _ = run_cancel.cancelled() => { interrupted = true; break; }
                _ = tokio::time::sleep_until(wake) => {}
            }
        }
    }
    let w_end = Instant::now();
    // The counter is read before the open requests are cancelled. llama.cpp adds a request's
    // tokens to its counter only when the request's slot is released, and a cancellation
    // releases it: read after the cancel, the delta would count (or, racing with the
    // cancellation, sometimes not count) whole requests cut at window end, tokens from before
    // the window included. Read first, it counts exactly the requests that ended inside the
    // window; engines that count every token lose nothing.
    let read_after = Instant::now();
    let gen_after = engine
        .gauges()
        .await
        .ok()
        .and_then(|g| g.generation_tokens_total);
    if gen_before.is_some() && gen_after.is_some() {
        let secs = |t: Instant| t.saturating_duration_since(origin).as_secs_f64();
        queue.counter_reads_s = Some([secs(read_before), secs(read_after)]);
    }
    // Close every open request now: the connection drops and the server frees its KV.
    stop.cancel();
    for w in workers {
        let _ = w.await;
    }
    let records = collector.await.unwrap_or_default();
    let ns = |t: Instant| t.saturating_duration_since(origin).as_nanos() as u64;
    WindowRun {
        records,
        window: Window {
            start_ns: ns(w_start),
            end_ns: ns(w_end),
        },
        queue,
        queued_samples,
        server_generation_tokens: match (gen_before, gen_after) {
            (Some(a), Some(b)) if b >= a => Some(b - a),
            _ => None,
        },
        interrupted,
    }
}

/// Extracts plain records (after deferred counting has fixed chunk tokens).
pub fn into_records(ms: Vec<Measured>) -> Vec<RequestRecord> {
    ms.into_iter().map(|m| m.record).collect()
}
