//! The [`Goals`] service: the goal verbs over a live agent's log.
//!
//! The log is the only durable state: each verb checks its compare-and-set reference and
//! phase against the strict fold of the agent's session, appends one `goal/change`, and then
//! announces it live ([`GoalChanged`]). Activation (whether rounds may start by themselves)
//! is kept per session in memory and starts `Disarmed` at every session start.

use super::domain::{
    check_max_rounds, check_objective, Activation, BlockReason, GoalChange, GoalError,
    GoalOperation, GoalPhase, GoalRef, GoalSnapshot, GoalView,
};
use super::fold::GoalFold;
use dsh_agent::{Agent, AgentRegistry};
use dsh_kernel::sync::lock;
use dsh_kernel::{Context, Event, Notification};
use dsh_protocol::SessionId;
use dsh_session::Session;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// `goal/changed` (live, not persisted): a goal verb committed its `goal/change`. Carried by
/// the agent's scope, so an agent's own listeners hear it.
#[derive(Debug)]
pub struct GoalChanged;
impl Event for GoalChanged {
    const NAME: &'static str = "goal/changed";
}
impl Notification for GoalChanged {
    type Payload = GoalChangedEvent;
}

/// Payload of [`GoalChanged`].
#[derive(Clone)]
pub struct GoalChangedEvent {
    pub agent: Arc<dyn Agent>,
    pub operation: GoalOperation,
    /// The revision written (the tombstone's for a clear).
    pub reference: GoalRef,
    /// The goal after the change (`None` after a clear).
    pub goal: Option<GoalView>,
}

impl std::fmt::Debug for GoalChangedEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalChangedEvent")
            .field("agent", self.agent.id())
            .field("operation", &self.operation)
            .field("reference", &self.reference)
            .finish_non_exhaustive()
    }
}

/// One session's fold, how far it has read, and its activation.
struct Cache {
    fold: GoalFold,
    observed: u64,
    activation: Activation,
    /// Set once the log broke the goal rules; every later read reports it.
    broken: Option<GoalError>,
}

impl Cache {
    fn new() -> Self {
        Self {
            fold: GoalFold::new(),
            observed: 0,
            activation: Activation::Disarmed,
            broken: None,
        }
    }

    /// Folds what the session appended since the last read. Only this service writes
    /// `goal/change` in a live session, and each commit sets the activation it leaves.
    fn sync(&mut self, session: &Session) -> Result<(), GoalError> {
        if let Some(error) = &self.broken {
            return Err(error.clone());
        }
        if self.observed >= session.len() {
            return Ok(());
        }
        for event in session.events_from(self.observed) {
            if let Err(error) = self.fold.apply(&event) {
                self.broken = Some(error.clone());
                return Err(error);
            }
            self.observed = event.seq + 1;
        }
        Ok(())
    }

    fn view(&self) -> Option<GoalView> {
        let goal = self.fold.goal()?.clone();
        Some(GoalView {
            goal,
            rounds_started: self.fold.rounds_started(),
            created_at: self.fold.created_at().unwrap_or(0),
            updated_at: self.fold.updated_at().unwrap_or(0),
            activation: self.activation,
        })
    }
}

/// The goal service (a kernel service, one per process). See the module docs.
pub struct Goals {
    ctx: Context,
    default_max_rounds: u64,
    caches: Mutex<HashMap<SessionId, Cache>>,
    /// Serializes mutations across check-and-append, so two verbs never both write the next
    /// revision. Never held while announcing, so a `goal/changed` listener may call a verb.
    writing: Mutex<()>,
}

impl std::fmt::Debug for Goals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Goals")
            .field("default_max_rounds", &self.default_max_rounds)
            .finish_non_exhaustive()
    }
}

impl Goals {
    /// A service announcing through `ctx`; creates use `default_max_rounds` when the caller
    /// names no cap.
    pub fn new(ctx: Context, default_max_rounds: u64) -> Result<Self, GoalError> {
        Ok(Self {
            ctx,
            default_max_rounds: check_max_rounds(default_max_rounds)?,
            caches: Mutex::default(),
            writing: Mutex::default(),
        })
    }

    pub fn default_max_rounds(&self) -> u64 {
        self.default_max_rounds
    }

