//! The live area of the inline viewport: entries still changing, the approval prompt, the
//! input box with its queue, and the status line. Finished entries are not here; they were
//! printed into scrollback.

use super::state::InteractiveState;
use crate::tui::{InputView, StatusLine, TranscriptView};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::widgets::Widget;

/// Draws an [`InteractiveState`].
#[derive(Clone, Copy, Debug)]
pub struct LiveView<'a> {
    state: &'a InteractiveState,
}

impl<'a> LiveView<'a> {
    pub fn new(state: &'a InteractiveState) -> Self {
        Self { state }
    }

    /// Live entries, approval prompt, input box, status line.
    fn areas(&self, area: Rect) -> [Rect; 4] {
        let approval = self.state.approval().map_or(0, |a| a.height(area.width));
        Layout::vertical([
            Constraint::Min(0),
            Constraint::Length(approval),
            Constraint::Length(self.state.input().height(area.width)),
            Constraint::Length(1),
        ])
        .areas(area)
    }

    /// Where the terminal cursor belongs: in the input box, unless a prompt has the keys.
    pub fn cursor(&self, area: Rect) -> Option<Position> {
        if self.state.approval().is_some() {
            return None;
        }
        let [_, _, input, _] = self.areas(area);
        Some(self.state.input().cursor_position(input))
    }
}

impl Widget for LiveView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [live, approval, input, status] = self.areas(area);
        let state = self.state;
        TranscriptView::new(state.transcript())
            .starting_at(state.first_live_entry())
            .render(live, buf);
        if let Some(prompt) = state.approval() {
            prompt.render(approval, buf);
        }
        InputView::new(state.input(), state.is_running()).render(input, buf);
        let mut line = StatusLine::new(state.transcript());
        if let Some(note) = state.status_note() {
            line = line.note(note);
        }
        line.render(status, buf);
    }
}
