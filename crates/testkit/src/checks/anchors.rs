//! Invariants 13 and 14: an assistant message cites exactly the chunks of the model call
//! that produced it (`[]` when that call streamed nothing) and carries that call's usage; an
//! interrupted one keeps only visible text and reasoning.

use super::{turn_outcomes, Invariant, Violation};
use dsh_protocol::{ContentBlock, StreamChunk, TokenUsage};
use dsh_session::{EventData, SessionEvent, TurnEndReason};
use std::borrow::Borrow;
use std::collections::HashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// No attempt whose chunks could still be cited.
    Idle,
    /// Chunks arrived, no finish yet.
    Streaming,
    /// Finished successfully at this seq; its message is owed.
    Succeeded(u64),
    /// Finished `error`/`aborted`: its chunks stay log-only.
    Failed,
}

struct Attempt {
    seqs: Vec<u64>,
    usage: Option<TokenUsage>,
    state: State,
}

impl Default for Attempt {
    fn default() -> Self {
        Self {
            seqs: Vec::new(),
            usage: None,
            state: State::Idle,
        }
    }
}

pub(super) fn check<E: Borrow<SessionEvent>>(events: &[E]) -> Vec<Violation> {
    let outcomes = turn_outcomes(events);
    let mut steps: HashMap<(u64, u64), Attempt> = HashMap::new();
    let mut found = Vec::new();
    for event in events.iter().map(Borrow::borrow) {
        let seq = event.seq;
        match &event.data {
            EventData::AssistantChunk(c) => {
                let attempt = steps.entry((c.turn, c.step)).or_default();
                match attempt.state {
                    State::Streaming => attempt.seqs.push(seq),
                    state => {
                        if let State::Succeeded(finish) = state {
                            found.push(Violation::at(
                                Invariant::CompletionAnchor,
                                seq,
                                format!(
                                    "assistant/chunk after the successful finish at seq {finish} \
                                     and before its assistant/message"
                                ),
                            ));
                        }
                        *attempt = Attempt {
                            seqs: vec![seq],
                            usage: None,
                            state: State::Streaming,
                        };
                    }
                }
                match &c.chunk {
                    StreamChunk::Usage { usage } => attempt.usage = Some(*usage),
                    StreamChunk::Finish { reason, .. } => {
                        attempt.state = if reason.failure().is_some() {
                            State::Failed
                        } else {
                            State::Succeeded(seq)
                        };
                    }
                    _ => {}
                }
            }
            EventData::AssistantMessage(m) => {
                let attempt = steps.remove(&(m.turn, m.step)).unwrap_or_default();
                let (expected, usage) = match attempt.state {
                    State::Streaming | State::Succeeded(_) => (attempt.seqs, attempt.usage),
                    State::Idle | State::Failed => (Vec::new(), None),
                };
                if event.source_event_seqs.as_ref() != Some(&expected) {
                    found.push(Violation::at(
                        Invariant::CompletionAnchor,
                        seq,
                        format!(
                            "assistant/message cites {:?}, but its attempt's chunks are {expected:?}",
                            event.source_event_seqs
                        ),
                    ));
                }
                if m.usage != usage {
                    found.push(Violation::at(
                        Invariant::CompletionAnchor,
                        seq,
                        format!(
                            "assistant/message usage is {:?}, but its attempt reported {usage:?}",
                            m.usage
                        ),
                    ));
                }
                if m.interrupted {
                    check_interrupted(seq, &m.message.content, &mut found);
                }
            }
            EventData::StepEnd(s) => {
                let Some(attempt) = steps.remove(&(s.turn, s.step)) else {
                    continue;
                };
                let State::Succeeded(finish) = attempt.state else {
                    continue;
                };
                // An abort or failure after the finish legitimately drops the message, and so
                // does a crash before the message was stored: crash repair (the only source
                // of `interrupted`) closes the step without it.
                let excused = matches!(
                    outcomes.get(&s.turn),
                    None | Some(
                        TurnEndReason::Aborted { .. }
                            | TurnEndReason::Error { .. }
                            | TurnEndReason::Interrupted
                    )
                );
                if !excused {
                    found.push(Violation::at(
                        Invariant::CompletionAnchor,
                        finish,
                        format!(
                            "the model call that finished at seq {finish} has no assistant/message \
                             before step/end (seq {seq})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    found
}

fn check_interrupted(seq: u64, content: &[ContentBlock], found: &mut Vec<Violation>) {
    let visible = |text: &str| !text.trim().is_empty();
    let ok = !content.is_empty()
        && content.iter().all(|block| match block {
            ContentBlock::Text { text } | ContentBlock::Reasoning { text } => visible(text),
            _ => false,
        });
    if !ok {
        found.push(Violation::at(
            Invariant::InterruptedPrefix,
            seq,
            "an interrupted assistant/message must hold only non-blank text and reasoning blocks",
        ));
    }
}
