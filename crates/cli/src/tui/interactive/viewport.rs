//! An inline viewport that grows with its content.
//!
//! ratatui's inline viewport has the height it was created with. The live area of the UI
//! wants the height of what it shows (a streaming answer's open block, an approval prompt,
//! the input), so [`fit_viewport`] reopens the terminal with an inline viewport of the new
//! height anchored at the old viewport's top row: growing scrolls the finished lines above
//! it up (into the terminal's scrollback when the screen is full), shrinking leaves the
//! freed rows blank for the next lines printed above. A reopen repaints the viewport once;
//! the repaint sits inside a synchronized update (mode 2026) so terminals that support it
//! show no intermediate frame.
//!
//! The anchor row is known (it is the old viewport's top), so [`KnownCursor`] answers
//! ratatui's cursor query from memory instead of asking the terminal, which would cost a
//! round trip (a long one over SSH) and contend with the key reader thread.

use crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, TestBackend, WindowSize};
use ratatui::buffer::Cell;
use ratatui::layout::{Position, Size};
use ratatui::{Terminal, TerminalOptions, Viewport};
use std::io::{self, Stdout};

/// A backend the live viewport can be reopened on.
pub trait LiveBackend: Backend + Sized {
    /// A second handle on the same terminal, for the viewport reopened at another height.
    fn reopen(&self) -> Self;

    /// Starts (`true`) or ends a synchronized update, so a repaint shows at once.
    fn synchronized(&mut self, _on: bool) -> io::Result<()> {
        Ok(())
    }

    /// The terminal was resized: what the backend remembers about the screen may be stale.
    fn resized(&mut self) {}
}

/// The test backend keeps its screen and scrollback in the value: a clone carries them on.
impl LiveBackend for TestBackend {
    fn reopen(&self) -> Self {
        self.clone()
    }
}

/// The process's terminal, with the cursor position remembered once it was set.
#[derive(Debug)]
pub struct KnownCursor {
    inner: CrosstermBackend<Stdout>,
    cursor: Option<Position>,
    /// `false` under `NO_COLOR`: cells are written without their colours (bold, dim and
    /// the other modifiers stay), whoever styled them.
    colour: bool,
}

impl KnownCursor {
    pub fn stdout(colour: bool) -> Self {
        Self {
            inner: CrosstermBackend::new(io::stdout()),
            cursor: None,
            colour,
        }
    }
}

impl LiveBackend for KnownCursor {
    fn reopen(&self) -> Self {
        Self {
            inner: CrosstermBackend::new(io::stdout()),
            cursor: self.cursor,
            colour: self.colour,
        }
    }

    fn synchronized(&mut self, on: bool) -> io::Result<()> {
        if on {
            crossterm::queue!(self.inner, BeginSynchronizedUpdate)
        } else {
            crossterm::execute!(self.inner, EndSynchronizedUpdate)
        }
    }

    /// Forgets the remembered position (the terminal may have reflowed), so the next query
    /// asks the terminal.
    fn resized(&mut self) {
        self.cursor = None;
    }
}

impl Backend for KnownCursor {
    type Error = io::Error;

    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a Cell)>,
    {
        let cells: Vec<(u16, u16, &Cell)> = content.collect();
        let linked = crate::tui::hyperlink::prepare(&cells, crate::tui::hyperlink::is_enabled());
        if self.colour {
            return match linked {
                Some(owned) => self.inner.draw(owned.iter().map(|(x, y, c)| (*x, *y, c))),
                None => self.inner.draw(cells.into_iter()),
            };
        }
        let plain: Vec<(u16, u16, Cell)> = match linked {
            Some(owned) => owned,
            None => cells
                .into_iter()
                .map(|(x, y, c)| (x, y, c.clone()))
                .collect(),
        }
        .into_iter()
        .map(|(x, y, mut cell)| {
            cell.fg = ratatui::style::Color::Reset;
            cell.bg = ratatui::style::Color::Reset;
            (x, y, cell)
        })
        .collect();
        self.inner
            .draw(plain.iter().map(|(x, y, cell)| (*x, *y, cell)))
    }

    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        if let Some(cursor) = self.cursor.as_mut() {
            let bottom = self.inner.size()?.height.saturating_sub(1);
            cursor.y = cursor.y.saturating_add(n).min(bottom);
        }
        self.inner.append_lines(n)
    }

    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }

    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }

    fn get_cursor_position(&mut self) -> io::Result<Position> {
        if let Some(cursor) = self.cursor {
            return Ok(cursor);
        }
        let cursor = self.inner.get_cursor_position()?;
        self.cursor = Some(cursor);
        Ok(cursor)
    }

    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        let position = position.into();
        self.cursor = Some(position);
        self.inner.set_cursor_position(position)
    }

    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }

    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }

    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }

    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }

    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }

    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, amount: u16) -> io::Result<()> {
        self.inner.scroll_region_up(region, amount)
    }

    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, amount: u16) -> io::Result<()> {
        self.inner.scroll_region_down(region, amount)
    }
}

