//! The inbox: an agent's pending input, a projection of durable `agent/inbox/spliced` events.
//!
//! Two ordered lists: `next-turn` (queued prompts, one per turn) and `next-step` (steering,
//! injected context, tool-result contexts). Every mutation is one splice that is validated,
//! written to the log *first*, applied to memory, and only then announced — so observers of
//! `session/event` still see the pre-splice lists and can recover removed messages from
//! the splice coordinates, and a refused write changes nothing.

use crate::error::AgentError;
use crate::events::{AgentEvents, ClaimedMessage, InboxClaimed, InboxDiscarded, InboxInserted};
use dsh_protocol::{Message, MessageId};
use dsh_session::{AppendOptions, EventData, InboxSplice, InboxTarget, Session, SpliceOutcome};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

#[derive(Clone, Debug, Default, PartialEq)]
struct Lists {
    next_turn: Vec<Arc<Message>>,
    next_step: Vec<Arc<Message>>,
}

impl Lists {
    fn get(&self, target: InboxTarget) -> &Vec<Arc<Message>> {
        match target {
            InboxTarget::NextTurn => &self.next_turn,
            InboxTarget::NextStep => &self.next_step,
        }
    }

    fn get_mut(&mut self, target: InboxTarget) -> &mut Vec<Arc<Message>> {
        match target {
            InboxTarget::NextTurn => &mut self.next_turn,
            InboxTarget::NextStep => &mut self.next_step,
        }
    }

    /// Checks a splice against the current lists (spec §3.5).
    fn check(&self, splice: &InboxSplice) -> Result<(), Problem> {
        let list = self.get(splice.target);
        let len = list.len() as u64;
        if splice.start > MAX_SAFE_INTEGER || splice.removed_count > MAX_SAFE_INTEGER {
            return Err(Problem::Invalid("coordinates must be safe integers".into()));
        }
        if splice.start > len {
            return Err(Problem::Invalid(format!(
                "start {} is past the end of {} pending messages",
                splice.start, len
            )));
        }
        if splice.start + splice.removed_count > len {
            return Err(Problem::Invalid(format!(
                "removing {} messages from {} exceeds {} pending messages",
                splice.removed_count, splice.start, len
            )));
        }
        let (start, end) = (
            splice.start as usize,
            (splice.start + splice.removed_count) as usize,
        );
        let other = match splice.target {
            InboxTarget::NextTurn => &self.next_step,
            InboxTarget::NextStep => &self.next_turn,
        };
        let mut ids: HashSet<&MessageId> = other.iter().map(|m| &m.id).collect();
        ids.extend(list[..start].iter().map(|m| &m.id));
        ids.extend(list[end..].iter().map(|m| &m.id));
        for message in &splice.inserted {
            if !ids.insert(&message.id) {
                return Err(Problem::Duplicate(message.id.clone()));
            }
        }
        Ok(())
    }

    /// Applies a checked splice; returns the removed messages.
    fn apply(&mut self, splice: &InboxSplice) -> Vec<Arc<Message>> {
        let list = self.get_mut(splice.target);
        let start = (splice.start as usize).min(list.len());
        let end = (start + splice.removed_count as usize).min(list.len());
        list.splice(start..end, splice.inserted.iter().cloned())
            .collect()
    }
}

enum Problem {
    Invalid(String),
    Duplicate(MessageId),
}

impl Problem {
    fn reason(&self) -> String {
        match self {
            Self::Invalid(reason) => reason.clone(),
            Self::Duplicate(id) => format!("message \"{id}\" is already pending"),
        }
    }
}

/// What one committed splice did, for notifications.
struct Applied {
    removed: Vec<Arc<Message>>,
    inserted: Vec<Arc<Message>>,
}

thread_local! {
    static THREAD_MARK: u8 = const { 0 };
}

/// A per-thread identity (the address of a thread-local), to refuse same-thread reentry.
fn thread_token() -> usize {
    THREAD_MARK.with(|mark| mark as *const u8 as usize)
}

use dsh_kernel::sync::lock;

/// Serializes mutations; released before notifications so listeners may mutate again.
struct Gate<'a> {
    _guard: MutexGuard<'a, ()>,
    owner: &'a AtomicUsize,
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        self.owner.store(0, Ordering::SeqCst);
    }
}

