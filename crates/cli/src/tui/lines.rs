//! Transcript entries as styled, wrapped lines. Pure: the same transcript and width always
//! give the same lines, which is what the inline viewport pushes into scrollback.

use super::text::{compact_count, one_line, plural, seconds, truncate, wrap};
use super::transcript::{
    CompactionCard, CompactionState, Entry, PruneNote, RetryNotice, Transcript, TurnOutcome,
};
use dsh_session::{Todo, TodoStatus};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// How many lines of a tool result a card shows.
pub const RESULT_PREVIEW_LINES: usize = 4;

/// Which collapsible entries are shown in full.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Detail {
    /// The model's reasoning, every line (else one dimmed line per block).
    pub reasoning: bool,
    /// Compaction cards with their summary (else one line each), and every card's body in
    /// full (Ctrl-O).
    pub compaction: bool,
}

impl Detail {
    /// What `transcript` is set to show.
    pub fn of(transcript: &Transcript) -> Self {
        Self {
            reasoning: transcript.reasoning_expanded(),
            compaction: transcript.compaction_expanded(),
        }
    }
}

/// All lines of the transcript at `width` columns.
pub fn transcript_lines(transcript: &Transcript, width: u16) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut previous: Option<&Entry> = None;
    for entry in transcript.entries() {
        // Consecutive tool cards (parallel calls) stay together; everything else breathes.
        let adjacent_tools = matches!((previous, entry), (Some(Entry::Tool(_)), Entry::Tool(_)));
        if previous.is_some() && !adjacent_tools {
            lines.push(Line::default());
        }
        lines.extend(entry_lines(entry, width, Detail::of(transcript)));
        previous = Some(entry);
    }
    lines
}

/// The lines of one entry.
pub fn entry_lines(entry: &Entry, width: u16, detail: Detail) -> Vec<Line<'static>> {
    let width = usize::from(width);
    match entry {
        Entry::User { text } => block(
            "› ",
            "  ",
            text,
            width,
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Entry::Assistant {
            text,
            streaming,
            interrupted,
        } => assistant_lines(text, width, false, *streaming, *interrupted),
        Entry::Reasoning { text, streaming } => {
            reasoning_lines(text, *streaming, width, detail.reasoning)
        }
        Entry::Compaction(card) => compaction_lines(card, width, detail.compaction),
        Entry::Pruned(note) => prune_lines(note, width),
        Entry::Tool(card) => super::cards::tool_card(card, super::theme::current()).lines(
            width,
            detail.compaction,
            super::theme::current(),
        ),
        Entry::Retry(notice) => retry_lines(notice, width),
        Entry::Referenced(notes) => notes
            .iter()
            .flat_map(|note| block("↳ ", "  ", note, width, dim()))
            .collect(),
        Entry::Todos(todos) => todo_lines(todos, width),
        Entry::Subagent(card) => super::transcript::subagent_card_lines(card, width),
        Entry::TurnEnd { turn, outcome } => turn_end_lines(*turn, outcome, width),
    }
}

/// Assistant text rendered as markdown, after `• ` (or indented only, when `continued`:
/// the part after what a streaming answer already committed to scrollback).
pub fn assistant_lines(
    text: &str,
    width: usize,
    continued: bool,
    streaming: bool,
    interrupted: bool,
) -> Vec<Line<'static>> {
    let theme = super::theme::current();
    let rendered = super::markdown::render(text.trim_end(), width.saturating_sub(2), theme);
    let mut lines: Vec<Line<'static>> = rendered
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let prefix = if i == 0 && !continued { "• " } else { "  " };
            let mut spans = vec![Span::raw(prefix)];
            spans.extend(line.spans);
            Line::from(spans)
        })
        .collect();
    if lines.is_empty() && !continued {
        lines.push(Line::from("• "));
    }
    if streaming {
        if lines.is_empty() {
            lines.push(Line::from("  "));
        }
        push_suffix(
            &mut lines,
            " ▍",
            Style::new().add_modifier(Modifier::SLOW_BLINK),
        );
    }
    if interrupted {
        lines.push(Line::styled("  (interrupted)", dim()));
    }
    lines
}

fn dim() -> Style {
    Style::new().add_modifier(Modifier::DIM)
}

/// `text` wrapped with `first` before the first line and `rest` before the others.
fn block(first: &str, rest: &str, text: &str, width: usize, style: Style) -> Vec<Line<'static>> {
    let inner = width.saturating_sub(first.width()).max(1);
    wrap(text.trim_end(), inner)
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let prefix = if i == 0 { first } else { rest };
            Line::from(vec![
                Span::styled(prefix.to_owned(), style),
                Span::styled(line, style),
            ])
        })
        .collect()
}

fn push_suffix(lines: &mut [Line<'static>], suffix: &'static str, style: Style) {
    if let Some(last) = lines.last_mut() {
        last.spans.push(Span::styled(suffix, style));
    }
}

fn reasoning_lines(
    text: &str,
    streaming: bool,
    width: usize,
    expanded: bool,
) -> Vec<Line<'static>> {
    let style = dim().add_modifier(Modifier::ITALIC);
    if expanded {
        let mut lines = vec![Line::styled("▾ thinking", style)];
        lines.extend(block("  ", "  ", text, width, style));
        return lines;
    }
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    let label = if streaming {
        "▸ thinking… "
    } else {
        "▸ thinking: "
    };
    let room = width.saturating_sub(label.width());
    vec![Line::styled(
        format!("{label}{}", truncate(&one_line(last), room)),
        style,
    )]
}

