//! Probe requests beside a cell's load (`--probe-rate`; `llmib_core::probe`): a task that, while
//! its gate is open, sends a fresh short prompt every 1 / rate seconds, each on its own task so
//! a slow probe never delays the next. The cell's recorder (`crate::cells::telemetry`) opens
//! the gate once the cell's own load is running (its window open, its schedule started) and
//! closes it when its window closes, so that no probe runs into a drain barrier or a ramp;
//! the row's figures take the probes sent inside the measured span.
//!
//! A probe's prompt is tagged text of about the asked length (no tokenizer call: the task must
//! not wait on the server to build one); its prompt tokens are the server's count.

use crate::cells::context::MatrixRun;
use crate::prompts::filler;
use crate::server::engine::{Engine, PromptInput};
use crate::wire::stream::{RequestSpec, StreamLimits, measure};
use llmib_core::{ProbeSettings, RequestRecord, duration_from_secs};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long probes still open when the cell ends may take to finish before they are cut.
const GRACE: Duration = Duration::from_secs(5);

/// A cell's running probes.
pub(crate) struct Prober {
    gate: watch::Sender<bool>,
    stop: CancellationToken,
    task: JoinHandle<Vec<RequestRecord>>,
}

/// What each probe is sent with.
struct ProbeBody {
    engine: Arc<Engine>,
    model: String,
    settings: ProbeSettings,
    seed: u64,
    /// The run's limits for a prompt of this length.
    limits: StreamLimits,
    /// A key no other cell's probes share (the cell's start, ns since the epoch), so no probe
    /// prompt is another's prefix.
    key: u64,
}

impl ProbeBody {
    /// Probe `i`'s request: a fresh tagged text of about the asked length.
    fn request(&self, i: u32) -> Result<RequestSpec, crate::server::engine::EngineError> {
        let s = self.settings;
        let mut text = filler::tag(self.seed, self.key, i, "probe-");
        // About 1.3 tokens a word in the filler; the server counts the real length.
        let words = (s.input_tokens as f64 / 1.3).round().max(1.0) as usize;
        filler::words(self.seed, self.key, i, words, &mut text);
        let input = PromptInput::Text(text);
        self.engine
            .stream_request(&self.model, input, s.output_tokens, false, self.limits)
    }
}

impl Prober {
    /// Starts the probes of a cell of `m` (gate closed) on the clock `origin`; `None` without
    /// `--probe-rate`.
    pub(crate) fn start(m: &MatrixRun<'_>, origin: Instant) -> Option<Prober> {
        let settings = m.plan.settings.probe?;
        let body = ProbeBody {
            engine: m.engine.clone(),
            model: m.model.clone(),
            settings,
            limits: m.limits(settings.input_tokens, 1),
            seed: m.plan.settings.prompt_seed,
            key: crate::cells::shard::unix_now_ns(),
        };
        let (gate, rx) = watch::channel(false);
        let stop = CancellationToken::new();
        // Ctrl-C cuts the open probes at once: no grace for a run the user stopped.
        let cut = m.cancel.child_token();
        let task = tokio::spawn(run(body, origin, rx, (stop.clone(), cut)));
        Some(Prober { gate, stop, task })
    }

    /// Opens or closes the gate (the cell's load started, or its window closed).
    pub(crate) fn set_open(&self, open: bool) {
        self.gate.send_replace(open);
    }

    /// Stops sending; the probes still open get [`GRACE`] to finish, then are cut. Their
    /// records, on the clock given to [`Prober::start`] (none when the task died).
    pub(crate) async fn finish(self) -> Vec<RequestRecord> {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

/// The record of probe `i`, whose request body could not be built.
fn unsent(i: u32, origin: Instant, why: &str) -> RequestRecord {
    let at = Instant::now().saturating_duration_since(origin).as_nanos() as u64;
    let mut r = RequestRecord::never_sent(i, at);
    r.outcome = llmib_core::Outcome::Error {
        kind: "request_body".into(),
        message: format!("the probe's request could not be built: {why}"),
    };
    r
}

/// Sends a probe every 1 / rate seconds while the gate is open, until `stop`; the probes still
/// open then get [`GRACE`] before `cut` ends them (the run's Ctrl-C ends them at once).
async fn run(
    body: ProbeBody,
    origin: Instant,
    mut gate: watch::Receiver<bool>,
    (stop, cut): (CancellationToken, CancellationToken),
) -> Vec<RequestRecord> {
    let every = duration_from_secs(1.0 / body.settings.rate);
    let mut open: Vec<JoinHandle<RequestRecord>> = Vec::new();
    let mut i = 0u32;
    'send: loop {
        while !*gate.borrow_and_update() {
            tokio::select! {
                _ = stop.cancelled() => break 'send,
                changed = gate.changed() => if changed.is_err() { break 'send },
            }
        }
        let (engine, cut) = (body.engine.clone(), cut.clone());
        let request = body.request(i);
        open.push(tokio::spawn(async move {
            match request {
                Ok(spec) => {
                    measure(engine.client(), &spec, i, origin, &cut, None)
                        .await
                        .record
                }
                // Said in the row's probe figures (a failed probe), never dropped.
                Err(e) => unsent(i, origin, &e.to_string()),
            }
        }));
        i = i.wrapping_add(1);
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(every) => {}
        }
    }
    let deadline = Instant::now() + GRACE;
    let cutter = {
        let cut = cut.clone();
        tokio::spawn(async move {
            tokio::time::sleep_until(deadline).await;
            cut.cancel();
        })
    };
    let mut records = Vec::with_capacity(open.len());
    for h in open {
        if let Ok(r) = h.await {
            records.push(r);
        }
    }
    cutter.abort();
    records
}
