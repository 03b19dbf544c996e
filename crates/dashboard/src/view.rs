//! The dashboard's model: what the run has shown so far (rows, the current cell and its phase,
//! the event log, the live rate, the last gauges), updated by progress events and by a tick a
//! few times a second. Pure state with an explicit clock, so the drawing is tested on fixed
//! states (`tests.rs`).

use super::sessions::{SessionFigures, session_cells};
use super::viewer::Viewer;
use llmib_client::{Gauges, SpecCounters};
use llmib_client::{LiveWindow, OpenLoopLive};
use llmib_client::{ProgressEvent, Stage, readiness_reason};
use llmib_core::ReadinessBy;
use llmib_core::RunInfo;
use llmib_core::{CellKey, CellResult, CellStatus, Phase};
use llmib_core::{EtaInputs, RateMeter, eta_s};
use llmib_core::{Plan, PlannedCell};
use llmib_core::{terminal_line, terminal_name};
use ratatui::crossterm::event::KeyCode;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Event log lines kept (the panel shows the newest that fit).
const LOG_CAP: usize = 200;
/// Span of the live token rate, seconds.
const RATE_SPAN_S: f64 = 3.0;

/// The header's facts, taken from the run's header once.
#[derive(Debug, Clone, Default)]
pub struct Header {
    /// Served model.
    pub model: String,
    /// Server URL (stored without userinfo).
    pub url: String,
    /// Engine name and version.
    pub engine: String,
    /// KV capacity in tokens and where it was read.
    pub kv: Option<(u64, String)>,
    /// Cells planned, and how many of them are predicted Over capacity.
    pub planned: usize,
    /// Over capacity cells.
    pub over_capacity: usize,
}

impl Header {
    /// From the run's header. Server strings are sanitised for the terminal and cut
    /// ([`terminal_name`]: a model id may be a megabyte, redrawn four times a second). The
    /// cells planned are the plan's and the session section's ([`session_cells`]).
    pub fn from_info(info: &RunInfo) -> Header {
        let sessions = session_cells(&info.plan);
        let all = info.plan.cells.iter().chain(&sessions);
        let e = &info.engine;
        let engine = [e.name.as_deref(), e.version.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        Header {
            model: terminal_name(&info.model.served_model),
            url: terminal_name(&info.url),
            engine: terminal_name(&engine),
            kv: e
                .kv_capacity_tokens
                .as_ref()
                .map(|k| (k.value, terminal_name(&k.source))),
            planned: info.plan.cells.len() + sessions.len(),
            over_capacity: all.filter(|c| c.over_capacity).count(),
        }
    }
}

/// The cell being measured.
#[derive(Debug, Clone)]
pub struct Current {
    /// The planned cell.
    pub cell: PlannedCell,
    /// Its position in run order, 0-based, and the plan's size.
    pub index: usize,
    /// Cells in the plan.
    pub total: usize,
    /// What it is doing.
    pub phase: Doing,
    /// When it started.
    pub started: Instant,
    /// The decode window's live state, once its streams start.
    pub live: Option<Arc<LiveWindow>>,
    /// An open-load cell's live counts, once it starts sending.
    pub open_loop: Option<Arc<OpenLoopLive>>,
}

/// What the current cell is doing, as the dashboard shows it: its stage, or (between the
/// streams' start and the readiness decision) waiting for readiness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doing {
    /// Started; no stage reported yet.
    Starting,
    /// In this stage.
    Stage(Stage),
    /// The window's streams run; the readiness judge has not decided.
    Readiness,
}

impl Doing {
    /// The words in the current-cell panel.
    pub fn label(self) -> &'static str {
        match self {
            Doing::Starting => "starting",
            Doing::Readiness => "waiting for readiness",
            Doing::Stage(Stage::Prefill) => "prefill scout",
            Doing::Stage(s) => s.as_str(),
        }
    }
}

impl Current {
    /// The cell as the current-cell panel's title says it: a session cell in its own words
    /// (`sessions 1K × 4 · closed loop`, `sessions 1K @ 0.5/s · open loop`), any other cell
    /// by its name and phase (a session cell's phase is on its bar: [`Current::doing`]).
    pub fn words(&self) -> String {
        let name = cell_name(&self.cell);
        match self.cell.key.phase {
            Phase::Session => format!("{name} · {}", super::sessions::loop_words(self.cell.key)),
            _ => format!("{name} · {}", self.phase.label()),
        }
    }

