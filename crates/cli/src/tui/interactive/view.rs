//! The live area of the inline viewport: entries still changing, the approval prompt, the
//! input box with its queue, the slash-command completions, and the status line. Finished entries are not here; they were
//! printed into scrollback. When the live entries outgrow the viewport, their newest lines
//! show (the whole entry reaches scrollback once it is finished).

use super::commands::CompletionView;
use super::state::InteractiveState;
use crate::tui::{InputView, StatusLine};
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

    /// Live entries, approval prompt, input box, status line, top-aligned: the input sits
    /// right under the scrollback and the viewport's spare rows stay blank below it.
    fn areas(&self, area: Rect) -> [Rect; 5] {
        let state = self.state;
        let approval = match (state.approval(), state.question()) {
            (Some(prompt), _) => prompt.height(area.width),
            (None, Some(card)) => card.height(area.width),
            (None, None) => 0,
        };
        let input = state.input().height(area.width);
        let completions = CompletionView::new(state.completions()).height();
        let fixed = approval
            .saturating_add(input)
            .saturating_add(completions)
            .saturating_add(1);
        let wanted = state.live_lines().len();
        let live = u16::try_from(wanted)
            .unwrap_or(u16::MAX)
            .min(area.height.saturating_sub(fixed));
        let [live, approval, input, completions, status, _spare] = Layout::vertical([
            Constraint::Length(live),
            Constraint::Length(approval),
            Constraint::Length(input),
            Constraint::Length(completions),
            Constraint::Length(1),
            Constraint::Min(0),
        ])
        .areas(area);
        [live, approval, input, completions, status]
    }

    /// Where the terminal cursor belongs: in the input box, unless a prompt has the keys.
    pub fn cursor(&self, area: Rect) -> Option<Position> {
        if self.state.approval().is_some() || self.state.question().is_some() {
            return None;
        }
        let [_, _, input, _, _] = self.areas(area);
        Some(self.state.input().cursor_position(input))
    }
}

impl Widget for LiveView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [live, approval, input, completions, status] = self.areas(area);
        let state = self.state;
        // The newest lines when they do not all fit.
        let lines = state.live_lines();
        let shown = lines.len().min(usize::from(live.height));
        for (y, line) in (live.y..).zip(&lines[lines.len() - shown..]) {
            buf.set_line(live.x, y, line, live.width);
        }
        if let Some(prompt) = state.approval() {
            prompt.render(approval, buf);
        } else if let Some(card) = state.question() {
            card.render(approval, buf);
        }
        InputView::new(state.input(), state.is_running()).render(input, buf);
        CompletionView::new(state.completions()).render(completions, buf);
        let mut line = StatusLine::new(state.transcript())
            .agents(state.agents())
            .jobs(state.jobs());
        if let Some(note) = state.status_note() {
            line = line.note(note);
        }
        line.render(status, buf);
    }
}
