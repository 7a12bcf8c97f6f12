//! A searchable list drawn under the input: `/resume` and `/sessions` choose a session,
//! `/model` a model, `/permission` a preset, `/search` a hit in an earlier session.
//!
//! Typing narrows the list (every word of the query must appear in a row, case-insensitive),
//! Up/Down (and PageUp/PageDown) move, Enter chooses, Esc closes. The picker only holds rows
//! and the choice; what choosing does is the caller's (it gets the row's `value` back). A
//! picker whose rows come from elsewhere ([`Picker::searching`]) does not filter them: the
//! caller runs the query and hands the rows in with [`Picker::set_rows`]. Text between
//! [`MARK_START`] and [`MARK_END`] in a row (a search match) is drawn bold.

use super::text::truncate;
pub use dsh_memory::index::{MARK_END, MARK_START};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

/// The most rows shown at once; the list scrolls with the selection.
pub const MAX_ROWS: usize = 10;

/// What a picker chooses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PickerKind {
    Session,
    Model,
    Permission,
    /// A `/search` hit (its session and seq).
    SearchHit,
}

/// One row: what is shown, and the value handed back when it is chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerRow {
    pub text: String,
    pub value: String,
    /// The row in use now (the session on screen, the model, the preset), marked `●`.
    pub current: bool,
}

/// What a key did to the picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PickerOutcome {
    /// Still open.
    Open,
    Closed,
    /// A row was chosen: its value.
    Chosen(String),
}

/// An open picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picker {
    pub kind: PickerKind,
    title: String,
    /// A header row over the columns, if any.
    header: Option<String>,
    rows: Vec<PickerRow>,
    query: String,
    /// Indexes into `rows` of the rows matching `query`.
    shown: Vec<usize>,
    /// Position in `shown`.
    selected: usize,
    /// The rows are a search's results: typing does not filter them.
    searching: bool,
    /// The keys line, when not the usual one.
    hint: Option<String>,
}

impl Picker {
    /// A picker over `rows`, the current row selected (else the first).
    pub fn new(kind: PickerKind, title: impl Into<String>, rows: Vec<PickerRow>) -> Self {
        let selected = rows.iter().position(|r| r.current).unwrap_or(0);
        let mut picker = Self {
            kind,
            title: title.into(),
            header: None,
            shown: (0..rows.len()).collect(),
            rows,
            query: String::new(),
            selected: 0,
            searching: false,
            hint: None,
        };
        picker.selected = selected;
        picker
    }

    pub fn with_header(mut self, header: impl Into<String>) -> Self {
        self.header = Some(header.into());
        self
    }

    /// A picker whose rows are the results of its query, run by the caller: typing changes
    /// the query only, and [`set_rows`](Self::set_rows) brings the rows.
    pub fn searching(kind: PickerKind, title: impl Into<String>, query: &str) -> Self {
        let mut picker = Self::new(kind, title, Vec::new());
        picker.searching = true;
        picker.query = query.to_owned();
        picker
    }

    /// The keys line under the rows, instead of the usual one.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// New rows (a search's results) under a new title; the selection goes to the first.
    pub fn set_rows(&mut self, title: impl Into<String>, rows: Vec<PickerRow>) {
        self.title = title.into();
        self.shown = (0..rows.len()).collect();
        self.rows = rows;
        self.selected = 0;
    }

    pub fn title(&self) -> &str {
        &self.title
    }

    pub fn query(&self) -> &str {
        &self.query
    }

    /// The rows matching the query, in order.
    pub fn shown(&self) -> Vec<&PickerRow> {
        self.shown.iter().map(|&i| &self.rows[i]).collect()
    }

    pub fn selected(&self) -> Option<&PickerRow> {
        self.shown.get(self.selected).map(|&i| &self.rows[i])
    }

    fn refilter(&mut self) {
        if self.searching {
            return;
        }
        let words: Vec<String> = self
            .query
            .split_whitespace()
            .map(str::to_lowercase)
            .collect();
        self.shown = self
            .rows
            .iter()
            .enumerate()
            .filter(|(_, row)| {
                let text = row.text.to_lowercase();
                words.iter().all(|w| text.contains(w.as_str()))
            })
            .map(|(i, _)| i)
            .collect();
        self.selected = 0;
    }

