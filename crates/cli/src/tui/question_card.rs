//! The question card: `ask_user_question` and the plan review, answered in place.
//!
//! One question at a time: Up/Down move, Space ticks an option of a multi-select question,
//! Enter chooses (or confirms the ticks), the last row types a free answer (for a plan
//! review: "keep planning" with feedback), Esc while typing stops typing and Esc otherwise
//! dismisses the questions so the person can say something else.

use super::text::{truncate, wrap};
use crate::sanitize::sanitize;
use dsh_modes::question::{Answer, AnswerItem, Question, QuestionIntent, QuestionOutcome};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

/// What a key did to the card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardStep {
    /// Still open.
    Open,
    /// Every question is answered, or they were dismissed.
    Done(QuestionOutcome),
}

/// The keys the card understands (the caller maps terminal keys to these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CardKey {
    Up,
    Down,
    Toggle,
    Enter,
    Escape,
    Backspace,
    Char(char),
}

/// Open questions and the answers given so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuestionCard {
    questions: Vec<Question>,
    answers: Vec<AnswerItem>,
    cursor: usize,
    ticked: Vec<bool>,
    /// The free answer being typed, when the last row is being edited.
    typing: Option<String>,
}

impl QuestionCard {
    pub fn new(questions: Vec<Question>) -> Self {
        let mut questions = questions;
        // Everything shown may come from the model: made terminal-safe once.
        for q in &mut questions {
            q.question = sanitize(&q.question).into_owned();
            q.header = q.header.as_deref().map(|h| sanitize(h).into_owned());
            for option in &mut q.options {
                option.description = option
                    .description
                    .as_deref()
                    .map(|d| sanitize(d).into_owned());
            }
        }
        let ticked = vec![false; questions.first().map_or(0, |q| q.options.len())];
        Self {
            questions,
            answers: Vec::new(),
            cursor: 0,
            ticked,
            typing: None,
        }
    }

    /// The question on screen.
    pub fn current(&self) -> Option<&Question> {
        self.questions.get(self.answers.len())
    }

    /// Whether this is a plan under review.
    pub fn is_plan_review(&self) -> bool {
        self.current()
            .is_some_and(|q| matches!(q.intent, Some(QuestionIntent::PlanReview { .. })))
    }

    /// Whether keys are typed into the free answer.
    pub fn is_typing(&self) -> bool {
        self.typing.is_some()
    }

    fn rows(&self) -> usize {
        self.current().map_or(0, |q| q.options.len()) + 1
    }

    fn other_label(&self) -> &'static str {
        if self.is_plan_review() {
            "Keep planning, with feedback…"
        } else {
            "Other: type an answer…"
        }
    }

    /// Applies one key.
    pub fn key(&mut self, key: CardKey) -> CardStep {
        let Some(question) = self.current().cloned() else {
            return CardStep::Done(QuestionOutcome::Dismissed);
        };
        if let Some(text) = &mut self.typing {
            match key {
                CardKey::Char(c) => text.push(c),
                CardKey::Backspace => {
                    text.pop();
                }
                CardKey::Escape => self.typing = None,
                CardKey::Enter if !text.trim().is_empty() => {
                    let custom = Some(text.trim().to_owned());
                    let selected = if question.multi_select {
                        self.ticked_labels(&question)
                    } else {
                        Vec::new()
                    };
                    return self.answered(&question, selected, custom);
                }
                _ => {}
            }
            return CardStep::Open;
        }
        let options = question.options.len();
        match key {
            CardKey::Up => self.cursor = (self.cursor + self.rows() - 1) % self.rows(),
            CardKey::Down => self.cursor = (self.cursor + 1) % self.rows(),
            CardKey::Escape => return CardStep::Done(QuestionOutcome::Dismissed),
            CardKey::Toggle if question.multi_select && self.cursor < options => {
                if let Some(t) = self.ticked.get_mut(self.cursor) {
                    *t = !*t;
                }
            }
            CardKey::Enter if self.cursor == options => self.typing = Some(String::new()),
            CardKey::Enter if question.multi_select => {
                let selected = self.ticked_labels(&question);
                let selected = if selected.is_empty() {
                    vec![question.options[self.cursor].label.clone()]
                } else {
                    selected
                };
                return self.answered(&question, selected, None);
            }
            CardKey::Enter => {
                let label = question.options[self.cursor].label.clone();
                return self.answered(&question, vec![label], None);
            }
            _ => {}
        }
        CardStep::Open
    }

    fn ticked_labels(&self, question: &Question) -> Vec<String> {
        question
            .options
            .iter()
            .zip(&self.ticked)
            .filter(|(_, t)| **t)
            .map(|(o, _)| o.label.clone())
            .collect()
    }

    fn answered(
        &mut self,
        question: &Question,
        selected: Vec<String>,
        custom: Option<String>,
    ) -> CardStep {
        self.answers.push(AnswerItem {
            id: question.id.clone(),
            selected,
            custom,
        });
        self.cursor = 0;
        self.typing = None;
        self.ticked = vec![false; self.current().map_or(0, |q| q.options.len())];
        if self.current().is_none() {
            return CardStep::Done(QuestionOutcome::Answered(Answer {
                answers: std::mem::take(&mut self.answers),
            }));
        }
        CardStep::Open
    }

    /// Rows the card needs at `width`.
    pub fn height(&self, width: u16) -> u16 {
        u16::try_from(self.body(width).len() + 2).unwrap_or(u16::MAX)
    }

    fn body(&self, width: u16) -> Vec<Line<'static>> {
        let inner = usize::from(width).saturating_sub(2).max(1);
        let Some(question) = self.current() else {
            return Vec::new();
        };
        let dim = Style::new().add_modifier(Modifier::DIM);
        let mut lines = Vec::new();
        if self.questions.len() > 1 {
            lines.push(Line::styled(
                format!(
                    "question {} of {}",
                    self.answers.len() + 1,
                    self.questions.len()
                ),
                dim,
            ));
        }
        for row in wrap(&question.question, inner) {
            lines.push(Line::styled(row, Style::new().add_modifier(Modifier::BOLD)));
        }
        for (i, option) in question.options.iter().enumerate() {
            let mark = match (
                question.multi_select,
                self.ticked.get(i).copied().unwrap_or(false),
            ) {
                (true, true) => "[x] ",
                (true, false) => "[ ] ",
                _ => "",
            };
            let label = sanitize(&option.label).into_owned();
            let mut spans = vec![self.pointer(i), Span::raw(format!("{mark}{label}"))];
            if let Some(description) = &option.description {
                spans.push(Span::styled(format!("  {description}"), dim));
            }
            lines.push(truncated(spans, inner));
        }
        let other = match &self.typing {
            Some(text) => format!("{}{text}▏", self.other_label().trim_end_matches('…')),
            None => self.other_label().to_owned(),
        };
        let other_index = question.options.len();
        lines.push(truncated(
            vec![self.pointer(other_index), Span::raw(other)],
            inner,
        ));
        let help = if self.typing.is_some() {
            "Enter sends · Esc stops typing"
        } else if question.multi_select {
            "↑↓ move · Space ticks · Enter confirms · Esc dismisses"
        } else {
            "↑↓ move · Enter chooses · Esc dismisses to speak instead"
        };
        lines.push(Line::styled(truncate(help, inner), dim));
        lines
    }

    fn pointer(&self, row: usize) -> Span<'static> {
        if row == self.cursor {
            Span::styled(
                "› ",
                Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
            )
        } else {
            Span::raw("  ")
        }
    }
}

