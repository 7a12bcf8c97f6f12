//! Cards: the transcript's boxes for work done (a tool call, and whatever a feature adds).
//!
//! A [`Card`] is a header line (a state mark, a bold title, a dim subtitle, dim facts on
//! the right such as `exit 0 · 1.2s`) and a body of already-styled lines under a `└`
//! gutter. The body is clipped to [`Card::clip`] lines with `… N more lines (Ctrl-O)` unless
//! the card is shown expanded. Features build a `Card` and call [`Card::lines`]; they do not
//! draw their own chrome. [`tool_card`] builds the card of a tool call from its result and
//! the metadata the tool reported: a coloured diff for `edit` and `write` ([`diff`]), the
//! command, exit code, duration and output tail for `bash`, counts for `read`, `grep` and
//! `glob`, the code and message of an error, and the spill path of a spilled output.

pub mod diff;
mod tools;

pub use tools::tool_card;

use super::text::truncate;
use super::theme::Theme;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// How many body lines a collapsed card shows.
pub const CARD_PREVIEW_LINES: usize = 6;
/// The most body lines even an expanded card shows (a 100,000-line diff stays bounded).
pub const CARD_MAX_LINES: usize = 2_000;

/// Where the work a card shows stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardState {
    Running,
    Done,
    Failed,
}

/// One card. See the module docs.
#[derive(Clone, Debug, PartialEq)]
pub struct Card {
    pub state: CardState,
    pub title: String,
    pub subtitle: String,
    /// Short facts shown after the subtitle (`exit 0`, `1.2s`, `12 matches`).
    pub facts: Vec<String>,
    pub body: Vec<Line<'static>>,
    /// Which end of a long body a collapsed card keeps.
    pub keep: Keep,
    /// Body lines shown collapsed.
    pub clip: usize,
}

/// The part of a clipped body that stays visible.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    /// The first lines (a diff, a listing).
    Head,
    /// The last lines (a command's output, where the result is).
    Tail,
}

impl Card {
    pub fn new(state: CardState, title: impl Into<String>, subtitle: impl Into<String>) -> Self {
        Self {
            state,
            title: title.into(),
            subtitle: subtitle.into(),
            facts: Vec::new(),
            body: Vec::new(),
            keep: Keep::Head,
            clip: CARD_PREVIEW_LINES,
        }
    }

    /// Whether the collapsed card hides body lines (Ctrl-O would show more).
    pub fn is_clipped(&self) -> bool {
        self.body.len() > self.clip
    }

    /// The card's lines at `width` columns, the body clipped unless `expanded`.
    pub fn lines(&self, width: usize, expanded: bool, theme: &Theme) -> Vec<Line<'static>> {
        let (mark, mark_style) = match self.state {
            CardState::Running => ("… ", Style::new().fg(Color::Yellow)),
            CardState::Done => ("✓ ", Style::new().fg(Color::Green)),
            CardState::Failed => ("✗ ", theme.error),
        };
        let facts = if self.facts.is_empty() {
            String::new()
        } else {
            format!("  {}", self.facts.join(" · "))
        };
        let used = mark.width() + self.title.width() + 2 + facts.width();
        let room = width.saturating_sub(used);
        let mut header = vec![
            Span::styled(mark, mark_style),
            Span::styled(
                self.title.clone(),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Span::raw("  "),
            Span::styled(truncate(&self.subtitle, room), theme.dim),
        ];
        if !facts.is_empty() {
            let style = if self.state == CardState::Failed {
                theme.error
            } else {
                theme.dim
            };
            header.push(Span::styled(facts, style));
        }
        let mut lines = vec![Line::from(header)];
        let limit = if expanded { CARD_MAX_LINES } else { self.clip };
        let hidden = self.body.len().saturating_sub(limit);
        let shown: &[Line<'static>] = match self.keep {
            Keep::Head => &self.body[..self.body.len() - hidden],
            Keep::Tail => &self.body[hidden..],
        };
        let more = |hidden: usize| {
            let hint = if expanded { "" } else { " (Ctrl-O expands)" };
            let more = if hidden == 1 { "line" } else { "lines" };
            Line::styled(format!("    … {hidden} more {more}{hint}"), theme.dim)
        };
        if hidden > 0 && self.keep == Keep::Tail {
            lines.push(more(hidden));
        }
        let room = width.saturating_sub(4);
        for (i, line) in shown.iter().enumerate() {
            let gutter = if i == 0 && !(hidden > 0 && self.keep == Keep::Tail) {
                "  └ "
            } else {
                "    "
            };
            let mut spans = vec![Span::styled(gutter, theme.dim)];
            spans.extend(clip_line(line, room));
            lines.push(Line::from(spans));
        }
        if hidden > 0 && self.keep == Keep::Head {
            lines.push(more(hidden));
        }
        lines
    }
}

/// `line`'s spans cut to `width` columns, ending in `…` when cut.
fn clip_line(line: &Line<'static>, width: usize) -> Vec<Span<'static>> {
    let styled = |span: &Span<'static>| span.clone().patch_style(line.style);
    if line.width() <= width {
        return line.spans.iter().map(styled).collect();
    }
    let mut out = Vec::new();
    let mut used = 0;
    for span in &line.spans {
        let w = span.content.width();
        if used + w < width {
            used += w;
            out.push(styled(span));
            continue;
        }
        let cut = truncate(&span.content, width - used);
        out.push(Span::styled(cut, line.style.patch(span.style)));
        break;
    }
    out
}

#[cfg(test)]
mod tests;