    /// What the cell does, in words: a session cell's measured turns run as the stage the
    /// progress protocol calls `open loop`, for closed loops too, so they read `turns`.
    pub fn doing(&self) -> &'static str {
        match (self.cell.key.phase, self.phase) {
            (Phase::Session, Doing::Stage(Stage::OpenLoop)) => "turns",
            (Phase::Session, Doing::Stage(Stage::WarmUp)) => "warm-up (turn 0)",
            (_, d) => d.label(),
        }
    }
}

/// One event log line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// Seconds since the run started.
    pub at_s: f64,
    /// What happened (one sanitised line).
    pub text: String,
}

/// What the current window shows right now (computed by [`Dashboard::tick`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveFigures {
    /// Client token rate over the last seconds.
    pub tok_per_s: Option<f64>,
    /// Whether that rate counts server-reported tokens (else chunks until counted).
    pub tokens_exact: bool,
    /// Streams with a token, of N.
    pub streams_with_token: u32,
    /// N.
    pub concurrency: u32,
    /// Requests ended, and how many errored.
    pub ended: u64,
    /// Errored requests.
    pub errors: u64,
    /// Seconds the window has run, and its planned length; `None` while the ramp runs.
    pub window: Option<(f64, f64)>,
    /// Seconds the ramp has run (until readiness).
    pub ramp_s: f64,
    /// An open-load cell's figures, while one runs.
    pub open: Option<OpenFigures>,
    /// A session cell's figures, while one runs.
    pub sessions: Option<SessionFigures>,
}

/// What an open-load cell shows while it sends.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OpenFigures {
    /// The rate asked for, requests/s.
    pub requested: f64,
    /// The rate kept so far.
    pub achieved: Option<f64>,
    /// Requests sent, of the schedule's.
    pub fired: usize,
    /// Requests in the schedule.
    pub scheduled: usize,
    /// Requests running now.
    pub in_flight: u64,
    /// Requests waiting for the `--max-concurrency` cap (client queue).
    pub waiting: u64,
    /// Requests ended, errored, and meeting the SLO.
    pub ended: u64,
    /// See `ended`.
    pub errors: u64,
    /// See `ended`.
    pub met: u64,
}

/// The dashboard's whole state.
#[derive(Debug)]
pub struct Dashboard {
    /// Header facts.
    pub header: Header,
    /// The plan, in run order.
    pub plan: Plan,
    /// The session cells the run plans after the plan's own ([`session_cells`]).
    pub sessions: Vec<PlannedCell>,
    /// When the run (this invocation) started.
    pub started: Instant,
    /// Rows saved so far (resumed ones included), by cell.
    pub rows: BTreeMap<CellKey, CellResult>,
    /// The cell in progress.
    pub current: Option<Current>,
    /// The event log, oldest first.
    pub log: VecDeque<LogLine>,
    /// Live figures of the current window.
    pub live: LiveFigures,
    /// The last gauge sample a window read, and derived speculative figures.
    pub gauges: Option<Gauges>,
    /// Speculative acceptance rate and mean tokens per step (engine gauges, or vLLM counter
    /// deltas).
    pub spec: Option<(f64, f64)>,
    /// Whether the hardware panel is on, and whether the server is on this machine.
    pub hw_on: bool,
    /// The server runs on this machine (else the hardware panel describes the client's).
    pub server_local: bool,
    /// How often the dashboard redraws (`--refresh-rate`).
    pub frame: std::time::Duration,
    /// The model-output viewer, while it is open (`o`).
    pub viewer: Option<Viewer>,
    meter: RateMeter,
    spec_prev: Option<SpecCounters>,
    gen_prev: Option<(Instant, f64)>,
    /// Generation tok/s from the server's counter between the last two samples.
    pub server_gen_tok_per_s: Option<f64>,
    prefill_rate: Option<f64>,
    overheads: Vec<f64>,
    /// Wall seconds of the session cells measured so far (the ETA prices the rest by them).
    session_walls: Vec<f64>,
    warmed: HashMap<u64, u32>,
}