fn truncated(spans: Vec<Span<'static>>, width: usize) -> Line<'static> {
    let text: String = spans.iter().map(|s| s.content.as_ref()).collect();
    if unicode_width::UnicodeWidthStr::width(text.as_str()) <= width {
        return Line::from(spans);
    }
    Line::from(truncate(&text, width))
}

impl Widget for &QuestionCard {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let title = match self.current().and_then(|q| q.header.clone()) {
            Some(header) => format!(" {header} "),
            None if self.is_plan_review() => " Plan review ".to_owned(),
            None => " Question ".to_owned(),
        };
        let block = Block::new()
            .borders(Borders::ALL)
            .border_style(Style::new().fg(Color::Cyan))
            .title(title);
        let inner = block.inner(area);
        block.render(area, buf);
        for (i, line) in self
            .body(area.width)
            .iter()
            .take(usize::from(inner.height))
            .enumerate()
        {
            let y = inner.y + u16::try_from(i).unwrap_or(0);
            buf.set_line(inner.x, y, line, inner.width);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_modes::question::QuestionOption;

    fn question(id: &str, labels: &[&str], multi: bool) -> Question {
        Question {
            id: id.into(),
            question: format!("{id}?"),
            detail: None,
            header: None,
            options: labels
                .iter()
                .map(|l| QuestionOption {
                    label: (*l).into(),
                    description: None,
                })
                .collect(),
            multi_select: multi,
            intent: None,
        }
    }

    #[test]
    fn single_multi_and_free_answers_are_collected_in_order() {
        let mut card = QuestionCard::new(vec![
            question("db", &["pg", "sqlite"], false),
            question("extras", &["a", "b", "c"], true),
            question("name", &[], false),
        ]);
        assert_eq!(card.key(CardKey::Down), CardStep::Open);
        assert_eq!(card.key(CardKey::Enter), CardStep::Open);
        card.key(CardKey::Toggle);
        card.key(CardKey::Down);
        card.key(CardKey::Down);
        card.key(CardKey::Toggle);
        card.key(CardKey::Enter);
        card.key(CardKey::Enter);
        for c in "dsh".chars() {
            card.key(CardKey::Char(c));
        }
        let CardStep::Done(QuestionOutcome::Answered(answer)) = card.key(CardKey::Enter) else {
            panic!("not answered");
        };
        let got: Vec<_> = answer
            .answers
            .iter()
            .map(|a| (a.id.as_str(), a.selected.clone(), a.custom.clone()))
            .collect();
        assert_eq!(
            got,
            [
                ("db", vec!["sqlite".to_owned()], None),
                ("extras", vec!["a".to_owned(), "c".to_owned()], None),
                ("name", vec![], Some("dsh".to_owned())),
            ]
        );
    }

    #[test]
    fn escape_dismisses_unless_typing() {
        let mut card = QuestionCard::new(vec![question("q", &["x"], false)]);
        card.key(CardKey::Down);
        card.key(CardKey::Enter);
        assert!(card.is_typing());
        assert_eq!(card.key(CardKey::Escape), CardStep::Open);
        assert!(!card.is_typing());
        assert_eq!(
            card.key(CardKey::Escape),
            CardStep::Done(QuestionOutcome::Dismissed)
        );
    }
}
