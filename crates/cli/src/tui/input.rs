//! The input box: the prompt being typed and the follow-ups queued while the agent works.

use super::editor::{Editor, Truncated};
use super::text::truncate;
use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthStr;

const PROMPT: &str = "› ";

/// The most screen rows the typed text takes; a longer text scrolls to keep the cursor in
/// view.
pub const MAX_INPUT_ROWS: usize = 8;

/// Editing state of the input box: the [`Editor`] and the pending queue shown above it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputBox {
    editor: Editor,
    queue: Vec<String>,
    /// Steering sent while the agent works and not yet read by it.
    steering: Vec<String>,
}

impl InputBox {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(&self) -> &str {
        self.editor.text()
    }

    /// Byte offset of the cursor in [`InputBox::text`].
    pub fn cursor(&self) -> usize {
        self.editor.cursor()
    }

    pub fn editor(&self) -> &Editor {
        &self.editor
    }

    pub fn editor_mut(&mut self) -> &mut Editor {
        &mut self.editor
    }

    pub fn insert(&mut self, ch: char) {
        self.editor.insert(ch);
    }

    /// Inserts text (a paste); `Some` says how much did not fit.
    pub fn insert_str(&mut self, text: &str) -> Option<Truncated> {
        self.editor.insert_str(text)
    }

    /// Replaces the text, the cursor at its end (a completion).
    pub fn set_text(&mut self, text: &str) {
        self.editor.set_text(text);
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        self.editor.backspace();
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        self.editor.delete();
    }

    pub fn left(&mut self) {
        self.editor.left();
    }

    pub fn right(&mut self) {
        self.editor.right();
    }

    pub fn home(&mut self) {
        self.editor.home();
    }

    pub fn end(&mut self) {
        self.editor.end();
    }

    /// Takes the typed text for sending; `None` (and nothing cleared) when it is blank.
    pub fn submit(&mut self) -> Option<String> {
        if self.text().trim().is_empty() {
            return None;
        }
        Some(self.editor.take())
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

    fn text_width(width: u16) -> usize {
        usize::from(width).saturating_sub(PROMPT.width()).max(1)
    }

    /// The rows of text shown at `width`: the first shown row and how many there are. The
    /// box grows with the text up to [`MAX_INPUT_ROWS`], then scrolls with the cursor.
    fn window(&self, width: u16) -> (usize, usize) {
        let total = self.editor.rows(Self::text_width(width)).len();
        let shown = total.min(MAX_INPUT_ROWS);
        let (row, _) = self.editor.cursor_cell(Self::text_width(width));
        let first = (row + 1).saturating_sub(shown);
        (first, shown)
    }

    /// Rows the box needs at `width`: queued lines, a rule, and the shown text.
    pub fn height(&self, width: u16) -> u16 {
        let (_, shown) = self.window(width);
        u16::try_from(self.pending_rows() + 1 + shown).unwrap_or(u16::MAX)
    }

    /// Where the terminal cursor goes when the box is drawn in `area`.
    pub fn cursor_position(&self, area: Rect) -> Position {
        let (first, _) = self.window(area.width);
        let (row, col) = self.editor.cursor_cell(Self::text_width(area.width));
        let row = row.saturating_sub(first);
        let y = area.y + u16::try_from(self.pending_rows() + 1 + row).unwrap_or(0);
        let x = area.x + u16::try_from(PROMPT.width() + col).unwrap_or(0);
        Position::new(
            x.min(area.right().saturating_sub(1)),
            y.min(area.bottom().saturating_sub(1)),
        )
    }

    /// The shown rows of text, and whether rows are hidden above and below them.
    fn text_lines(&self, width: u16) -> (Vec<&str>, bool, bool) {
        let rows = self.editor.rows(Self::text_width(width));
        let (first, shown) = self.window(width);
        let text = self.editor.text();
        let lines = rows[first..first + shown]
            .iter()
            .map(|(start, end)| &text[*start..*end])
            .collect();
        (lines, first > 0, first + shown < rows.len())
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
        if self.input.text().is_empty() {
            let hint = if self.busy {
                "Enter steers · Tab queues a follow-up · Esc cancels"
            } else if self.input.pending_rows() > 0 {
                "Enter sends what is queued, or type a task"
            } else {
                "type a task; Enter sends"
            };
            lines.push(Line::from(vec![Span::raw(PROMPT), Span::styled(hint, dim)]));
        } else {
            let (rows, above, below) = self.input.text_lines(area.width);
            let last = rows.len().saturating_sub(1);
            for (i, row) in rows.into_iter().enumerate() {
                // The prompt marks the first row; arrows mark rows scrolled out of view.
                let prefix = match (i, above, i == last && below) {
                    (0, true, _) => "↑ ",
                    (0, false, _) => PROMPT,
                    (_, _, true) => "↓ ",
                    _ => "  ",
                };
                let prefix =
                    Span::styled(prefix, if prefix == PROMPT { Style::new() } else { dim });
                lines.push(Line::from(vec![prefix, Span::raw(row.to_owned())]));
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
        let _ = input.insert_str("!");
        assert_eq!(input.text(), "élo!");
        assert_eq!(input.submit().as_deref(), Some("élo!"));
        assert_eq!((input.text(), input.cursor()), ("", 0));
        let _ = input.insert_str("  ");
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
        let _ = input.insert_str("abcdefghij");
        let area = Rect::new(0, 10, 8, 4);
        // 6 columns of text per row: "abcdef" / "ghij", cursor after "j".
        assert_eq!(input.cursor_position(area), Position::new(6, 12));
    }
}
