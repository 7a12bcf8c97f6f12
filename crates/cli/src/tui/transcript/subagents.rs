//! Subagents in the transcript: a card when a background child starts (or is continued),
//! one when it settles (how its epoch ended and its closing message, clipped) and one per
//! report it sends, plus the one-line-per-child live list shown above the input while
//! children work.
//!
//! The cards are folded from the parent's own log, so a resumed session shows them again:
//! the start from the `meta.subagent` link on the `tool/result` that started the child, the
//! settlement and the reports from the `agent/inbox/spliced` event that queued the notice
//! for the parent (the moment it arrived, not the later step that read it). Every card is
//! final when it is made, so none holds back the entries after it. A foreground child has no
//! cards of its own: its tool card waits for it and shows its closing text, and the live list
//! shows it while it runs.

use super::{clean, Entry, Transcript};
use crate::tui::text::{truncate, wrap};
use dsh_protocol::{ContentBlock, Message, MessageSource};
use dsh_session::InboxSplice;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

/// How many lines of a closing message or report a card shows.
pub const REPORT_PREVIEW_LINES: usize = 6;

/// One subagent card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentCard {
    /// The child's session id.
    pub id: String,
    /// The `description` it was started with (empty when the log does not say).
    pub label: String,
    pub event: SubagentEvent,
    /// The notice's message id (settlements and reports), so a re-queued notice is shown once.
    pub message: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubagentEvent {
    /// Started in the background (continuable).
    Started,
    /// `send_message` gave it another piece of work.
    Continued,
    /// An epoch settled: how, and its closing message.
    Settled {
        status: Settlement,
        closing: Option<String>,
    },
    /// A `report` it sent.
    Reported { text: String },
}

/// How a child's epoch ended, in the words `/agents` uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settlement {
    Done,
    Interrupted,
    StoppedEarly,
    Failed,
}

impl Settlement {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Interrupted => "interrupted",
            Self::StoppedEarly => "stopped early",
            Self::Failed => "failed",
        }
    }

    /// Read from a settlement notice's summary line (`dsh_subagents::outcome::
    /// settlement_summary`'s wording).
    fn from_summary(summary: &str) -> Self {
        if summary.contains(" was stopped") {
            Self::Interrupted
        } else if summary.contains(" ran out of room") || summary.contains(" declined") {
            Self::StoppedEarly
        } else if summary.contains(" failed") {
            Self::Failed
        } else {
            Self::Done
        }
    }
}

/// A child working now, as the live list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveChild {
    pub id: String,
    pub label: String,
    /// Continuable (a background child the parent is told about) rather than one-shot.
    pub background: bool,
}

fn source_str<'a>(message: &'a Message, key: &str) -> Option<&'a str> {
    match &message.source {
        MessageSource::Other(map) => map.get(key).and_then(Value::as_str),
        _ => None,
    }
}

fn texts(blocks: &[ContentBlock]) -> String {
    let parts: Vec<&str> = blocks.iter().filter_map(ContentBlock::as_text).collect();
    parts.join("")
}

impl Transcript {
    /// The label the start card of `id` carried.
    fn subagent_label(&self, id: &str) -> String {
        self.entries
            .iter()
            .rev()
            .find_map(|entry| match entry {
                Entry::Subagent(card) if card.id == id && !card.label.is_empty() => {
                    Some(card.label.clone())
                }
                _ => None,
            })
            .unwrap_or_default()
    }

    /// A `tool/result`'s `meta.subagent` link (`started` / `continued`).
    pub(super) fn apply_subagent_link(&mut self, meta: Option<&Value>) {
        let Some(link) = meta.and_then(|m| m.get("subagent")) else {
            return;
        };
        let Some(id) = link.get("id").and_then(Value::as_str) else {
            return;
        };
        let event = match link.get("event").and_then(Value::as_str) {
            Some("started") => SubagentEvent::Started,
            Some("continued") => SubagentEvent::Continued,
            _ => return,
        };
        let id = clean(id);
        let label = match link.get("label").and_then(Value::as_str) {
            Some(label) => clean(label),
            None => self.subagent_label(&id),
        };
        self.entries.push(Entry::Subagent(SubagentCard {
            id,
            label,
            event,
            message: None,
        }));
    }