impl Dashboard {
    /// A dashboard for `info`'s plan, with `rows` already saved (resume).
    pub fn new(info: &RunInfo, rows: Vec<CellResult>, started: Instant) -> Dashboard {
        let mut d = Dashboard {
            header: Header::from_info(info),
            plan: info.plan.clone(),
            sessions: session_cells(&info.plan),
            started,
            rows: BTreeMap::new(),
            current: None,
            log: VecDeque::new(),
            live: LiveFigures::default(),
            gauges: None,
            spec: None,
            hw_on: true,
            server_local: true,
            frame: std::time::Duration::from_millis(250),
            viewer: None,
            meter: RateMeter::new(RATE_SPAN_S),
            spec_prev: None,
            gen_prev: None,
            server_gen_tok_per_s: None,
            prefill_rate: None,
            overheads: Vec::new(),
            session_walls: Vec::new(),
            warmed: HashMap::new(),
        };
        for r in rows {
            d.learn(&r, None);
            d.rows.insert(r.key(), r);
        }
        d
    }

    fn say(&mut self, now: Instant, text: String) {
        if self.log.len() == LOG_CAP {
            self.log.pop_front();
        }
        self.log.push_back(LogLine {
            at_s: now.saturating_duration_since(self.started).as_secs_f64(),
            text: terminal_line(&text),
        });
    }

    /// `cell` starts at `now`, `index` of `total` as its section numbers it. The session
    /// section numbers its cells among its own: the dashboard places them among all the run's.
    fn start(&mut self, cell: &PlannedCell, (index, total): (usize, usize), now: Instant) {
        let planned = self.planned_cells();
        let (index, total) = match planned.iter().position(|c| c.key == cell.key) {
            Some(i) if cell.key.phase == Phase::Session => (i, self.progress().1),
            _ => (index, total),
        };
        self.current = Some(Current {
            cell: cell.clone(),
            index,
            total,
            phase: Doing::Starting,
            started: now,
            live: None,
            open_loop: None,
        });
        self.live = LiveFigures::default();
        self.meter.reset();
        // Figures derived from the last cell's samples would be shown as this cell's.
        self.server_gen_tok_per_s = None;
        self.gen_prev = None;
        self.spec = None;
        self.spec_prev = None;
    }

    /// Applies one progress event seen at `now`.
    pub fn apply(&mut self, e: &ProgressEvent, now: Instant) {
        match e {
            ProgressEvent::CellStarted { index, total, cell } => {
                self.start(cell, (*index, *total), now);
            }
            ProgressEvent::Phase(p) => {
                let what = self.current.as_ref().map(|c| cell_name(&c.cell));
                if let Some(c) = self.current.as_mut() {
                    c.phase = Doing::Stage(*p);
                }
                if matches!(p, Stage::WarmUp | Stage::HiddenWarmUp | Stage::Prefill) {
                    self.say(now, format!("{}: {p}", what.unwrap_or_default()));
                }
            }
            ProgressEvent::WindowLive(live) => {
                if let Some(c) = self.current.as_mut() {
                    c.live = Some(live.clone());
                    // Sessions have no readiness to wait for: their stages say what they do.
                    if !live.is_sessions() {
                        c.phase = Doing::Readiness;
                    }
                }
            }
            ProgressEvent::OpenLoopLive(live) => {
                if let Some(c) = self.current.as_mut() {
                    c.open_loop = Some(live.clone());
                }
                self.say(now, event_words(e).unwrap_or_default());
            }
            ProgressEvent::CellDone(row) => {
                let started = self
                    .current
                    .as_ref()
                    .filter(|c| c.cell.key == row.key())
                    .map(|c| c.started);
                self.learn(
                    row,
                    started.map(|s| now.saturating_duration_since(s).as_secs_f64()),
                );
                if row.status != CellStatus::OverCapacity {
                    self.say(now, done_line(row));
                }
                self.rows.insert(row.key(), (**row).clone());
                if started.is_some() {
                    self.current = None;
                    self.live = LiveFigures::default();
                }
            }
            ProgressEvent::Readiness { by, .. } => {
                if *by != ReadinessBy::RequestsErrored
                    && let Some(c) = self.current.as_mut()
                {
                    c.phase = Doing::Stage(Stage::Window);
                }
                self.say(now, event_words(e).unwrap_or_default());
            }
            ProgressEvent::Window { .. }
            | ProgressEvent::Note(_)
            | ProgressEvent::RequestError { .. }
            | ProgressEvent::Skipped { .. } => {
                self.say(now, event_words(e).unwrap_or_default());
            }
        }
    }

