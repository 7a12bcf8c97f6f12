//! The goal line above the input box: the session's goal, its round and phase, one row,
//! cut to the width (nothing when the session has no goal).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::Widget;

/// Draws the goal line.
#[derive(Clone, Copy, Debug)]
pub struct GoalLineView<'a> {
    line: Option<&'a str>,
}

impl<'a> GoalLineView<'a> {
    pub fn new(line: Option<&'a str>) -> Self {
        Self { line }
    }

    /// One row with a goal, none without.
    pub fn height(&self) -> u16 {
        u16::from(self.line.is_some())
    }
}

impl Widget for GoalLineView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let Some(text) = self.line else { return };
        if area.height == 0 {
            return;
        }
        let style = Style::default().add_modifier(Modifier::DIM);
        buf.set_line(
            area.x,
            area.y,
            &Line::styled(text.to_owned(), style),
            area.width,
        );
    }
}