    pub fn type_char(&mut self, ch: char) {
        if !ch.is_control() {
            self.query.push(ch);
            self.refilter();
        }
    }

    pub fn backspace(&mut self) {
        self.query.pop();
        self.refilter();
    }

    /// Moves the selection by `by` rows, stopping at the ends.
    pub fn move_by(&mut self, by: isize) {
        let last = self.shown.len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(by).min(last);
    }

    /// Enter: the selected row's value, or nothing when no row matches.
    pub fn choose(&self) -> PickerOutcome {
        match self.selected() {
            Some(row) => PickerOutcome::Chosen(row.value.clone()),
            None => PickerOutcome::Open,
        }
    }

    /// Rows it needs: title, search line, header, list (at least one row for "no match"),
    /// hint.
    pub fn height(&self) -> u16 {
        let list = self.shown.len().clamp(1, MAX_ROWS);
        let header = usize::from(self.header.is_some());
        u16::try_from(2 + header + list + 1).unwrap_or(u16::MAX)
    }

    /// The first shown row of a window `rows` tall that keeps the selection in view.
    fn first_row(&self, rows: usize) -> usize {
        (self.selected + 1).saturating_sub(rows)
    }
}

impl Widget for &Picker {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let width = usize::from(area.width);
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut lines = vec![
            Line::styled(
                truncate(&self.title, width),
                Style::new().add_modifier(Modifier::BOLD),
            ),
            Line::from(vec![
                Span::styled("search: ", dim),
                Span::raw(truncate(&self.query, width.saturating_sub(8))),
            ]),
        ];
        if let Some(header) = &self.header {
            lines.push(Line::styled(truncate(&format!("    {header}"), width), dim));
        }
        if self.shown.is_empty() {
            lines.push(Line::styled("  (nothing matches)", dim));
        }
        // A short live area shows fewer rows rather than losing the hint.
        let fixed = lines.len() + 1;
        let rows = usize::from(area.height)
            .saturating_sub(fixed)
            .clamp(1, MAX_ROWS);
        let first = self.first_row(rows);
        for (at, &index) in self.shown.iter().enumerate().skip(first).take(rows) {
            let row = &self.rows[index];
            let pointer = if at == self.selected { "›" } else { " " };
            let mark = if row.current { "●" } else { " " };
            let text = truncate(&format!("{pointer} {mark} {}", row.text), width);
            let style = if at == self.selected {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new()
            };
            lines.push(marked_line(&text, style));
        }
        let more = self.shown.len().saturating_sub(first + rows);
        let keys = self
            .hint
            .as_deref()
            .unwrap_or("↑↓ move · Enter choose · Esc close · type to search");
        let hint = if more > 0 {
            format!("{more} more · {keys}")
        } else {
            keys.to_owned()
        };
        lines.push(Line::styled(truncate(&hint, width), dim));
        for (line, y) in lines.iter().zip(area.y..area.bottom()) {
            buf.set_line(area.x, y, line, area.width);
        }
    }
}

/// `text` in `style`, its parts between [`MARK_START`] and [`MARK_END`] also bold (a mark
/// cut off by truncation just ends the bold part).
fn marked_line(text: &str, style: Style) -> Line<'static> {
    if !text.contains(MARK_START) {
        return Line::styled(text.to_owned(), style);
    }
    let spans: Vec<Span<'static>> = text
        .split([MARK_START, MARK_END])
        .enumerate()
        .filter(|(_, piece)| !piece.is_empty())
        .map(|(i, piece)| {
            let style = if i % 2 == 1 {
                style.add_modifier(Modifier::BOLD)
            } else {
                style
            };
            Span::styled(piece.to_owned(), style)
        })
        .collect();
    Line::from(spans)
}

