//! The full-screen dashboard: a thread that owns [`Dashboard`], redraws it four times a second
//! on the alternate screen and reads keys (`q` or Ctrl-C: stop and save, as Ctrl-C does without
//! the dashboard; a second press quits at once; `s`: skip the cell in progress; `o`: the
//! model-output viewer and its keys, `viewer.rs`). Progress events are only sent to that thread
//! through a channel (a few per cell; a send never waits), so a terminal that blocks its writer
//! (Ctrl-S, a slow SSH link) stalls the drawing thread alone, never a task of the measurement;
//! live figures are read from the window's atomics by the drawing thread.
//!
//! The terminal is restored when the dashboard finishes, when it is dropped (error exits), on
//! SIGTERM ([`release_terminal`]: drawing stops first) and from a panic hook, so a crash never
//! leaves the shell in raw mode.

use super::draw::draw;
use super::view::Dashboard;
use llmib_client::{CancellationToken, CellSkip};
use llmib_client::{HwMonitor, panic_text};
use llmib_client::{Progress, ProgressEvent};
use ratatui::Terminal;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::prelude::CrosstermBackend;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, Once, TryLockError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Whether this process has the terminal in raw mode on the alternate screen.
static TAKEN: AtomicBool = AtomicBool::new(false);
/// Set when the terminal is given back from outside the dashboard (SIGTERM, a panic): the
/// drawing thread draws no frame after it.
static STOP_DRAWING: AtomicBool = AtomicBool::new(false);
/// Held by the drawing thread while it draws a frame, so that [`release_terminal`] can wait
/// for the frame in flight before it restores the terminal.
static DRAW_GATE: Mutex<()> = Mutex::new(());
/// The longest [`release_terminal`] waits for a frame in flight (a blocked terminal must not
/// keep SIGTERM from ending the run).
const RELEASE_WAIT: Duration = Duration::from_secs(1);

/// Leaves the alternate screen, shows the cursor and ends raw mode; does nothing when the
/// terminal was not taken (so every exit path may call it).
pub fn restore_terminal() {
    if TAKEN.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
    }
}

/// Stops the drawing thread (it draws no frame after this returns, or after a second if a
/// frame is stuck on a blocked terminal), then restores the terminal. For exits that do not
/// go through [`Tui::finish`], such as SIGTERM: a thread still drawing would paint the
/// dashboard over the main screen.
pub fn release_terminal() {
    STOP_DRAWING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + RELEASE_WAIT;
    loop {
        match DRAW_GATE.try_lock() {
            // No frame in flight; the thread checks the flag under the gate before drawing.
            Ok(_) | Err(TryLockError::Poisoned(_)) => break,
            Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(TryLockError::WouldBlock) => break,
        }
    }
    restore_terminal();
}

/// Restores the terminal before any panic message is printed.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // Not waiting on the gate: the panic may be the drawing thread's, holding it.
            STOP_DRAWING.store(true, Ordering::SeqCst);
            restore_terminal();
            previous(info);
        }));
    });
}

/// The running dashboard.
pub struct Tui {
    /// Progress events, with when they happened, to the drawing thread.
    events: Sender<(Instant, ProgressEvent)>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Tui {
    /// Takes the terminal and starts drawing `dash`. `cancel` is the run's cancellation (what
    /// `q` fires); `skip` what `s` fires; `hw` the hardware monitor, if on.
    pub fn start(
        dash: Dashboard,
        hw: Option<Arc<HwMonitor>>,
        cancel: CancellationToken,
        skip: CellSkip,
    ) -> std::io::Result<Tui> {
        install_panic_hook();
        STOP_DRAWING.store(false, Ordering::SeqCst);
        enable_raw_mode()?;
        TAKEN.store(true, Ordering::SeqCst);
        if let Err(e) = execute!(std::io::stdout(), EnterAlternateScreen, cursor::Hide) {
            restore_terminal();
            return Err(e);
        }
        let mut terminal = match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
            Ok(t) => t,
            Err(e) => {
                restore_terminal();
                return Err(e);
            }
        };
        let (events, rx) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let thread = std::thread::Builder::new()
            .name("dashboard".into())
            .spawn(move || {
                let keys = Keys { cancel, skip };
                draw_loop(dash, &rx, &mut terminal, hw.as_deref(), &keys, &stop2)
            })?;
        Ok(Tui {
            events,
            stop,
            thread: Some(thread),
        })
    }

