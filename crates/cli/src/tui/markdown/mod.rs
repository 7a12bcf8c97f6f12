//! Assistant text as rendered markdown (pulldown-cmark): headings, emphasis, inline code,
//! nested, numbered and task lists, block quotes, links with their target, tables laid out
//! to the width, rules, and code blocks highlighted by language ([`highlight`]).
//!
//! Streaming: [`finished_prefix`] says how much of a growing answer is made of finished
//! top-level blocks. Those are rendered once and committed to scrollback; only the open tail
//! renders again per chunk, so a chunk costs the same however long the answer already is.
//!
//! The text arrives sanitized (no control characters but `\n` and `\t`); rendering keeps
//! it that way and never emits a sequence of its own. Whatever the input, the output is
//! bounded by the input's size: a 5 MB line wraps, a 10,000-row table lays out in one pass.

mod highlight;
pub mod syntaxes;
mod table;
mod wrap;

use super::hyperlink;
use super::theme::Theme;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;
use wrap::{wrap_spans, Prefix};

/// `text` rendered at `width` columns.
pub fn render(text: &str, width: usize, theme: &Theme) -> Vec<Line<'static>> {
    let mut writer = Writer::new(width.max(8), theme);
    for event in Parser::new_ext(text, options()) {
        writer.event(event);
    }
    writer.finish()
}

fn options() -> Options {
    Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS
}

/// The byte length of the leading part of `text` that is finished top-level blocks: it
/// ends after a blank line outside any code fence, and what follows starts a new block
/// (not an indented continuation). Appending text never changes how that part renders.
pub fn finished_prefix(text: &str) -> usize {
    let mut fence: Option<(char, usize)> = None;
    let mut finished = 0;
    let mut offset = 0;
    let mut after_blank = false;
    for line in text.split_inclusive('\n') {
        let complete = line.ends_with('\n');
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        let body = trimmed.trim_end();
        if !complete {
            // A line still arriving: once it starts with text at column 0 after a blank
            // line, the block before it is over.
            if fence.is_none() && after_blank && indent == 0 && !body.is_empty() {
                finished = offset;
            }
            break;
        }
        match fence {
            Some((ch, len)) => {
                if indent < 4 && body.chars().all(|c| c == ch) && body.len() >= len {
                    fence = None;
                }
            }
            None => {
                if after_blank && !body.is_empty() && indent == 0 {
                    finished = offset;
                }
                if indent < 4 {
                    if let Some(open) = fence_opener(body) {
                        fence = Some(open);
                    }
                }
                after_blank = body.is_empty();
            }
        }
        offset += line.len();
    }
    finished
}

fn fence_opener(body: &str) -> Option<(char, usize)> {
    let ch = body.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = body.chars().take_while(|c| *c == ch).count();
    (len >= 3).then_some((ch, len))
}

/// One list being written: its next number when ordered.
struct List {
    next: Option<u64>,
}

/// Folds parser events into lines.
struct Writer<'t> {
    width: usize,
    theme: &'t Theme,
    lines: Vec<Line<'static>>,
    /// Inline content of the paragraph, heading or item being written.
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    /// Prefix of every line of the current block (quotes, list indents).
    prefixes: Vec<Prefix>,
    lists: Vec<List>,
    /// The marker of a list item whose first line is not written yet.
    marker: Option<Span<'static>>,
    links: Vec<String>,
    code: Option<(String, String)>,
    table: Option<table::TableBuilder>,
    /// A blank line is owed before the next block.
    gap: bool,
}

impl<'t> Writer<'t> {
    fn new(width: usize, theme: &'t Theme) -> Self {
        Self {
            width,
            theme,
            lines: Vec::new(),
            spans: Vec::new(),
            styles: Vec::new(),
            prefixes: Vec::new(),
            lists: Vec::new(),
            marker: None,
            links: Vec::new(),
            code: None,
            table: None,
            gap: false,
        }
    }

    fn style(&self) -> Style {
        self.styles
            .iter()
            .fold(Style::new(), |acc, style| acc.patch(*style))
    }