/// "just now", "5m ago", "3h ago", "2d ago" for a time `then_ms` seen at `now_ms`.
pub fn age(now_ms: u64, then_ms: u64) -> String {
    let secs = now_ms.saturating_sub(then_ms) / 1000;
    match secs {
        0..=59 => "just now".into(),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(texts: &[&str]) -> Vec<PickerRow> {
        texts
            .iter()
            .map(|t| PickerRow {
                text: (*t).into(),
                value: t.split(' ').next().unwrap_or("").into(),
                current: *t == "b beta two",
            })
            .collect()
    }

    #[test]
    fn typing_filters_and_arrows_choose() {
        let mut picker = Picker::new(
            PickerKind::Session,
            "sessions",
            rows(&["a alpha one", "b beta two", "c gamma two"]),
        );
        assert_eq!(
            picker.choose(),
            PickerOutcome::Chosen("b".into()),
            "current first"
        );
        picker.move_by(5);
        assert_eq!(picker.choose(), PickerOutcome::Chosen("c".into()));
        for ch in "TWO g".chars() {
            picker.type_char(ch);
        }
        assert_eq!(picker.shown().len(), 1);
        assert_eq!(picker.choose(), PickerOutcome::Chosen("c".into()));
        picker.type_char('z');
        assert_eq!(picker.choose(), PickerOutcome::Open, "nothing matches");
        picker.backspace();
        picker.backspace();
        picker.backspace();
        assert_eq!(picker.shown().len(), 2);
        picker.move_by(-3);
        assert_eq!(picker.choose(), PickerOutcome::Chosen("b".into()));
    }

    #[test]
    fn a_long_list_scrolls_with_the_selection() {
        let texts: Vec<String> = (0..25).map(|i| format!("s{i} row")).collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let mut picker = Picker::new(PickerKind::Session, "sessions", rows(&refs));
        picker.move_by(12);
        let area = Rect::new(0, 0, 60, picker.height());
        let mut buf = Buffer::empty(area);
        (&picker).render(area, &mut buf);
        let text: Vec<String> = (0..area.height)
            .map(|y| {
                (0..area.width)
                    .map(|x| buf[(x, y)].symbol().to_owned())
                    .collect::<String>()
                    .trim_end()
                    .to_owned()
            })
            .collect();
        assert_eq!(text[2], "    s3 row");
        assert_eq!(text[11], "›   s12 row");
        assert!(text[12].starts_with("12 more · "), "{text:?}");
    }

    #[test]
    fn a_searching_picker_keeps_its_rows_and_bolds_the_matches() {
        let mut picker = Picker::searching(PickerKind::SearchHit, "search", "wid")
            .with_hint("Enter resume · Ctrl-F fork");
        picker.type_char('g');
        assert_eq!(picker.query(), "widg");
        picker.set_rows(
            "2 sessions",
            vec![
                PickerRow {
                    text: "one: the \u{2}widget\u{3} test".into(),
                    value: "a".into(),
                    current: false,
                },
                PickerRow {
                    text: "two: no match here".into(),
                    value: "b".into(),
                    current: false,
                },
            ],
        );
        picker.type_char('e');
        assert_eq!(
            picker.shown().len(),
            2,
            "typing does not filter a search's rows"
        );
        picker.move_by(1);
        assert_eq!(picker.choose(), PickerOutcome::Chosen("b".into()));
        let area = Rect::new(0, 0, 60, picker.height());
        let mut buf = Buffer::empty(area);
        (&picker).render(area, &mut buf);
        let row: String = (0..area.width)
            .map(|x| buf[(x, 2)].symbol().to_owned())
            .collect();
        assert_eq!(row.trim_end(), "    one: the widget test");
        let bold = |x: u16| buf[(x, 2)].modifier.contains(Modifier::BOLD);
        assert!(bold(13) && bold(18) && !bold(12) && !bold(19));
        let hint: String = (0..area.width)
            .map(|x| buf[(x, 4)].symbol().to_owned())
            .collect();
        assert_eq!(hint.trim_end(), "Enter resume · Ctrl-F fork");
    }

    #[test]
    fn ages_read_like_a_person_would_say_them() {
        assert_eq!(age(10_000, 5_000), "just now");
        assert_eq!(age(600_000, 0), "10m ago");
        assert_eq!(age(7_200_000, 0), "2h ago");
        assert_eq!(age(3 * 86_400_000, 0), "3d ago");
    }
}
