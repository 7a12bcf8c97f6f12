//! `AgentRegistry` (the `agents` service): who is live, who owns whom, and the factory seam.
//!
//! Publication is two-phase so a driver can roll back cleanly: [`enter`](AgentRegistry::enter)
//! inserts (the authoritative collision check) and returns an exact-entry
//! [`RegistryExit`]; [`announce`](AgentRegistry::announce) fires `agent/created`, whose
//! failing listener vetoes. Leaving the registry after an announce fires `agent/disposed`.

use crate::agent::{Agent, AgentFactory, AgentHandle, CreateAgentOptions, ResumeAgentOptions};
use crate::error::AgentError;
use crate::events::{AgentCreated, AgentDisposed, AgentEvents};
use crate::initiator;
use dsh_kernel::{BoxError, Context, Disposer, Plugin, ScopeKey};
use dsh_protocol::SessionId;
use serde::Deserialize;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use tokio::sync::Notify;

struct Entry {
    entry_id: u64,
    agent: Arc<dyn Agent>,
    owner: Option<SessionId>,
    announced: bool,
    announcing: bool,
    detach_deferred: bool,
}

#[derive(Default)]
struct State {
    entries: Vec<Entry>,
    factory: Option<(u64, Arc<dyn AgentFactory>)>,
}

struct Shared {
    ctx: Context,
    state: Mutex<State>,
    next_id: AtomicU64,
    closing: AtomicBool,
    boundaries: AtomicUsize,
    drained: Notify,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn detach(&self, entry_id: u64) {
        let removed = {
            let mut state = self.state();
            let Some(index) = state.entries.iter().position(|e| e.entry_id == entry_id) else {
                return;
            };
            if state.entries[index].announcing {
                // Finish the agent/created dispatch first; announce() detaches afterwards.
                state.entries[index].detach_deferred = true;
                return;
            }
            state.entries.remove(index)
        };
        if removed.announced {
            AgentEvents::for_agent(&self.ctx, &removed.agent).emit::<AgentDisposed, _>(());
        }
    }
}

fn same_agent(a: &Arc<dyn Agent>, b: &Arc<dyn Agent>) -> bool {
    std::ptr::addr_eq(Arc::as_ptr(a), Arc::as_ptr(b))
}

/// Removes exactly one registry entry, once. Safe to call any number of times, from any
/// thread, even after a same-id agent entered again.
#[derive(Clone)]
pub struct RegistryExit {
    shared: Weak<Shared>,
    entry_id: u64,
}

impl RegistryExit {
    pub fn detach(&self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.detach(self.entry_id);
        }
    }
}

impl fmt::Debug for RegistryExit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegistryExit")
            .field("entry_id", &self.entry_id)
            .finish()
    }
}

/// The live agents of one kernel, their runtime owners, and the driver factory.
#[derive(Clone)]
pub struct AgentRegistry {
    shared: Arc<Shared>,
}

impl fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentRegistry")
            .field("agents", &self.shared.state().entries.len())
            .finish()
    }
}

impl AgentRegistry {
    /// A registry dispatching on `ctx`'s kernel.
    pub fn new(ctx: &Context) -> Self {
        Self {
            shared: Arc::new(Shared {
                ctx: ctx.clone(),
                state: Mutex::new(State::default()),
                next_id: AtomicU64::new(1),
                closing: AtomicBool::new(false),
                boundaries: AtomicUsize::new(0),
                drained: Notify::new(),
            }),
        }
    }

    /// Creates a registry, provides it as the `AgentRegistry` service of `ctx`'s fiber and
    /// closes its initiator boundaries when that fiber unloads.
    pub fn install(ctx: &Context) -> Result<Arc<Self>, AgentError> {
        let registry = Arc::new(Self::new(ctx));
        ctx.provide(registry.clone())?.forget();
        let weak = Arc::downgrade(&registry.shared);
        ctx.effect("agents/close", move || {
            if let Some(shared) = weak.upgrade() {
                shared.closing.store(true, Ordering::SeqCst);
            }
        })?
        .forget();
        Ok(registry)
    }

