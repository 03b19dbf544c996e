//! Terminal output while a run works: a progress bar with the current cell, its phase and an
//! ETA for the whole matrix on a terminal; plain lines, one per finished cell, otherwise (logs,
//! CI, pipes).

use indicatif::{ProgressBar, ProgressStyle};
use llmib_client::driver::{Progress, ProgressEvent};
use llmib_core::cell::{CellKey, CellResult, CellStatus, Phase};
use llmib_core::plan::Plan;
use llmib_core::redact::sanitize_terminal;
use std::collections::HashSet;
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Progress on the terminal.
pub struct TerminalProgress {
    bar: Option<ProgressBar>,
    state: Mutex<State>,
}

struct State {
    started: Instant,
    /// Cells that will actually send requests, and how many are finished.
    to_measure: usize,
    measured: usize,
    window_s: f64,
    current: String,
}

impl TerminalProgress {
    /// Progress for `plan`, with `done` cells already measured (resume).
    pub fn new(plan: &Plan, done: &HashSet<CellKey>) -> Self {
        let to_measure = plan
            .cells
            .iter()
            .filter(|c| !c.over_capacity && !done.contains(&c.key))
            .count();
        let bar = std::io::stdout().is_terminal().then(|| {
            let b = ProgressBar::new(to_measure as u64);
            b.set_style(
                ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} cells · {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            b.enable_steady_tick(Duration::from_millis(200));
            b
        });
        TerminalProgress {
            bar,
            state: Mutex::new(State {
                started: Instant::now(),
                to_measure,
                measured: 0,
                window_s: plan.settings.duration_s,
                current: String::new(),
            }),
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    fn eta(st: &State) -> String {
        let left = st.to_measure.saturating_sub(st.measured);
        if left == 0 {
            return "done".into();
        }
        // Average time per measured cell so far; before the first one, the window length.
        let per = if st.measured > 0 {
            st.started.elapsed().as_secs_f64() / st.measured as f64
        } else {
            st.window_s + 2.0
        };
        let secs = (per * left as f64).round() as u64;
        format!("ETA {}m{:02}s", secs / 60, secs % 60)
    }
}

fn describe(r: &CellResult) -> String {
    let what = match r.phase {
        Phase::Prefill => format!("prefill {:>6}", r.context_label),
        Phase::Decode => format!("decode  {:>6} × {:<3}", r.context_label, r.concurrency),
    };
    // A figure the row does not have prints as a dash, never as a made-up 0.
    let fig =
        |v: Option<f64>, digits: usize| v.map_or("–".to_string(), |x| format!("{x:.digits$}"));
    let figs = match (r.phase, r.status) {
        (Phase::Prefill, s) if s.has_figures() => format!(
            "{:>10} prompt tok/s  TTFT {} ms",
            fig(r.prompt_tok_per_s, 1),
            fig(r.ttft_ms_p50, 0)
        ),
        (Phase::Decode, s) if s.has_figures() => format!(
            "{:>10} tok/s  TTFT {} ms  TBT {} ms",
            fig(r.total_tok_per_s, 1),
            fig(r.ttft_ms_p50, 0),
            fig(r.tbt_ms_p50, 1)
        ),
        (_, CellStatus::Failed) => r.first_error.clone().unwrap_or_default(),
        _ => String::new(),
    };
    // Labels and errors come from the server: no control character reaches the terminal.
    sanitize_terminal(&format!("{what}  {:<15} {figs}", r.status.label()))
}

impl Progress for TerminalProgress {
    fn event(&self, e: ProgressEvent) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        match e {
            ProgressEvent::CellStarted { cell, .. } => {
                st.current = match cell.key.phase {
                    Phase::Prefill => format!("prefill {}", cell.label),
                    Phase::Decode => format!("decode {} × {}", cell.label, cell.key.concurrency),
                };
                if let Some(b) = &self.bar {
                    b.set_message(format!("{} · {}", st.current, Self::eta(&st)));
                }
            }
            ProgressEvent::Phase(p) => {
                if let Some(b) = &self.bar {
                    b.set_message(format!("{} · {p} · {}", st.current, Self::eta(&st)));
                }
            }
            ProgressEvent::CellDone(r) => {
                if r.status != CellStatus::OverCapacity && r.status != CellStatus::NotRun {
                    st.measured += 1;
                }
                let line = describe(&r);
                match &self.bar {
                    Some(b) => {
                        b.set_position(st.measured as u64);
                        b.println(line);
                    }
                    None => println!("{line}"),
                }
            }
            // The window's instants matter to live views, not to the terminal's lines.
            ProgressEvent::Window { .. } => {}
            ProgressEvent::Note(n) => match (&self.bar, sanitize_terminal(&n)) {
                (Some(b), n) => b.println(format!("note: {n}")),
                (None, n) => println!("note: {n}"),
            },
        }
    }
}
