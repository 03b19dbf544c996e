//! A cell's telemetry, recorded around it: the hardware monitor's series (where it runs) and
//! the server sampler's (where the engine's metrics may be read), both on the cell's own clock,
//! and the cell's stages as the progress protocol announces them (the recorder sits in the
//! progress path and passes every event on), so the report can shade warm-up, ramp and the
//! measured window. At the end the row gets its hardware summary and verdict, and its cost and
//! energy per token from the same power samples, and the series go to `telemetry.jsonl` before
//! the row is saved.
//!
//! Nothing here is in a measured request's path: the samplers are a thread and a task of their
//! own, and the recorder only notes the few stage events a cell sends.

use crate::cells::context::MatrixRun;
use crate::cells::probe::Prober;
use crate::machine::hwmon::HwMonitor;
use crate::progress::events::{Progress, ProgressEvent, Stage};
use crate::server::telemetry::{SERVER_SAMPLE_EVERY, ServerSampler};
use llmib_core::{CellResult, CellTelemetry, Phase, PhaseMark, now_rfc3339};
use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Instant;

/// What the cell's progress events told about its stages.
#[derive(Debug, Default)]
struct Marks {
    ph: Vec<PhaseMark>,
    win: Option<[f64; 2]>,
}

/// Records one cell; [`CellRecorder::finish`] completes its row and saves its series.
pub(crate) struct CellRecorder<'a> {
    origin: Instant,
    t0: String,
    forward: &'a dyn Progress,
    hardware: Option<&'a HwMonitor>,
    server: Option<ServerSampler>,
    marks: Mutex<Marks>,
    /// The probe requests beside the cell's load (`--probe-rate`), on this recorder's clock.
    probe: Option<Prober>,
}

impl<'a> CellRecorder<'a> {
    /// Starts recording a cell of `phase` of `m` now, with its probes where the run sends
    /// them: beside a cell's load (decode, burst, rate, sessions), never beside a prefill,
    /// whose one request they would queue behind, nor a mixed-prefill cell, whose standalone
    /// prefills must meet an idle server.
    pub(crate) fn start(m: &MatrixRun<'a>, phase: Phase) -> Self {
        let origin = Instant::now();
        let loaded = matches!(
            phase,
            Phase::Decode | Phase::Burst | Phase::Rate | Phase::Session
        );
        let probe = loaded
            .then(|| Prober::start(m, tokio::time::Instant::from_std(origin)))
            .flatten();
        if let Some(hw) = m.hardware {
            hw.begin_cell_at(origin);
        }
        CellRecorder {
            origin,
            t0: now_rfc3339(),
            forward: m.progress,
            hardware: m.hardware,
            server: ServerSampler::start(m.engine.clone(), origin, SERVER_SAMPLE_EVERY),
            marks: Mutex::default(),
            probe,
        }
    }

    /// When the cell started (RFC 3339): its row's `started_at`.
    pub(crate) fn started_at(&self) -> String {
        self.t0.clone()
    }

    /// `m` with this recorder in its progress path, for a cell that runs on `m` itself (an
    /// open-loop rate cell: no skip switch is armed for it).
    pub(crate) fn run<'b>(&'b self, m: &MatrixRun<'b>) -> MatrixRun<'b> {
        MatrixRun {
            engine: m.engine.clone(),
            model: m.model.clone(),
            plan: m.plan,
            store: m.store,
            // A cell never reads which cells were done before.
            done: HashSet::new(),
            progress: self,
            cancel: m.cancel.clone(),
            hardware: m.hardware,
            skip: m.skip.clone(),
            shard: m.shard.clone(),
        }
    }

    /// The cell ended: its row gets the hardware summary and verdict and its cost and energy
    /// figures (`llmib_core::cell_economics`), and its series are
    /// appended to `telemetry.jsonl` (where there is any; a write that fails is a note, since
    /// the row and its figures do not depend on it).
    pub(crate) async fn finish(self, m: &MatrixRun<'_>, row: &mut CellResult) {
        let probes = match self.probe {
            Some(p) => Some(p.finish().await),
            None => None,
        };
        let srv = match self.server {
            Some(s) => s.finish().await.unwrap_or_else(|e| {
                self.forward.event(ProgressEvent::Note(e.to_string()));
                None
            }),
            None => None,
        };
        let (summary, hw) = match self.hardware {
            Some(h) => h.end_cell_series(),
            None => (None, None),
        };
        // Taken once both samplers have stopped: the server sampler's last read (sent after
        // the stop, so the series covers the cell's end) then lies inside the cell's duration,
        // on a loaded machine too.
        let dur = self.origin.elapsed().as_secs_f64();
        let marks = self.marks.into_inner().unwrap_or_else(|p| p.into_inner());
        if self.hardware.is_some() {
            row.hardware = summary;
            row.hardware_verdict = hw.as_ref().and_then(|h| h.verdict(marks.win));
        }
        // Cost and energy from the same samples, over the span that holds the row's tokens.
        let cost = &m.plan.settings.economics;
        let span = llmib_core::measured_span(row.phase, marks.win, &marks.ph, secs2(dur));
        let energy = llmib_core::window_energy(hw.as_ref(), span, cost.server_gpus().map(|g| g.0));
        row.economics = llmib_core::cell_economics(row, cost, span, energy).map(Box::new);
        if let (Some(records), Some(p), Some([a, b])) = (probes, m.plan.settings.probe, span) {
            let ns = |s: f64| (s.max(0.0) * 1e9) as u64;
            row.probe = llmib_core::probe_figures(p.rate, &records, (ns(a), ns(b))).map(Box::new);
        }
        let mut line = CellTelemetry::new(row.key(), self.t0);
        line.dur = secs2(dur);
        line.ph = marks.ph;
        line.win = marks.win;
        line.hw = hw;
        line.srv = srv;
        if line.has_series()
            && let Err(e) = m.store.append_telemetry(&line)
        {
            self.forward.event(ProgressEvent::Note(format!(
                "could not save this cell's telemetry: {e}"
            )));
        }
    }

    fn mark(&self, f: impl FnOnce(&mut Marks)) {
        if let Ok(mut g) = self.marks.lock() {
            f(&mut g);
        }
    }

    fn since(&self, at: Instant) -> f64 {
        secs2(at.saturating_duration_since(self.origin).as_secs_f64())
    }
}

/// Seconds to two decimals (the series' resolution).
fn secs2(s: f64) -> f64 {
    (s * 100.0).round() / 100.0
}

impl Progress for CellRecorder<'_> {
    fn event(&self, e: ProgressEvent) {
        match &e {
            ProgressEvent::Phase(stage) => {
                let t = self.since(Instant::now());
                self.mark(|m| m.ph.push((t, stage.as_str().to_string())));
                // Probes go beside the cell's own load once it runs, never into its ramp or
                // drain barrier, and stop when its requests are counted.
                if let Some(p) = &self.probe {
                    match stage {
                        Stage::Burst | Stage::OpenLoop => p.set_open(true),
                        Stage::Counting => p.set_open(false),
                        _ => {}
                    }
                }
            }
            ProgressEvent::Readiness { .. } => {
                if let Some(p) = &self.probe {
                    p.set_open(true);
                }
            }
            ProgressEvent::Window { origin, window } => {
                if let Some(p) = &self.probe {
                    p.set_open(false);
                }
                let at = |ns: u64| self.since(*origin + std::time::Duration::from_nanos(ns));
                let win = [at(window.start_ns), at(window.end_ns)];
                self.mark(|m| m.win = Some(win));
            }
            _ => {}
        }
        self.forward.event(e);
    }
}
