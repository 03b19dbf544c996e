//! Server strings made fit for a terminal: a server may name its model with a megabyte of
//! text, and an error body may be as long. The files keep every string whole; what a terminal
//! shows of one is cut here, in one place, with how long it was, so a line never fills the
//! screen ([`cut_text`] for one name, [`terminal_line`] for a line that holds several).

use crate::redact::sanitize_terminal;
use std::borrow::Cow;

/// The most characters of one server name (a model id, a version) a terminal shows.
pub const NAME_MAX_CHARS: usize = 120;

/// The most characters of one printed line: far above a table row or a launch command
/// (under 700 in practice), so only a line carrying a runaway string is cut.
pub const LINE_MAX_CHARS: usize = 2_000;

/// `s` cut to its first `max` characters, with its length: `abc… (1048576 characters)`;
/// `s` itself when it fits.
pub fn cut_text(s: &str, max: usize) -> Cow<'_, str> {
    // `nth` stops at the first character past `max`: a megabyte is not counted to find that
    // it is too long, only once, for the message.
    match s.char_indices().nth(max) {
        None => Cow::Borrowed(s),
        Some((end, _)) => Cow::Owned(format!("{}… ({} characters)", &s[..end], s.chars().count())),
    }
}

/// A server name for a terminal: control characters replaced ([`sanitize_terminal`]), cut at
/// [`NAME_MAX_CHARS`].
pub fn terminal_name(s: &str) -> String {
    sanitize_terminal(&cut_text(s, NAME_MAX_CHARS))
}

/// One line of terminal output that may hold server strings: every word (a run without a
/// space) over [`NAME_MAX_CHARS`] cut as [`cut_text`] cuts it, the line at
/// [`LINE_MAX_CHARS`], and control characters replaced ([`sanitize_terminal`]: one line, no
/// escape sequence). A Markdown table's ruler (`|---|---:|`) is a word of the tool's own and
/// is never cut, however many columns it spans.
pub fn terminal_line(s: &str) -> String {
    let is_ruler = |w: &str| w.chars().all(|c| matches!(c, '|' | '-' | ':'));
    let words: Vec<Cow<'_, str>> = s
        .split(' ')
        .map(|w| {
            if is_ruler(w) {
                Cow::Borrowed(w)
            } else {
                cut_text(w, NAME_MAX_CHARS)
            }
        })
        .collect();
    sanitize_terminal(&cut_text(&words.join(" "), LINE_MAX_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_and_long_text_says_how_long_it_was() {
        assert_eq!(cut_text("qwen3:8b", 120), "qwen3:8b");
        assert!(matches!(cut_text("abc", 3), Cow::Borrowed("abc")));
        assert_eq!(cut_text("abcd", 3), "abc… (4 characters)");
        // Characters, not bytes: a cut never splits one.
        assert_eq!(cut_text("ééé", 2), "éé… (3 characters)");
        let id = format!("org/{}", "m".repeat(1 << 20));
        let name = terminal_name(&id);
        assert!(name.len() < 200, "{name}");
        assert!(name.ends_with("… (1048580 characters)"), "{name}");
    }

    #[test]
    fn a_line_cuts_each_long_word_keeps_rulers_and_strips_controls() {
        let id = "m".repeat(1 << 20);
        let line = terminal_line(&format!("- **Served model:** {id} \u{1b}[2J"));
        assert!(line.len() < 300, "{line}");
        assert!(line.starts_with("- **Served model:** mmm"), "{line}");
        assert!(line.contains("… (1048576 characters)"));
        assert!(!line.chars().any(char::is_control), "{line}");
        let ruler = format!("|{}", "---:|".repeat(60));
        assert_eq!(terminal_line(&ruler), ruler);
        // Many short words: the line itself is cut.
        let words = "word ".repeat(100_000);
        let cut = terminal_line(&words);
        assert!(cut.chars().count() < LINE_MAX_CHARS + 40, "{}", cut.len());
        assert!(
            cut.ends_with("… (500000 characters)"),
            "{}",
            &cut[cut.len() - 40..]
        );
        assert_eq!(terminal_line("| 8K | 190.7 |"), "| 8K | 190.7 |");
    }
}