    /// The agent's current goal (`None` when it has none).
    pub fn get(&self, agent: &Arc<dyn Agent>) -> Result<Option<GoalView>, GoalError> {
        self.read(agent.session())
    }

    /// The current goal of a live session, read without the liveness check.
    pub fn read(&self, session: &Session) -> Result<Option<GoalView>, GoalError> {
        let mut caches = lock(&self.caches);
        let cache = caches
            .entry(session.id().clone())
            .or_insert_with(Cache::new);
        cache.sync(session)?;
        Ok(cache.view())
    }

    /// The durable fold of a live session (after a sync).
    pub(crate) fn fold(&self, session: &Session) -> Result<GoalFold, GoalError> {
        let mut caches = lock(&self.caches);
        let cache = caches
            .entry(session.id().clone())
            .or_insert_with(Cache::new);
        cache.sync(session)?;
        Ok(cache.fold.clone())
    }

    /// Disarms the session's goal (a session start, a failed round, a stop the driver
    /// cannot act on); the phase is unchanged.
    pub fn disarm(&self, session: &SessionId) {
        if let Some(cache) = lock(&self.caches).get_mut(session) {
            cache.activation = Activation::Disarmed;
        }
    }

    /// Forgets a session (it was disposed).
    pub fn forget(&self, session: &SessionId) {
        lock(&self.caches).remove(session);
    }

    /// Creates and arms a goal. Refused while an unfinished goal exists (a complete one is
    /// replaced).
    pub fn create(
        &self,
        agent: &Arc<dyn Agent>,
        objective: &str,
        max_goal_rounds: Option<u64>,
    ) -> Result<GoalView, GoalError> {
        let objective = check_objective(objective)?;
        let max = check_max_rounds(max_goal_rounds.unwrap_or(self.default_max_rounds))?;
        self.mutate(agent, |fold, now| {
            if let Some(current) = fold.goal() {
                if current.phase != GoalPhase::Complete {
                    return Err(GoalError::AlreadyExists {
                        id: current.id.clone(),
                        phase: current.phase,
                    });
                }
            }
            let goal = GoalSnapshot {
                id: format!("goal-{}", uuid::Uuid::new_v4()),
                revision: 1,
                objective,
                phase: GoalPhase::Active,
                max_goal_rounds: max,
                blocked_reason: None,
            };
            Ok((
                GoalChange::Snapshot {
                    operation: GoalOperation::Create,
                    goal,
                    rounds_started: 0,
                    created_at: now,
                    updated_at: now,
                },
                Activation::Armed,
            ))
        })
    }

    /// Replaces the objective and/or the round cap; phase and activation stay.
    pub fn edit(
        &self,
        agent: &Arc<dyn Agent>,
        reference: &GoalRef,
        objective: Option<&str>,
        max_goal_rounds: Option<u64>,
    ) -> Result<GoalView, GoalError> {
        if objective.is_none() && max_goal_rounds.is_none() {
            return Err(GoalError::InvalidEdit);
        }
        let objective = objective.map(check_objective).transpose()?;
        let max = max_goal_rounds.map(check_max_rounds).transpose()?;
        let activation = self.activation(agent.session().id());
        self.mutate(agent, |fold, now| {
            let current = expect_current(fold, reference)?;
            let mut goal = current.clone();
            goal.revision += 1;
            if let Some(objective) = objective {
                goal.objective = objective;
            }
            if let Some(max) = max {
                goal.max_goal_rounds = max;
            }
            Ok((carry(fold, GoalOperation::Edit, goal, now), activation))
        })
    }

    /// Pauses an active goal and disarms it.
    pub fn pause(
        &self,
        agent: &Arc<dyn Agent>,
        reference: &GoalRef,
    ) -> Result<GoalView, GoalError> {
        self.transition(
            agent,
            reference,
            GoalOperation::Pause,
            &[GoalPhase::Active],
            GoalPhase::Paused,
            Activation::Disarmed,
        )
    }

