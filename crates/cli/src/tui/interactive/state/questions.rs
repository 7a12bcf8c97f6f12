//! The open question cards and the plan toggle, as part of [`InteractiveState`].

use super::{dim, Effect, InteractiveState};
use crate::tui::{CardKey, CardStep, QuestionCard};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use dsh_modes::question::{QuestionIntent, QuestionOutcome, QuestionRequest};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

/// One open question card.
#[derive(Clone, Debug)]
pub(super) struct OpenQuestion {
    pub ticket: u64,
    pub card: QuestionCard,
}

impl InteractiveState {
    /// The question card on screen, if any.
    pub fn question(&self) -> Option<&QuestionCard> {
        self.questions.front().map(|q| &q.card)
    }

    pub(super) fn question_asked(
        &mut self,
        ticket: u64,
        request: QuestionRequest,
        effects: &mut Vec<Effect>,
    ) {
        // A plan under review goes to scrollback whole, where it stays readable.
        for question in &request.questions {
            if let (Some(QuestionIntent::PlanReview { .. }), Some(plan)) =
                (&question.intent, &question.detail)
            {
                let mut lines = vec![Line::styled(
                    "plan for your review:",
                    Style::new().add_modifier(Modifier::BOLD),
                )];
                for line in plan.lines() {
                    lines.extend(self.wrapped(line, Style::new()));
                }
                self.note(lines, effects);
            }
        }
        self.questions.push_back(OpenQuestion {
            ticket,
            card: QuestionCard::new(request.questions),
        });
    }

    pub(super) fn question_withdrawn(&mut self, ticket: u64) {
        self.questions.retain(|q| q.ticket != ticket);
    }

    /// Dismisses every open card (the session changes, the UI quits).
    pub(super) fn dismiss_questions(&mut self, effects: &mut Vec<Effect>) {
        for open in self.questions.drain(..) {
            effects.push(Effect::AnswerQuestion {
                ticket: open.ticket,
                outcome: QuestionOutcome::Dismissed,
            });
        }
    }

    /// Keys while a card is open.
    pub(super) fn question_key(&mut self, key: KeyEvent, effects: &mut Vec<Effect>) {
        let Some(open) = self.questions.front_mut() else {
            return;
        };
        let typing = open.card.is_typing();
        let card_key = match key.code {
            KeyCode::Up | KeyCode::BackTab => CardKey::Up,
            KeyCode::Down | KeyCode::Tab => CardKey::Down,
            KeyCode::Enter => CardKey::Enter,
            KeyCode::Esc => CardKey::Escape,
            KeyCode::Backspace => CardKey::Backspace,
            KeyCode::Char(' ') if !typing => CardKey::Toggle,
            KeyCode::Char(c) if typing && !key.modifiers.contains(KeyModifiers::CONTROL) => {
                CardKey::Char(c)
            }
            _ => return,
        };
        if let CardStep::Done(outcome) = open.card.key(card_key) {
            let ticket = open.ticket;
            self.questions.pop_front();
            let echo = match &outcome {
                QuestionOutcome::Dismissed => "› dismissed the question".to_owned(),
                QuestionOutcome::Answered(answer) => {
                    let parts: Vec<String> = answer
                        .answers
                        .iter()
                        .map(|a| {
                            let mut words = a.selected.clone();
                            words.extend(a.custom.clone());
                            words.join(", ")
                        })
                        .collect();
                    format!("› answered: {}", parts.join(" · "))
                }
            };
            let lines = self.wrapped(&echo, dim());
            self.note(lines, effects);
            effects.push(Effect::AnswerQuestion { ticket, outcome });
        }
    }
}