    /// Inserts `agent` without announcing it. Refuses an id that differs from the session's
    /// and a live duplicate id.
    pub fn enter(
        &self,
        agent: Arc<dyn Agent>,
        owner: Option<&Arc<dyn Agent>>,
    ) -> Result<RegistryExit, AgentError> {
        if agent.id() != agent.session().id() {
            return Err(AgentError::IdMismatch {
                agent: agent.id().clone(),
                session: agent.session().id().clone(),
            });
        }
        let mut state = self.shared.state();
        if state.entries.iter().any(|e| e.agent.id() == agent.id()) {
            return Err(AgentError::AlreadyExists {
                id: agent.id().clone(),
            });
        }
        let entry_id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        state.entries.push(Entry {
            entry_id,
            agent,
            owner: owner.map(|o| o.id().clone()),
            announced: false,
            announcing: false,
            detach_deferred: false,
        });
        Ok(RegistryExit {
            shared: Arc::downgrade(&self.shared),
            entry_id,
        })
    }

    /// Emits `agent/created` for an entered agent, exactly once. A failing listener vetoes:
    /// the error is returned and the caller rolls back by detaching (which then emits
    /// `agent/disposed`, the paired edge).
    pub fn announce(&self, agent: &Arc<dyn Agent>) -> Result<(), AgentError> {
        let entry_id = {
            let mut state = self.shared.state();
            let entry = state
                .entries
                .iter_mut()
                .find(|e| same_agent(&e.agent, agent))
                .ok_or_else(|| AgentError::NotEntered {
                    id: agent.id().clone(),
                })?;
            if entry.announced {
                return Err(AgentError::AlreadyAnnounced {
                    id: agent.id().clone(),
                });
            }
            entry.announced = true;
            entry.announcing = true;
            entry.entry_id
        };
        let result =
            AgentEvents::for_agent(&self.shared.ctx, agent).emit_strict::<AgentCreated, _>(());
        let deferred = {
            let mut state = self.shared.state();
            match state.entries.iter_mut().find(|e| e.entry_id == entry_id) {
                Some(entry) => {
                    entry.announcing = false;
                    entry.detach_deferred
                }
                None => false,
            }
        };
        if deferred {
            self.shared.detach(entry_id);
        }
        result.map_err(|source| AgentError::CreationVetoed {
            id: agent.id().clone(),
            source,
        })
    }

    /// For custom drivers: enter (owner = the agent of `ctx`'s scope) and announce as one
    /// effect of `ctx`; disposing it leaves the registry (`agent/disposed`).
    pub fn register(&self, ctx: &Context, agent: Arc<dyn Agent>) -> Result<Disposer, AgentError> {
        let owner = self.agent_for_scope(ctx.scope());
        let exit = self.enter(agent.clone(), owner.as_ref())?;
        if let Err(error) = self.announce(&agent) {
            exit.detach();
            return Err(error);
        }
        let undo = exit.clone();
        ctx.effect("agents/register", move || undo.detach())
            .map_err(|error| {
                exit.detach();
                AgentError::from(error)
            })
    }

    pub fn get(&self, id: &SessionId) -> Option<Arc<dyn Agent>> {
        self.shared
            .state()
            .entries
            .iter()
            .find(|e| e.agent.id() == id)
            .map(|e| e.agent.clone())
    }

    /// Live agents in entry order.
    pub fn list(&self) -> Vec<Arc<dyn Agent>> {
        self.shared
            .state()
            .entries
            .iter()
            .map(|e| e.agent.clone())
            .collect()
    }

    /// Agents with no owning agent (a runtime relation, not durable lineage).
    pub fn roots(&self) -> Vec<Arc<dyn Agent>> {
        self.shared
            .state()
            .entries
            .iter()
            .filter(|e| e.owner.is_none())
            .map(|e| e.agent.clone())
            .collect()
    }

    /// Whether the live agent `id` was created by the agent `owner`.
    pub fn is_owned_by(&self, id: &SessionId, owner: &SessionId) -> bool {
        self.shared
            .state()
            .entries
            .iter()
            .any(|e| e.agent.id() == id && e.owner.as_ref() == Some(owner))
    }

    /// The live agent whose scope is nearest on `scope`'s chain (the `ctx.agent` of the
    /// original: contexts derived from an agent's context belong to that agent).
    pub fn agent_for_scope(&self, scope: Option<&ScopeKey>) -> Option<Arc<dyn Agent>> {
        let chain = scope?.chain();
        let state = self.shared.state();
        chain.iter().find_map(|key| {
            state
                .entries
                .iter()
                .find(|e| e.agent.scope_key() == key)
                .map(|e| e.agent.clone())
        })
    }

