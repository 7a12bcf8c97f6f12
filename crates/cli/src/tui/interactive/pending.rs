//! The agent's pending input as the UI shows it, folded from `agent/inbox/spliced` events.
//!
//! The queue on screen is a projection of the log, like everything else: a follow-up stays
//! listed until the agent claims it for a turn, survives a cancel (the inbox is kept), and
//! a resumed session shows what was still queued when it was left.

use dsh_protocol::{Message, MessageSource};
use dsh_session::{EventData, InboxSplice, InboxTarget, SessionEvent};
use std::sync::Arc;

/// Pending next-turn and next-step messages.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PendingInput {
    next_turn: Vec<Arc<Message>>,
    next_step: Vec<Arc<Message>>,
}

impl PendingInput {
    pub fn from_events<'a>(events: impl IntoIterator<Item = &'a Arc<SessionEvent>>) -> Self {
        let mut pending = Self::default();
        for event in events {
            pending.apply(event);
        }
        pending
    }

    pub fn apply(&mut self, event: &SessionEvent) {
        if let EventData::InboxSpliced(splice) = &event.data {
            self.splice(splice);
        }
    }

    fn splice(&mut self, splice: &InboxSplice) {
        let list = match splice.target {
            InboxTarget::NextTurn => &mut self.next_turn,
            InboxTarget::NextStep => &mut self.next_step,
        };
        let start = usize::try_from(splice.start)
            .unwrap_or(usize::MAX)
            .min(list.len());
        let end = usize::try_from(splice.removed_count)
            .unwrap_or(usize::MAX)
            .saturating_add(start)
            .min(list.len());
        list.splice(start..end, splice.inserted.iter().cloned());
    }

    /// Queued follow-ups typed by the person, oldest first.
    pub fn follow_ups(&self) -> Vec<String> {
        typed(&self.next_turn)
    }

    /// Steering typed by the person and not yet read by the agent.
    pub fn steering(&self) -> Vec<String> {
        typed(&self.next_step)
    }
}

fn typed(list: &[Arc<Message>]) -> Vec<String> {
    list.iter()
        .filter(|m| matches!(m.source, MessageSource::User { .. }))
        .map(|m| m.text())
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn splice(target: &str, start: u64, removed: u64, texts: &[&str]) -> SessionEvent {
        let inserted: Vec<_> = texts
            .iter()
            .map(|t| {
                json!({"id": format!("m-{t}"), "role": "user", "source": {"kind": "user"},
                "content": [{"type": "text", "text": t}]})
            })
            .collect();
        let mut data = json!({"target": target, "start": start, "inserted": inserted});
        if removed > 0 {
            data["removedCount"] = json!(removed);
        }
        SessionEvent::from_value(
            &json!({"type": "agent/inbox/spliced", "seq": 0, "time": 0, "data": data}),
        )
        .unwrap()
    }

    #[test]
    fn splices_insert_and_claims_remove() {
        let mut pending = PendingInput::default();
        pending.apply(&splice("next-turn", 0, 0, &["a", "b"]));
        pending.apply(&splice("next-step", 0, 0, &["steer"]));
        assert_eq!(pending.follow_ups(), ["a", "b"]);
        assert_eq!(pending.steering(), ["steer"]);
        pending.apply(&splice("next-turn", 0, 1, &[]));
        pending.apply(&splice("next-step", 0, 1, &[]));
        assert_eq!(pending.follow_ups(), ["b"]);
        assert!(pending.steering().is_empty());
        // Out-of-range coordinates from a damaged log clamp instead of panicking.
        pending.apply(&splice("next-turn", 9, 9, &["c"]));
        assert_eq!(pending.follow_ups(), ["b", "c"]);
    }
}
