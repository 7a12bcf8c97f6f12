//! `ReactLoopAgent`: the concrete driver behind `dyn Agent`.

use crate::config::LoopServices;
use crate::phase::{lock, DriverState, Phase, StatusReporter};
use crate::runtime_context::ProjectionTracker;
use dsh_agent::{
    AbortSignal, Agent, AgentCancelCause, AgentError, AgentEvents, AgentOptions, AgentStatus,
    CancelOptions, Inbox, MaintenanceLease,
};
use dsh_kernel::{Context, ScopeKey};
use dsh_prompt::RenderedPrompt;
use dsh_protocol::{Message, SessionId};
use dsh_session::{EventData, InboxTarget, Session};
use futures_util::future::BoxFuture;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Weak};
use tokio::sync::watch;

/// The ReAct driver: turns of steps, each a model request plus the tool calls it asked for.
pub struct ReactLoopAgent {
    pub(crate) options: AgentOptions,
    pub(crate) session: Session,
    pub(crate) inbox: Inbox,
    pub(crate) ctx: Context,
    pub(crate) scope: ScopeKey,
    pub(crate) events: AgentEvents,
    pub(crate) services: Arc<LoopServices>,
    pub(crate) state: Mutex<DriverState>,
    pub(crate) status: StatusReporter,
    /// `true` while an activity (a driver run or a maintenance task) is in progress.
    pub(crate) busy: watch::Sender<bool>,
    pub(crate) runtime: Option<tokio::runtime::Handle>,
    /// Whether this loop instance has logged a `request/header` yet.
    pub(crate) header_logged: AtomicBool,
    /// The last rendered system prompt, shared between steps while it is unchanged.
    pub(crate) prompt: RenderedPrompt,
    pub(crate) projection: Mutex<ProjectionTracker>,
    pub(crate) weak: Weak<ReactLoopAgent>,
}

impl fmt::Debug for ReactLoopAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReactLoopAgent")
            .field("id", self.session.id())
            .field("phase", &lock(&self.state).phase)
            .finish()
    }
}

/// The number of the last `turn/start` in the log (0 if none): numbering continues.
fn last_turn(session: &Session) -> u64 {
    session
        .events()
        .iter()
        .rev()
        .find_map(|e| match &e.data {
            EventData::TurnStart(t) => Some(t.turn),
            _ => None,
        })
        .unwrap_or(0)
}

impl ReactLoopAgent {
    /// Builds the driver for `session`: scope under `loop_ctx`, inbox by replay, turn
    /// numbering and runtime-context state from the log. Nothing is published.
    pub(crate) fn new(
        loop_ctx: &Context,
        services: Arc<LoopServices>,
        options: AgentOptions,
        session: Session,
    ) -> Result<Arc<Self>, AgentError> {
        options.validate()?;
        let scope = ScopeKey::new(format!("agent:{}", session.id()));
        let ctx = loop_ctx.create_scope(scope.clone(), None)?;
        let events = AgentEvents::new(loop_ctx.clone(), scope.clone());
        let inbox = match Inbox::restore(session.clone(), events.clone()) {
            Ok(inbox) => inbox,
            Err(error) => {
                ctx.fiber().dispose();
                return Err(error);
            }
        };
        let projection = ProjectionTracker::restore(&session);
        let last_turn = last_turn(&session);
        let (busy, _) = watch::channel(false);
        let agent = Arc::new_cyclic(|weak| ReactLoopAgent {
            options,
            session,
            inbox,
            ctx,
            scope,
            events: events.clone(),
            services,
            state: Mutex::new(DriverState {
                phase: Phase::Idle { last_turn },
                reported: AgentStatus::Idle,
                activity: 0,
            }),
            status: StatusReporter::default(),
            busy,
            runtime: tokio::runtime::Handle::try_current().ok(),
            header_logged: AtomicBool::new(false),
            prompt: RenderedPrompt::new(),
            projection: Mutex::new(projection),
            weak: weak.clone(),
        });
        let subject: Arc<dyn Agent> = agent.clone();
        events.bind(Arc::downgrade(&subject));
        Ok(agent)
    }

    /// The fused dispatcher for this agent's `agent/*` events.
    pub fn events(&self) -> &AgentEvents {
        &self.events
    }

    pub(crate) fn as_dyn(self: &Arc<Self>) -> Arc<dyn Agent> {
        self.clone()
    }

    /// The step number of the running phase (0 before the first step of a turn).
    pub(crate) fn phase_step(&self) -> u64 {
        match lock(&self.state).phase {
            Phase::Running { step, .. } => step,
            _ => 0,
        }
    }
}

impl Agent for ReactLoopAgent {
    fn id(&self) -> &SessionId {
        self.session.id()
    }

    fn options(&self) -> &AgentOptions {
        &self.options
    }

    fn session(&self) -> &Session {
        &self.session
    }

    fn inbox(&self) -> &Inbox {
        &self.inbox
    }

    fn status(&self) -> AgentStatus {
        lock(&self.state).phase.status()
    }

    fn ctx(&self) -> &Context {
        &self.ctx
    }

    fn scope_key(&self) -> &ScopeKey {
        &self.scope
    }

    fn cancel(&self, cause: AgentCancelCause, options: CancelOptions) -> Result<(), AgentError> {
        let mut cleared = Ok(());
        if !options.keep_inbox {
            cleared = self.inbox.clear();
            lock(&self.state).phase.clear_wake();
        }
        let abort = lock(&self.state).phase.abort().cloned();
        if let Some(abort) = abort {
            abort.abort(cause);
        }
        cleared
    }

    fn when_idle(&self) -> BoxFuture<'static, ()> {
        let mut busy = self.busy.subscribe();
        Box::pin(async move {
            // An error means the agent is gone, which is as idle as it gets.
            let _ = busy.wait_for(|busy| !*busy).await;
        })
    }

    fn begin_maintenance(&self) -> Result<MaintenanceLease, AgentError> {
        let abort = AbortSignal::new();
        let activity = {
            let mut state = lock(&self.state);
            let Phase::Idle { last_turn } = state.phase else {
                return Err(AgentError::Busy {
                    id: self.session.id().clone(),
                });
            };
            state.phase = Phase::Maintenance {
                abort: abort.clone(),
                last_turn,
                wake_requested: false,
            };
            state.activity += 1;
            self.busy.send_replace(true);
            state.activity
        };
        let weak = self.weak.clone();
        Ok(MaintenanceLease::new(abort, move || {
            if let Some(agent) = weak.upgrade() {
                agent.finish_activity(activity);
            }
        }))
    }

    fn send(&self, message: Message, target: InboxTarget, wakeup: bool) -> Result<(), AgentError> {
        // Classified before the insertion: an observer of the insertion could cancel, and
        // that must not change where this message goes.
        let waking_after_abort = wakeup
            && lock(&self.state)
                .phase
                .abort()
                .is_some_and(AbortSignal::is_aborted);
        let target = if waking_after_abort {
            InboxTarget::NextTurn
        } else {
            target
        };
        self.inbox.append(target, message)?;
        if wakeup {
            if let Some(agent) = self.weak.upgrade() {
                agent.wake_driver(waking_after_abort)?;
            }
        }
        Ok(())
    }
}
