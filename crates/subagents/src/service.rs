//! The `Subagents` service: every child this process started or resumed, who its parent is,
//! whether it is working, what it last reported and how its last epoch ended; the delivery
//! of children's reports and notices to their parents under the wake budget; and the wait
//! for a whole tree to come to rest.

use crate::config::SubagentsConfig;
use crate::descriptor::{SubagentDescriptor, SubagentMode};
use crate::outcome::StopReason;
use dsh_agent::{
    Agent, AgentCancelCause, AgentError, AgentHandle, AgentRegistry, AgentStatus, CancelOptions,
};
use dsh_kernel::{Context, Event, Notification};
use dsh_protocol::{Message, SessionId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

/// `subagent/start` (live, not persisted): a child began a run or an epoch.
#[derive(Debug)]
pub struct SubagentStart;
impl Event for SubagentStart {
    const NAME: &'static str = "subagent/start";
}
impl Notification for SubagentStart {
    type Payload = ChildLifecycle;
}

/// `subagent/end` (live, not persisted): a child's run or epoch ended.
#[derive(Debug)]
pub struct SubagentEnd;
impl Event for SubagentEnd {
    const NAME: &'static str = "subagent/end";
}
impl Notification for SubagentEnd {
    type Payload = ChildLifecycle;
}

/// Payload of [`SubagentStart`] and [`SubagentEnd`].
#[derive(Clone, Debug, PartialEq)]
pub struct ChildLifecycle {
    /// Fresh per run or epoch.
    pub run_id: String,
    /// `spawn` or `fork`.
    pub provider: String,
    /// The child's session id.
    pub id: SessionId,
    pub parent: SessionId,
    pub mode: SubagentMode,
    pub label: String,
    /// Set on `subagent/end`.
    pub stop: Option<StopReason>,
    /// Set on `subagent/end` when the child left a closing message.
    pub last_message: Option<String>,
}

/// Where a delivered message lands in the parent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lane {
    /// Its own turn (a settlement notice).
    NextTurn,
    /// The current turn's next step (a report).
    NextStep,
}

/// One child as the service knows it.
pub(crate) struct ChildRecord {
    pub id: SessionId,
    pub parent: SessionId,
    pub depth: u64,
    pub descriptor: SubagentDescriptor,
    /// Creation order within this process.
    pub order: u64,
    /// Present while the child is loaded in this process.
    pub handle: Option<AgentHandle>,
    /// An epoch is under way (started, not yet settled).
    pub working: bool,
    /// First seq of the current (or last) epoch in the child's log.
    pub epoch_start: u64,
    pub run_id: String,
    pub last_report: Option<String>,
    pub last_output: Option<String>,
    pub last_stop: Option<StopReason>,
}

/// What callers outside the crate see of a child.
#[derive(Clone, Debug, PartialEq)]
pub struct ChildSnapshot {
    pub id: SessionId,
    pub parent: SessionId,
    pub depth: u64,
    pub label: String,
    pub mode: SubagentMode,
    /// `running`, `idle` (loaded, between turns) or `ready` (only in storage).
    pub status: &'static str,
    pub working: bool,
    pub last_report: Option<String>,
    pub last_output: Option<String>,
    pub last_stop: Option<StopReason>,
}

#[derive(Default)]
pub(crate) struct State {
    pub children: Vec<ChildRecord>,
    /// Consecutive wakes spent per parent.
    pub wakes: HashMap<SessionId, u32>,
    pub next_order: u64,
}

pub(crate) struct Inner {
    pub ctx: Context,
    pub config: SubagentsConfig,
    pub state: Mutex<State>,
    /// Bumped whenever a child starts or settles (the tree waits watch it).
    pub changed: watch::Sender<u64>,
}

