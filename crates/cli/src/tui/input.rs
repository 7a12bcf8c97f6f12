//! The input box: the prompt being typed and the follow-ups queued while the agent works.

use super::text::{truncate, wrap};
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthStr;

const PROMPT: &str = "› ";

/// Editing state of the input box. Cursor positions are byte offsets on char boundaries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputBox {
    text: String,
    cursor: usize,
    queue: Vec<String>,
    /// Steering sent while the agent works and not yet read by it.
    steering: Vec<String>,
}

impl InputBox {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Byte offset of the cursor in [`InputBox::text`].
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn insert(&mut self, ch: char) {
        self.text.insert(self.cursor, ch);
        self.cursor += ch.len_utf8();
    }

    pub fn insert_str(&mut self, text: &str) {
        self.text.insert_str(self.cursor, text);
        self.cursor += text.len();
    }

    /// Deletes the character before the cursor.
    /// Replaces the text, the cursor at its end (a completion).
    pub fn set_text(&mut self, text: &str) {
        self.text = text.to_owned();
        self.cursor = self.text.len();
    }

    pub fn backspace(&mut self) {
        if let Some(ch) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= ch.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    pub fn left(&mut self) {
        if let Some(ch) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= ch.len_utf8();
        }
    }

    pub fn right(&mut self) {
        if let Some(ch) = self.text[self.cursor..].chars().next() {
            self.cursor += ch.len_utf8();
        }
    }

    pub fn home(&mut self) {
        self.cursor = 0;
    }

    pub fn end(&mut self) {
        self.cursor = self.text.len();
    }

    /// Takes the typed text for sending; `None` (and nothing cleared) when it is blank.
    pub fn submit(&mut self) -> Option<String> {
        if self.text.trim().is_empty() {
            return None;
        }
        self.cursor = 0;
        Some(std::mem::take(&mut self.text))
    }

    /// Queues a follow-up to send when the agent is free.
    pub fn enqueue(&mut self, prompt: String) {
        self.queue.push(prompt);
    }

    /// The next queued follow-up.
    pub fn dequeue(&mut self) -> Option<String> {
        if self.queue.is_empty() {
            None
        } else {
            Some(self.queue.remove(0))
        }
    }

    pub fn queue(&self) -> &[String] {
        &self.queue
    }

    /// Replaces the queued follow-ups and the unread steering with what the agent's inbox
    /// holds (the interactive UI mirrors the inbox instead of keeping its own queue).
    pub fn set_pending(&mut self, follow_ups: Vec<String>, steering: Vec<String>) {
        self.queue = follow_ups;
        self.steering = steering;
    }

    pub fn steering(&self) -> &[String] {
        &self.steering
    }

    fn pending_rows(&self) -> usize {
        self.queue.len() + self.steering.len()
    }

    /// Rows the box needs at `width`: queued lines, a rule, and the wrapped text.
    pub fn height(&self, width: u16) -> u16 {
        let text_rows = self.text_lines(width).len();
        u16::try_from(self.pending_rows() + 1 + text_rows).unwrap_or(u16::MAX)
    }

    /// Where the terminal cursor goes when the box is drawn in `area`.
    pub fn cursor_position(&self, area: Rect) -> Position {
        let inner = usize::from(area.width)
            .saturating_sub(PROMPT.width())
            .max(1);
        let before = &self.text[..self.cursor];
        let rows = wrap(before, inner);
        let row = rows.len().saturating_sub(1);
        let col = rows.last().map_or(0, |r| r.width());
        let y = area.y + u16::try_from(self.pending_rows() + 1 + row).unwrap_or(0);
        let x = area.x + u16::try_from(PROMPT.width() + col).unwrap_or(0);
        Position::new(
            x.min(area.right().saturating_sub(1)),
            y.min(area.bottom().saturating_sub(1)),
        )
    }

    fn text_lines(&self, width: u16) -> Vec<String> {
        let inner = usize::from(width).saturating_sub(PROMPT.width()).max(1);
        wrap(&self.text, inner)
    }
}

/// Draws an [`InputBox`]; `busy` switches the hint to the keys that steer, queue and cancel.
#[derive(Clone, Copy, Debug)]
pub struct InputView<'a> {
    input: &'a InputBox,
    busy: bool,
}

impl<'a> InputView<'a> {
    pub fn new(input: &'a InputBox, busy: bool) -> Self {
        Self { input, busy }
    }
}

impl Widget for InputView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let dim = Style::new().add_modifier(Modifier::DIM);
        let steering = self.input.steering.iter().map(|s| ("steering › ", s));
        let queued = self.input.queue.iter().map(|q| ("queued › ", q));
        let mut lines: Vec<Line<'static>> = steering
            .chain(queued)
            .map(|(label, text)| {
                Line::styled(
                    truncate(&format!("{label}{}", text.replace('\n', " ")), width),
                    dim,
                )
            })
            .collect();
        lines.push(Line::styled("─".repeat(width), dim));
        if self.input.text.is_empty() {
            let hint = if self.busy {
                "Enter steers · Tab queues a follow-up · Esc cancels"
            } else if self.input.pending_rows() > 0 {
                "Enter sends what is queued, or type a task"
            } else {
                "type a task; Enter sends"
            };
            lines.push(Line::from(vec![Span::raw(PROMPT), Span::styled(hint, dim)]));
        } else {
            for (i, row) in self.input.text_lines(area.width).into_iter().enumerate() {
                let prefix = if i == 0 { PROMPT } else { "  " };
                lines.push(Line::from(vec![Span::raw(prefix), Span::raw(row)]));
            }
        }
        for (i, line) in lines.iter().take(usize::from(area.height)).enumerate() {
            let y = area.y + u16::try_from(i).unwrap_or(0);
            buf.set_line(area.x, y, line, area.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn editing_moves_by_characters() {
        let mut input = InputBox::new();
        for ch in "héllo".chars() {
            input.insert(ch);
        }
        input.left();
        input.left();
        input.backspace();
        assert_eq!((input.text(), input.cursor()), ("hélo", 3));
        input.home();
        input.delete();
        input.end();
        input.insert_str("!");
        assert_eq!(input.text(), "élo!");
        assert_eq!(input.submit().as_deref(), Some("élo!"));
        assert_eq!((input.text(), input.cursor()), ("", 0));
        input.insert_str("  ");
        assert_eq!(input.submit(), None);
        assert_eq!(input.text(), "  ", "a blank submit keeps the text");
    }

    #[test]
    fn follow_ups_queue_in_order() {
        let mut input = InputBox::new();
        input.enqueue("first".into());
        input.enqueue("second".into());
        // Two queued lines, the rule, the (empty) prompt line.
        assert_eq!(input.height(20), 4);
        assert_eq!(input.dequeue().as_deref(), Some("first"));
        assert_eq!(input.queue(), ["second"]);
    }

    #[test]
    fn the_cursor_follows_wrapped_text() {
        let mut input = InputBox::new();
        input.insert_str("abcdefghij");
        let area = Rect::new(0, 10, 8, 4);
        // 6 columns of text per row: "abcdef" / "ghij", cursor after "j".
        assert_eq!(input.cursor_position(area), Position::new(6, 12));
    }
}
