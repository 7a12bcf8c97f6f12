//! Scrollback: what is printed above the screen once it stops changing (settled transcript
//! entries, the finished blocks of a streaming answer, notes and errors), and the live lines
//! below it that still change.

use super::{Effect, InteractiveState, Printed};
use crate::sanitize::sanitize;
use crate::tui::markdown::finished_prefix;
use crate::tui::text::wrap;
use crate::tui::{assistant_lines, entry_lines, live_child_lines, Detail, Entry, ToolState};
use ratatui::style::{Color, Style};
use ratatui::text::Line;

impl InteractiveState {
    /// Prints `lines` into scrollback after everything settled so far.
    pub(super) fn note(&mut self, lines: Vec<Line<'static>>, effects: &mut Vec<Effect>) {
        self.flush(effects);
        let mut out = Vec::with_capacity(lines.len() + 1);
        if self.printed != Printed::Nothing {
            out.push(Line::default());
        }
        out.extend(lines);
        self.printed = Printed::Other;
        push_scrollback(effects, out);
    }

    pub(super) fn error(&mut self, text: String, effects: &mut Vec<Effect>) {
        let lines = self.wrapped(&format!("✗ {text}"), Style::new().fg(Color::Red));
        self.note(lines, effects);
    }

    /// `text` wrapped to the screen width; scrollback cannot be re-wrapped later. Notes and
    /// errors can quote a session title or a model's words, so they are made terminal-safe.
    pub(super) fn wrapped(&self, text: &str, style: Style) -> Vec<Line<'static>> {
        wrap(&sanitize(text), usize::from(self.width))
            .into_iter()
            .map(|row| Line::styled(row, style))
            .collect()
    }

    /// How many leading entries are finished and will not change any more.
    pub(super) fn settled_prefix(&self) -> usize {
        let entries = self.transcript.entries();
        entries
            .iter()
            .enumerate()
            .position(|(i, entry)| !settled(entry, i + 1 == entries.len()))
            .unwrap_or(entries.len())
    }

    /// Moves newly settled entries into scrollback, then the finished blocks of an answer
    /// still streaming.
    pub(super) fn flush(&mut self, effects: &mut Vec<Effect>) {
        let settled = self.settled_prefix();
        if settled > self.flushed {
            let mut lines = Vec::new();
            let detail = Detail::of(&self.transcript);
            let mut skip = self.streamed;
            for entry in &self.transcript.entries()[self.flushed..settled] {
                push_entry(
                    &mut lines,
                    &mut self.printed,
                    entry,
                    skip,
                    self.width,
                    detail,
                );
                skip = 0;
            }
            self.flushed = settled;
            self.streamed = 0;
            push_scrollback(effects, lines);
        }
        self.commit_streamed(effects);
    }

    /// Prints the finished markdown blocks of the answer streaming at `flushed`: they
    /// render once, and only the open block after them re-renders per chunk.
    fn commit_streamed(&mut self, effects: &mut Vec<Effect>) {
        let Some(Entry::Assistant {
            text,
            streaming: true,
            ..
        }) = self.transcript.entries().get(self.flushed)
        else {
            return;
        };
        let cut = finished_prefix(text);
        if cut <= self.streamed {
            return;
        }
        let Some(part) = text.get(self.streamed..cut) else {
            return;
        };
        let continued = self.streamed > 0;
        let mut lines = Vec::new();
        if self.printed != Printed::Nothing {
            lines.push(Line::default());
        }
        lines.extend(assistant_lines(
            part,
            usize::from(self.width),
            continued,
            false,
            false,
        ));
        self.printed = Printed::Other;
        self.streamed = cut;
        push_scrollback(effects, lines);
    }

    /// The lines of the entries still changing, separated from the scrollback above them
    /// the way they will be once printed there.
    pub fn live_lines(&self) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let mut printed = self.printed;
        let detail = Detail::of(&self.transcript);
        let mut skip = self.streamed;
        for entry in &self.transcript.entries()[self.flushed..] {
            push_entry(&mut lines, &mut printed, entry, skip, self.width, detail);
            skip = 0;
        }
        // The working subagents last, right above the input, until they settle.
        if !self.children.is_empty() {
            if printed != Printed::Nothing {
                lines.push(Line::default());
            }
            lines.extend(live_child_lines(&self.children, usize::from(self.width)));
        }
        lines
    }

    /// Ctrl-O: shows every card in full (a tool card's whole diff or output, a compaction
    /// card's summary), or collapsed again. Cards already in scrollback cannot change there,
    /// so opening prints the newest one that hides something again, in full.
    pub(super) fn toggle_compaction(&mut self, effects: &mut Vec<Effect>) {
        let expanded = !self.transcript.compaction_expanded();
        self.transcript.set_compaction_expanded(expanded);
        if !expanded {
            return;
        }
        let theme = crate::tui::theme::current();
        let newest =
            self.transcript.entries()[..self.flushed]
                .iter()
                .rev()
                .find(|entry| match entry {
                    Entry::Compaction(card) => card.compacted().is_some(),
                    Entry::Tool(card) => crate::tui::cards::tool_card(card, theme).is_clipped(),
                    _ => false,
                });
        if let Some(entry) = newest {
            let lines = entry_lines(entry, self.width, Detail::of(&self.transcript));
            self.note(lines, effects);
        }
    }
}

