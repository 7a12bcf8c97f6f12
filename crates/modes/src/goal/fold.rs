//! The strict replay fold: the current goal rebuilt from a session log.
//!
//! Two kinds of event move it: `goal/change` (the whole post-change state, checked against
//! the state before it) and a `user/message` whose source is `{kind: "goal", goalId,
//! revision, round}` (an admitted round: it must be the next round of the current active
//! goal). Anything that breaks the rules fails the replay, naming the event; a log that
//! folds here is one the original accepts too.

use super::domain::{GoalChange, GoalError, GoalOperation, GoalPhase, GoalRef, GoalSnapshot};
use dsh_protocol::{Message, MessageSource};
use dsh_session::{EventData, SessionEvent};
use serde_json::Value;
use std::collections::HashSet;

/// The `source.kind` of a goal-round prompt.
pub const GOAL_SOURCE_KIND: &str = "goal";

/// The round a goal-sourced message claims (`source {kind:"goal", goalId, revision, round}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GoalRoundSource {
    pub goal_id: String,
    pub revision: u64,
    pub round: u64,
}

impl GoalRoundSource {
    /// The message source that marks a round prompt.
    pub fn to_source(&self) -> MessageSource {
        let mut map = serde_json::Map::new();
        map.insert("kind".into(), Value::from(GOAL_SOURCE_KIND));
        map.insert("goalId".into(), Value::from(self.goal_id.clone()));
        map.insert("revision".into(), Value::from(self.revision));
        map.insert("round".into(), Value::from(self.round));
        MessageSource::Other(map)
    }

    /// The round `message` claims: `Ok(None)` for any other source, an error for a goal
    /// source that is malformed.
    pub fn of(message: &Message) -> Result<Option<Self>, String> {
        let MessageSource::Other(map) = &message.source else {
            return Ok(None);
        };
        if map.get("kind").and_then(Value::as_str) != Some(GOAL_SOURCE_KIND) {
            return Ok(None);
        }
        let goal_id = map.get("goalId").and_then(Value::as_str).unwrap_or("");
        let revision = map.get("revision").and_then(Value::as_u64).unwrap_or(0);
        let round = map.get("round").and_then(Value::as_u64).unwrap_or(0);
        if goal_id.is_empty() || revision < 1 || round < 1 {
            return Err("goal message source is invalid".into());
        }
        Ok(Some(Self {
            goal_id: goal_id.to_owned(),
            revision,
            round,
        }))
    }
}

/// The durable goal state of one log: what the last `goal/change` left, plus admitted rounds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GoalFold {
    goal: Option<GoalSnapshot>,
    rounds_started: u64,
    created_at: Option<u64>,
    updated_at: Option<u64>,
    last_ref: Option<GoalRef>,
    seen: HashSet<String>,
}

impl GoalFold {
    pub fn new() -> Self {
        Self::default()
    }

    /// The current goal (none before the first create and after a clear).
    pub fn goal(&self) -> Option<&GoalSnapshot> {
        self.goal.as_ref()
    }

    pub fn rounds_started(&self) -> u64 {
        self.rounds_started
    }

    pub fn created_at(&self) -> Option<u64> {
        self.created_at
    }

    pub fn updated_at(&self) -> Option<u64> {
        self.updated_at
    }

    /// The identity of the last change (a clear's tombstone included).
    pub fn last_ref(&self) -> Option<&GoalRef> {
        self.last_ref.as_ref()
    }

    /// Folds one event; events that are neither goal changes nor goal rounds pass untouched.
    pub fn apply(&mut self, event: &SessionEvent) -> Result<(), GoalError> {
        let fail = |reason: String| GoalError::Replay {
            seq: event.seq,
            reason,
        };
        match &event.data {
            EventData::UserMessage(message) => {
                // Cheap pre-check: only `Other` sources can be goal rounds.
                if !matches!(message.source, MessageSource::Other(_)) {
                    return Ok(());
                }
                let Some(source) = GoalRoundSource::of(message).map_err(fail)? else {
                    return Ok(());
                };
                self.admit_round(&source).map_err(fail)
            }
            EventData::Other { type_name, .. } if type_name == "goal/change" => {
                let change = match event.decode::<GoalChange>() {
                    Some(Ok(change)) => change,
                    Some(Err(error)) => return Err(fail(error.to_string())),
                    None => return Ok(()),
                };
                self.apply_change(&change).map_err(fail)
            }
            _ => Ok(()),
        }
    }

