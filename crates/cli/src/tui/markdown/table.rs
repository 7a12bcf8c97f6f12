//! Markdown tables laid out to the terminal width: each column as wide as its widest cell
//! until the row does not fit, then the widest columns give way and their cells wrap.

use super::super::theme::Theme;
use super::wrap::wrap_spans;
use pulldown_cmark::{Alignment, Event, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// The narrowest a column gets before the table stops shrinking (and rows get cut).
const MIN_COLUMN: usize = 3;
/// A cell's natural width counts at most this much (a 5 MB cell must not widen the table).
const MAX_NATURAL: usize = 200;

type Cell = Vec<Span<'static>>;

/// Gathers a table's cells from parser events.
pub struct TableBuilder {
    alignments: Vec<Alignment>,
    header: Vec<Cell>,
    rows: Vec<Vec<Cell>>,
    in_header: bool,
    cell: Cell,
    styles: Vec<Style>,
}

impl TableBuilder {
    pub fn new(alignments: Vec<Alignment>) -> Self {
        Self {
            alignments,
            header: Vec::new(),
            rows: Vec::new(),
            in_header: false,
            cell: Vec::new(),
            styles: Vec::new(),
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::new(), |acc, s| acc.patch(*s))
    }

    pub fn event(&mut self, event: Event<'_>, theme: &Theme) {
        match event {
            Event::Start(Tag::TableHead) => self.in_header = true,
            Event::End(TagEnd::TableHead) => self.in_header = false,
            Event::Start(Tag::TableRow) => self.rows.push(Vec::new()),
            Event::End(TagEnd::TableCell) => {
                let cell = std::mem::take(&mut self.cell);
                if self.in_header {
                    self.header.push(cell);
                } else if let Some(row) = self.rows.last_mut() {
                    row.push(cell);
                }
            }
            Event::Start(Tag::Emphasis) => self
                .styles
                .push(Style::new().add_modifier(Modifier::ITALIC)),
            Event::Start(Tag::Strong) => {
                self.styles.push(Style::new().add_modifier(Modifier::BOLD))
            }
            Event::Start(Tag::Strikethrough) => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Event::Start(Tag::Link { .. }) => self.styles.push(theme.link),
            Event::End(
                TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link,
            ) => {
                self.styles.pop();
            }
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => {
                let style = self.style();
                self.cell.push(Span::styled(text.into_string(), style));
            }
            Event::Code(code) => {
                let style = self.style().patch(theme.inline_code);
                self.cell.push(Span::styled(code.into_string(), style));
            }
            Event::SoftBreak | Event::HardBreak => self.cell.push(Span::raw(" ")),
            _ => {}
        }
    }

    /// The table's lines at `width` columns.
    pub fn layout(self, width: usize, theme: &Theme) -> Vec<Line<'static>> {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len(), self.alignments.len()])
            .max()
            .unwrap_or(0);
        if columns == 0 {
            return Vec::new();
        }
        let mut natural = vec![1; columns];
        for row in std::iter::once(&self.header).chain(&self.rows) {
            for (i, cell) in row.iter().enumerate() {
                let w: usize = cell.iter().map(|s| s.content.width()).sum();
                natural[i] = natural[i].max(w.min(MAX_NATURAL));
            }
        }
        let widths = fit(&natural, width.saturating_sub(3 * (columns - 1)));
        let border = theme.dim;
        let mut lines = Vec::new();
        let header_style = Style::new().add_modifier(Modifier::BOLD);
        lines.extend(self.row_lines(&self.header, &widths, header_style, border));
        let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
        lines.push(Line::styled(rule.join("─┼─"), border));
        for row in &self.rows {
            lines.extend(self.row_lines(row, &widths, Style::new(), border));
        }
        lines
    }

    fn row_lines(
        &self,
        row: &[Cell],
        widths: &[usize],
        base: Style,
        border: Style,
    ) -> Vec<Line<'static>> {
        let wrapped: Vec<Vec<Line<'static>>> = widths
            .iter()
            .enumerate()
            .map(|(i, width)| {
                let cell = row.get(i).cloned().unwrap_or_default();
                let cell = cell.into_iter().map(|s| s.patch_style(base)).collect();
                wrap_spans(cell, *width)
            })
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        (0..height)
            .map(|y| {
                let mut spans = Vec::new();
                for (i, width) in widths.iter().enumerate() {
                    if i > 0 {
                        spans.push(Span::styled(" │ ", border));
                    }
                    let part = wrapped[i].get(y).cloned().unwrap_or_default();
                    let used = part.width();
                    let pad = width.saturating_sub(used);
                    let right = matches!(self.alignments.get(i), Some(Alignment::Right));
                    let center = matches!(self.alignments.get(i), Some(Alignment::Center));
                    let (before, after) = if right {
                        (pad, 0)
                    } else if center {
                        (pad / 2, pad - pad / 2)
                    } else {
                        (0, pad)
                    };
                    if before > 0 {
                        spans.push(Span::raw(" ".repeat(before)));
                    }
                    spans.extend(part.spans);
                    if after > 0 && i + 1 < widths.len() {
                        spans.push(Span::raw(" ".repeat(after)));
                    }
                }
                Line::from(spans)
            })
            .collect()
    }
}

/// Column widths summing to at most `room` (when the minimum allows): the widest columns
/// shrink first.
fn fit(natural: &[usize], room: usize) -> Vec<usize> {
    let mut widths = natural.to_vec();
    let mut total: usize = widths.iter().sum();
    while total > room {
        let Some((widest, &w)) = widths.iter().enumerate().max_by_key(|(_, w)| **w) else {
            break;
        };
        if w <= MIN_COLUMN {
            break;
        }
        let second = widths
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != widest)
            .map(|(_, w)| *w)
            .max()
            .unwrap_or(MIN_COLUMN);
        let cut = (total - room).min(w - second.max(MIN_COLUMN)).max(1);
        widths[widest] = w - cut;
        total -= cut;
    }
    widths
}