/// Turns a backend's error into an `io::Error`.
pub fn io_error<E: std::error::Error + Send + Sync + 'static>(error: E) -> io::Error {
    io::Error::other(error)
}

/// Gives the inline viewport of `terminal` the height `wanted` (at most the screen's),
/// anchored at its current top row. Returns whether it was reopened (and so repaints).
pub fn fit_viewport<B>(terminal: &mut Terminal<B>, wanted: u16) -> io::Result<bool>
where
    B: LiveBackend,
    B::Error: Send + Sync + 'static,
{
    let area = terminal.get_frame().area();
    let screen = terminal.size().map_err(io_error)?.height;
    let height = wanted.clamp(1, screen.max(1));
    if area.height == height {
        return Ok(false);
    }
    terminal
        .set_cursor_position((0, area.y))
        .map_err(io_error)?;
    let backend = terminal.backend().reopen();
    let mut reopened = Terminal::with_options(
        backend,
        TerminalOptions {
            viewport: Viewport::Inline(height),
        },
    )
    .map_err(io_error)?;
    reopened.clear().map_err(io_error)?;
    *terminal = reopened;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::text::Line;

    fn inline(rows: u16, height: u16, cursor_row: u16) -> Terminal<TestBackend> {
        let mut backend = TestBackend::new(10, rows);
        backend.set_cursor_position((0, cursor_row)).unwrap();
        Terminal::with_options(
            backend,
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )
        .unwrap()
    }

    #[test]
    fn growing_extends_downwards_while_the_screen_has_room() {
        let mut terminal = inline(10, 2, 3);
        assert!(fit_viewport(&mut terminal, 5).unwrap());
        let area = terminal.get_frame().area();
        assert_eq!((area.y, area.height), (3, 5));
    }

    #[test]
    fn growing_at_the_bottom_scrolls_the_lines_above_up() {
        let mut terminal = inline(6, 2, 4);
        terminal
            .insert_before(1, |buf| Line::from("kept").render_into(buf))
            .unwrap();
        assert!(fit_viewport(&mut terminal, 4).unwrap());
        let area = terminal.get_frame().area();
        assert_eq!((area.y, area.height), (2, 4));
        let screen = terminal.backend().buffer().clone();
        let text: String = (0..screen.area.width)
            .map(|x| screen[(x, 1)].symbol().to_owned())
            .collect();
        assert_eq!(text.trim_end(), "kept");
    }

    #[test]
    fn shrinking_keeps_the_top_row_and_a_screen_tall_request_is_clamped() {
        let mut terminal = inline(8, 4, 2);
        assert!(fit_viewport(&mut terminal, 2).unwrap());
        assert_eq!(terminal.get_frame().area().y, 2);
        assert!(!fit_viewport(&mut terminal, 2).unwrap());
        fit_viewport(&mut terminal, 500).unwrap();
        let area = terminal.get_frame().area();
        assert_eq!((area.y, area.height), (0, 8));
    }

    trait RenderInto {
        fn render_into(self, buf: &mut ratatui::buffer::Buffer);
    }

    impl RenderInto for Line<'_> {
        fn render_into(self, buf: &mut ratatui::buffer::Buffer) {
            let area = buf.area;
            buf.set_line(area.x, area.y, &self, area.width);
        }
    }
}