    /// What a saved row teaches the ETA: the prefill rate, warmed prompts, decode overhead.
    fn learn(&mut self, r: &CellResult, wall_s: Option<f64>) {
        let seen = self.warmed.entry(r.context_tokens).or_insert(0);
        match r.phase {
            Phase::Prefill => {
                *seen = (*seen).max(1);
                if let Some(rate) = r.prompt_tok_per_s.filter(|v| *v > 0.0) {
                    self.prefill_rate = Some(rate);
                }
            }
            Phase::Decode | Phase::Burst if r.status != CellStatus::OverCapacity => {
                *seen = (*seen).max(r.concurrency);
                if let (Some(wall), Some(window)) = (wall_s, r.measured_s) {
                    self.overheads.push((wall - window).max(0.0));
                }
            }
            Phase::Session if r.status != CellStatus::NotRun => {
                self.session_walls.extend(wall_s);
            }
            Phase::Decode
            | Phase::Burst
            | Phase::Rate
            | Phase::Capacity
            | Phase::Session
            | Phase::MixedPrefill => {}
        }
    }

    /// A key while the dashboard runs: `true` when the output viewer ([`Viewer`]) used it.
    /// `o` opens and closes it; while it is open, Esc closes it (rather than stopping the run)
    /// and its own keys act.
    pub fn viewer_key(&mut self, key: KeyCode) -> bool {
        let toggle = matches!(key, KeyCode::Char('o' | 'O'));
        let running = self.current.as_ref().and_then(|c| c.live.as_ref());
        let n = running.map(|w| w.concurrency);
        match self.viewer.as_mut() {
            None if toggle => self.viewer = Some(Viewer::default()),
            None => return false,
            Some(v) if toggle || key == KeyCode::Esc => {
                v.unwatch();
                self.viewer = None;
            }
            Some(v) => return v.key(key, n),
        }
        true
    }

    /// Reads the current window's live state at `now` (a few times a second).
    pub fn tick(&mut self, now: Instant) {
        if let Some(v) = self.viewer.as_mut() {
            let c = self.current.as_ref();
            v.read(c.and_then(|c| Some((c.live.clone()?, cell_name(&c.cell)))));
        }
        if let Some(open) = self.current.as_ref().and_then(|c| c.open_loop.clone()) {
            self.live.open = Some(open_figures(&open));
            return;
        }
        let Some(live) = self.current.as_ref().and_then(|c| c.live.clone()) else {
            return;
        };
        let t = now.saturating_duration_since(self.started).as_secs_f64();
        let (ended, errors) = live.ended();
        self.meter.push(t, live.tokens());
        let opened = live.opened();
        let started = self.current.as_ref().map_or(now, |c| c.started);
        self.live = LiveFigures {
            tok_per_s: self.meter.rate(),
            tokens_exact: live.tokens_exact,
            streams_with_token: live.streams_with_token(),
            concurrency: live.concurrency,
            ended,
            errors,
            window: opened.map(|(at, _)| {
                let end = live.closed().unwrap_or(now);
                (
                    end.saturating_duration_since(at).as_secs_f64(),
                    live.duration.as_secs_f64(),
                )
            }),
            ramp_s: opened
                .map_or(now, |(at, _)| at)
                .saturating_duration_since(started)
                .as_secs_f64(),
            open: None,
            sessions: live.is_sessions().then(|| SessionFigures::read(&live, now)),
        };
        if let Some((at, g)) = live.gauges() {
            self.observe_gauges(at, g);
        }
    }

    /// A gauge sample: the server's generation rate and speculative figures from counter
    /// deltas.
    pub fn observe_gauges(&mut self, at: Instant, g: Gauges) {
        if let Some(total) = g.generation_tokens_total {
            if let Some((t0, n0)) = self.gen_prev
                && at > t0
                && total >= n0
            {
                let dt = at.duration_since(t0).as_secs_f64();
                if dt >= 0.2 {
                    self.server_gen_tok_per_s = Some((total - n0) / dt);
                    self.gen_prev = Some((at, total));
                }
            } else {
                self.gen_prev = Some((at, total));
            }
        }
        self.spec = match (g.spec_accept_rate, g.spec_accept_length, g.spec_counters) {
            (Some(r), Some(l), _) => Some((r, l)),
            (_, _, Some(c)) => {
                let d = self.spec_prev.and_then(|p| c.since(&p)).or(self.spec);
                self.spec_prev = Some(c);
                d
            }
            _ => self.spec,
        };
        self.gauges = Some(g);
    }