    fn push_style(&mut self, style: Style) {
        self.styles.push(style);
    }

    fn event(&mut self, event: Event<'_>) {
        if let Some(table) = self.table.as_mut() {
            if !matches!(event, Event::End(TagEnd::Table)) {
                table.event(event, self.theme);
                return;
            }
        }
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => {
                if let Some((_, code)) = self.code.as_mut() {
                    code.push_str(&text);
                } else {
                    let style = self.style();
                    self.spans.push(Span::styled(text.into_string(), style));
                }
            }
            Event::Code(code) => {
                let style = self.style().patch(self.theme.inline_code);
                self.spans.push(Span::styled(code.into_string(), style));
            }
            // A model's line breaks are meant (steps, addresses, verse): kept, not joined.
            Event::SoftBreak | Event::HardBreak => {
                self.flush_paragraph();
            }
            Event::Rule => {
                self.block_gap();
                let room = self.width.saturating_sub(self.prefix_width());
                let rule = Line::from(vec![Span::styled("─".repeat(room), self.theme.dim)]);
                self.push_prefixed(rule);
                self.gap = true;
            }
            Event::TaskListMarker(done) => {
                let (mark, style) = if done {
                    ("[x] ", self.theme.dim)
                } else {
                    ("[ ] ", Style::new())
                };
                self.spans.push(Span::styled(mark, style));
            }
            Event::Html(html) | Event::InlineHtml(html) => {
                let style = self.style();
                self.spans
                    .push(Span::styled(html.trim_end().to_owned(), style));
            }
            Event::FootnoteReference(name) => {
                self.spans.push(Span::raw(format!("[^{name}]")));
            }
            Event::InlineMath(text) | Event::DisplayMath(text) => {
                let style = self.style().patch(self.theme.inline_code);
                self.spans.push(Span::styled(text.into_string(), style));
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.block_gap(),
            Tag::Heading { level, .. } => {
                self.block_gap();
                self.push_style(self.theme.heading(heading_rank(level)));
            }
            Tag::BlockQuote(_) => {
                self.block_gap();
                self.prefixes.push(Prefix::same("│ ", self.theme.quote));
                self.push_style(self.theme.quote_text);
            }
            Tag::CodeBlock(kind) => {
                self.block_gap();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',', '{']).next().unwrap_or("").to_owned()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.block_gap();
                } else {
                    self.flush_paragraph();
                }
                self.lists.push(List { next: start });
            }
            Tag::Item => {
                self.flush_paragraph();
                let depth = self.lists.len();
                let marker = match self.lists.last_mut().and_then(|l| l.next.as_mut()) {
                    Some(n) => {
                        let text = format!("{n}. ");
                        *n += 1;
                        text
                    }
                    None => match depth {
                        1 => "• ".to_owned(),
                        2 => "◦ ".to_owned(),
                        _ => "▪ ".to_owned(),
                    },
                };
                let indent = " ".repeat(marker.width());
                self.marker = Some(Span::styled(marker, self.theme.list_marker));
                self.prefixes.push(Prefix::same(indent, Style::new()));
                self.gap = false;
            }
            Tag::Emphasis => self.push_style(Style::new().add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(Style::new().add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                self.push_style(hyperlink::link_style(self.theme.link, &dest_url));
                self.links.push(dest_url.into_string());
            }
            Tag::Table(alignments) => {
                self.block_gap();
                self.table = Some(table::TableBuilder::new(alignments));
            }
            Tag::FootnoteDefinition(name) => {
                self.block_gap();
                self.spans.push(Span::raw(format!("[^{name}]: ")));
            }
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => {
                self.flush_paragraph();
                self.gap = true;
            }
            TagEnd::Heading(_) => {
                self.flush_paragraph();
                self.styles.pop();
                self.gap = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_paragraph();
                self.prefixes.pop();
                self.styles.pop();
                self.gap = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.write_code(&lang, &code);
                }
                self.gap = true;
            }
            TagEnd::List(_) => {
                self.flush_paragraph();
                self.lists.pop();
                self.gap = self.lists.is_empty();
            }
            TagEnd::Item => {
                self.flush_paragraph();
                self.prefixes.pop();
                self.gap = false;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                self.styles.pop();
                if let Some(url) = self.links.pop() {
                    let shown: String = self
                        .spans
                        .iter()
                        .rev()
                        .take(1)
                        .map(|s| s.content.to_string())
                        .collect();
                    if !url.is_empty() && shown != url {
                        // One span, so the wrapper keeps the bracketed target together;
                        // the brackets are clickable with it.
                        let style = hyperlink::link_style(self.theme.dim, &url);
                        self.spans.push(Span::styled(format!(" ({url})"), style));
                    }
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    let room = self.width.saturating_sub(self.prefix_width());
                    for line in table.layout(room, self.theme) {
                        self.push_prefixed(line);
                    }
                }
                self.gap = true;
            }
            TagEnd::FootnoteDefinition => {
                self.flush_paragraph();
                self.gap = true;
            }
            _ => {}
        }
    }

    fn prefix_width(&self) -> usize {
        self.prefixes.iter().map(|p| p.text.width()).sum()
    }

    /// Writes the owed blank line before a block.
    fn block_gap(&mut self) {
        self.flush_paragraph();
        if self.gap && !self.lines.is_empty() {
            let blank = Line::default();
            self.push_prefixed_trimmed(blank);
        }
        self.gap = false;
    }

    fn push_prefixed_trimmed(&mut self, line: Line<'static>) {
        let mut spans: Vec<Span<'static>> = self
            .prefixes
            .iter()
            .map(|p| Span::styled(p.text.trim_end().to_owned(), p.style))
            .collect();
        spans.retain(|s| !s.content.is_empty());
        spans.extend(line.spans);
        self.lines.push(Line::from(spans));
    }

    /// Pushes `line` after the block prefixes (and a pending list marker).
    fn push_prefixed(&mut self, line: Line<'static>) {
        let mut spans = self.prefix_spans();
        spans.extend(line.spans);
        self.lines.push(Line::from(spans));
    }

    fn prefix_spans(&mut self) -> Vec<Span<'static>> {
        let marker = self.marker.take();
        let last = self.prefixes.len().saturating_sub(1);
        let mut spans = Vec::with_capacity(self.prefixes.len());
        for (i, prefix) in self.prefixes.iter().enumerate() {
            match (&marker, i == last) {
                (Some(marker), true) => spans.push(marker.clone()),
                _ => spans.push(Span::styled(prefix.text.clone(), prefix.style)),
            }
        }
        spans
    }

    /// Wraps and writes the inline content gathered so far.
    fn flush_paragraph(&mut self) {
        if self.spans.is_empty() {
            if self.marker.is_some() && self.code.is_none() {
                // An item whose content is a block (a nested list): the marker goes alone.
                let spans = self.prefix_spans();
                self.lines.push(Line::from(spans));
            }
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let room = self.width.saturating_sub(self.prefix_width()).max(4);
        for row in wrap_spans(spans, room) {
            self.push_prefixed(row);
        }
    }

    fn write_code(&mut self, lang: &str, code: &str) {
        let room = self.width.saturating_sub(self.prefix_width() + 2).max(4);
        let rows = highlight::highlight(lang, code, self.theme);
        for row in rows {
            for piece in wrap::split_spans(row, room) {
                let mut spans = vec![Span::styled("  ", self.theme.code_gutter)];
                spans.extend(piece.spans);
                self.push_prefixed(Line::from(spans));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if let Some((lang, code)) = self.code.take() {
            self.write_code(&lang, &code);
        }
        if let Some(table) = self.table.take() {
            for line in table.layout(self.width, self.theme) {
                self.push_prefixed(line);
            }
        }
        self.flush_paragraph();
        self.lines
    }
}

fn heading_rank(level: HeadingLevel) -> u8 {
    match level {
        HeadingLevel::H1 => 1,
        HeadingLevel::H2 => 2,
        HeadingLevel::H3 => 3,
        _ => 4,
    }
}

#[cfg(test)]
mod tests;
