//! The server sampler: reads the engine's metrics once a second through a cell, with the same
//! readers the window and the live view use (`Engine::gauges`, each engine adapter's metric
//! names), and keeps every reading as a [`ServerSample`] of the cell's [`ServerSeries`] for
//! `telemetry.jsonl`. A metric the engine does not report stays `None` in every sample.
//!
//! It runs as its own task beside the cell and only reads: a Prometheus page reads the same for
//! every reader, so the window's own gauge reads are unaffected. It never starts where a read
//! changes what the window sees (TensorRT-LLM's JSON metrics, drained by each read) or where
//! there is nothing to read, and it gives up on a server whose first reads all fail (no
//! `/metrics` there), so an endpoint without metrics costs a few requests per cell at most.

use crate::server::engine::{Engine, Gauges};
use llmib_core::{ServerSample, ServerSeries};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How often the server's metrics are read through a cell.
pub(crate) const SERVER_SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Failed reads in a row, before any answered, after which a cell's sampler stops.
const GIVE_UP_AFTER: u32 = 3;

/// The sampler's task failed; the cell's figures are unaffected.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SamplerError {
    /// The task panicked (or was cancelled by the runtime shutting down).
    #[error(
        "the server metrics sampler stopped after a panic ({0}); this cell's server series is lost, its figures are unaffected"
    )]
    Panicked(String),
}

/// A running sampler; [`ServerSampler::finish`] stops it and returns what it read.
pub(crate) struct ServerSampler {
    stop: CancellationToken,
    task: JoinHandle<ServerSeries>,
}

impl ServerSampler {
    /// Starts reading `engine`'s metrics every `every`, each sample placed in seconds from
    /// `origin` (the cell's start); `None` where the engine's metrics may not be shared.
    pub(crate) fn start(engine: Arc<Engine>, origin: Instant, every: Duration) -> Option<Self> {
        if !engine.metrics_shareable() {
            return None;
        }
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let task = tokio::spawn(async move { sample(&engine, origin, every, &stopped).await });
        Some(ServerSampler { stop, task })
    }

    /// Stops the sampler after one last read (so the series covers the cell's end) and returns
    /// its series; `Ok(None)` when no read answered.
    pub(crate) async fn finish(self) -> Result<Option<ServerSeries>, SamplerError> {
        self.stop.cancel();
        match self.task.await {
            Ok(series) => Ok((!series.t.is_empty()).then_some(series)),
            // A JoinError's words carry the panic's message.
            Err(e) => Err(SamplerError::Panicked(e.to_string())),
        }
    }
}

/// Reads until `stop`, then once more.
async fn sample(
    engine: &Engine,
    origin: Instant,
    every: Duration,
    stop: &CancellationToken,
) -> ServerSeries {
    let mut series = ServerSeries::default();
    let mut failed = 0u32;
    let mut next = tokio::time::Instant::now();
    loop {
        let sent = Instant::now();
        tokio::select! {
            g = engine.gauges() => match g {
                Ok(g) => series.push(&server_sample(&g, secs_since(origin, sent))),
                Err(_) => failed += 1,
            },
            _ = stop.cancelled() => break,
        }
        if series.t.is_empty() && failed >= GIVE_UP_AFTER {
            return series;
        }
        // A slow read delays the next one rather than bunching reads to catch up.
        next = (next + every).max(tokio::time::Instant::now());
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            _ = stop.cancelled() => break,
        }
    }
    let sent = Instant::now();
    if let Ok(g) = engine.gauges().await {
        series.push(&server_sample(&g, secs_since(origin, sent)));
    }
    series
}

fn secs_since(origin: Instant, at: Instant) -> f64 {
    at.saturating_duration_since(origin).as_secs_f64()
}

