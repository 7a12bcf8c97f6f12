//! The round driver: when an agent with an active, armed goal goes idle, it queues the next
//! `<goal_round>` prompt as a follow-up, and it checks at pre-step that the round entering is
//! exactly the one it reserved.
//!
//! Per agent it keeps one reservation (the *attempt*) and follows it through the inbox:
//! queued → claimed → admitted (its `user/message` logged), or cancelled (discarded, or its
//! turn aborted). At the next idle edge a round that was reserved but never admitted pauses
//! the goal, so a cancelled round never restarts by itself. A person's message queued
//! meanwhile takes priority: the driver waits for the next idle.
//!
//! Drives are serialized per agent and run on a spawned task (never inside the listener that
//! asked for them, which may be inside the loop's status report). [`GoalDriver::until_quiet`]
//! lets a surface wait until the driver has decided whether another round follows.

use super::domain::{BlockReason, GoalPhase, GoalRef};
use super::fold::GoalRoundSource;
use super::prompt::{round_limit_message, round_prompt};
use super::service::Goals;
use dsh_agent::{Agent, AgentRegistry, AgentStatus, PreStepArgs, PreStepDecision};
use dsh_kernel::sync::lock;
use dsh_kernel::{BoxError, Context};
use dsh_protocol::{ContentBlock, Message, MessageId, Role, SessionId};
use dsh_session::{InboxTarget, SessionEvent, SessionStore, TurnEndReason};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::Notify;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AttemptPhase {
    Queued,
    Claimed,
    Admitted,
    Cancelled,
}

/// The round the driver reserved and queued.
#[derive(Clone, Debug)]
struct Attempt {
    source: GoalRoundSource,
    message_id: MessageId,
    content: Vec<ContentBlock>,
    phase: AttemptPhase,
    stale: bool,
}

#[derive(Default)]
struct AgentState {
    attempt: Option<Attempt>,
    /// Something else was queued for the next turn: let it run first.
    competing: bool,
    /// The idle edge happened since the last drive (the pause rule applies once per edge).
    idle_edge: bool,
    /// A drive task is scheduled or running.
    busy: bool,
    /// Another drive was requested while one was running.
    requested: bool,
}

/// The round driver (a kernel service). See the module docs.
pub struct GoalDriver {
    ctx: Context,
    goals: Arc<Goals>,
    states: Mutex<HashMap<SessionId, AgentState>>,
    quiet: Notify,
    me: Weak<GoalDriver>,
}

impl std::fmt::Debug for GoalDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalDriver").finish_non_exhaustive()
    }
}

impl GoalDriver {
    pub fn new(ctx: Context, goals: Arc<Goals>) -> Arc<Self> {
        Arc::new_cyclic(|me| Self {
            ctx,
            goals,
            states: Mutex::default(),
            quiet: Notify::new(),
            me: me.clone(),
        })
    }

    pub fn goals(&self) -> &Arc<Goals> {
        &self.goals
    }

    /// Whether no drive is scheduled or running for `agent`.
    pub fn is_quiet(&self, agent: &SessionId) -> bool {
        lock(&self.states).get(agent).is_none_or(|s| !s.busy)
    }

    /// Resolves once no drive is scheduled or running for `agent`: by then the driver has
    /// either queued the next round (the agent is running again) or decided there is none.
    pub async fn until_quiet(&self, agent: &SessionId) {
        loop {
            let notified = self.quiet.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_quiet(agent) {
                return;
            }
            notified.await;
        }
    }

    fn with_state<R>(&self, agent: &SessionId, f: impl FnOnce(&mut AgentState) -> R) -> R {
        f(lock(&self.states).entry(agent.clone()).or_default())
    }

    /// `agent/status → idle`.
    pub(crate) fn on_idle(&self, agent: &Arc<dyn Agent>) {
        self.with_state(agent.id(), |s| {
            s.competing = false;
            s.idle_edge = true;
        });
        self.request_drive(agent);
    }

    /// `agent/inbox/inserted`: anything but the reserved round competes with it.
    pub(crate) fn on_inserted(&self, agent: &SessionId, message: &Message) {
        self.with_state(agent, |s| {
            let ours = s
                .attempt
                .as_ref()
                .is_some_and(|a| a.message_id == message.id);
            if ours {
                return;
            }
            s.competing = true;
            if let Some(attempt) = s.attempt.as_mut() {
                if attempt.phase == AttemptPhase::Queued {
                    attempt.stale = true;
                }
            }
        });
    }

    /// `agent/inbox/claimed` and `agent/inbox/discarded`.
    pub(crate) fn on_inbox(&self, agent: &SessionId, message: &Message, claimed: bool) {
        self.with_state(agent, |s| {
            if let Some(attempt) = s.attempt.as_mut() {
                if attempt.message_id == message.id {
                    attempt.phase = if claimed {
                        AttemptPhase::Claimed
                    } else {
                        AttemptPhase::Cancelled
                    };
                }
            }
        });
    }

