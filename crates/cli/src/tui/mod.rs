//! The terminal UI's view layer (ratatui, designed for an inline viewport).
//!
//! [`Transcript`] is the view-model, folded from session events; everything else is pure
//! rendering of it into a ratatui buffer: [`transcript_lines`] / [`TranscriptView`] for the
//! conversation, [`StatusLine`], the [`InputBox`] with its follow-up queue, and the
//! [`ApprovalPrompt`]. [`Screen`] lays them out. The input box's parts are their own
//! modules: the multi-line [`editor`], the prompt [`history`], `@path` completion
//! ([`complete`]) and the searchable lists of `/resume`, `/model` and `/permission`
//! ([`picker`]). Driving the terminal (events, the inline
//! viewport, pushing settled lines into scrollback) is the job of [`interactive`]; the view
//! files do no I/O.

mod approval;
pub mod cards;
pub mod complete;
mod context;
pub mod cost;
pub mod editor;
pub mod history;
pub mod hyperlink;
mod input;
pub mod interactive;
mod lines;
pub mod markdown;
pub mod picker;
mod question_card;
mod text;
pub mod theme;
mod transcript;
mod trust_prompt;
mod views;

pub use approval::{ApprovalChoice, ApprovalPrompt, EscalationLine};
pub use context::ContextFill;
pub use input::{InputBox, InputView};
pub use lines::{assistant_lines, entry_lines, transcript_lines, Detail, RESULT_PREVIEW_LINES};
pub use question_card::{CardKey, CardStep, QuestionCard};
pub use text::{args_summary, compact_count, percent};
pub use transcript::{
    child_transcript_lines, live_child_lines, LiveChild, Settlement, SubagentCard, SubagentEvent,
    REPORT_PREVIEW_LINES,
};
pub use transcript::{
    Compacted, CompactionCard, CompactionState, Entry, PruneNote, RetryNotice, RunState, ToolCard,
    ToolState, Transcript, TurnOutcome, UsageTotals,
};
pub use trust_prompt::TrustPrompt;
pub use views::{StatusLine, TranscriptView};

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Widget;

/// The whole screen: transcript on top, then the approval prompt (when one is pending),
/// the input box and the status line.
#[derive(Clone, Copy, Debug)]
pub struct Screen<'a> {
    pub transcript: &'a Transcript,
    pub input: &'a InputBox,
    pub approval: Option<&'a ApprovalPrompt>,
}

impl Widget for Screen<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let approval_height = self.approval.map_or(0, |a| a.height(area.width));
        let [conversation, approval, input, status] = Layout::vertical([
            Constraint::Min(0),
            Constraint::Length(approval_height),
            Constraint::Length(self.input.height(area.width)),
            Constraint::Length(1),
        ])
        .areas(area);
        TranscriptView::new(self.transcript).render(conversation, buf);
        if let Some(prompt) = self.approval {
            prompt.render(approval, buf);
        }
        let busy = !matches!(self.transcript.run_state(), RunState::Idle);
        InputView::new(self.input, busy).render(input, buf);
        let mut status_line = StatusLine::new(self.transcript);
        if self.approval.is_some() {
            status_line = status_line.note("waiting for your approval");
        }
        status_line.render(status, buf);
    }
}

#[cfg(test)]
mod compaction_tests;
#[cfg(test)]
mod fixture_tests;
#[cfg(test)]
mod tests;
