//! One agent's lifecycle record and its ordered, memoized teardown (spec §10.4).
//!
//! The record exists before any resource does, so a creation that fails halfway unwinds
//! exactly what it built. Teardown: abort creation → cancel `disposed` → wait for idle →
//! unwind the agent scope → leave the registry (`agent/disposed`) → detach the session
//! (`session/disposed`) → untrack. Concurrent disposals share one completion.

use crate::agent::ReactLoopAgent;
use crate::factory::LoopInner;
use crate::phase::lock;
use dsh_agent::{
    Agent, AgentCancelCause, AgentDisposing, AgentError, AgentEvent, CancelOptions, RegistryExit,
};
use dsh_kernel::Disposer;
use dsh_session::{Detach, SessionStore};
use futures_util::future::{BoxFuture, FutureExt, Shared};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use tokio_util::sync::CancellationToken;

#[derive(Default)]
struct Exits {
    agent: Option<RegistryExit>,
    session: Option<Detach>,
}

pub(crate) struct Lifecycle {
    pub(crate) id: u64,
    loop_inner: Weak<LoopInner>,
    /// Fires on teardown; creation steps race it.
    creation: CancellationToken,
    /// The caller's creation signal (only consulted until the handle is returned).
    caller: Option<CancellationToken>,
    /// The factory's teardown signal.
    factory: CancellationToken,
    owner_active: Box<dyn Fn() -> bool + Send + Sync>,
    pub(crate) agent: OnceLock<Arc<ReactLoopAgent>>,
    exits: Mutex<Exits>,
    pub(crate) owner_effect: Mutex<Option<Disposer>>,
    disposal: Mutex<Option<Shared<BoxFuture<'static, ()>>>>,
    runtime: Option<tokio::runtime::Handle>,
}

impl Lifecycle {
    pub(crate) fn new(
        id: u64,
        loop_inner: Weak<LoopInner>,
        caller: Option<CancellationToken>,
        factory: CancellationToken,
        owner_active: impl Fn() -> bool + Send + Sync + 'static,
        runtime: Option<tokio::runtime::Handle>,
    ) -> Self {
        Self {
            id,
            loop_inner,
            creation: CancellationToken::new(),
            caller,
            factory,
            owner_active: Box::new(owner_active),
            agent: OnceLock::new(),
            exits: Mutex::new(Exits::default()),
            owner_effect: Mutex::new(None),
            disposal: Mutex::new(None),
            runtime,
        }
    }

    /// Fails once any creation abort source fired.
    pub(crate) fn assert_live(&self) -> Result<(), AgentError> {
        let aborted = self.creation.is_cancelled()
            || self.factory.is_cancelled()
            || self
                .caller
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
            || !(self.owner_active)();
        if aborted {
            Err(AgentError::CreationAborted)
        } else {
            Ok(())
        }
    }

    /// Resolves when any creation abort source fires.
    pub(crate) async fn aborted(&self) {
        let caller = async {
            match &self.caller {
                Some(token) => token.cancelled().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = self.creation.cancelled() => {}
            () = self.factory.cancelled() => {}
            () = caller => {}
        }
    }

    /// A token cancelled when creation is aborted (for persistence loads).
    pub(crate) fn creation_token(&self) -> CancellationToken {
        self.creation.clone()
    }

    pub(crate) fn set_session_exit(&self, detach: Detach) {
        lock(&self.exits).session = Some(detach);
    }

    pub(crate) fn set_agent_exit(&self, exit: RegistryExit) {
        lock(&self.exits).agent = Some(exit);
    }

    /// Starts (once) and returns the shared teardown. It is spawned, so it completes even
    /// if nobody awaits it.
    pub(crate) fn dispose(self: &Arc<Self>) -> BoxFuture<'static, ()> {
        let (shared, first) = {
            let mut slot = lock(&self.disposal);
            match slot.as_ref() {
                Some(shared) => (shared.clone(), false),
                None => {
                    let shared = teardown(self.clone()).boxed().shared();
                    *slot = Some(shared.clone());
                    (shared, true)
                }
            }
        };
        if first {
            // The synchronous prefix runs before `dispose()` returns (outside the slot lock,
            // since cancelling notifies listeners that may dispose again): a cancel or a
            // send made right after `dispose()` finds the work already aborted as
            // `disposed`, so the turn ends `aborted/disposed` and nothing latches.
            self.begin_teardown();
            let runtime = self
                .runtime
                .clone()
                .or_else(|| tokio::runtime::Handle::try_current().ok());
            if let Some(runtime) = runtime {
                runtime.spawn(shared.clone());
            }
        }
        Box::pin(shared)
    }

    /// Teardown steps 1–2: abort creation, cancel the agent with `disposed`.
    fn begin_teardown(&self) {
        self.creation.cancel();
        if let Some(agent) = self.agent.get() {
            if let Err(error) = agent.cancel(AgentCancelCause::Disposed, CancelOptions::default()) {
                tracing::warn!(agent = %agent.id(), %error, "could not cancel the inbox during disposal");
            }
        }
    }
}

/// The rest of the teardown, after [`Lifecycle::begin_teardown`].
async fn teardown(lifecycle: Arc<Lifecycle>) {
    if let Some(agent) = lifecycle.agent.get() {
        agent.when_idle().await;
        // Work the agent started elsewhere (its background jobs) stops before its log closes.
        let subject: Arc<dyn Agent> = agent.clone();
        let disposing = Arc::new(AgentEvent {
            agent: subject,
            data: (),
        });
        if let Err(error) = agent
            .ctx
            .parallel::<AgentDisposing>(Some(agent.scope_key()), disposing)
            .await
        {
            tracing::warn!(agent = %agent.id(), %error, "an agent/disposing listener failed");
        }
        // The turn's closing events and the canceled inbox splices must be durable before
        // `dispose()` resolves: a process that exits right after disposing an agent must not
        // lose its tail. Persistence takes part through `session/flush`; without a
        // persistence plugin this is a no-op.
        if let Some(sessions) = agent.ctx.get::<SessionStore>() {
            if let Err(error) = sessions.flush(agent.session()).await {
                tracing::warn!(agent = %agent.id(), %error, "final flush during disposal failed");
            }
        }
        agent.ctx.fiber().dispose();
    }
    let exits = std::mem::take(&mut *lock(&lifecycle.exits));
    if let Some(exit) = exits.agent {
        exit.detach();
    }
    if let Some(detach) = exits.session {
        detach.detach();
    }
    if let Some(inner) = lifecycle.loop_inner.upgrade() {
        inner.untrack(lifecycle.id);
    }
    let effect = lock(&lifecycle.owner_effect).take();
    if let Some(effect) = effect {
        effect.dispose();
    }
}
