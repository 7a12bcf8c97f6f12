//! Wrapping styled text by display width, in one pass over it.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// What starts every line of a block: a quote bar, a list indent.
#[derive(Clone, Debug)]
pub struct Prefix {
    pub text: String,
    pub style: Style,
}

impl Prefix {
    pub fn same(text: impl Into<String>, style: Style) -> Self {
        Self {
            text: text.into(),
            style,
        }
    }
}

/// Tabs as spaces: a tab's width depends on the column, which the renderer knows and the
/// terminal would not agree with.
fn untab(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\t') {
        text.replace('\t', "    ").into()
    } else {
        text.into()
    }
}

/// Word-wraps `spans` to `width` columns; words longer than a line are broken.
pub fn wrap_spans(spans: Vec<Span<'static>>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut rows: Vec<Line<'static>> = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in spans {
        let style = span.style;
        let text = untab(&span.content).into_owned();
        for word in text.split_inclusive(' ') {
            let word_width = word.trim_end_matches(' ').width();
            if used + word_width > width && used > 0 {
                trim_row_end(&mut row);
                rows.push(Line::from(std::mem::take(&mut row)));
                used = 0;
            }
            if used == 0 && word.trim().is_empty() {
                continue;
            }
            if word_width > width {
                let mut piece = String::new();
                for ch in word.chars() {
                    let w = ch.width().unwrap_or(0);
                    if used + w > width && used > 0 {
                        row.push(Span::styled(std::mem::take(&mut piece), style));
                        rows.push(Line::from(std::mem::take(&mut row)));
                        used = 0;
                    }
                    piece.push(ch);
                    used += w;
                }
                if !piece.is_empty() {
                    row.push(Span::styled(piece, style));
                }
                continue;
            }
            used += word.width();
            push_merged(&mut row, word, style);
        }
    }
    trim_row_end(&mut row);
    if !row.is_empty() || rows.is_empty() {
        rows.push(Line::from(row));
    }
    rows
}

/// Appends `text` to the last span when it has the same style (fewer, longer spans).
fn push_merged(row: &mut Vec<Span<'static>>, text: &str, style: Style) {
    match row.last_mut() {
        Some(last) if last.style == style => last.content.to_mut().push_str(text),
        _ => row.push(Span::styled(text.to_owned(), style)),
    }
}

fn trim_row_end(row: &mut Vec<Span<'static>>) {
    while let Some(last) = row.last_mut() {
        let trimmed = last.content.trim_end_matches(' ');
        if trimmed.is_empty() {
            row.pop();
            continue;
        }
        if trimmed.len() != last.content.len() {
            let kept = trimmed.to_owned();
            last.content = kept.into();
        }
        break;
    }
}

/// Cuts one line of spans into rows of at most `width` columns, keeping every character
/// (code keeps its spaces; it is broken, not word-wrapped).
pub fn split_spans(line: Line<'static>, width: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let mut rows = Vec::new();
    let mut row: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for span in line.spans {
        let style = span.style;
        let text = untab(&span.content).into_owned();
        if used + text.width() <= width {
            used += text.width();
            row.push(Span::styled(text, style));
            continue;
        }
        let mut piece = String::new();
        for ch in text.chars() {
            let w = ch.width().unwrap_or(0);
            if used + w > width && used > 0 {
                row.push(Span::styled(std::mem::take(&mut piece), style));
                rows.push(Line::from(std::mem::take(&mut row)));
                used = 0;
            }
            piece.push(ch);
            used += w;
        }
        if !piece.is_empty() {
            row.push(Span::styled(piece, style));
        }
    }
    if !row.is_empty() || rows.is_empty() {
        rows.push(Line::from(row));
    }
    rows
}
