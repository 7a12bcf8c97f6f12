//! The live area of the inline viewport: entries still changing, the approval prompt, the
//! input box with its queue, the slash-command completions, and the status line. Finished
//! entries are not here; they were printed into scrollback. The viewport grows to
//! [`LiveView::height`] (see `viewport.rs`); when the live entries outgrow the screen, their
//! newest lines show (the whole entry reaches scrollback once it is finished).

use super::commands::CompletionView;
use super::goal_line::GoalLineView;
use super::state::{AtCompletion, InteractiveState};
use crate::tui::history::HistorySearch;
use crate::tui::picker::Picker;
use crate::tui::{InputView, StatusLine};
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
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

    /// The rows this view wants on a screen `width` columns wide: every live line, the
    /// approval prompt or question card, the goal line, the input, the completions and the
    /// status line.
    pub fn height(&self, width: u16) -> u16 {
        let state = self.state;
        let live = u16::try_from(state.live_lines().len()).unwrap_or(u16::MAX);
        let prompt = match (state.approval(), state.question()) {
            (Some(approval), _) => approval.height(width),
            (None, Some(card)) => card.height(width),
            (None, None) => 0,
        };
        live.saturating_add(prompt)
            .saturating_add(GoalLineView::new(state.goal_line()).height())
            .saturating_add(state.input().height(width))
            .saturating_add(Below::of(state).height())
            .saturating_add(1)
    }

    /// Live entries, approval prompt, input box, status line, top-aligned: the input sits
    /// right under the scrollback and the viewport's spare rows stay blank below it.
    fn areas(&self, area: Rect) -> [Rect; 6] {
        let state = self.state;
        let goal = GoalLineView::new(state.goal_line()).height();
        let approval = match (state.approval(), state.question()) {
            (Some(prompt), _) => prompt.height(area.width),
            (None, Some(card)) => card.height(area.width),
            (None, None) => 0,
        };
        let input = state.input().height(area.width);
        // What shows below the input (a picker) gives way before the input and status do.
        let completions = Below::of(state).height().min(
            area.height
                .saturating_sub(input.saturating_add(approval).saturating_add(1)),
        );
        let fixed = approval
            .saturating_add(goal)
            .saturating_add(input)
            .saturating_add(completions)
            .saturating_add(1);
        let wanted = state.live_lines().len();
        let live = u16::try_from(wanted)
            .unwrap_or(u16::MAX)
            .min(area.height.saturating_sub(fixed));
        let [live, approval, goal, input, completions, status, _spare] = Layout::vertical([
            Constraint::Length(live),
            Constraint::Length(approval),
            Constraint::Length(goal),
            Constraint::Length(input),
            Constraint::Length(completions),
            Constraint::Length(1),
            Constraint::Min(0),
        ])
        .areas(area);
        [live, approval, goal, input, completions, status]
    }

    /// Where the terminal cursor belongs: in the input box, unless a prompt has the keys.
    pub fn cursor(&self, area: Rect) -> Option<Position> {
        if self.state.approval().is_some() || self.state.question().is_some() {
            return None;
        }
        let [_, _, _, input, _, _] = self.areas(area);
        Some(self.state.input().cursor_position(input))
    }
}

impl Widget for LiveView<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let [live, approval, goal, input, completions, status] = self.areas(area);
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
        GoalLineView::new(state.goal_line()).render(goal, buf);
        InputView::new(state.input(), state.is_running()).render(input, buf);
        Below::of(state).render(completions, buf);
        let mut line = StatusLine::new(state.transcript())
            .agents(state.agents())
            .jobs(state.jobs())
            .queued(state.queued())
            .permission(state.permission())
            .prices(crate::tui::cost::current());
        if let Some(note) = state.status_note() {
            line = line.note(note);
        }
        line.render(status, buf);
    }
}

/// One `@` completion as listed: `@path`, or a session's short id, title and age.
fn at_completion_text(completion: &AtCompletion<'_>) -> String {
    match completion {
        AtCompletion::File(path) => format!("  @{path}"),
        AtCompletion::Session(session) => {
            let id = session.id.as_str();
            let short: String = id
                .strip_prefix("session-")
                .unwrap_or(id)
                .chars()
                .take(8)
                .collect();
            let title = crate::tui::text::one_line(&crate::sanitize::sanitize(&session.title));
            format!(
                "  @session:{short}…  {}  · {}",
                crate::tui::text::truncate(&title, 48),
                session.updated
            )
        }
    }
}

/// What shows under the input box: an open picker, a Ctrl-R search, `@path` completions or
/// `/command` completions (at most one of them applies at a time).
enum Below<'a> {
    Picker(&'a Picker),
    Search(&'a HistorySearch),
    Files(Vec<AtCompletion<'a>>, usize),
    Commands(CompletionView<'a>),
}

impl<'a> Below<'a> {
    fn of(state: &'a InteractiveState) -> Self {
        if let Some(picker) = state.picker() {
            return Self::Picker(picker);
        }
        if let Some(search) = state.history_search() {
            return Self::Search(search);
        }
        let files = state.at_completions();
        if !files.is_empty() {
            return Self::Files(files, state.file_choice());
        }
        Self::Commands(CompletionView::new(state.completions()))
    }

    fn height(&self) -> u16 {
        match self {
            Self::Picker(picker) => picker.height(),
            Self::Search(_) => 1,
            Self::Files(files, _) => u16::try_from(files.len()).unwrap_or(0),
            Self::Commands(view) => view.height(),
        }
    }

    fn render(self, area: Rect, buf: &mut Buffer) {
        let dim = Style::new().add_modifier(Modifier::DIM);
        match self {
            Self::Picker(picker) => picker.render(area, buf),
            Self::Search(search) => {
                let found = if search.found.is_some() || search.query.is_empty() {
                    ""
                } else {
                    " (no match)"
                };
                let line = Line::from(vec![
                    Span::styled("history search: ", dim),
                    Span::raw(search.query.clone()),
                    Span::styled(
                        format!("{found}   Ctrl-R older · Enter keep · Esc cancel"),
                        dim,
                    ),
                ]);
                buf.set_line(area.x, area.y, &line, area.width);
            }
            Self::Files(files, choice) => {
                for (i, (completion, y)) in files.iter().zip(area.y..area.bottom()).enumerate() {
                    let style = if i == choice {
                        Style::new().add_modifier(Modifier::REVERSED)
                    } else {
                        Style::new()
                    };
                    let line = Line::styled(at_completion_text(completion), style);
                    buf.set_line(area.x, y, &line, area.width);
                }
            }
            Self::Commands(view) => view.render(area, buf),
        }
    }
}