    /// `session/event`: the reserved round's `user/message` admits it; a turn that ended
    /// early decides what the goal does at the next idle.
    pub(crate) fn on_event(&self, agent: &SessionId, event: &SessionEvent) {
        match &event.data {
            dsh_session::EventData::UserMessage(message) => self.with_state(agent, |s| {
                if let Some(attempt) = s.attempt.as_mut() {
                    if attempt.message_id == message.id {
                        attempt.phase = AttemptPhase::Admitted;
                    }
                }
            }),
            dsh_session::EventData::TurnEnd(end) => match &end.reason {
                TurnEndReason::MaxTokens => self.goals.disarm(agent),
                TurnEndReason::Aborted { .. } => {
                    let ours = self.with_state(agent, |s| match s.attempt.as_mut() {
                        Some(a)
                            if matches!(
                                a.phase,
                                AttemptPhase::Claimed | AttemptPhase::Admitted
                            ) =>
                        {
                            a.phase = AttemptPhase::Cancelled;
                            true
                        }
                        _ => false,
                    });
                    if !ours {
                        self.goals.disarm(agent);
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    /// `agent/session-start`: a new lifecycle starts with no reservation, disarmed.
    pub(crate) fn on_session_start(&self, agent: &SessionId) {
        self.with_state(agent, |s| {
            s.attempt = None;
            s.competing = false;
        });
        self.goals.disarm(agent);
    }

    /// `agent/error`: a failed round does not retry by itself.
    pub(crate) fn on_error(&self, agent: &SessionId) {
        self.goals.disarm(agent);
    }

    /// The agent left the registry.
    pub(crate) fn forget(&self, agent: &SessionId) {
        lock(&self.states).remove(agent);
        self.quiet.notify_waiters();
    }

    /// Schedules a drive (coalesced: one runs at a time per agent).
    pub(crate) fn request_drive(&self, agent: &Arc<dyn Agent>) {
        let start = self.with_state(agent.id(), |s| {
            if s.busy {
                s.requested = true;
                false
            } else {
                s.busy = true;
                true
            }
        });
        if !start {
            return;
        }
        let Some(me) = self.me.upgrade() else { return };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.with_state(agent.id(), |s| s.busy = false);
            tracing::warn!(agent = %agent.id(), "goal driver: no async runtime to drive on");
            return;
        };
        let agent = agent.clone();
        runtime.spawn(async move {
            loop {
                dsh_agent::without_initiator(me.drive(&agent)).await;
                let again = me.with_state(agent.id(), |s| {
                    if s.requested {
                        s.requested = false;
                        true
                    } else {
                        s.busy = false;
                        false
                    }
                });
                if !again {
                    me.quiet.notify_waiters();
                    return;
                }
            }
        });
    }

    fn live(&self, agent: &Arc<dyn Agent>) -> bool {
        self.ctx
            .get::<AgentRegistry>()
            .and_then(|r| r.get(agent.id()))
            .is_some_and(|found| std::ptr::addr_eq(Arc::as_ptr(&found), Arc::as_ptr(agent)))
    }

    fn ready(&self, agent: &Arc<dyn Agent>) -> bool {
        self.live(agent)
            && agent.status() == AgentStatus::Idle
            && !agent.inbox().has_pending()
            && !self.with_state(agent.id(), |s| s.competing)
    }

    async fn drive(&self, agent: &Arc<dyn Agent>) {
        if !self.ready(agent) {
            return;
        }
        let id = agent.id().clone();
        // A round reserved but never admitted by the time the agent is idle again was
        // cancelled or dropped: pause the goal rather than start it over.
        let (edge, unfinished) = self.with_state(&id, |s| {
            let edge = std::mem::take(&mut s.idle_edge);
            let unfinished = s.attempt.as_ref().is_some_and(|a| {
                matches!(
                    a.phase,
                    AttemptPhase::Queued | AttemptPhase::Claimed | AttemptPhase::Cancelled
                )
            });
            (edge, unfinished)
        });
        let finished_round = self.with_state(&id, |s| s.attempt.take()).is_some();
        if edge && unfinished {
            if let Ok(Some(view)) = self.goals.get(agent) {
                if view.is_running() {
                    if let Err(error) = self.goals.pause(agent, &view.reference()) {
                        tracing::warn!(agent = %id, %error, "goal driver: could not pause a cancelled round's goal");
                        self.goals.disarm(&id);
                    }
                }
            }
        }
        if finished_round || edge {
            // What the last round (or a goal change) wrote is durable before the next round.
            if let Some(store) = self.ctx.get::<SessionStore>() {
                if let Err(error) = store.flush(agent.session()).await {
                    tracing::warn!(agent = %id, %error, "goal driver: flush failed; disarming");
                    self.goals.disarm(&id);
                    return;
                }
            }
            if !self.ready(agent) {
                return;
            }
        }
        let view = match self.goals.get(agent) {
            Ok(Some(view)) if view.is_running() => view,
            Ok(_) => return,
            Err(error) => {
                tracing::warn!(agent = %id, %error, "goal driver: cannot read the goal");
                return;
            }
        };
        let reference = view.reference();
        if view.rounds_started >= view.goal.max_goal_rounds {
            let reason = BlockReason {
                code: "round-limit".into(),
                message: round_limit_message(view.goal.max_goal_rounds),
            };
            if let Err(error) = self.goals.block(agent, &reference, reason) {
                tracing::warn!(agent = %id, %error, "goal driver: could not block at the round limit");
                self.goals.disarm(&id);
            }
            return;
        }
        let source = GoalRoundSource {
            goal_id: view.goal.id.clone(),
            revision: view.goal.revision,
            round: view.rounds_started + 1,
        };
        let content = vec![ContentBlock::text(round_prompt(&view.goal, source.round))];
        let message = Message::new(Role::User, content.clone(), source.to_source());
        self.with_state(&id, |s| {
            s.attempt = Some(Attempt {
                source: source.clone(),
                message_id: message.id.clone(),
                content,
                phase: AttemptPhase::Queued,
                stale: false,
            });
        });
        if let Err(error) = agent.followup(message) {
            tracing::warn!(agent = %id, %error, "goal driver: could not queue round {}", source.round);
            self.with_state(&id, |s| s.attempt = None);
            let unchanged = self
                .goals
                .get(agent)
                .ok()
                .flatten()
                .is_some_and(|v| v.reference() == reference && v.is_running());
            if unchanged {
                let reason = BlockReason {
                    code: "queue-failed".into(),
                    message: format!("Could not queue goal round {}: {error}", source.round),
                };
                let _ = self.goals.block(agent, &reference, reason);
            }
        }
    }

    /// Whether the batch's goal round is exactly the reserved one, for the current goal.
    fn valid_round(
        &self,
        agent: &Arc<dyn Agent>,
        message: &Message,
        source: &GoalRoundSource,
    ) -> bool {
        let reserved = self.with_state(agent.id(), |s| {
            s.attempt.as_ref().is_some_and(|a| {
                a.phase == AttemptPhase::Claimed
                    && !a.stale
                    && a.message_id == message.id
                    && a.content == message.content
                    && a.source == *source
            })
        });
        if !reserved {
            return false;
        }
        let Ok(Some(view)) = self.goals.get(agent) else {
            return false;
        };
        view.is_running()
            && view.goal.phase == GoalPhase::Active
            && source.goal_id == view.goal.id
            && source.revision == view.goal.revision
            && source.round == view.rounds_started + 1
    }

    /// Drops the reservation, puts the batch's other messages back in front of next-step,
    /// asks for a new drive and rejects the step.
    fn reject_round(
        &self,
        agent: &Arc<dyn Agent>,
        batch: &[Arc<Message>],
        round: &Message,
    ) -> PreStepDecision {
        self.with_state(agent.id(), |s| s.attempt = None);
        for other in batch.iter().rev().filter(|m| m.id != round.id) {
            if let Err(error) = agent.inbox().prepend(InboxTarget::NextStep, other.clone()) {
                tracing::warn!(agent = %agent.id(), %error, "goal driver: could not keep a message of a rejected round");
            }
        }
        self.request_drive(agent);
        PreStepDecision::Reject
    }

    /// The `agent/pre-step` check of a batch holding a goal round.
    pub(crate) async fn pre_step(
        &self,
        args: &dsh_agent::AgentEvent<PreStepArgs>,
        next: impl std::future::Future<Output = Result<PreStepDecision, BoxError>>,
    ) -> Result<PreStepDecision, BoxError> {
        let agent = &args.agent;
        let round = args
            .messages
            .iter()
            .find_map(|m| match GoalRoundSource::of(m) {
                Ok(Some(source)) => Some((m.clone(), Some(source))),
                Err(_) => Some((m.clone(), None)),
                Ok(None) => None,
            });
        let Some((message, source)) = round else {
            return next.await;
        };
        let Some(source) = source.filter(|s| self.valid_round(agent, &message, s)) else {
            return Ok(self.reject_round(agent, &args.messages, &message));
        };
        let decision = next.await?;
        if decision == PreStepDecision::Reject {
            let reference = GoalRef {
                id: source.goal_id.clone(),
                revision: source.revision,
            };
            let reason = BlockReason {
                code: "prompt-rejected".into(),
                message: "Goal round was rejected before entering its step.".into(),
            };
            if let Err(error) = self.goals.block(agent, &reference, reason) {
                tracing::warn!(agent = %agent.id(), %error, "goal driver: could not block a rejected round's goal");
            }
            self.with_state(agent.id(), |s| s.attempt = None);
            return Ok(decision);
        }
        if !self.valid_round(agent, &message, &source) {
            return Ok(self.reject_round(agent, &args.messages, &message));
        }
        Ok(decision)
    }
}
