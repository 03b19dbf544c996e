//! The dashboard's two text styles, shared by its panels and its tables.

use ratatui::style::{Color, Modifier, Style};

/// Headings and figures that matter.
pub(crate) fn bold() -> Style {
    Style::new().add_modifier(Modifier::BOLD)
}

/// What is there but not the point (labels, pending cells).
pub(crate) fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}