/// An agent's pending input. See the module docs for the mutation pipeline.
pub struct Inbox {
    session: Session,
    events: AgentEvents,
    lists: Mutex<Lists>,
    gate: Mutex<()>,
    gate_owner: AtomicUsize,
}

impl fmt::Debug for Inbox {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lists = lock(&self.lists);
        f.debug_struct("Inbox")
            .field("next_turn", &lists.next_turn.len())
            .field("next_step", &lists.next_step.len())
            .finish()
    }
}

impl Inbox {
    /// Rebuilds the inbox by replaying the session's splices from `header.seed_length`
    /// (a fork does not inherit its parent's pending items; a resumed log replays all of
    /// its own). Nothing is announced and nothing wakes.
    pub fn restore(session: Session, events: AgentEvents) -> Result<Self, AgentError> {
        let from = session.header().seed_length.unwrap_or(0);
        let mut lists = Lists::default();
        for event in session.events_from(from) {
            if let EventData::InboxSpliced(splice) = &event.data {
                lists
                    .check(splice)
                    .map_err(|problem| AgentError::InvalidPersistedSplice {
                        seq: event.seq,
                        reason: problem.reason(),
                    })?;
                lists.apply(splice);
            }
        }
        Ok(Self {
            session,
            events,
            lists: Mutex::new(lists),
            gate: Mutex::new(()),
            gate_owner: AtomicUsize::new(0),
        })
    }

    /// Queued prompts, oldest first.
    pub fn next_turn(&self) -> Vec<Arc<Message>> {
        lock(&self.lists).next_turn.clone()
    }

    /// Pending next-step input, oldest first.
    pub fn next_step(&self) -> Vec<Arc<Message>> {
        lock(&self.lists).next_step.clone()
    }

    pub fn has_pending(&self) -> bool {
        let lists = lock(&self.lists);
        !lists.next_turn.is_empty() || !lists.next_step.is_empty()
    }

    pub fn has_next_step(&self) -> bool {
        !lock(&self.lists).next_step.is_empty()
    }

    /// Appends `message` at the end of `target`.
    pub fn append(
        &self,
        target: InboxTarget,
        message: impl Into<Arc<Message>>,
    ) -> Result<(), AgentError> {
        let applied = self.mutate(target, i64::MAX, 0, vec![message.into()], false)?;
        self.notify(applied, false);
        Ok(())
    }

    /// Inserts `message` at the front of `target`.
    pub fn prepend(
        &self,
        target: InboxTarget,
        message: impl Into<Arc<Message>>,
    ) -> Result<(), AgentError> {
        let applied = self.mutate(target, 0, 0, vec![message.into()], false)?;
        self.notify(applied, false);
        Ok(())
    }

    /// Replaces the pending message `id` in place (looked up in next-turn, then next-step).
    /// Logged as a cancellation; announces `discarded(old)` then `inserted(new)`. False when
    /// `id` is not pending.
    pub fn replace(
        &self,
        id: &MessageId,
        message: impl Into<Arc<Message>>,
    ) -> Result<bool, AgentError> {
        let Some((target, index)) = self.locate(id) else {
            return Ok(false);
        };
        let applied = self.mutate(target, index, 1, vec![message.into()], true)?;
        self.notify(applied, true);
        Ok(true)
    }

    /// Removes the pending message `id` (logged as a cancellation). False when not pending.
    pub fn remove(&self, id: &MessageId) -> Result<bool, AgentError> {
        let Some((target, index)) = self.locate(id) else {
            return Ok(false);
        };
        let applied = self.mutate(target, index, 1, Vec::new(), true)?;
        self.notify(applied, true);
        Ok(true)
    }

    /// Cancels everything pending: next-step first, then next-turn.
    pub fn clear(&self) -> Result<(), AgentError> {
        for target in [InboxTarget::NextStep, InboxTarget::NextTurn] {
            let applied = self.mutate(target, 0, i64::MAX, Vec::new(), true)?;
            self.notify(applied, true);
        }
        Ok(())
    }