    /// Settlement notices and reports queued for this agent.
    pub(super) fn apply_subagent_splice(&mut self, splice: &InboxSplice) {
        for message in &splice.inserted {
            let event = match source_str(message, "kind") {
                Some("subagent-settled") => {
                    let summary = message
                        .content
                        .first()
                        .and_then(ContentBlock::as_text)
                        .unwrap_or_default();
                    let closing = texts(message.content.get(2..).unwrap_or_default());
                    SubagentEvent::Settled {
                        status: Settlement::from_summary(summary),
                        closing: (!closing.trim().is_empty()).then(|| clean(&closing)),
                    }
                }
                Some("subagent-report") => SubagentEvent::Reported {
                    text: clean(&texts(message.content.get(1..).unwrap_or_default())),
                },
                _ => continue,
            };
            let Some(sender) = source_str(message, "senderSessionId") else {
                continue;
            };
            let message_id = message.id.to_string();
            let seen = self.entries.iter().any(|entry| {
                matches!(entry, Entry::Subagent(card) if card.message.as_deref() == Some(&message_id))
            });
            if seen {
                continue;
            }
            let id = clean(sender);
            let label = self.subagent_label(&id);
            self.entries.push(Entry::Subagent(SubagentCard {
                id,
                label,
                event,
                message: Some(message_id),
            }));
        }
    }
}

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// The lines of a card.
pub fn card_lines(card: &SubagentCard, width: usize) -> Vec<Line<'static>> {
    let (head, color, body) = match &card.event {
        SubagentEvent::Started => ("subagent started".to_owned(), Color::Cyan, None),
        SubagentEvent::Continued => ("subagent continued".to_owned(), Color::Cyan, None),
        SubagentEvent::Settled { status, closing } => {
            let color = match status {
                Settlement::Done => Color::Green,
                Settlement::Interrupted | Settlement::StoppedEarly => Color::Yellow,
                Settlement::Failed => Color::Red,
            };
            (
                format!("subagent {}", status.as_str()),
                color,
                Some(
                    closing
                        .clone()
                        .unwrap_or_else(|| "(no closing message)".into()),
                ),
            )
        }
        SubagentEvent::Reported { text } => (
            "subagent reported".to_owned(),
            Color::Cyan,
            Some(text.clone()),
        ),
    };
    let mark = "◆ ";
    let label = if card.label.is_empty() {
        "(no description)"
    } else {
        card.label.as_str()
    };
    let room = width.saturating_sub(mark.width() + head.width() + 2);
    let mut lines = vec![Line::from(vec![
        Span::styled(mark, Style::new().fg(color)),
        Span::styled(head, Style::new().fg(color).add_modifier(Modifier::BOLD)),
        Span::raw("  "),
        Span::raw(truncate(label, room)),
    ])];
    let mode = match card.event {
        SubagentEvent::Started => " · background",
        _ => "",
    };
    lines.push(Line::styled(
        truncate(&format!("  {}{mode}", card.id), width),
        dim(),
    ));
    if let Some(body) = body {
        lines.extend(preview(&body, width));
    }
    lines
}

/// `text` wrapped under a `│` gutter, at most [`REPORT_PREVIEW_LINES`] lines, then how many
/// more there are.
fn preview(text: &str, width: usize) -> Vec<Line<'static>> {
    let rows = wrap(text.trim(), width.saturating_sub(4).max(1));
    let hidden = rows.len().saturating_sub(REPORT_PREVIEW_LINES);
    let mut lines: Vec<Line<'static>> = rows
        .into_iter()
        .take(REPORT_PREVIEW_LINES)
        .map(|row| Line::from(vec![Span::styled("  │ ", dim()), Span::raw(row)]))
        .collect();
    if hidden > 0 {
        let more = if hidden == 1 { "line" } else { "lines" };
        lines.push(Line::styled(format!("  … {hidden} more {more}"), dim()));
    }
    lines
}

/// One line per working child, for the live area above the input.
pub fn live_child_lines(children: &[LiveChild], width: usize) -> Vec<Line<'static>> {
    children
        .iter()
        .map(|child| {
            let label = if child.label.is_empty() {
                "(no description)"
            } else {
                child.label.as_str()
            };
            let mode = if child.background {
                "background"
            } else {
                "one-shot"
            };
            let tail = format!("  {} · {mode} · working", child.id);
            let room = width.saturating_sub(2 + tail.width()).max(8);
            let label = truncate(label, room);
            let line = Line::from(vec![
                Span::styled("◇ ", Style::new().fg(Color::Yellow)),
                Span::raw(label),
                Span::styled(tail, dim()),
            ]);
            line
        })
        .map(|line| {
            // Never wider than the screen (a long id on a narrow terminal).
            let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
            if text.width() > width {
                Line::styled(truncate(&text, width), dim())
            } else {
                line
            }
        })
        .collect()
}

/// `/agents ID`: a subagent's conversation between two labelled rules, read-only.
pub fn child_transcript_lines(
    view: &crate::tui::interactive::AgentTranscript,
    width: u16,
) -> Vec<Line<'static>> {
    let columns = usize::from(width);
    let label = if view.label.is_empty() {
        String::new()
    } else {
        format!(" · {}", clean(&view.label))
    };
    let head = format!("── subagent {}{label} · read-only ", view.id);
    let rule = |text: String| {
        let fill = columns.saturating_sub(text.width());
        Line::styled(
            truncate(&format!("{text}{}", "─".repeat(fill)), columns),
            Style::new().fg(Color::Cyan),
        )
    };
    let mut lines = vec![rule(head)];
    if view.seeded > 0 {
        lines.push(Line::styled(
            format!(
                "(it started from {} events of its parent's history, not shown)",
                view.seeded
            ),
            dim(),
        ));
    }
    let transcript = Transcript::from_events(view.events.iter().map(AsRef::as_ref));
    let body = crate::tui::transcript_lines(&transcript, width);
    if body.is_empty() {
        lines.push(Line::styled("(nothing yet)", dim()));
    }
    lines.extend(body);
    lines.push(rule(format!("── end of subagent {} (read-only) ", view.id)));
    lines
}
