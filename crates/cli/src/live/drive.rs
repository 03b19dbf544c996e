//! Running the matrix with a display: the dashboard, lines or JSON events; the hardware
//! monitor; and Ctrl-C / SIGTERM handling (the run stops, what was measured is saved).

use crate::config::settings::Monitor;
use crate::live::event_file::{EventWriter, EventsFile, Fanout};
use anyhow::Result;
use llmib_client::Engine;
use llmib_client::HwMonitor;
use llmib_client::Progress;
use llmib_client::{CancellationToken, MatrixEnd, MatrixRun, run_matrix};
use llmib_core::CellKey;
use llmib_core::Plan;
use llmib_core::RunDir;
use llmib_core::RunInfo;
use llmib_dashboard::{Dashboard, DisplayMode, JsonLines, PlainLines, Tui, release_terminal};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// Everything a run needs to be driven.
pub struct Drive<'a> {
    /// The probed engine.
    pub engine: Arc<Engine>,
    /// Served model.
    pub model: String,
    /// The plan.
    pub plan: &'a Plan,
    /// The results directory.
    pub dir: &'a RunDir,
    /// Cells already measured (resume).
    pub done: HashSet<CellKey>,
    /// The run's header (the dashboard's header facts).
    pub info: &'a RunInfo,
    /// What the terminal shows.
    pub display: DisplayMode,
    /// Whether and how to read this machine's GPUs and CPU, and how often to redraw.
    pub monitor: Monitor,
    /// Whether the server runs on this machine (only then does a row get a hardware summary).
    pub server_local: bool,
    /// `--events`: the file that also gets every progress event.
    pub events: Option<EventsFile>,
    /// `--metrics-listen`: the live metrics' sink, which also gets every progress event.
    pub metrics: Option<crate::live::metrics_listen::MetricsSink>,
}

/// A signal that stops the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// Ctrl-C (SIGINT).
    CtrlC,
    /// SIGTERM: what `kill`, systemd and container runtimes send.
    Term,
}

impl Stop {
    /// What the terminal is told: the words name the signal that came, so a `kill` is not
    /// told to press Ctrl-C.
    fn words(self) -> &'static str {
        match self {
            Stop::CtrlC => "interrupted: saving what is done (Ctrl-C again to force quit)",
            Stop::Term => "terminated (SIGTERM): saving what is done (a second signal forces quit)",
        }
    }
}

/// Waits for Ctrl-C or, on Unix, SIGTERM: both stop the run the same way, with what was
/// measured saved. `None` if no signal can be watched.
async fn interrupt() -> Option<Stop> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            return tokio::select! {
                c = tokio::signal::ctrl_c() => c.ok().map(|_| Stop::CtrlC),
                t = term.recv() => t.map(|_| Stop::Term),
            };
        }
    }
    tokio::signal::ctrl_c().await.ok().map(|_| Stop::CtrlC)
}

/// Drives the matrix with the chosen display and signal handling.
pub async fn drive(mut d: Drive<'_>) -> Result<MatrixEnd> {
    let cancel = CancellationToken::new();
    let skip = llmib_client::CellSkip::default();
    let c2 = cancel.clone();
    let (dir, mut info) = (d.dir.clone(), d.info.clone());
    tokio::spawn(async move {
        if let Some(stop) = interrupt().await {
            // The dashboard stops drawing before the terminal is given back, or it would paint
            // over the main screen while the run saves what it has.
            release_terminal();
            errln!("\n{}", stop.words());
            c2.cancel();
            if interrupt().await.is_some() {
                // Forced out: run.json must not keep saying `running` (the rows are saved).
                info.state = llmib_core::RunState::Interrupted;
                info.finished_at = Some(llmib_core::now_rfc3339());
                dir.write_info_and_exit(&info, 130);
            }
        }
    });
    let mon = d.monitor;
    let hw = mon
        .on
        .then(|| Arc::new(HwMonitor::start(mon.interval, mon.gpu_limit)));
    // Started before the terminal is taken: a thread that cannot start is an error on the
    // main screen. Timed from the run's start, as `--display json`'s `t_s` is.
    let secrets = d.engine.secrets().into_iter().map(str::to_string).collect();
    let events = d
        .events
        .take()
        .map(|f| f.start(secrets, Instant::now()))
        .transpose()?;
    let (plain, json) = (PlainLines, JsonLines::new());
    let tui = start_tui(&d, hw.clone(), &cancel, &skip)?;
    let display: &dyn Progress = match (&tui, d.display) {
        (Some(t), _) => t,
        (None, DisplayMode::Json) => &json,
        (None, _) => &plain,
    };
    // The event file first, so its instant is the nearer to the event's.
    let mut sinks: Vec<&dyn Progress> = Vec::new();
    if let Some(file) = &events {
        sinks.push(file);
    }
    if let Some(m) = &d.metrics {
        sinks.push(m);
    }
    sinks.push(display);
    let fanout = Fanout(sinks);
    let progress: &dyn Progress = &fanout;
    let end = run_matrix(MatrixRun {
        engine: d.engine,
        model: d.model,
        plan: d.plan,
        store: d.dir,
        done: d.done,
        progress,
        cancel,
        hardware: hw.as_deref().filter(|_| d.server_local),
        skip,
        shard: llmib_client::ShardRun::of(d.plan).map(std::sync::Arc::new),
    })
    .await;
    if let Some(t) = tui {
        t.finish();
    }
    // After the terminal is back, so the line is read; the results are saved either way.
    if let Some(Err(e)) = events.map(EventWriter::finish) {
        errln!("warning: {e:#}");
    }
    Ok(end?)
}

/// The dashboard, when it is the display: `None` for the line displays, and for a terminal that
/// cannot be put in raw mode (it gets the run as lines).
fn start_tui(
    d: &Drive<'_>,
    hw: Option<Arc<HwMonitor>>,
    cancel: &CancellationToken,
    skip: &llmib_client::CellSkip,
) -> Result<Option<Tui>> {
    if d.display != DisplayMode::Tui {
        return Ok(None);
    }
    let (rows, _) = d.dir.load_cells()?;
    let mut dash = Dashboard::new(d.info, rows, Instant::now());
    dash.hw_on = hw.is_some();
    dash.server_local = d.server_local;
    dash.frame = d.monitor.frame;
    match Tui::start(dash, hw, cancel.clone(), skip.clone()) {
        Ok(t) => Ok(Some(t)),
        Err(e) => {
            errln!("note: the dashboard cannot start ({e}); printing lines instead");
            Ok(None)
        }
    }
}