    /// Folds one decoded change.
    pub fn apply_change(&mut self, change: &GoalChange) -> Result<(), String> {
        match change {
            GoalChange::Clear {
                cleared,
                cleared_at,
            } => {
                let current = self
                    .goal
                    .as_ref()
                    .ok_or("goal clear requires a current goal")?;
                require_next_revision(current, cleared, GoalOperation::Clear)?;
                if Some(*cleared_at) < self.updated_at {
                    return Err(
                        "goal clear timestamp cannot precede the current goal update".into(),
                    );
                }
                self.goal = None;
                self.rounds_started = 0;
                self.created_at = None;
                self.updated_at = None;
                self.last_ref = Some(cleared.clone());
                Ok(())
            }
            GoalChange::Snapshot {
                operation,
                goal,
                rounds_started,
                created_at,
                updated_at,
            } => {
                if *operation == GoalOperation::Create {
                    let unfinished = self
                        .goal
                        .as_ref()
                        .is_some_and(|g| g.phase != GoalPhase::Complete);
                    if goal.revision != 1
                        || goal.phase != GoalPhase::Active
                        || *rounds_started != 0
                        || unfinished
                        || self.seen.contains(&goal.id)
                    {
                        return Err(
                            "goal create requires a fresh active revision-one goal with zero rounds"
                                .into(),
                        );
                    }
                    self.seen.insert(goal.id.clone());
                } else {
                    let current = self
                        .goal
                        .as_ref()
                        .ok_or_else(|| format!("goal {operation} requires a current goal"))?;
                    require_next_revision(current, &goal.reference(), *operation)?;
                    if Some(*created_at) != self.created_at
                        || Some(*updated_at) < self.updated_at
                        || *rounds_started != self.rounds_started
                    {
                        return Err(format!(
                            "goal {operation} does not preserve the current counters and timestamps"
                        ));
                    }
                    check_transition(current, goal, *operation, self.rounds_started)?;
                }
                self.goal = Some(goal.clone());
                self.rounds_started = *rounds_started;
                self.created_at = Some(*created_at);
                self.updated_at = Some(*updated_at);
                self.last_ref = Some(goal.reference());
                Ok(())
            }
        }
    }

    /// Whether `source` is the next admissible round of the current goal.
    pub fn check_round(&self, source: &GoalRoundSource) -> Result<(), String> {
        let valid = self.goal.as_ref().is_some_and(|goal| {
            goal.phase == GoalPhase::Active
                && source.goal_id == goal.id
                && source.revision == goal.revision
                && source.round == self.rounds_started + 1
                && source.round <= goal.max_goal_rounds
        });
        if valid {
            Ok(())
        } else {
            Err("goal round is not the next admitted round of the active goal".into())
        }
    }

    fn admit_round(&mut self, source: &GoalRoundSource) -> Result<(), String> {
        self.check_round(source)?;
        self.rounds_started = source.round;
        Ok(())
    }
}

fn require_next_revision(
    current: &GoalSnapshot,
    next: &GoalRef,
    operation: GoalOperation,
) -> Result<(), String> {
    if next.id != current.id || next.revision != current.revision + 1 {
        return Err(format!(
            "goal {operation} must advance the current goal by one revision"
        ));
    }
    Ok(())
}

fn check_transition(
    current: &GoalSnapshot,
    next: &GoalSnapshot,
    operation: GoalOperation,
    rounds_started: u64,
) -> Result<(), String> {
    let same_definition = || {
        if next.objective != current.objective || next.max_goal_rounds != current.max_goal_rounds {
            Err(format!(
                "goal {operation} cannot change objective or maxGoalRounds"
            ))
        } else {
            Ok(())
        }
    };
    let invalid = || Err(format!("goal {operation} has an invalid phase transition"));
    use GoalPhase::*;
    match operation {
        GoalOperation::Edit => {
            if next.phase != current.phase || next.blocked_reason != current.blocked_reason {
                return Err("goal edit cannot change phase or blocked reason".into());
            }
            Ok(())
        }
        GoalOperation::Pause => {
            same_definition()?;
            if current.phase != Active || next.phase != Paused {
                return invalid();
            }
            Ok(())
        }
        GoalOperation::Resume => {
            same_definition()?;
            if current.phase == Complete
                || next.phase != Active
                || rounds_started >= next.max_goal_rounds
            {
                return Err(
                    "goal resume has an invalid phase transition or exhausted round budget".into(),
                );
            }
            Ok(())
        }
        GoalOperation::Complete => {
            same_definition()?;
            if current.phase == Complete || next.phase != Complete {
                return invalid();
            }
            Ok(())
        }
        GoalOperation::Block => {
            same_definition()?;
            if current.phase != Active || next.phase != Blocked {
                return invalid();
            }
            Ok(())
        }
        GoalOperation::Create | GoalOperation::Clear => invalid(),
    }
}

/// Folds a whole log (strict): the goal state at its end.
pub fn fold_goal<E: std::borrow::Borrow<SessionEvent>>(
    events: &[E],
) -> Result<GoalFold, GoalError> {
    let mut fold = GoalFold::new();
    for event in events {
        fold.apply(event.borrow())?;
    }
    Ok(fold)
}
