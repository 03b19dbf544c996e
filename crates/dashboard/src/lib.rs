//! What the terminal shows while a run works: the full-screen dashboard (`tui`, the default
//! when stdout is a terminal), a line per event (`plain`, the default otherwise) or one JSON
//! event per line (`json`).

pub mod draw;
pub mod lines;
pub mod tui;
pub mod view;

#[cfg(test)]
mod tests;

pub use crate::config::DisplayMode;
use std::io::IsTerminal;

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