    /// Resumes a paused or blocked goal, or re-arms an active disarmed one (after a restart),
    /// while rounds remain.
    pub fn resume(
        &self,
        agent: &Arc<dyn Agent>,
        reference: &GoalRef,
    ) -> Result<GoalView, GoalError> {
        let activation = self.activation(agent.session().id());
        self.mutate(agent, |fold, now| {
            let current = expect_current(fold, reference)?;
            if current.phase == GoalPhase::Complete {
                return Err(transition_error(
                    current,
                    GoalOperation::Resume,
                    &[GoalPhase::Active, GoalPhase::Paused, GoalPhase::Blocked],
                ));
            }
            if current.phase == GoalPhase::Active && activation == Activation::Armed {
                return Err(GoalError::InvalidTransition(format!(
                    "goal \"{}\" is already active and armed",
                    current.id
                )));
            }
            if fold.rounds_started() >= current.max_goal_rounds {
                return Err(GoalError::InvalidTransition(format!(
                    "goal \"{}\" exhausted {} goal rounds; increase maxGoalRounds before resuming",
                    current.id, current.max_goal_rounds
                )));
            }
            let goal = with_phase(current, GoalPhase::Active);
            Ok((
                carry(fold, GoalOperation::Resume, goal, now),
                Activation::Armed,
            ))
        })
    }

    /// Marks a goal that is not complete yet complete, and disarms it.
    pub fn complete(
        &self,
        agent: &Arc<dyn Agent>,
        reference: &GoalRef,
    ) -> Result<GoalView, GoalError> {
        self.transition(
            agent,
            reference,
            GoalOperation::Complete,
            &[GoalPhase::Active, GoalPhase::Paused, GoalPhase::Blocked],
            GoalPhase::Complete,
            Activation::Disarmed,
        )
    }

    /// Blocks an active goal with `reason` and disarms it.
    pub fn block(
        &self,
        agent: &Arc<dyn Agent>,
        reference: &GoalRef,
        reason: BlockReason,
    ) -> Result<GoalView, GoalError> {
        let reason = BlockReason::new(&reason.code, &reason.message)?;
        self.mutate(agent, |fold, now| {
            let current = expect_current(fold, reference)?;
            if current.phase != GoalPhase::Active {
                return Err(transition_error(
                    current,
                    GoalOperation::Block,
                    &[GoalPhase::Active],
                ));
            }
            let mut goal = with_phase(current, GoalPhase::Blocked);
            goal.blocked_reason = Some(reason);
            Ok((
                carry(fold, GoalOperation::Block, goal, now),
                Activation::Disarmed,
            ))
        })
    }

    /// Clears the current goal, leaving a tombstone one revision past it.
    pub fn clear(&self, agent: &Arc<dyn Agent>, reference: &GoalRef) -> Result<GoalRef, GoalError> {
        let _writing = lock(&self.writing);
        self.assert_live(agent)?;
        let session = agent.session();
        let fold = self.fold(session)?;
        let current = expect_current(&fold, reference)?;
        let tombstone = GoalRef {
            id: current.id.clone(),
            revision: current.revision + 1,
        };
        let change = GoalChange::Clear {
            cleared: tombstone.clone(),
            cleared_at: now_after(session, fold.updated_at()),
        };
        self.commit(agent, &change, Activation::Disarmed)?;
        drop(_writing);
        self.announce(agent, &change, None);
        Ok(tombstone)
    }

    /// The surfaces' answer to the original's idle-forever defect: after a resume, a goal
    /// that is still active (and so disarmed by the session start) is re-armed, and the
    /// driver continues it at the next idle. `None` when there is nothing to continue
    /// (no goal, another phase, already armed, or no rounds left).
    pub fn continue_after_resume(
        &self,
        agent: &Arc<dyn Agent>,
    ) -> Result<Option<GoalView>, GoalError> {
        let Some(view) = self.get(agent)? else {
            return Ok(None);
        };
        let resumable = view.goal.phase == GoalPhase::Active
            && view.activation == Activation::Disarmed
            && view.rounds_started < view.goal.max_goal_rounds;
        if !resumable {
            return Ok(None);
        }
        self.resume(agent, &view.reference()).map(Some)
    }

    fn activation(&self, session: &SessionId) -> Activation {
        lock(&self.caches)
            .get(session)
            .map_or(Activation::Disarmed, |c| c.activation)
    }

    fn transition(
        &self,
        agent: &Arc<dyn Agent>,
        reference: &GoalRef,
        operation: GoalOperation,
        allowed: &[GoalPhase],
        phase: GoalPhase,
        activation: Activation,
    ) -> Result<GoalView, GoalError> {
        self.mutate(agent, |fold, now| {
            let current = expect_current(fold, reference)?;
            if !allowed.contains(&current.phase) {
                return Err(transition_error(current, operation, allowed));
            }
            let goal = with_phase(current, phase);
            Ok((carry(fold, operation, goal, now), activation))
        })
    }

