//! The full-screen dashboard: a thread that redraws [`Dashboard`] four times a second on the
//! alternate screen and reads keys (`q` or Ctrl-C: stop and save, as Ctrl-C does without the
//! dashboard; a second press quits at once). Progress events only update the model under a
//! mutex (a few per cell), so the measurement never waits on drawing; live figures are read
//! from the window's atomics by the drawing thread.
//!
//! The terminal is restored when the dashboard finishes, when it is dropped (error exits) and
//! from a panic hook, so a crash never leaves the shell in raw mode.

use super::draw::draw;
use super::view::Dashboard;
use llmib_client::driver::CancellationToken;
use llmib_client::driver::{Progress, ProgressEvent};
use llmib_client::hwmon::HwMonitor;
use ratatui::Terminal;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};
use ratatui::prelude::CrosstermBackend;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Redraw period.
const FRAME: Duration = Duration::from_millis(250);

/// Whether this process has the terminal in raw mode on the alternate screen.
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Leaves the alternate screen, shows the cursor and ends raw mode; does nothing when the
/// terminal was not taken (so every exit path may call it).
pub fn restore_terminal() {
    if TAKEN.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let _ = execute!(std::io::stdout(), LeaveAlternateScreen, cursor::Show);
    }
}

/// Restores the terminal before any panic message is printed.
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore_terminal();
            previous(info);
        }));
    });
}

/// The running dashboard.
pub struct Tui {
    state: Arc<Mutex<Dashboard>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Tui {
    /// Takes the terminal and starts drawing `dash`. `cancel` is the run's cancellation (what
    /// `q` fires); `hw` the hardware monitor, if on.
    pub fn start(
        dash: Dashboard,
        hw: Option<Arc<HwMonitor>>,
        cancel: CancellationToken,
    ) -> std::io::Result<Tui> {
        install_panic_hook();
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
        let state = Arc::new(Mutex::new(dash));
        let stop = Arc::new(AtomicBool::new(false));
        let (st, stop2) = (state.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("dashboard".into())
            .spawn(move || {
                while !stop2.load(Ordering::Relaxed) {
                    let now = Instant::now();
                    let sample = hw.as_ref().and_then(|h| h.latest());
                    if let Ok(mut d) = st.lock() {
                        d.tick(now);
                        // A failed draw (a closed terminal) is not the measurement's problem.
                        let _ = terminal.draw(|f| draw(f, &d, sample.as_ref(), now));
                    }
                    if event::poll(FRAME).unwrap_or(false)
                        && let Ok(ev) = event::read()
                    {
                        handle_key(&ev, &cancel, &st);
                    }
                }
            })?;
        Ok(Tui {
            state,
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
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        restore_terminal();
    }
}

/// `q`, `Q`, Esc or Ctrl-C stop the run (what is measured is saved); pressed again while the
/// run is stopping, they quit at once with 130, as a second Ctrl-C does.
fn handle_key(ev: &Event, cancel: &CancellationToken, st: &Arc<Mutex<Dashboard>>) {
    let Event::Key(k) = ev else {
        return;
    };
    if k.kind != KeyEventKind::Press {
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
    if let Ok(mut d) = st.lock() {
        d.apply(
            &ProgressEvent::Note(
                "stopping: saving what is done (press q again to quit at once)".into(),
            ),
            Instant::now(),
        );
    }
}

impl Progress for Tui {
    fn event(&self, e: ProgressEvent) {
        if let Ok(mut d) = self.state.lock() {
            d.apply(&e, Instant::now());
        }
    }
}

impl Drop for Tui {
    fn drop(&mut self) {
        self.shutdown();
    }
}
