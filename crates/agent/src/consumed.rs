//! `fold_consumed_work`: what happened to the work a log consumed.
//!
//! Owners of an agent (a parent waiting on a sub-agent, a headless runner) use it to learn
//! how the latest turn that really consumed input ended, and whether queued input was
//! dropped unrun after it.

use dsh_session::{EventData, SessionEvent, SpliceOutcome, TurnEndReason};
use std::sync::Arc;

/// The turn that last consumed work.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumedTurn {
    pub turn: u64,
    /// Seq of its `turn/end`.
    pub seq: u64,
    pub reason: TurnEndReason,
}

/// Result of [`fold_consumed_work`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ConsumedWork {
    /// The latest `turn/end` of a turn that entered a step, or that claimed inbox input and
    /// ended other than `completed`.
    pub turn_end: Option<ConsumedTurn>,
    /// A cancellation splice that inserted nothing happened after that turn (pending input
    /// was thrown away unrun).
    pub dropped_unrun: bool,
}

/// Folds a log (pure; any slice of events in seq order).
pub fn fold_consumed_work(events: &[Arc<SessionEvent>]) -> ConsumedWork {
    let mut out = ConsumedWork::default();
    let mut open: Option<(bool, bool)> = None; // (entered a step, claimed input)
    for event in events {
        match &event.data {
            EventData::TurnStart(_) => open = Some((false, false)),
            EventData::StepStart(_) => {
                if let Some((stepped, _)) = open.as_mut() {
                    *stepped = true;
                }
            }
            EventData::InboxSpliced(splice) => {
                if splice.outcome == Some(SpliceOutcome::Canceled) {
                    if splice.inserted.is_empty() {
                        out.dropped_unrun = true;
                    }
                } else if splice.removed_count > 0 {
                    if let Some((_, claimed)) = open.as_mut() {
                        *claimed = true;
                    }
                }
            }
            EventData::TurnEnd(end) => {
                if let Some((stepped, claimed)) = open.take() {
                    let consumed =
                        stepped || (claimed && !matches!(end.reason, TurnEndReason::Completed));
                    if consumed {
                        out.turn_end = Some(ConsumedTurn {
                            turn: end.turn,
                            seq: event.seq,
                            reason: end.reason.clone(),
                        });
                        out.dropped_unrun = false;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::Message;
    use dsh_session::{
        InboxSplice, InboxTarget, StepBoundary, TurnEnd, TurnEndCancelCause, TurnStart,
    };

    fn log(data: Vec<EventData>) -> Vec<Arc<SessionEvent>> {
        data.into_iter()
            .enumerate()
            .map(|(seq, data)| {
                Arc::new(SessionEvent {
                    seq: seq as u64,
                    time: 0,
                    data,
                    ignorable: false,
                    surface_op: None,
                    source_event_seqs: None,
                })
            })
            .collect()
    }

    fn splice(removed: u64, inserted: usize, canceled: bool) -> EventData {
        EventData::InboxSpliced(InboxSplice {
            target: InboxTarget::NextTurn,
            start: 0,
            removed_count: removed,
            inserted: (0..inserted)
                .map(|_| Arc::new(Message::user_text("x")))
                .collect(),
            outcome: canceled.then_some(SpliceOutcome::Canceled),
        })
    }

    fn end(turn: u64, reason: TurnEndReason) -> EventData {
        EventData::TurnEnd(TurnEnd { turn, reason })
    }

    #[test]
    fn a_stepped_turn_is_consumed_and_later_drops_are_reported() {
        let events = log(vec![
            splice(0, 1, false),
            EventData::TurnStart(TurnStart { turn: 1 }),
            splice(1, 0, false),
            EventData::StepStart(StepBoundary { turn: 1, step: 1 }),
            EventData::StepEnd(StepBoundary { turn: 1, step: 1 }),
            end(1, TurnEndReason::Completed),
            splice(0, 1, false),
            splice(1, 0, true),
        ]);
        let work = fold_consumed_work(&events);
        assert_eq!(
            work,
            ConsumedWork {
                turn_end: Some(ConsumedTurn {
                    turn: 1,
                    seq: 5,
                    reason: TurnEndReason::Completed
                }),
                dropped_unrun: true,
            }
        );
    }

    #[test]
    fn a_claim_counts_only_when_the_turn_did_not_complete() {
        let aborted = TurnEndReason::Aborted {
            reason: TurnEndCancelCause::User,
        };
        let events = log(vec![
            EventData::TurnStart(TurnStart { turn: 1 }),
            splice(1, 0, false),
            end(1, TurnEndReason::Completed),
            EventData::TurnStart(TurnStart { turn: 2 }),
            splice(1, 0, false),
            end(2, aborted.clone()),
        ]);
        let work = fold_consumed_work(&events);
        assert_eq!(
            work.turn_end.map(|t| (t.turn, t.reason)),
            Some((2, aborted))
        );
        let only_completed = fold_consumed_work(&events[..3]);
        assert_eq!(only_completed, ConsumedWork::default());
    }
}