/// A compaction: a live line while the summary is requested, then one line that opens to
/// the summary, or a dim note for an attempt that failed or never finished.
fn compaction_lines(card: &CompactionCard, width: usize, expanded: bool) -> Vec<Line<'static>> {
    let note = |text: String| vec![Line::styled(truncate(&text, width), dim())];
    let done = match &card.state {
        CompactionState::Running | CompactionState::Summarized(_) => {
            let what = if card.manual {
                "compacting older history (/compact; Esc cancels)…"
            } else {
                "compacting older history to free context…"
            };
            return vec![Line::styled(
                truncate(&format!("⟳ {what}"), width),
                Style::new().fg(Color::Cyan),
            )];
        }
        CompactionState::Failed { error } => {
            return note(format!(
                "· compaction attempt failed, nothing changed: {}",
                one_line(error)
            ));
        }
        CompactionState::Abandoned => {
            return note(
                "· compaction attempt interrupted (dsh stopped before it finished)".into(),
            );
        }
        CompactionState::Done(done) => done,
    };
    let (mark, hint) = if expanded {
        ("▾ ", "")
    } else {
        ("▸ ", "  (Ctrl-O shows the summary)")
    };
    let head = format!(
        "{mark}compacted {} (~{} tokens) → summary (~{} tokens)",
        plural(done.messages, "message"),
        compact_count(done.shadowed_tokens),
        compact_count(done.summary_tokens)
    );
    let head_style = Style::new().fg(Color::Cyan);
    let mut lines = if expanded || head.width() + hint.width() > width {
        vec![Line::styled(truncate(&head, width), head_style)]
    } else {
        vec![Line::from(vec![
            Span::styled(head, head_style),
            Span::styled(hint, dim()),
        ])]
    };
    if expanded {
        let summary = if done.summary.is_empty() {
            "(the summary is empty)"
        } else {
            &done.summary
        };
        lines.extend(block("  ", "  ", summary, width, Style::new()));
    }
    lines
}

fn prune_lines(note: &PruneNote, width: usize) -> Vec<Line<'static>> {
    let sizes = if note.tokens_after > 0 {
        format!(
            "~{} → ~{} tokens",
            compact_count(note.tokens_before),
            compact_count(note.tokens_after)
        )
    } else {
        format!("~{} tokens", compact_count(note.tokens_before))
    };
    let text = format!(
        "· pruned {} to head and tail ({sizes}); the log keeps the full output",
        plural(note.results, "old tool result")
    );
    vec![Line::styled(truncate(&text, width), dim())]
}

fn retry_lines(notice: &RetryNotice, width: usize) -> Vec<Line<'static>> {
    let failure = &notice.failure;
    let status = failure.status.map(|s| format!(" {s}")).unwrap_or_default();
    let of = notice
        .max_retries
        .map(|m| format!(" of {m}"))
        .unwrap_or_default();
    let when = if notice.started {
        "retried".to_owned()
    } else {
        format!("retrying in {}", seconds(notice.delay_ms))
    };
    let text = format!(
        "model request failed ({}{status}: {}); {when}, attempt {}{of}",
        failure.code, failure.message, notice.retry
    );
    block("↻ ", "  ", &text, width, Style::new().fg(Color::Yellow))
}

fn todo_lines(todos: &[Todo], width: usize) -> Vec<Line<'static>> {
    let mut lines = vec![Line::styled(
        "☰ todos",
        Style::new().add_modifier(Modifier::BOLD),
    )];
    for todo in todos {
        let (mark, style) = match todo.status {
            TodoStatus::Pending => ("  [ ] ", Style::new()),
            TodoStatus::InProgress => ("  [>] ", Style::new().add_modifier(Modifier::BOLD)),
            TodoStatus::Completed => ("  [x] ", dim().add_modifier(Modifier::CROSSED_OUT)),
        };
        lines.extend(block(mark, "      ", &todo.content, width, style));
    }
    lines
}

fn turn_end_lines(turn: u64, outcome: &TurnOutcome, width: usize) -> Vec<Line<'static>> {
    let (text, style) = match outcome {
        TurnOutcome::Completed => (format!("─ turn {turn} completed"), dim()),
        TurnOutcome::Cancelled(by) => (
            format!("■ turn {turn} cancelled {by}"),
            Style::new().fg(Color::Yellow),
        ),
        TurnOutcome::Blocked => (
            format!("■ turn {turn} was blocked before the model was asked"),
            Style::new().fg(Color::Yellow),
        ),
        TurnOutcome::Failed(failure) => (
            format!(
                "✗ turn {turn} failed: {} ({})",
                failure.message, failure.code
            ),
            Style::new().fg(Color::Red),
        ),
        TurnOutcome::MaxTokens => (
            format!("■ turn {turn} stopped: the model reached its output token limit"),
            Style::new().fg(Color::Yellow),
        ),
        TurnOutcome::Interrupted => (
            format!("■ turn {turn} was interrupted (dsh stopped before it finished)"),
            Style::new().fg(Color::Yellow),
        ),
        TurnOutcome::Other(kind) => (
            format!("■ turn {turn} ended: {kind}"),
            Style::new().fg(Color::Yellow),
        ),
    };
    block("", "  ", &text, width, style)
}