    /// Check, append, then announce: `build` sees the synced fold and the change time.
    fn mutate(
        &self,
        agent: &Arc<dyn Agent>,
        build: impl FnOnce(&GoalFold, u64) -> Result<(GoalChange, Activation), GoalError>,
    ) -> Result<GoalView, GoalError> {
        let writing = lock(&self.writing);
        self.assert_live(agent)?;
        let session = agent.session();
        let fold = self.fold(session)?;
        let now = now_after(session, fold.updated_at());
        let (change, activation) = build(&fold, now)?;
        let view = self.commit(agent, &change, activation)?;
        drop(writing);
        self.announce(agent, &change, view.clone());
        view.ok_or(GoalError::NotFound)
    }

    /// Appends the change, folds it and sets the activation it leaves.
    fn commit(
        &self,
        agent: &Arc<dyn Agent>,
        change: &GoalChange,
        activation: Activation,
    ) -> Result<Option<GoalView>, GoalError> {
        let session = agent.session();
        session
            .append_typed(change)
            .map_err(|e| GoalError::Append(e.to_string()))?;
        let mut caches = lock(&self.caches);
        let cache = caches
            .entry(session.id().clone())
            .or_insert_with(Cache::new);
        cache.sync(session)?;
        cache.activation = activation;
        Ok(cache.view())
    }

    fn announce(&self, agent: &Arc<dyn Agent>, change: &GoalChange, goal: Option<GoalView>) {
        self.ctx.emit::<GoalChanged>(
            Some(agent.scope_key()),
            &GoalChangedEvent {
                agent: agent.clone(),
                operation: change.operation(),
                reference: change.reference(),
                goal,
            },
        );
    }

    fn assert_live(&self, agent: &Arc<dyn Agent>) -> Result<(), GoalError> {
        let live = self
            .ctx
            .get::<AgentRegistry>()
            .and_then(|registry| registry.get(agent.id()))
            .is_some_and(|found| std::ptr::addr_eq(Arc::as_ptr(&found), Arc::as_ptr(agent)));
        if live {
            Ok(())
        } else {
            Err(GoalError::AgentNotLive(agent.id().to_string()))
        }
    }
}

/// `max(now, previous updatedAt)`: a change never moves time backwards.
fn now_after(session: &Session, previous: Option<u64>) -> u64 {
    let now = (session.clock())();
    previous.map_or(now, |p| p.max(now))
}

fn expect_current<'a>(
    fold: &'a GoalFold,
    reference: &GoalRef,
) -> Result<&'a GoalSnapshot, GoalError> {
    let current = fold.goal().ok_or(GoalError::NotFound)?;
    if reference.id != current.id || reference.revision != current.revision {
        return Err(GoalError::StaleRevision {
            given_id: reference.id.clone(),
            given_revision: reference.revision,
            current_id: current.id.clone(),
            current_revision: current.revision,
        });
    }
    Ok(current)
}

fn with_phase(current: &GoalSnapshot, phase: GoalPhase) -> GoalSnapshot {
    GoalSnapshot {
        id: current.id.clone(),
        revision: current.revision + 1,
        objective: current.objective.clone(),
        phase,
        max_goal_rounds: current.max_goal_rounds,
        blocked_reason: None,
    }
}

/// A non-create snapshot change keeping the fold's counters and creation time.
fn carry(fold: &GoalFold, operation: GoalOperation, goal: GoalSnapshot, now: u64) -> GoalChange {
    GoalChange::Snapshot {
        operation,
        goal,
        rounds_started: fold.rounds_started(),
        created_at: fold.created_at().unwrap_or(now),
        updated_at: now,
    }
}

fn transition_error(
    current: &GoalSnapshot,
    operation: GoalOperation,
    allowed: &[GoalPhase],
) -> GoalError {
    let allowed: Vec<&str> = allowed.iter().map(|p| p.as_str()).collect();
    GoalError::InvalidTransition(format!(
        "cannot {operation} goal \"{}\" from phase \"{}\"; expected {}",
        current.id,
        current.phase,
        allowed.join(" or ")
    ))
}