    /// The cells the run plans, in run order: the plan's, then the session section's.
    pub fn planned_cells(&self) -> Vec<&PlannedCell> {
        self.plan.cells.iter().chain(&self.sessions).collect()
    }

    /// Cells with a row, and cells planned. A row of a cell not known in advance (a rate
    /// cell, a capacity search's point, a capacity row) counts on both sides, so the first
    /// never passes the second.
    pub fn progress(&self) -> (usize, usize) {
        let planned = self.planned_cells();
        let extra = self
            .rows
            .keys()
            .filter(|k| !planned.iter().any(|c| c.key == **k))
            .count();
        let done = self.rows.len();
        (done, planned.len() + extra)
    }

    /// Seconds left at `now`, from the plan and what was measured so far. The running cell
    /// counts only what it has left: its estimate less the time it has run, at least 0.
    pub fn eta_s(&self, now: Instant) -> f64 {
        let remaining: Vec<PlannedCell> = self
            .planned_cells()
            .into_iter()
            .filter(|c| !self.rows.contains_key(&c.key))
            .cloned()
            .collect();
        let overhead = (!self.overheads.is_empty())
            .then(|| self.overheads.iter().sum::<f64>() / self.overheads.len() as f64);
        let inputs = EtaInputs {
            window_s: self.plan.settings.duration_s,
            prefill_tok_per_s: self.prefill_rate,
            decode_overhead_s: overhead,
        };
        let price = |cells: &[PlannedCell]| self.price(cells, &inputs);
        let all = price(&remaining);
        // The running cell's own share: what it adds to the cells before it (the prompts they
        // warm change its cost, so it is not priced alone).
        let running = self.current.as_ref().and_then(|c| {
            let i = remaining.iter().position(|r| r.key == c.cell.key)?;
            let own = price(&remaining[..=i]) - price(&remaining[..i]);
            Some((own, now.saturating_duration_since(c.started).as_secs_f64()))
        });
        // A session cell's turns so far say best how long it has left.
        let turns_left = |ran: f64| self.live.sessions.as_ref()?.left_s(ran);
        match running {
            Some((own, ran)) => all - own + turns_left(ran).unwrap_or((own - ran).max(0.0)),
            None => all,
        }
    }

    /// Seconds `cells` take ([`eta_s`]), a session cell at the mean wall time of the session
    /// cells measured so far where there is one: its turns and think time, not the window,
    /// bound it with `--turns`. Session cells warm nothing the others use, so they are priced
    /// apart.
    fn price(&self, cells: &[PlannedCell], inputs: &EtaInputs) -> f64 {
        let (sessions, others): (Vec<PlannedCell>, Vec<PlannedCell>) = cells
            .iter()
            .cloned()
            .partition(|c| c.key.phase == Phase::Session);
        let learned = (!self.session_walls.is_empty())
            .then(|| self.session_walls.iter().sum::<f64>() / self.session_walls.len() as f64);
        let session_s: f64 = sessions
            .iter()
            .filter(|c| !c.over_capacity)
            .map(|c| {
                learned.unwrap_or_else(|| eta_s(std::slice::from_ref(c), &self.warmed, inputs))
            })
            .sum();
        eta_s(&others, &self.warmed, inputs) + session_s
    }
}

/// The live counts of an open-load cell, read once.
fn open_figures(l: &OpenLoopLive) -> OpenFigures {
    let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
    OpenFigures {
        requested: l.requested_rate(),
        achieved: l.achieved_rate(),
        fired: l.fired.load(Ordering::Relaxed),
        scheduled: l.scheduled.load(Ordering::Relaxed),
        in_flight: load(&l.in_flight),
        waiting: load(&l.waiting),
        ended: load(&l.ended),
        errors: load(&l.errors),
        met: load(&l.met),
    }
}