/// One reading as a sample of the series, `t` seconds from the cell's start.
pub(crate) fn server_sample(g: &Gauges, t: f64) -> ServerSample {
    ServerSample {
        t,
        generation_tokens: g.generation_tokens_total,
        prompt_tokens: g.prompt_tokens_total,
        cached_prompt_tokens: g.cached_prompt_tokens_total,
        prefix_cache_queries: g.prefix_cache_queries_total,
        running: g.running,
        waiting: g.waiting,
        kv_usage: g.kv_usage,
        preemptions: g.preemptions_total,
        spec_accept_rate: g.spec_accept_rate,
        spec_accept_length: g.spec_accept_length,
        spec_counters: g
            .spec_counters
            .map(|c| [c.drafts, c.draft_tokens, c.accepted_tokens]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::engine::{ProbeOptions, PromptInput, gauges_from};
    use crate::server::metrics::Metrics;
    use llmib_core::EngineKind;

    const VLLM: &str = include_str!("../../fixtures/transcripts/vllm/metrics.txt");

    /// Preemptions and prefix-cache queries come from each adapter's own names; an engine
    /// that does not report them leaves them `None`, never 0.
    #[test]
    fn preemptions_and_cache_queries_by_engine() {
        let v = gauges_from(EngineKind::Vllm, &Metrics::parse(VLLM));
        assert_eq!(v.prefix_cache_queries_total, Some(20480.0));
        assert_eq!(v.cached_prompt_tokens_total, Some(15360.0));
        assert_eq!(v.preemptions_total, None, "not on the page");
        let v = gauges_from(
            EngineKind::Vllm,
            &Metrics::parse("vllm:num_preemptions_total{engine=\"0\"} 7\n"),
        );
        assert_eq!(v.preemptions_total, Some(7.0));
        let sg = "sglang:num_retracted_reqs{pid=\"1\"} 1\n\
                  sglang:num_retracted_requests_total{dp_rank=\"0\"} 40\n\
                  sglang:num_retracted_requests_total{dp_rank=\"1\"} 8\n";
        let g = gauges_from(EngineKind::Sglang, &Metrics::parse(sg));
        assert_eq!(
            g.preemptions_total,
            Some(48.0),
            "the counter, not the gauge"
        );
        assert_eq!(g.prefix_cache_queries_total, None);
        let s = server_sample(&g, 1.5);
        assert_eq!(
            (s.t, s.preemptions, s.generation_tokens),
            (1.5, Some(48.0), None)
        );
    }

    /// Against the simulator: the sampler reads through a request, its counters rise by the
    /// request's tokens, and its last read comes after the request.
    #[tokio::test]
    async fn samples_the_simulators_counters_through_a_request() {
        let sim = llmib_sim::spawn(llmib_sim::builtin_profile("tiny").expect("tiny"))
            .await
            .expect("sim");
        let probe = Engine::probe(&ProbeOptions {
            timeout: Duration::from_secs(5),
            ..ProbeOptions::new(sim.base_url())
        })
        .await
        .expect("probe");
        let engine = Arc::new(probe.engine);
        let origin = Instant::now();
        let s = ServerSampler::start(engine.clone(), origin, Duration::from_millis(50))
            .expect("the simulator's metrics are Prometheus text");
        // Let the first read land before the request.
        tokio::time::sleep(Duration::from_millis(150)).await;
        let model = engine.model().served_model.clone();
        let body = engine.completion_body(&model, PromptInput::Text("hello".into()), 32, false);
        engine.generate_json(&body).await.expect("a completion");
        // The answer can reach us a moment before the simulator counts its last token.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let series = s.finish().await.expect("no panic").expect("samples");
        assert!(series.t.len() >= 3, "{:?}", series.t);
        assert!(series.t.windows(2).all(|w| w[0] <= w[1]));
        let gen_tokens: Vec<f64> = series.gen_tokens.iter().flatten().copied().collect();
        assert_eq!(
            gen_tokens.len(),
            series.t.len(),
            "every read has the counter"
        );
        let (first, last) = (gen_tokens[0], gen_tokens[gen_tokens.len() - 1]);
        assert_eq!(last - first, 32.0, "{gen_tokens:?}");
        assert!(series.run.iter().all(Option::is_some));
        sim.shutdown().await;
    }
}
