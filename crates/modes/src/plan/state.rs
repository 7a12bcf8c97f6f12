//! The plan-mode state: folded from `plan/mode` records, plus a selection waiting for the
//! next step boundary.

use dsh_agent::Agent;
use dsh_kernel::sync::lock;
use dsh_protocol::{ContentBlock, Message, MessageSource, Role, SessionId};
use dsh_session::{EventData, EventDeclaration, PluginEvent, Session, SessionError, SessionEvent};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map};
use std::collections::HashMap;
use std::sync::Mutex;

/// `plan/mode {active}`: whether plan mode is in force from here on (log-only, whole value;
/// the last one wins; none means off).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanModeSet {
    pub active: bool,
}

impl PluginEvent for PlanModeSet {
    const TYPE: &'static str = "plan/mode";
}

/// The session event types this module writes.
pub static EVENT_TYPES: &[EventDeclaration] = &[EventDeclaration::of::<PlanModeSet>()];

/// Whether plan mode is active after `events` (the last `plan/mode` wins; none is off).
pub fn fold_plan_mode(events: &[std::sync::Arc<SessionEvent>]) -> bool {
    events
        .iter()
        .rev()
        .find_map(|event| event.decode::<PlanModeSet>())
        .and_then(Result::ok)
        .is_some_and(|set| set.active)
}

/// Whether plan mode is active in `session`: [`fold_plan_mode`] over its whole log, answered
/// from the session's newest `plan/mode` instead of a scan, since it is asked at every step.
pub fn session_plan_mode(session: &Session) -> bool {
    session
        .newest_decoded::<PlanModeSet>()
        .and_then(Result::ok)
        .is_some_and(|set| set.active)
}

/// Plan state at the last `request/header`: what the model was last told. `None` before the
/// first request.
fn plan_at_last_header(events: &[std::sync::Arc<SessionEvent>]) -> Option<bool> {
    let header = events
        .iter()
        .rposition(|e| matches!(e.data, EventData::RequestHeader(_)))?;
    Some(fold_plan_mode(&events[..=header]))
}

/// Whether the log has a `turn/start` without its `turn/end`.
fn has_open_turn(events: &[std::sync::Arc<SessionEvent>]) -> bool {
    events
        .iter()
        .rev()
        .find_map(|e| match e.data {
            EventData::TurnStart(_) => Some(true),
            EventData::TurnEnd(_) => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

/// What [`PlanMode::set`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOutcome {
    /// Logged now (no turn was open).
    Committed,
    /// Waits for the next accepted step of the open turn.
    Queued,
    /// An opposite pending selection was dropped; the log already says so.
    Cancelled,
    /// Already in that state.
    Noop,
}

/// The logged state and a selection waiting for the next step boundary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanState {
    pub active: bool,
    pub pending: Option<bool>,
}

impl PlanState {
    /// Whether the plan policy applies now: the pending selection, else the logged state.
    pub fn in_force(&self) -> bool {
        self.pending.unwrap_or(self.active)
    }
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    active: bool,
    /// A person's switch is narrated to the model; an approved plan's exit is not (the tool
    /// result already says so).
    narrate: bool,
}

/// The `plan-mode` service: per-session pending selections over the logged state.
#[derive(Debug, Default)]
pub struct PlanMode {
    pending: Mutex<HashMap<SessionId, Pending>>,
}

impl PlanMode {
    pub fn new() -> Self {
        Self::default()
    }

    /// The logged state and any pending selection of `session`.
    pub fn state(&self, session: &Session) -> PlanState {
        PlanState {
            active: session_plan_mode(session),
            pending: lock(&self.pending).get(session.id()).map(|p| p.active),
        }
    }

    /// Selects plan mode on or off for `agent`. Without an open turn the change is logged at
    /// once (and, when the model last saw the other mode, a notice is injected for its next
    /// turn); inside a turn it waits for the next accepted pre-step.
    pub fn set(&self, agent: &dyn Agent, active: bool) -> Result<SetOutcome, SessionError> {
        let session = agent.session();
        let events = session.events();
        let logged = fold_plan_mode(&events);
        let mut pending = lock(&self.pending);
        let target = pending.get(session.id()).map_or(logged, |p| p.active);
        if active == target {
            return Ok(SetOutcome::Noop);
        }
        if has_open_turn(&events) {
            pending.insert(
                session.id().clone(),
                Pending {
                    active,
                    narrate: true,
                },
            );
            return Ok(if logged == active {
                SetOutcome::Cancelled
            } else {
                SetOutcome::Queued
            });
        }
        if active == logged {
            pending.remove(session.id());
            return Ok(SetOutcome::Cancelled);
        }
        drop(pending);
        session.append_typed(&PlanModeSet { active })?;
        lock(&self.pending).remove(session.id());
        if let Some(notice) = narration(&session.events(), active) {
            if let Err(error) = agent.inject(notice) {
                tracing::warn!(%error, "plan-mode: could not queue the mode-switch notice");
            }
        }
        Ok(SetOutcome::Committed)
    }

    /// An approved plan: leave plan mode silently at the next accepted pre-step.
    pub(crate) fn approve(&self, session: &SessionId) {
        lock(&self.pending).insert(
            session.clone(),
            Pending {
                active: false,
                narrate: false,
            },
        );
    }

    /// At an accepted pre-step: logs the pending selection (unless the log already says so)
    /// and returns the notice to add to the step's messages, if any. A failed append keeps the
    /// selection pending for a later step.
    pub(crate) fn at_boundary(&self, session: &Session) -> Option<Message> {
        let pending = lock(&self.pending).get(session.id()).copied()?;
        let events = session.events();
        let notice = pending
            .narrate
            .then(|| narration(&events, pending.active))
            .flatten();
        if fold_plan_mode(&events) != pending.active {
            if let Err(error) = session.append_typed(&PlanModeSet {
                active: pending.active,
            }) {
                tracing::warn!(%error, "plan-mode: could not log the selected mode at step start");
                return None;
            }
        }
        lock(&self.pending).remove(session.id());
        notice
    }

    pub(crate) fn forget(&self, session: &SessionId) {
        lock(&self.pending).remove(session);
    }
}

/// The user-switch notice, when the last logged request described the other mode.
fn narration(events: &[std::sync::Arc<SessionEvent>], target: bool) -> Option<Message> {
    let told = plan_at_last_header(events)?;
    if told == target {
        return None;
    }
    let text = if target {
        "The user switched this session to plan mode."
    } else {
        "The user switched this session back to the default mode."
    };
    let mut extra = Map::new();
    extra.insert("form".into(), json!("notice"));
    extra.insert("summary".into(), json!(text));
    Some(Message::new(
        Role::User,
        vec![ContentBlock::text(text)],
        MessageSource::Plugin {
            plugin: "plan-mode".into(),
            extra,
        },
    ))
}
