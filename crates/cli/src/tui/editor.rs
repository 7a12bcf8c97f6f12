//! The text being typed: a multi-line buffer with a cursor, and the editing operations the
//! keys map to (characters, words, lines, kills), plus its layout into screen rows.
//!
//! Positions are byte offsets on char boundaries. Words are runs of alphanumeric characters
//! (and `_`), as in readline, so `Alt-B` over `src/main.rs` stops at `main` and `src`.

use unicode_width::UnicodeWidthChar;

/// The most bytes the buffer holds. A bigger paste is cut here (and the UI says so), so a
/// 10 MB paste neither stalls every redraw nor becomes a request nobody meant to send.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

/// A multi-line text buffer with a cursor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Editor {
    text: String,
    cursor: usize,
}

/// What [`Editor::insert_str`] did with text over [`MAX_INPUT_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated {
    /// Bytes that did not fit and were dropped.
    pub dropped: usize,
}

impl Editor {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn cursor(&self) -> usize {
        self.cursor
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// Replaces the text, the cursor at its end.
    pub fn set_text(&mut self, text: &str) {
        self.text.clear();
        self.cursor = 0;
        let _ = self.insert_str(text);
    }

    /// Takes the text out, leaving the buffer empty.
    pub fn take(&mut self) -> String {
        self.cursor = 0;
        std::mem::take(&mut self.text)
    }

    /// Moves the cursor to `at` (clamped, and back to a char boundary).
    pub fn set_cursor(&mut self, at: usize) {
        let mut at = at.min(self.text.len());
        while !self.text.is_char_boundary(at) {
            at -= 1;
        }
        self.cursor = at;
    }

    pub fn insert(&mut self, ch: char) {
        if self.text.len() + ch.len_utf8() > MAX_INPUT_BYTES {
            return;
        }
        let ch = if ch == '\t' { ' ' } else { ch };
        if ch.is_control() && ch != '\n' {
            return;
        }
        self.text.insert(self.cursor, ch);
        self.cursor += ch.len_utf8();
    }

    /// Inserts `text` at the cursor as typed: line endings become `\n`, tabs four spaces,
    /// other control characters (escape sequences that would move the terminal's cursor)
    /// are dropped, and what does not fit under [`MAX_INPUT_BYTES`] is cut.
    pub fn insert_str(&mut self, text: &str) -> Option<Truncated> {
        let room = MAX_INPUT_BYTES.saturating_sub(self.text.len());
        let mut clean = String::with_capacity(text.len().min(room));
        let mut dropped = 0;
        let mut chars = text.chars().peekable();
        while let Some(ch) = chars.next() {
            let piece: &str = match ch {
                '\r' => {
                    if chars.peek() == Some(&'\n') {
                        continue;
                    }
                    "\n"
                }
                '\n' => "\n",
                '\t' => "    ",
                c if c.is_control() => continue,
                _ => "",
            };
            let len = if piece.is_empty() {
                ch.len_utf8()
            } else {
                piece.len()
            };
            if clean.len() + len > room {
                dropped += len;
                continue;
            }
            if piece.is_empty() {
                clean.push(ch);
            } else {
                clean.push_str(piece);
            }
        }
        self.text.insert_str(self.cursor, &clean);
        self.cursor += clean.len();
        (dropped > 0).then_some(Truncated { dropped })
    }

    fn prev_boundary(&self, at: usize) -> usize {
        self.text[..at]
            .chars()
            .next_back()
            .map_or(at, |c| at - c.len_utf8())
    }

    fn next_boundary(&self, at: usize) -> usize {
        self.text[at..]
            .chars()
            .next()
            .map_or(at, |c| at + c.len_utf8())
    }