/// Appends `entry`'s lines, after a blank line unless it starts the screen or joins a run of
/// tool cards (parallel calls stay together). `skip` bytes of an answer's text are in
/// scrollback already; the rest continues them.
fn push_entry(
    lines: &mut Vec<Line<'static>>,
    printed: &mut Printed,
    entry: &Entry,
    skip: usize,
    width: u16,
    detail: Detail,
) {
    let is_tool = matches!(entry, Entry::Tool(_));
    let together = is_tool && *printed == Printed::Tool;
    if *printed != Printed::Nothing && !together {
        lines.push(Line::default());
    }
    match entry {
        Entry::Assistant {
            text,
            streaming,
            interrupted,
        } if skip > 0 => {
            let rest = live_tail(text.get(skip..).unwrap_or(""), *streaming);
            lines.extend(assistant_lines(
                rest,
                usize::from(width),
                true,
                *streaming,
                *interrupted,
            ));
        }
        Entry::Assistant {
            text,
            streaming: true,
            interrupted,
        } => lines.extend(assistant_lines(
            live_tail(text, true),
            usize::from(width),
            false,
            true,
            *interrupted,
        )),
        _ => lines.extend(entry_lines(entry, width, detail)),
    }
    *printed = if is_tool {
        Printed::Tool
    } else {
        Printed::Other
    };
}

/// The most of an open block re-rendered per chunk: the screen shows its newest lines only,
/// and a block that never ends (a 5 MB line) must not cost its whole length per chunk.
const LIVE_TAIL_BYTES: usize = 16 * 1024;

/// The end of `text` worth rendering while it streams: all of it when short, else its last
/// [`LIVE_TAIL_BYTES`] from a line start (or a character boundary, in one long line). The
/// whole text is rendered once it is committed.
fn live_tail(text: &str, streaming: bool) -> &str {
    if !streaming || text.len() <= LIVE_TAIL_BYTES {
        return text;
    }
    let mut start = text.len() - LIVE_TAIL_BYTES;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let tail = &text[start..];
    match tail.find('\n') {
        Some(newline) if newline + 1 < tail.len() => &tail[newline + 1..],
        _ => tail,
    }
}

/// Whether an entry is finished; `last` says whether anything follows it.
fn settled(entry: &Entry, last: bool) -> bool {
    match entry {
        Entry::Assistant { streaming, .. } | Entry::Reasoning { streaming, .. } => !streaming,
        Entry::Tool(card) => !matches!(card.state, ToolState::Running),
        Entry::Retry(notice) => notice.started || !last,
        Entry::Compaction(card) => card.is_settled(),
        // A run of prunes grows until something else follows.
        Entry::Pruned(_) => !last,
        Entry::User { .. }
        | Entry::Todos(_)
        | Entry::TurnEnd { .. }
        | Entry::Subagent(_)
        | Entry::Referenced(_) => true,
    }
}

/// Appends to the last scrollback effect when it is the previous one, so one reduce prints
/// in one go.
pub(super) fn push_scrollback(effects: &mut Vec<Effect>, lines: Vec<Line<'static>>) {
    if lines.is_empty() {
        return;
    }
    if let Some(Effect::Scrollback(previous)) = effects.last_mut() {
        previous.extend(lines);
    } else {
        effects.push(Effect::Scrollback(lines));
    }
}
