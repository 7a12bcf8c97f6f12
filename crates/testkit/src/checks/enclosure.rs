//! Invariant 4: turns and steps nest, number correctly, and enclose their content.

use super::{step_of, Invariant, Violation};
use dsh_session::{EventData, SessionEvent, SurfaceOp};
use std::borrow::Borrow;

#[derive(Default)]
struct State {
    /// `(turn, seq of its turn/start)`.
    open_turn: Option<(u64, u64)>,
    /// `(turn, step, seq of its step/start)`.
    open_step: Option<(u64, u64, u64)>,
    last_turn: Option<u64>,
    last_step: u64,
    found: Vec<Violation>,
}

impl State {
    fn flag(&mut self, seq: u64, message: String) {
        self.found
            .push(Violation::at(Invariant::BalancedEnclosure, seq, message));
    }

    fn turn_start(&mut self, seq: u64, turn: u64) {
        if let Some((open, at)) = self.open_turn {
            self.flag(
                seq,
                format!("turn/start {turn} while turn {open} (opened at seq {at}) is still open"),
            );
        }
        let expected = self.last_turn.map_or(1, |t| t + 1);
        if turn != expected {
            self.flag(
                seq,
                format!("turn/start {turn}: turn numbers must go up by one, expected {expected}"),
            );
        }
        self.open_turn = Some((turn, seq));
        self.open_step = None;
        self.last_turn = Some(turn);
        self.last_step = 0;
    }

    fn turn_end(&mut self, seq: u64, turn: u64) {
        match self.open_turn {
            None => self.flag(seq, format!("turn/end {turn} without an open turn")),
            Some((open, _)) if open != turn => {
                self.flag(seq, format!("turn/end {turn} but the open turn is {open}"))
            }
            Some(_) => {}
        }
        if let Some((t, s, at)) = self.open_step {
            self.flag(
                seq,
                format!("turn/end {turn} while step {t}.{s} (opened at seq {at}) is still open"),
            );
        }
        self.open_turn = None;
        self.open_step = None;
    }

    fn step_start(&mut self, seq: u64, turn: u64, step: u64) {
        match self.open_turn {
            None => self.flag(seq, format!("step/start {turn}.{step} outside any turn")),
            Some((open, _)) if open != turn => {
                self.flag(seq, format!("step/start {turn}.{step} inside turn {open}"))
            }
            Some(_) => {}
        }
        if let Some((t, s, at)) = self.open_step {
            self.flag(
                seq,
                format!("step/start {turn}.{step} while step {t}.{s} (opened at seq {at}) is still open"),
            );
        }
        let expected = self.last_step + 1;
        if step != expected {
            self.flag(
                seq,
                format!("step/start {turn}.{step}: steps must count up from 1 in each turn, expected {expected}"),
            );
        }
        self.open_step = Some((turn, step, seq));
        self.last_step = step;
    }

    fn step_end(&mut self, seq: u64, turn: u64, step: u64) {
        match self.open_step {
            Some((t, s, _)) if (t, s) == (turn, step) => {}
            Some((t, s, _)) => self.flag(
                seq,
                format!("step/end {turn}.{step} but the open step is {t}.{s}"),
            ),
            None => self.flag(seq, format!("step/end {turn}.{step} without an open step")),
        }
        self.open_step = None;
    }

    fn inside_step(&mut self, seq: u64, type_name: &str, turn: u64, step: u64) {
        match self.open_step {
            Some((t, s, _)) if (t, s) == (turn, step) => {}
            Some((t, s, _)) => self.flag(
                seq,
                format!("{type_name} names step {turn}.{step} but the open step is {t}.{s}"),
            ),
            None => self.flag(
                seq,
                format!("{type_name} names step {turn}.{step} but no step is open"),
            ),
        }
    }

    fn inside_turn(&mut self, seq: u64, type_name: &str) {
        if self.open_turn.is_none() {
            self.flag(seq, format!("{type_name} outside any turn"));
        }
    }
}

pub(super) fn check<E: Borrow<SessionEvent>>(
    events: &[E],
    allow_open_turn: bool,
) -> Result<(), Vec<Violation>> {
    let mut state = State::default();
    for event in events.iter().map(Borrow::borrow) {
        let seq = event.seq;
        match &event.data {
            EventData::TurnStart(t) => state.turn_start(seq, t.turn),
            EventData::TurnEnd(t) => state.turn_end(seq, t.turn),
            EventData::StepStart(s) => state.step_start(seq, s.turn, s.step),
            EventData::StepEnd(s) => state.step_end(seq, s.turn, s.step),
            // A replace-op tool/result (the pruner) rewrites history from anywhere.
            EventData::ToolResult(_)
                if matches!(event.surface_op, Some(SurfaceOp::Replace { .. })) => {}
            data @ (EventData::AssistantChunk(_)
            | EventData::AssistantMessage(_)
            | EventData::ToolCall(_)
            | EventData::ToolResult(_)) => {
                if let Some((turn, step)) = step_of(data) {
                    state.inside_step(seq, event.type_name(), turn, step);
                }
            }
            EventData::RequestHeader(_)
            | EventData::RequestContext(_)
            | EventData::TodoWrite(_) => {
                state.inside_turn(seq, event.type_name());
            }
            _ => {}
        }
    }
    if let (Some((turn, at)), false) = (state.open_turn, allow_open_turn) {
        let step = state
            .open_step
            .map(|(t, s, _)| format!(" (step {t}.{s} also open)"))
            .unwrap_or_default();
        state.found.push(Violation::global(
            Invariant::BalancedEnclosure,
            format!("turn {turn} (opened at seq {at}) was never closed{step}"),
        ));
    }
    super::finish(state.found)
}
