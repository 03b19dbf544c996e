//! The model-output viewer: a panel over the dashboard with the live text of one stream of the
//! decode window (its reasoning and its answer apart), as the stream's bounded rings hold it
//! (`llmib_client::LiveText`: the latest 8 KiB of each). `o` opens and closes it (Esc closes
//! it too, rather than stopping the run, while it is open); `n` / `p` (→ / ←) pick the next or
//! previous stream; `f` (space) freezes it (the text stops updating and the stream is no longer
//! watched); PgUp / PgDn (↑ / ↓, Home / End) page back through what the rings hold.
//!
//! Only the stream shown is watched, so the other streams pay one relaxed load per read and the
//! shown one a second SSE decoding of its bytes; the drawing thread copies its rings (16 KiB at
//! most) at each tick. Server text is drawn with every control character replaced
//! (`sanitize_terminal`, line by line): a model's output cannot move the cursor.

use super::style::{bold, dim};
use llmib_client::{LiveWindow, TextRing, TextRings};
use llmib_core::sanitize_terminal;
use ratatui::Frame;
use ratatui::crossterm::event::KeyCode;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};
use std::cell::Cell;
use std::sync::Arc;

/// Lines a PgUp or PgDn moves.
const PAGE_LINES: usize = 10;

/// The viewer's state, while it is open.
#[derive(Debug, Default)]
pub struct Viewer {
    /// The stream shown, 0-based (kept within the window's N).
    pub stream: usize,
    /// The text stops updating, and the stream is no longer watched.
    pub frozen: bool,
    /// Lines scrolled back from the newest (0: the newest text, following it).
    pub back: usize,
    /// The text last read.
    pub text: TextRings,
    /// Reads whose text the viewer's lock cost the stream (the stream never waited).
    pub missed: u64,
    /// The cell the text came from, and N of its window.
    pub source: Option<(String, u32)>,
    /// The window watched now, and which of its streams.
    watching: Option<(Arc<LiveWindow>, usize)>,
    /// The farthest `back` can go, as the last frame was wrapped (set by the drawing).
    max_back: Cell<usize>,
}

impl Viewer {
    /// Stops watching the stream it watches, if any (the viewer closes, freezes or moves on).
    pub(crate) fn unwatch(&mut self) {
        if let Some((w, i)) = self.watching.take()
            && let Some(s) = w.stream(i)
        {
            s.text.watch(false);
        }
    }

    /// A key while the viewer is open (`o` and Esc, which close it, are the dashboard's);
    /// `n` is N of the window running, or of the one the text came from. `true` when the
    /// viewer used the key.
    pub(crate) fn key(&mut self, key: KeyCode, n: Option<u32>) -> bool {
        let n = n
            .or(self.source.as_ref().map(|(_, n)| *n))
            .unwrap_or(1)
            .max(1) as usize;
        match key {
            KeyCode::Char('n' | 'N') | KeyCode::Right | KeyCode::Tab => {
                self.stream = (self.stream + 1) % n;
                self.text = TextRings::default();
                self.back = 0;
            }
            KeyCode::Char('p' | 'P') | KeyCode::Left | KeyCode::BackTab => {
                self.stream = (self.stream + n - 1) % n;
                self.text = TextRings::default();
                self.back = 0;
            }
            KeyCode::Char('f' | 'F' | ' ') => self.frozen = !self.frozen,
            KeyCode::PageUp => self.back += PAGE_LINES,
            KeyCode::PageDown => self.back = self.back.saturating_sub(PAGE_LINES),
            KeyCode::Up => self.back += 1,
            KeyCode::Down => self.back = self.back.saturating_sub(1),
            KeyCode::Home => self.back = usize::MAX,
            KeyCode::End => self.back = 0,
            _ => return false,
        }
        self.back = self.back.min(self.max_back.get());
        true
    }

    /// Reads the shown stream's text (each tick) from the window running, named `cell`:
    /// watches the stream shown, and only it; copies its rings unless frozen. No window: the
    /// last text stays on screen and nothing is watched.
    pub(crate) fn read(&mut self, window: Option<(Arc<LiveWindow>, String)>) {
        let Some((w, cell)) = window else {
            self.unwatch();
            return;
        };
        let n = w.concurrency.max(1) as usize;
        self.stream = self.stream.min(n - 1);
        if self.frozen {
            self.unwatch();
            return;
        }
        let same = self
            .watching
            .as_ref()
            .is_some_and(|(cur, i)| Arc::ptr_eq(cur, &w) && *i == self.stream);
        if !same {
            self.unwatch();
            if let Some(s) = w.stream(self.stream) {
                s.text.watch(true);
            }
            self.watching = Some((w.clone(), self.stream));
            self.text = TextRings::default();
        }
        self.source = Some((cell, w.concurrency));
        if let Some(s) = w.stream(self.stream) {
            self.text = s.text.snapshot();
            self.missed = s.text.missed();
        }
    }
}