/// `decode 32K × 16`, `prefill 8K`, `burst 8K × 4`, `rate 8K @ 2.5/s`, `capacity 8K`,
/// `sessions 8K × 4`, `sessions 8K @ 0.5/s`, `sessions trace.jsonl`; `width` right-aligns the
/// context.
pub fn what(key: CellKey, label: &str, width: usize) -> String {
    let n = key.concurrency;
    match key.phase {
        Phase::Prefill => format!("prefill {label:>width$}"),
        Phase::Decode => format!("decode {label:>width$} × {n}"),
        Phase::Burst => format!("burst {label:>width$} × {n}"),
        Phase::Rate => format!(
            "rate {label:>width$} @ {}/s",
            key.request_rate().unwrap_or(0.0)
        ),
        Phase::Capacity => format!("capacity {label:>width$}"),
        Phase::MixedPrefill => format!("mixed prefill {label:>width$} into {n} streams"),
        // An open loop's sessions arrive at a rate, a trace's at its recorded starts: no S.
        Phase::Session => match (n, key.request_rate()) {
            (0, Some(r)) => format!("sessions {label:>width$} @ {r}/s"),
            (0, None) => format!("sessions {label:>width$}"),
            _ => format!("sessions {label:>width$} × {n}"),
        },
    }
}

/// [`what`] of a planned cell.
pub fn cell_name(c: &PlannedCell) -> String {
    what(c.key, &c.label, 0)
}

/// The log line of a saved row.
fn done_line(r: &CellResult) -> String {
    let what = what(r.key(), &r.context_label, 0);
    match r.status {
        CellStatus::Failed => format!(
            "{what}: Failed: {}",
            r.first_error.as_deref().unwrap_or("no error text")
        ),
        CellStatus::NotRun => format!(
            "{what}: Not run ({})",
            r.status_reason.as_deref().unwrap_or("skipped")
        ),
        // A session row's figures are its news: hit rates beside the status.
        s if r.phase == Phase::Session => format!(
            "{what}: {}  {}",
            s.label(),
            super::row_words::session_figures(r).trim_start()
        ),
        s => format!("{what}: {}", s.label()),
    }
}

/// An event in words: the one wording of each event, shared by the plain lines and the
/// dashboard's event log (`None` for a saved row, which each display shows its own way:
/// [`super::lines::describe`], [`done_line`]). Server text is not sanitised here: each
/// display does it for its terminal.
pub fn event_words(e: &ProgressEvent) -> Option<String> {
    Some(match e {
        ProgressEvent::CellStarted { index, total, cell } => {
            format!("[{}/{}] {}", index + 1, total, cell_name(cell))
        }
        ProgressEvent::Phase(p) => p.to_string(),
        ProgressEvent::WindowLive(w) if w.is_sessions() => {
            format!("{} sessions started", w.concurrency)
        }
        ProgressEvent::WindowLive(w) => format!("{} streams started", w.concurrency),
        ProgressEvent::OpenLoopLive(l) => format!(
            "sending {} requests at {}/s",
            l.scheduled.load(Ordering::Relaxed),
            l.requested_rate()
        ),
        ProgressEvent::Window { window, .. } => format!(
            "window closed after {:.1} s",
            window.end_ns.saturating_sub(window.start_ns) as f64 / 1e9
        ),
        ProgressEvent::CellDone(_) => return None,
        ProgressEvent::Note(n) => format!("note: {n}"),
        ProgressEvent::Readiness {
            by,
            after_s,
            streams_with_token,
            concurrency,
            running,
            waiting,
        } => {
            let mut t = format!(
                "readiness: {} after {after_s:.1} s · {streams_with_token}/{concurrency} streams with a token",
                by.as_str()
            );
            if let (Some(r), Some(w)) = (running, waiting) {
                t.push_str(&format!(" · running {r:.0} waiting {w:.0}"));
            }
            t.push_str(&format!(" · {}", readiness_reason(*by)));
            t
        }
        ProgressEvent::RequestError {
            phase,
            stream,
            kind,
            message,
            retry_in_s,
            retry_after,
        } => {
            let retry = match retry_in_s {
                Some(s) if *retry_after => format!("; retry in {s:.1} s (Retry-After)"),
                Some(s) => format!("; retry in {s:.2} s (backoff)"),
                None => String::new(),
            };
            format!("{phase} request error, stream {stream}: {kind}: {message}{retry}")
        }
        ProgressEvent::Skipped { cell, reason } => {
            format!("skipped: {}: {reason}", cell_name(cell))
        }
    })
}
