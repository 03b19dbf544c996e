//! What the terminal shows while a run works: the full-screen ratatui dashboard (`tui`, the
//! default when stdout is a terminal), a line per event (`plain`, the default otherwise) or one
//! JSON event per line (`json`).
//!
//! Each display is a [`llmib_client::Progress`]: it is fed only by the client's typed progress
//! events ([`llmib_client::ProgressEvent`]) and the live atomics a cell publishes while it
//! runs ([`llmib_client::LiveWindow`], [`llmib_client::OpenLoopLive`], the hardware monitor),
//! with the run's header and saved rows from `llmib-core`. The dashboard's model,
//! [`Dashboard`], is pure state with an explicit clock and [`draw`] renders it, so the drawing
//! is tested on fixed states (ratatui's `TestBackend`, insta snapshots); [`Tui`] owns the
//! terminal and the drawing thread.

mod draw;
mod lines;
mod row_words;
mod session_lines;
mod sessions;
mod style;
mod tables;
mod tui;
mod view;
mod viewer;

#[cfg(test)]
mod session_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod viewer_tests;

pub use draw::draw;
pub use lines::{JsonLines, PlainLines, describe};
pub use sessions::{SessionFigures, loop_words, session_cells};
pub use tui::{Tui, release_terminal, restore_terminal};
pub use view::{Current, Dashboard, Doing, Header, LiveFigures, LogLine, OpenFigures};
pub use viewer::Viewer;

use std::io::IsTerminal;

/// `--display`: what the terminal shows while the run works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum DisplayMode {
    /// Full-screen dashboard.
    Tui,
    /// A line per event and per finished cell.
    Plain,
    /// One JSON object per event.
    Json,
}

/// The mode asked for, or the default: the dashboard on a terminal, lines elsewhere.
pub fn resolve(asked: Option<DisplayMode>) -> DisplayMode {
    let terminal = std::io::stdout().is_terminal();
    let size = terminal
        .then(ratatui::crossterm::terminal::size)
        .and_then(Result::ok);
    choose(asked, terminal, size)
}

/// The smallest screen the dashboard draws anything useful on.
const MIN_SIZE: (u16, u16) = (40, 10);

/// [`resolve`]'s decision, pure. A terminal that reports a size of 0×0 (a `script` session,
/// some container consoles) or none would get a dashboard that draws nothing for the whole run:
/// lines instead, even when the dashboard was asked for (a blank screen helps no one).
pub fn choose(asked: Option<DisplayMode>, terminal: bool, size: Option<(u16, u16)>) -> DisplayMode {
    let drawable = size.is_some_and(|(w, h)| w >= MIN_SIZE.0 && h >= MIN_SIZE.1);
    match asked {
        Some(DisplayMode::Tui) | None if terminal && drawable => DisplayMode::Tui,
        Some(DisplayMode::Tui) | None => DisplayMode::Plain,
        Some(other) => other,
    }
}
