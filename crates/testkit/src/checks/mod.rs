//! Log invariant checkers: run them over every log a test produces.
//!
//! Each checker takes a whole session log (seq 0 first; `&[Arc<SessionEvent>]` from
//! `session.events()` or `&[SessionEvent]`) and returns every [`Violation`] it finds, each
//! naming the invariant of spec §12 it breaks and the seq where it shows, so a failing test
//! says *what* is wrong rather than that two logs differ.
//!
//! - [`check_seqs`]: invariant 1, `events[i].seq == i`.
//! - [`check_enclosure`]: invariant 4, turns and steps nest and number correctly and step
//!   content sits inside the step it names.
//! - [`check_tool_pairing`]: invariant 5, every requested tool call gets one `tool/call` and
//!   one `tool/result`, in model order.
//! - [`check_anchors`]: invariants 13/14, assistant messages cite exactly their attempt's
//!   chunks and carry its usage.
//! - [`check_all`]: all of the above.
//!
//! A log whose last turn is still open (a test inspecting a running agent) fails
//! [`check_enclosure`]; use [`Checks::allowing_open_turn`] for those.

mod anchors;
mod enclosure;
mod pairing;

use dsh_session::{EventData, SessionEvent, TurnEndReason};
use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;

/// The spec §12 invariants these checkers (and [`crate::recon`]) enforce.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Invariant {
    /// 1: `events[i].seq == i`.
    ContiguousSeqs,
    /// 2: every model request can be rebuilt from the log.
    ModelVisible,
    /// 4: turns and steps are balanced and their content is enclosed.
    BalancedEnclosure,
    /// 5: tool calls and results pair up in model order.
    ToolPairing,
    /// 13: an interrupted assistant message holds only visible text/reasoning.
    InterruptedPrefix,
    /// 14: each assistant message cites its own attempt's chunks and usage.
    CompletionAnchor,
}

impl Invariant {
    /// The invariant's number in spec §12.
    pub fn number(self) -> u8 {
        match self {
            Self::ContiguousSeqs => 1,
            Self::ModelVisible => 2,
            Self::BalancedEnclosure => 4,
            Self::ToolPairing => 5,
            Self::InterruptedPrefix => 13,
            Self::CompletionAnchor => 14,
        }
    }

    /// A short human name.
    pub fn title(self) -> &'static str {
        match self {
            Self::ContiguousSeqs => "contiguous seqs",
            Self::ModelVisible => "model-visible = recorded",
            Self::BalancedEnclosure => "balanced enclosure",
            Self::ToolPairing => "tool pairing",
            Self::InterruptedPrefix => "interrupted prefix",
            Self::CompletionAnchor => "completion anchor",
        }
    }
}

/// One broken rule, located in the log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub invariant: Invariant,
    /// The event where the problem shows, when there is one.
    pub seq: Option<u64>,
    pub message: String,
}

impl Violation {
    pub(crate) fn at(invariant: Invariant, seq: u64, message: impl Into<String>) -> Self {
        Self {
            invariant,
            seq: Some(seq),
            message: message.into(),
        }
    }

    pub(crate) fn global(invariant: Invariant, message: impl Into<String>) -> Self {
        Self {
            invariant,
            seq: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invariant {} ({})",
            self.invariant.number(),
            self.invariant.title()
        )?;
        if let Some(seq) = self.seq {
            write!(f, " at seq {seq}")?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Renders violations one per line, for assertion messages.
pub fn render(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Which checks run and how strict they are.
#[derive(Clone, Copy, Debug, Default)]
pub struct Checks {
    allow_open_turn: bool,
}

impl Checks {
    /// Every check, and the last turn must be closed.
    pub fn strict() -> Self {
        Self::default()
    }

    /// Every check, but the log may end inside a turn (or step) that is still running.
    pub fn allowing_open_turn() -> Self {
        Self {
            allow_open_turn: true,
        }
    }

    /// Runs every checker and gathers all violations.
    pub fn run<E: Borrow<SessionEvent>>(&self, events: &[E]) -> Result<(), Vec<Violation>> {
        let mut all = Vec::new();
        for result in [
            check_seqs(events),
            enclosure::check(events, self.allow_open_turn),
            check_tool_pairing(events),
            check_anchors(events),
        ] {
            if let Err(mut found) = result {
                all.append(&mut found);
            }
        }
        finish(all)
    }
}

/// Every checker, strict about an open last turn.
pub fn check_all<E: Borrow<SessionEvent>>(events: &[E]) -> Result<(), Vec<Violation>> {
    Checks::strict().run(events)
}

/// Runs [`check_all`] and panics with every violation rendered, for use in tests.
#[allow(clippy::panic)] // an assertion helper: failing loudly is its job
#[track_caller]
pub fn assert_log_ok<E: Borrow<SessionEvent>>(events: &[E]) {
    if let Err(violations) = check_all(events) {
        panic!("session log breaks invariants:\n{}", render(&violations));
    }
}

/// Invariant 1: every event's seq equals its index. Only the first break is reported, since
/// one missing event shifts everything after it.
pub fn check_seqs<E: Borrow<SessionEvent>>(events: &[E]) -> Result<(), Vec<Violation>> {
    let broken = events
        .iter()
        .map(Borrow::borrow)
        .zip(0u64..)
        .find(|(event, index)| event.seq != *index);
    match broken {
        None => Ok(()),
        Some((event, index)) => Err(vec![Violation::at(
            Invariant::ContiguousSeqs,
            event.seq,
            format!(
                "{} has seq {} at index {index}; seqs must equal their index",
                event.type_name(),
                event.seq
            ),
        )]),
    }
}

/// Invariant 4, strict about an open last turn.
pub fn check_enclosure<E: Borrow<SessionEvent>>(events: &[E]) -> Result<(), Vec<Violation>> {
    enclosure::check(events, false)
}

/// Invariant 5. A turn that ended `error` may lack pairs (the scheduler failed); a turn
/// closed by crash repair may hold results of calls that never started.
pub fn check_tool_pairing<E: Borrow<SessionEvent>>(events: &[E]) -> Result<(), Vec<Violation>> {
    finish(pairing::check(events))
}

/// Invariants 13 and 14: completion anchors, usage, and interrupted prefixes.
pub fn check_anchors<E: Borrow<SessionEvent>>(events: &[E]) -> Result<(), Vec<Violation>> {
    finish(anchors::check(events))
}

fn finish(violations: Vec<Violation>) -> Result<(), Vec<Violation>> {
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// How each turn number ended (the last `turn/end` naming it wins).
pub(crate) fn turn_outcomes<E: Borrow<SessionEvent>>(events: &[E]) -> HashMap<u64, TurnEndReason> {
    events
        .iter()
        .filter_map(|e| match &e.borrow().data {
            EventData::TurnEnd(end) => Some((end.turn, end.reason.clone())),
            _ => None,
        })
        .collect()
}

/// `(turn, step)` of events that belong to a step.
pub(crate) fn step_of(data: &EventData) -> Option<(u64, u64)> {
    match data {
        EventData::AssistantChunk(c) => Some((c.turn, c.step)),
        EventData::AssistantMessage(m) => Some((m.turn, m.step)),
        EventData::ToolCall(c) => Some((c.turn, c.step)),
        EventData::ToolResult(r) => Some((r.turn, r.step)),
        _ => None,
    }
}
