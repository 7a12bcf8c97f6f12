//! Keeping the runtime-context projection in step with the log (spec §8.4).
//!
//! The projection is restored once from the log, then caught up with every event appended
//! since (by this loop or anyone else) right before it is consulted, so compaction replaces
//! and snapshots written by other plugins are seen in log order.

use dsh_prompt::{RuntimeContextProjection, RuntimeSnapshot};
use dsh_protocol::{Message, MessageId};
use dsh_session::{EventData, Session, SurfaceOp};
use std::collections::HashSet;

#[derive(Debug)]
pub(crate) struct ProjectionTracker {
    projection: RuntimeContextProjection,
    /// Events before this seq have been observed.
    observed: u64,
}

impl ProjectionTracker {
    /// The newest snapshot still on the surface is the retained one; shadowed snapshots
    /// count as "existed, none retained".
    pub(crate) fn restore(session: &Session) -> Self {
        let events = session.events();
        let surface: HashSet<u64> = session.surface().nodes.into_iter().collect();
        let entries = events.iter().filter_map(|event| match &event.data {
            EventData::UserMessage(message) => {
                Some((message.clone(), surface.contains(&event.seq)))
            }
            _ => None,
        });
        Self {
            projection: RuntimeContextProjection::restore(entries),
            observed: events.len() as u64,
        }
    }

    /// Observes everything appended since the last call.
    pub(crate) fn catch_up(&mut self, session: &Session) {
        let fresh = session.events_from(self.observed);
        if fresh.is_empty() {
            return;
        }
        let mut surface_ids: Option<HashSet<MessageId>> = None;
        for event in &fresh {
            match (&event.data, &event.surface_op) {
                (EventData::UserMessage(message), Some(SurfaceOp::Append)) => {
                    self.projection.observe_message(message);
                }
                (_, Some(SurfaceOp::Replace { .. })) => {
                    let ids = surface_ids.get_or_insert_with(|| {
                        session
                            .derive_messages()
                            .iter()
                            .map(|m| m.id.clone())
                            .collect()
                    });
                    self.projection.observe_replacement(|id| ids.contains(id));
                    if let EventData::UserMessage(message) = &event.data {
                        if ids.contains(&message.id) {
                            self.projection.observe_message(message);
                        }
                    }
                }
                _ => {}
            }
        }
        self.observed += fresh.len() as u64;
    }

    /// The snapshot message the next step needs, if the model's view is out of date.
    pub(crate) fn project(&self, current: &RuntimeSnapshot) -> Option<Message> {
        self.projection.project(current)
    }
}