    /// Installs the driver factory for as long as `ctx`'s fiber lives (one at a time).
    pub fn set_factory(
        &self,
        ctx: &Context,
        factory: Arc<dyn AgentFactory>,
    ) -> Result<Disposer, AgentError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        {
            let mut state = self.shared.state();
            if state.factory.is_some() {
                return Err(AgentError::FactoryTaken);
            }
            state.factory = Some((id, factory));
        }
        let weak = Arc::downgrade(&self.shared);
        ctx.effect("agents/factory", move || {
            if let Some(shared) = weak.upgrade() {
                let mut state = shared.state();
                if state.factory.as_ref().is_some_and(|(fid, _)| *fid == id) {
                    state.factory = None;
                }
            }
        })
        .map_err(AgentError::from)
    }

    pub fn has_factory(&self) -> bool {
        self.shared.state().factory.is_some()
    }

    fn factory(&self) -> Result<Arc<dyn AgentFactory>, AgentError> {
        self.shared
            .state()
            .factory
            .as_ref()
            .map(|(_, f)| f.clone())
            .ok_or(AgentError::NoFactory)
    }

    /// Creates and publishes an agent through the factory; `owner` is the calling context
    /// (its agent, if any, becomes the runtime owner; its fiber's unload disposes the agent).
    pub async fn create(
        &self,
        owner: &Context,
        options: CreateAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        let factory = self.factory()?;
        factory.create(owner.clone(), options).await
    }

    /// Resumes a stored session through the factory.
    pub async fn resume(
        &self,
        owner: &Context,
        options: ResumeAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        let factory = self.factory()?;
        factory.resume(owner.clone(), options).await
    }

    /// Runs `work` with `agent` as initiator, tracked so teardown can [`drain`](Self::drain)
    /// it; refused once the registry is closing.
    pub fn with_initiator<F: Future>(
        &self,
        agent: Arc<dyn Agent>,
        work: F,
    ) -> Result<impl Future<Output = F::Output>, AgentError> {
        if self.shared.closing.load(Ordering::SeqCst) {
            return Err(AgentError::InitiatorClosed);
        }
        self.shared.boundaries.fetch_add(1, Ordering::SeqCst);
        let guard = Boundary(self.shared.clone());
        Ok(async move {
            let _guard = guard;
            initiator::with_initiator(agent, work).await
        })
    }

    /// Runs `work` with no initiator (same tracking as [`with_initiator`](Self::with_initiator)).
    pub fn without_initiator<F: Future>(
        &self,
        work: F,
    ) -> Result<impl Future<Output = F::Output>, AgentError> {
        if self.shared.closing.load(Ordering::SeqCst) {
            return Err(AgentError::InitiatorClosed);
        }
        self.shared.boundaries.fetch_add(1, Ordering::SeqCst);
        let guard = Boundary(self.shared.clone());
        Ok(async move {
            let _guard = guard;
            initiator::without_initiator(work).await
        })
    }

    pub fn current_initiator(&self) -> Option<Arc<dyn Agent>> {
        initiator::current_initiator()
    }

    pub fn require_initiator(&self) -> Result<Arc<dyn Agent>, AgentError> {
        initiator::require_initiator()
    }

    /// Resolves once no tracked initiator boundary is active.
    pub async fn drain(&self) {
        loop {
            let notified = self.shared.drained.notified();
            if self.shared.boundaries.load(Ordering::SeqCst) == 0 {
                return;
            }
            notified.await;
        }
    }
}

struct Boundary(Arc<Shared>);

impl Drop for Boundary {
    fn drop(&mut self) {
        if self.0.boundaries.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.drained.notify_waiters();
        }
    }
}

/// Mounts an [`AgentRegistry`] as the `AgentRegistry` service.
#[derive(Debug)]
pub struct AgentsPlugin;

/// The registry has no settings; unknown fields are refused so typos surface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentsConfig {}

impl Plugin for AgentsPlugin {
    const NAME: &'static str = "agents";
    type Config = AgentsConfig;

    fn apply(ctx: &Context, _config: AgentsConfig) -> Result<(), BoxError> {
        AgentRegistry::install(ctx)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