    /// A discard-style splice with JavaScript `Array.splice` coordinates: negative `start`
    /// counts from the end, both are clamped to the list. Returns the removed messages.
    pub fn splice(
        &self,
        target: InboxTarget,
        start: i64,
        delete_count: i64,
        inserted: Vec<Message>,
    ) -> Result<Vec<Arc<Message>>, AgentError> {
        let inserted = inserted.into_iter().map(Arc::new).collect();
        let applied = self.mutate(target, start, delete_count, inserted, true)?;
        let removed = applied
            .as_ref()
            .map(|a| a.removed.clone())
            .unwrap_or_default();
        self.notify(applied, true);
        Ok(removed)
    }

    /// Takes the input of one pre-step: all of next-step, then (at a turn boundary) the first
    /// queued prompt. Pure deletions (no outcome, no `discarded`); `claimed` is announced per
    /// message afterwards. Loop-internal.
    pub fn claim(&self, target: InboxTarget, turn: u64) -> Result<Vec<Arc<Message>>, AgentError> {
        let mut claimed = Vec::new();
        if let Some(applied) = self.mutate(InboxTarget::NextStep, 0, i64::MAX, Vec::new(), false)? {
            claimed.extend(applied.removed);
        }
        if target == InboxTarget::NextTurn {
            if let Some(applied) = self.mutate(InboxTarget::NextTurn, 0, 1, Vec::new(), false)? {
                claimed.extend(applied.removed);
            }
        }
        for message in &claimed {
            self.events.emit::<InboxClaimed, _>(ClaimedMessage {
                message: message.clone(),
                turn,
            });
        }
        Ok(claimed)
    }

    fn locate(&self, id: &MessageId) -> Option<(InboxTarget, i64)> {
        let lists = lock(&self.lists);
        [InboxTarget::NextTurn, InboxTarget::NextStep]
            .into_iter()
            .find_map(|target| {
                lists
                    .get(target)
                    .iter()
                    .position(|m| &m.id == id)
                    .map(|index| (target, index as i64))
            })
    }

    fn enter_gate(&self) -> Result<Gate<'_>, AgentError> {
        let me = thread_token();
        if self.gate_owner.load(Ordering::SeqCst) == me {
            return Err(AgentError::InboxReentered);
        }
        let guard = lock(&self.gate);
        self.gate_owner.store(me, Ordering::SeqCst);
        Ok(Gate {
            _guard: guard,
            owner: &self.gate_owner,
        })
    }

    /// Normalize, validate, log, apply (spec §3.3 steps 1–6). `None` = nothing to do.
    fn mutate(
        &self,
        target: InboxTarget,
        start: i64,
        delete_count: i64,
        inserted: Vec<Arc<Message>>,
        discard: bool,
    ) -> Result<Option<Applied>, AgentError> {
        let _gate = self.enter_gate()?;
        let splice = {
            let lists = lock(&self.lists);
            let len = lists.get(target).len() as i64;
            let start = if start < 0 {
                (len + start).max(0)
            } else {
                start.min(len)
            };
            let removed = delete_count.clamp(0, len - start);
            if removed == 0 && inserted.is_empty() {
                return Ok(None);
            }
            let splice = InboxSplice {
                target,
                start: start as u64,
                removed_count: removed as u64,
                inserted,
                outcome: (discard && removed > 0).then_some(SpliceOutcome::Canceled),
            };
            lists.check(&splice).map_err(|problem| match problem {
                Problem::Duplicate(id) => AgentError::DuplicatePending { id },
                Problem::Invalid(reason) => AgentError::message(reason),
            })?;
            splice
        };
        let event = self
            .session
            .append(EventData::InboxSpliced(splice), AppendOptions::log_only())?;
        let EventData::InboxSpliced(logged) = &event.data else {
            return Err(AgentError::message(
                "the log returned a different event type",
            ));
        };
        let removed = lock(&self.lists).apply(logged);
        Ok(Some(Applied {
            removed,
            inserted: logged.inserted.clone(),
        }))
    }

    fn notify(&self, applied: Option<Applied>, discard: bool) {
        let Some(applied) = applied else { return };
        if discard {
            for message in applied.removed {
                self.events.emit::<InboxDiscarded, _>(message);
            }
        }
        for message in applied.inserted {
            self.events.emit::<InboxInserted, _>(message);
        }
    }
}

#[cfg(test)]
mod tests;