/// Draws the viewer over the dashboard, between the header and the footer.
pub fn draw_viewer(f: &mut Frame, v: &Viewer, area: Rect) {
    let rect = Rect {
        x: area.x,
        y: area.y + 2,
        width: area.width,
        height: area.height.saturating_sub(3),
    };
    f.render_widget(Clear, rect);
    let block = Block::bordered()
        .title(Span::styled(title(v), bold()))
        .title_bottom(Span::styled(
            " o close · n/p stream · f freeze · PgUp/PgDn ↑/↓ page · End newest ",
            dim(),
        ));
    let inner = block.inner(rect);
    f.render_widget(block, rect);
    if v.source.is_none() {
        f.render_widget(
            Paragraph::new(Line::styled(
                "no stream text yet: a decode window's streams show theirs here",
                dim(),
            )),
            inner,
        );
        return;
    }
    let panes: Vec<(&str, &TextRing, Style)> = [
        ("reasoning", &v.text.reasoning, dim()),
        ("content", &v.text.content, Style::new()),
    ]
    .into_iter()
    .filter(|(name, ring, _)| !ring.is_empty() || *name == "content")
    .collect();
    let areas = Layout::vertical(vec![Constraint::Fill(1); panes.len()]).split(inner);
    let mut max_back = 0;
    for ((name, ring, style), area) in panes.into_iter().zip(areas.iter()) {
        max_back = max_back.max(draw_pane(f, name, ring, style, v.back, *area));
    }
    v.max_back.set(max_back);
}

/// The viewer's title: which stream of which cell, the request, and its state.
fn title(v: &Viewer) -> String {
    let Some((cell, n)) = &v.source else {
        return " Output ".into();
    };
    let mut t = format!(" Output · {cell} · stream {}/{n}", v.stream + 1);
    if v.text.requests > 0 {
        t.push_str(&format!(" · request {}", v.text.requests));
    }
    if v.frozen {
        t.push_str(" · FROZEN");
    }
    if v.back > 0 {
        t.push_str(&format!(" · {} lines back", v.back));
    }
    if v.missed > 0 {
        t.push_str(&format!(" · {} reads skipped", v.missed));
    }
    t.push(' ');
    t
}

/// One pane (a heading line, then the text's wrapped lines ending `back` lines before the
/// newest); returns how far back this pane can go.
fn draw_pane(
    f: &mut Frame,
    name: &str,
    ring: &TextRing,
    style: Style,
    back: usize,
    area: Rect,
) -> usize {
    let rows = area.height.saturating_sub(1) as usize;
    let lines = wrap(&ring.text(), area.width.max(1) as usize);
    let max_back = lines.len().saturating_sub(rows);
    let back = back.min(max_back);
    let end = lines.len() - back;
    let start = end.saturating_sub(rows);
    let kept = if ring.written() > ring.len() as u64 {
        format!(" ({} of {} bytes kept)", ring.len(), ring.written())
    } else {
        String::new()
    };
    let mut out = vec![Line::from(vec![
        Span::styled(name.to_string(), bold().fg(Color::Cyan)),
        Span::styled(kept, dim()),
    ])];
    if lines.is_empty() {
        out.push(Line::styled("waiting for text…", dim()));
    }
    out.extend(
        lines[start..end]
            .iter()
            .map(|l| Line::styled(l.clone(), style)),
    );
    f.render_widget(Paragraph::new(out), area);
    max_back
}

/// The text as lines of at most `width` characters: split at line breaks (a `\r` before one
/// dropped), each line sanitised, long lines wrapped.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    for raw in text.split('\n') {
        let line = sanitize_terminal(raw.strip_suffix('\r').unwrap_or(raw));
        let chars: Vec<char> = line.chars().collect();
        if chars.is_empty() {
            out.push(String::new());
        }
        out.extend(chars.chunks(width).map(|c| c.iter().collect::<String>()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn control_characters_never_reach_the_screen() {
        let lines = wrap("a\u{1b}[2J\u{1b}[H\tb\r\nnext\u{7}\u{9b}", 80);
        assert_eq!(lines, vec!["a?[2J?[H b".to_string(), "next??".to_string()]);
        assert_eq!(wrap("abcdef", 4), vec!["abcd", "ef"]);
        assert_eq!(wrap("x\n\ny", 4), vec!["x", "", "y"]);
    }
}