impl Inner {
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn bump(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub fn registry(&self) -> Option<Arc<AgentRegistry>> {
        self.ctx.get::<AgentRegistry>()
    }

    /// Delivers `message` to `parent`: an idle parent is woken (its own turn, or a step)
    /// while its consecutive-wake budget lasts (shared with job completions); otherwise the message is injected (a busy
    /// parent reads it at its next step, an idle one at its next turn).
    pub fn deliver(
        &self,
        parent: &Arc<dyn Agent>,
        message: Message,
        lane: Lane,
    ) -> Result<(), AgentError> {
        let idle = parent.status() == AgentStatus::Idle;
        // One budget per agent for every automatic wake: the jobs row's when it is mounted
        // (job completions spend from it too), else this service's own.
        let wake = match self.ctx.get::<dsh_jobs::JobRegistry>() {
            Some(jobs) => jobs.spend_wake(parent.id(), idle),
            None => {
                let mut state = self.state();
                let spent = state.wakes.entry(parent.id().clone()).or_insert(0);
                let wake = idle && *spent < self.config.max_consecutive_wakes;
                if wake {
                    *spent += 1;
                }
                wake
            }
        };
        match (wake, lane) {
            (true, Lane::NextTurn) => parent.followup(message),
            (true, Lane::NextStep) => parent.steer(message),
            (false, _) => parent.inject(message),
        }
    }

    /// A person spoke to `agent`: its children may wake it again.
    pub fn reset_wakes(&self, agent: &SessionId) {
        self.state().wakes.remove(agent);
    }

    /// The parent's turn was cancelled: its working children stop too, with cause `parent`
    /// (their own turns ending `aborted` reaches their children the same way).
    pub fn cancel_children_of(&self, parent: &SessionId) {
        let targets: Vec<Arc<dyn Agent>> = self
            .state()
            .children
            .iter()
            .filter(|c| &c.parent == parent && c.working)
            .filter_map(|c| c.handle.as_ref().map(|h| h.agent().clone()))
            .collect();
        for child in targets {
            if let Err(error) = child.cancel(AgentCancelCause::Parent, CancelOptions::default()) {
                tracing::debug!(child = %child.id(), %error, "cancelling a subagent failed");
            }
        }
    }

    pub fn snapshot(&self, record: &ChildRecord) -> ChildSnapshot {
        let status = match &record.handle {
            None => "ready",
            Some(handle) if handle.agent().status() == AgentStatus::Running => "running",
            Some(_) => "idle",
        };
        ChildSnapshot {
            id: record.id.clone(),
            parent: record.parent.clone(),
            depth: record.depth,
            label: record.descriptor.label.clone().unwrap_or_default(),
            mode: record.descriptor.mode,
            status,
            working: record.working,
            last_report: record.last_report.clone(),
            last_output: record.last_output.clone(),
            last_stop: record.last_stop,
        }
    }

    /// Whether `id` or anything below it still works.
    pub fn tree_working(state: &State, id: &SessionId) -> bool {
        state
            .children
            .iter()
            .filter(|c| &c.parent == id)
            .any(|c| c.working || Self::tree_working(state, &c.id))
    }
}

/// The delegation service (provided by [`SubagentsPlugin`](crate::SubagentsPlugin)).
#[derive(Clone)]
pub struct Subagents {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Subagents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subagents")
            .field("children", &self.inner.state().children.len())
            .finish()
    }
}

impl Subagents {
    pub(crate) fn new(ctx: &Context, config: SubagentsConfig) -> Self {
        let (changed, _) = watch::channel(0);
        Self {
            inner: Arc::new(Inner {
                ctx: ctx.clone(),
                config,
                state: Mutex::new(State::default()),
                changed,
            }),
        }
    }

    pub fn config(&self) -> &SubagentsConfig {
        &self.inner.config
    }

    /// One child, if this process knows it.
    pub fn get(&self, id: &SessionId) -> Option<ChildSnapshot> {
        let state = self.inner.state();
        state
            .children
            .iter()
            .find(|c| &c.id == id)
            .map(|c| self.inner.snapshot(c))
    }

    /// The direct children of `parent` this process knows, in creation order.
    pub fn children(&self, parent: &SessionId) -> Vec<ChildSnapshot> {
        let state = self.inner.state();
        state
            .children
            .iter()
            .filter(|c| &c.parent == parent)
            .map(|c| self.inner.snapshot(c))
            .collect()
    }

    /// How many children in this process are working (an epoch or a run under way), at
    /// any depth: the TUI's `2 agents`.
    pub fn working_count(&self) -> usize {
        self.inner
            .state()
            .children
            .iter()
            .filter(|c| c.working)
            .count()
    }

    /// Ticks whenever a child starts or settles (for surfaces: read
    /// [`working_count`](Self::working_count) or [`children`](Self::children) again).
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// Whether any child below `root` is still working.
    pub fn tree_working(&self, root: &SessionId) -> bool {
        Inner::tree_working(&self.inner.state(), root)
    }

    /// Resolves once no child below `root` works any more (every epoch settled and its
    /// notice delivered). Pair it with the root's `when_idle` until both hold at once.
    pub async fn until_settled(&self, root: &SessionId) {
        let mut changes = self.inner.changed.subscribe();
        loop {
            if !self.tree_working(root) {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    }
}