    pub fn backspace(&mut self) {
        let start = self.prev_boundary(self.cursor);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    pub fn delete(&mut self) {
        let end = self.next_boundary(self.cursor);
        self.text.replace_range(self.cursor..end, "");
    }

    pub fn left(&mut self) {
        self.cursor = self.prev_boundary(self.cursor);
    }

    pub fn right(&mut self) {
        self.cursor = self.next_boundary(self.cursor);
    }

    fn line_start(&self) -> usize {
        self.text[..self.cursor].rfind('\n').map_or(0, |i| i + 1)
    }

    fn line_end(&self) -> usize {
        self.text[self.cursor..]
            .find('\n')
            .map_or(self.text.len(), |i| self.cursor + i)
    }

    /// Home / Ctrl-A: the start of the line the cursor is on.
    pub fn home(&mut self) {
        self.cursor = self.line_start();
    }

    /// End / Ctrl-E: the end of the line the cursor is on.
    pub fn end(&mut self) {
        self.cursor = self.line_end();
    }

    /// Whether the cursor is on the first line (Up there recalls history).
    pub fn on_first_line(&self) -> bool {
        !self.text[..self.cursor].contains('\n')
    }

    /// Whether the cursor is on the last line (Down there recalls history).
    pub fn on_last_line(&self) -> bool {
        !self.text[self.cursor..].contains('\n')
    }

    /// Up: the same column on the line above; false on the first line.
    pub fn up(&mut self) -> bool {
        if self.on_first_line() {
            return false;
        }
        let start = self.line_start();
        let column = self.text[start..self.cursor].chars().count();
        let above_start = self.text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
        self.cursor = advance(&self.text, above_start, start - 1, column);
        true
    }

    /// Down: the same column on the line below; false on the last line.
    pub fn down(&mut self) -> bool {
        if self.on_last_line() {
            return false;
        }
        let column = self.text[self.line_start()..self.cursor].chars().count();
        let below_start = self.line_end() + 1;
        let below_end = self.text[below_start..]
            .find('\n')
            .map_or(self.text.len(), |i| below_start + i);
        self.cursor = advance(&self.text, below_start, below_end, column);
        true
    }

    fn word_start_before(&self, at: usize) -> usize {
        let before = &self.text[..at];
        let mut chars = before.char_indices().rev().peekable();
        // Skip separators, then the word.
        let mut start = at;
        while let Some(&(i, c)) = chars.peek() {
            if is_word(c) {
                break;
            }
            start = i;
            chars.next();
        }
        while let Some(&(i, c)) = chars.peek() {
            if !is_word(c) {
                break;
            }
            start = i;
            chars.next();
        }
        start
    }

    fn word_end_after(&self, at: usize) -> usize {
        let mut end = at;
        let mut seen_word = false;
        for (i, c) in self.text[at..].char_indices() {
            if is_word(c) {
                seen_word = true;
            } else if seen_word {
                return at + i;
            }
            end = at + i + c.len_utf8();
        }
        end
    }

    /// Alt-B: to the start of the word before the cursor.
    pub fn word_left(&mut self) {
        self.cursor = self.word_start_before(self.cursor);
    }

    /// Alt-F: to the end of the word after the cursor.
    pub fn word_right(&mut self) {
        self.cursor = self.word_end_after(self.cursor);
    }

    /// Ctrl-W: deletes the whitespace-separated word before the cursor (as a shell does).
    pub fn delete_word_back(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches([' ', '\t']);
        let start = trimmed.rfind(char::is_whitespace).map_or(0, |i| {
            i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
        });
        // A cursor right after a newline deletes the newline.
        let start = if start == self.cursor {
            self.prev_boundary(self.cursor)
        } else {
            start
        };
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Alt-D: deletes to the end of the word after the cursor.
    pub fn delete_word_forward(&mut self) {
        let end = self.word_end_after(self.cursor);
        self.text.replace_range(self.cursor..end, "");
    }

    /// Ctrl-U: deletes from the start of the line to the cursor (the newline before it when
    /// the cursor is already at a line start).
    pub fn kill_to_line_start(&mut self) {
        let mut start = self.line_start();
        if start == self.cursor {
            start = self.prev_boundary(start);
        }
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Ctrl-K: deletes from the cursor to the end of the line (the newline when the cursor
    /// is already at a line end).
    pub fn kill_to_line_end(&mut self) {
        let mut end = self.line_end();
        if end == self.cursor {
            end = self.next_boundary(end);
        }
        self.text.replace_range(self.cursor..end, "");
    }

    /// The text laid out `width` columns wide: byte ranges of the screen rows, each logical
    /// line broken where the next character would not fit.
    pub fn rows(&self, width: usize) -> Vec<(usize, usize)> {
        let width = width.max(1);
        let mut rows = Vec::new();
        let mut start = 0;
        let mut used = 0;
        for (i, c) in self.text.char_indices() {
            if c == '\n' {
                rows.push((start, i));
                start = i + 1;
                used = 0;
                continue;
            }
            let w = c.width().unwrap_or(0);
            if used + w > width && used > 0 {
                rows.push((start, i));
                start = i;
                used = 0;
            }
            used += w;
        }
        rows.push((start, self.text.len()));
        rows
    }

    /// The screen row and column of the cursor in [`Editor::rows`] at `width`.
    pub fn cursor_cell(&self, width: usize) -> (usize, usize) {
        let rows = self.rows(width);
        // The last row starting at or before the cursor; a cursor at a wrapped row's end
        // shows at the start of the next row, where the next character goes.
        let row = rows
            .iter()
            .rposition(|(start, _)| *start <= self.cursor)
            .unwrap_or(0);
        let (start, _) = rows[row];
        let column = self.text[start..self.cursor]
            .chars()
            .map(|c| c.width().unwrap_or(0))
            .sum();
        (row, column)
    }
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The byte offset `column` characters after `start`, at most `end`.
fn advance(text: &str, start: usize, end: usize, column: usize) -> usize {
    text[start..end]
        .char_indices()
        .nth(column)
        .map_or(end, |(i, _)| start + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, cursor: usize) -> Editor {
        let mut editor = Editor::new();
        editor.set_text(text);
        editor.set_cursor(cursor);
        editor
    }

    fn shown(editor: &Editor) -> String {
        let mut text = editor.text().to_owned();
        text.insert(editor.cursor(), '|');
        text
    }

    #[test]
    fn lines_and_columns() {
        let mut e = at("first line\nsecond\nthird one", 0);
        e.end();
        assert_eq!(shown(&e), "first line|\nsecond\nthird one");
        assert!(e.down());
        assert_eq!(shown(&e), "first line\nsecond|\nthird one");
        assert!(e.down());
        assert_eq!(shown(&e), "first line\nsecond\nthird |one");
        assert!(!e.down(), "the last line");
        assert!(e.up());
        assert!(e.up());
        assert_eq!(
            shown(&e),
            "first line\nsecond\nthird one".replacen("first ", "first |", 1)
        );
        assert!(!e.up());
        e.home();
        assert_eq!(shown(&e), "|first line\nsecond\nthird one");
    }

    #[test]
    fn words() {
        let mut e = at("cargo test -p dsh_cli", 21);
        e.word_left();
        assert_eq!(shown(&e), "cargo test -p |dsh_cli");
        e.word_left();
        e.word_left();
        assert_eq!(shown(&e), "cargo |test -p dsh_cli");
        e.word_right();
        assert_eq!(shown(&e), "cargo test| -p dsh_cli");
        e.delete_word_forward();
        assert_eq!(shown(&e), "cargo test| dsh_cli");
        e.end();
        e.delete_word_back();
        assert_eq!(shown(&e), "cargo test |");
        e.delete_word_back();
        assert_eq!(shown(&e), "cargo |");
    }

    #[test]
    fn kills_stop_at_line_ends() {
        let mut e = at("one\ntwo three\nfour", 8);
        e.kill_to_line_end();
        assert_eq!(shown(&e), "one\ntwo |\nfour");
        e.kill_to_line_end();
        assert_eq!(shown(&e), "one\ntwo |four");
        e.kill_to_line_start();
        assert_eq!(shown(&e), "one\n|four");
        e.kill_to_line_start();
        assert_eq!(shown(&e), "one|four");
    }

    #[test]
    fn pastes_are_cleaned_and_capped() {
        let mut e = Editor::new();
        assert_eq!(e.insert_str("a\r\nb\rc\td\x1b[2Je"), None);
        assert_eq!(e.text(), "a\nb\nc    d[2Je");
        let huge = "x".repeat(MAX_INPUT_BYTES + 10);
        let cut = e.insert_str(&huge);
        assert_eq!(e.text().len(), MAX_INPUT_BYTES);
        assert_eq!(cut, Some(Truncated { dropped: 24 }));
        e.insert('y');
        assert_eq!(e.text().len(), MAX_INPUT_BYTES, "typing stops at the cap");
    }

    #[test]
    fn rows_wrap_by_width_and_the_cursor_follows() {
        let e = at("abcdefgh\nxy", 6);
        assert_eq!(e.rows(3), [(0, 3), (3, 6), (6, 8), (9, 11)]);
        assert_eq!(e.cursor_cell(3), (2, 0));
        let e = at("abcdefgh\nxy", 11);
        assert_eq!(e.cursor_cell(3), (3, 2));
        let e = at("日本語", 3);
        assert_eq!(e.rows(4), [(0, 6), (6, 9)]);
        assert_eq!(e.cursor_cell(4), (0, 2));
    }
}
