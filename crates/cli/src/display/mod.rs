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
    asked.unwrap_or(if std::io::stdout().is_terminal() {
        DisplayMode::Tui
    } else {
        DisplayMode::Plain
    })
}