    /// Stops drawing and gives the terminal back.
    pub fn finish(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let joined = self.thread.take().map(JoinHandle::join);
        restore_terminal();
        // After the terminal is back, so the line is read: a dashboard that died must not
        // look like a run that showed nothing.
        if let Some(Err(panic)) = joined {
            let _ = writeln!(
                std::io::stderr(),
                "warning: the dashboard stopped early after a panic ({}); the run went on and its results are saved",
                panic_text(panic.as_ref())
            );
        }
    }
}

/// The drawing thread: applies the events that arrived, reads the live figures, draws, reads
/// keys; until [`Tui::finish`] or [`release_terminal`].
fn draw_loop(
    mut dash: Dashboard,
    rx: &Receiver<(Instant, ProgressEvent)>,
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    hw: Option<&HwMonitor>,
    keys: &Keys,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Relaxed) {
        while let Ok((at, e)) = rx.try_recv() {
            dash.apply(&e, at);
        }
        let now = Instant::now();
        dash.tick(now);
        let sample = hw.and_then(|h| h.latest());
        {
            let _frame = DRAW_GATE.lock();
            if STOP_DRAWING.load(Ordering::SeqCst) {
                return;
            }
            // A failed draw (a closed terminal) is not the measurement's problem.
            let _ = terminal.draw(|f| draw(f, &dash, sample.as_ref(), now));
        }
        if event::poll(dash.frame).unwrap_or(false)
            && let Ok(ev) = event::read()
        {
            handle_key(&ev, keys, &mut dash);
        }
    }
}

/// What the keys fire.
struct Keys {
    /// The run's cancellation (`q`).
    cancel: CancellationToken,
    /// The cell's (`s`).
    skip: CellSkip,
}

/// `q`, `Q`, Esc or Ctrl-C stop the run (what is measured is saved); pressed again while the
/// run is stopping, they quit at once with 130, as a second Ctrl-C does. `s` skips the cell in
/// progress (its row is Not run, "skipped") and the run goes on.
fn handle_key(ev: &Event, keys: &Keys, dash: &mut Dashboard) {
    let Event::Key(k) = ev else {
        return;
    };
    if k.kind != KeyEventKind::Press {
        return;
    }
    // The viewer's keys first: with it open, Esc closes it rather than stopping the run.
    if !k.modifiers.contains(KeyModifiers::CONTROL) && dash.viewer_key(k.code) {
        return;
    }
    let cancel = &keys.cancel;
    if matches!(k.code, KeyCode::Char('s' | 'S')) && !cancel.is_cancelled() {
        let note = if keys.skip.skip() {
            "skipping the current cell (s)"
        } else {
            "no cell is running to skip"
        };
        dash.apply(&ProgressEvent::Note(note.into()), Instant::now());
        return;
    }
    let quit = matches!(k.code, KeyCode::Char('q' | 'Q') | KeyCode::Esc)
        || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL));
    if !quit {
        return;
    }
    if cancel.is_cancelled() {
        restore_terminal();
        std::process::exit(130);
    }
    cancel.cancel();
    dash.apply(
        &ProgressEvent::Note(
            "stopping: saving what is done (press q again to quit at once)".into(),
        ),
        Instant::now(),
    );
}

impl Progress for Tui {
    /// Sends the event to the drawing thread: no lock, no wait on the terminal. A thread that
    /// is gone (the terminal was released) drops it.
    fn event(&self, e: ProgressEvent) {
        let _ = self.events.send((Instant::now(), e));
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A drawing thread that panicked is reported when the dashboard stops, and stopping
    /// goes on (the run's results must still be written after it).
    #[test]
    fn a_panicked_drawing_thread_is_reported_not_propagated() {
        let (events, _rx) = channel();
        let thread = std::thread::Builder::new()
            .spawn(|| panic!("frame exploded"))
            .expect("a thread");
        Tui {
            events,
            stop: Arc::new(AtomicBool::new(false)),
            thread: Some(thread),
        }
        .finish();
        let boxed: Box<dyn std::any::Any + Send> = Box::new("static");
        assert_eq!(panic_text(boxed.as_ref()), "static");
    }
}
