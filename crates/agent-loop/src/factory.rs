//! `AgentLoop`: the factory that creates, resumes and publishes `ReactLoopAgent`s (spec §10).

use crate::agent::ReactLoopAgent;
use crate::config::{
    AgentLoopConfig, ConfiguredAgent, LoopServices, DEFAULT_MAX_PARALLEL_TOOL_CALLS,
};
use crate::phase::lock;
use crate::teardown::Lifecycle;
use dsh_agent::{
    Agent, AgentError, AgentFactory, AgentHandle, AgentOptions, AgentRegistry, AgentSetup,
    ConfigStartFailed, ConfigStartFailure, CreateAgentOptions, ResumeAgentOptions, ResumeError,
    ResumeSource, SessionMeta, SessionStart, SessionStartSource,
};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_llm::LlmRuntime;
use dsh_prompt::{SystemPrompt, ToolProvision};
use dsh_protocol::SessionId;
use dsh_session::{Seed, SeedSource, Session, SessionEvent, SessionOptions, SessionStore};
use dsh_tools::ToolRuntime;
use futures_util::future::BoxFuture;
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use tokio_util::sync::CancellationToken;

pub(crate) struct LoopInner {
    ctx: Context,
    pub(crate) services: Arc<LoopServices>,
    registry: Arc<AgentRegistry>,
    sessions: Arc<SessionStore>,
    accepting: AtomicBool,
    teardown: CancellationToken,
    lifecycles: Mutex<HashMap<u64, Arc<Lifecycle>>>,
    next_id: AtomicU64,
    runtime: Option<tokio::runtime::Handle>,
}

/// The agent-loop service: creates and resumes [`ReactLoopAgent`]s and owns their
/// teardown. Registered as the registry's factory, so `AgentRegistry::create` lands here.
pub struct AgentLoop {
    inner: Arc<LoopInner>,
}

impl std::fmt::Debug for AgentLoop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentLoop")
            .field("agents", &lock(&self.inner.lifecycles).len())
            .finish()
    }
}

struct Factory(Weak<LoopInner>);

impl AgentFactory for Factory {
    fn create(
        &self,
        owner: Context,
        options: CreateAgentOptions,
    ) -> BoxFuture<'static, Result<AgentHandle, AgentError>> {
        let inner = self.0.upgrade();
        Box::pin(async move {
            match inner {
                Some(inner) => inner.create(owner, options).await,
                None => Err(AgentError::NoFactory),
            }
        })
    }

    fn resume(
        &self,
        owner: Context,
        options: ResumeAgentOptions,
    ) -> BoxFuture<'static, Result<AgentHandle, AgentError>> {
        let inner = self.0.upgrade();
        Box::pin(async move {
            match inner {
                Some(inner) => inner.resume(owner, options).await,
                None => Err(AgentError::NoFactory),
            }
        })
    }
}

impl AgentLoop {
    /// Mounts the loop on `ctx`: registers the factory, the `provider`/`model`/`cwd` prompt
    /// variables and the tool-schema provider, provides the `AgentLoop` service, and starts
    /// configured agents. Needs the `AgentRegistry`, `SessionStore`, `LlmRuntime`,
    /// `ToolRuntime` and `SystemPrompt` services.
    pub fn install(ctx: &Context, config: AgentLoopConfig) -> Result<Arc<AgentLoop>, AgentError> {
        config
            .validate()
            .map_err(|reason| AgentError::InvalidOptions { reason })?;
        let registry = ctx.require::<AgentRegistry>()?;
        let sessions = ctx.require::<SessionStore>()?;
        let prompt = ctx.require::<SystemPrompt>()?;
        let tools = ctx.require::<ToolRuntime>()?;
        let llm = ctx.require::<LlmRuntime>()?;
        let max_parallel = config
            .max_parallel_tool_calls
            .map_or(DEFAULT_MAX_PARALLEL_TOOL_CALLS, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            });
        let inner = Arc::new(LoopInner {
            ctx: ctx.clone(),
            services: Arc::new(LoopServices::new(
                llm,
                tools.clone(),
                prompt.clone(),
                max_parallel,
            )),
            registry: registry.clone(),
            sessions,
            accepting: AtomicBool::new(true),
            teardown: CancellationToken::new(),
            lifecycles: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            runtime: tokio::runtime::Handle::try_current().ok(),
        });
        registry
            .set_factory(ctx, Arc::new(Factory(Arc::downgrade(&inner))))?
            .forget();
        register_prompt_parts(ctx, &registry, &prompt, tools)?;
        let service = Arc::new(AgentLoop {
            inner: inner.clone(),
        });
        ctx.provide(service.clone())?.forget();
        let weak = Arc::downgrade(&inner);
        ctx.effect("agent-loop/teardown", move || {
            if let Some(inner) = weak.upgrade() {
                inner.close();
            }
        })?
        .forget();
        for agent in config.agents {
            inner.start_configured(agent);
        }
        Ok(service)
    }

    /// Creates and publishes an agent owned by `owner` (see [`AgentRegistry::create`]).
    pub async fn create(
        &self,
        owner: &Context,
        options: CreateAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        self.inner.clone().create(owner.clone(), options).await
    }

    /// Resumes a stored session (needs a `dyn ResumeSource` service).
    pub async fn resume(
        &self,
        owner: &Context,
        options: ResumeAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        self.inner.clone().resume(owner.clone(), options).await
    }

    pub fn max_parallel_tool_calls(&self) -> usize {
        self.inner.services.max_parallel()
    }

    /// Live setting: takes effect at the next parallel group (0 counts as 1).
    pub fn set_max_parallel_tool_calls(&self, n: usize) {
        self.inner.services.set_max_parallel(n);
    }
}

/// The variables every agent prompt can use, and the bridge that shows the tool
/// registry's schemas to the prompt assembly.
fn register_prompt_parts(
    ctx: &Context,
    registry: &Arc<AgentRegistry>,
    prompt: &SystemPrompt,
    tools: Arc<ToolRuntime>,
) -> Result<(), AgentError> {
    let prompt_error = |e: dsh_prompt::PromptError| AgentError::other(e);
    let r = registry.clone();
    prompt
        .variable(ctx, "provider", move |ac| {
            r.agent_for_scope(ac.scope.as_ref())
                .and_then(|a| a.options().provider.clone())
        })
        .map_err(prompt_error)?
        .forget();
    let r = registry.clone();
    prompt
        .variable(ctx, "model", move |ac| {
            r.agent_for_scope(ac.scope.as_ref())
                .and_then(|a| a.options().model.clone())
        })
        .map_err(prompt_error)?
        .forget();
    let r = registry.clone();
    prompt
        .variable(ctx, "cwd", move |ac| {
            r.agent_for_scope(ac.scope.as_ref())
                .and_then(|a| a.session().header().cwd.clone())
        })
        .map_err(prompt_error)?
        .forget();
    prompt
        .tools(ctx, move |ac| {
            let scope = ac.scope.as_ref();
            // Every visible name is a schema's; nothing hidden needs naming here.
            ToolProvision::new(tools.schemas(scope))
        })
        .map_err(prompt_error)?
        .forget();
    Ok(())
}

/// The fresh (or seeded) session a create asks for; forks seed from their parent.
fn prepare_new_session(
    sessions: &SessionStore,
    session_id: Option<SessionId>,
    seed: Option<Vec<Arc<SessionEvent>>>,
    meta: SessionMeta,
) -> Result<Session, AgentError> {
    let seed_source = if meta.parent_session.is_some() {
        SeedSource::Fork
    } else {
        SeedSource::Import
    };
    let session = sessions.prepare(
        session_id,
        SessionOptions {
            cwd: meta.cwd,
            parent_session: meta.parent_session,
            seed_length: meta.seed_length,
            origin: meta.origin,
            delegation_depth: meta.delegation_depth,
            agent_preset: meta.agent_preset,
            seed: seed.map(|events| Seed {
                events,
                source: seed_source,
            }),
            ..SessionOptions::default()
        },
    )?;
    Ok(session)
}

impl LoopInner {
    pub(crate) fn untrack(&self, id: u64) {
        lock(&self.lifecycles).remove(&id);
    }

    /// Factory unload: stop accepting, abort pending creations, dispose every live agent.
    fn close(&self) {
        self.accepting.store(false, Ordering::SeqCst);
        self.teardown.cancel();
        let live: Vec<Arc<Lifecycle>> = lock(&self.lifecycles).values().cloned().collect();
        for lifecycle in live {
            drop(lifecycle.dispose());
        }
    }

    /// Creates the lifecycle record (tracked by the factory and by an owner effect)
    /// before any resource exists.
    fn begin(
        self: &Arc<Self>,
        owner: &Context,
        caller: Option<CancellationToken>,
    ) -> Result<Arc<Lifecycle>, AgentError> {
        if !self.accepting.load(Ordering::SeqCst) || !self.ctx.fiber().is_active() {
            return Err(AgentError::CreationAborted);
        }
        if !owner.fiber().is_active() {
            return Err(AgentError::CreationAborted);
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let owner_fiber = owner.fiber().clone();
        let lifecycle = Arc::new(Lifecycle::new(
            id,
            Arc::downgrade(self),
            caller,
            self.teardown.child_token(),
            move || owner_fiber.is_active(),
            self.runtime.clone(),
        ));
        lock(&self.lifecycles).insert(id, lifecycle.clone());
        let weak = Arc::downgrade(&lifecycle);
        match owner.effect("agent-loop/agent", move || {
            if let Some(lifecycle) = weak.upgrade() {
                drop(lifecycle.dispose());
            }
        }) {
            Ok(effect) => *lock(&lifecycle.owner_effect) = Some(effect),
            Err(error) => {
                self.untrack(id);
                return Err(error.into());
            }
        }
        Ok(lifecycle)
    }

    async fn create(
        self: Arc<Self>,
        owner: Context,
        options: CreateAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        options.agent_options.validate()?;
        let sessions = &self.sessions;
        let (session_id, seed, meta) = (options.session_id, options.seed, options.meta);
        let open_session = move |_: Arc<Lifecycle>| {
            std::future::ready(prepare_new_session(sessions, session_id, seed, meta))
        };
        self.establish(
            owner,
            options.cancel,
            options.agent_options,
            options.setup,
            SessionStartSource::Startup,
            open_session,
        )
        .await
    }

    async fn resume(
        self: Arc<Self>,
        owner: Context,
        options: ResumeAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        options.agent_options.validate()?;
        let source = self
            .ctx
            .get::<dyn ResumeSource>()
            .ok_or(AgentError::NoPersistence)?;
        let session_id = options.session_id;
        let open_session = move |lifecycle: Arc<Lifecycle>| async move {
            let load = source.prepare(&session_id, lifecycle.creation_token());
            tokio::select! {
                biased;
                () = lifecycle.aborted() => Err(AgentError::CreationAborted),
                loaded = load => loaded.map_err(|e| AgentError::Other {
                    message: e.to_string(),
                    source: Some(Box::new(e)),
                }),
            }
        };
        self.establish(
            owner,
            options.cancel,
            options.agent_options,
            options.setup,
            SessionStartSource::Resume,
            open_session,
        )
        .await
    }

    /// The creation transaction shared by create and resume: opens the lifecycle first (so
    /// an abort or owner unload can reach everything that follows), lets `open_session`
    /// produce the session, builds the agent over it and publishes it. Any failure
    /// disposes whatever was built.
    async fn establish<Open, Opening>(
        self: &Arc<Self>,
        owner: Context,
        cancel: Option<CancellationToken>,
        agent_options: AgentOptions,
        setup: Option<AgentSetup>,
        source: SessionStartSource,
        open_session: Open,
    ) -> Result<AgentHandle, AgentError>
    where
        Open: FnOnce(Arc<Lifecycle>) -> Opening,
        Opening: Future<Output = Result<Session, AgentError>>,
    {
        let lifecycle = self.begin(&owner, cancel)?;
        let result = async {
            let session = open_session(lifecycle.clone()).await?;
            let agent =
                ReactLoopAgent::new(&self.ctx, self.services.clone(), agent_options, session)?;
            self.publish(&lifecycle, &owner, agent, setup, source).await
        }
        .await;
        self.settle(lifecycle, result).await
    }

    /// Any failure unwinds what was built, then reports.
    async fn settle(
        &self,
        lifecycle: Arc<Lifecycle>,
        result: Result<AgentHandle, AgentError>,
    ) -> Result<AgentHandle, AgentError> {
        if result.is_err() {
            lifecycle.dispose().await;
        }
        result
    }

    /// The publication transaction (spec §10.3).
    async fn publish(
        &self,
        lifecycle: &Arc<Lifecycle>,
        owner: &Context,
        agent: Arc<ReactLoopAgent>,
        setup: Option<AgentSetup>,
        source: SessionStartSource,
    ) -> Result<AgentHandle, AgentError> {
        if lifecycle.agent.set(agent.clone()).is_err() {
            return Err(AgentError::message("the lifecycle already has an agent"));
        }
        if let Some(setup) = setup {
            let commit = tokio::select! {
                biased;
                () = lifecycle.aborted() => return Err(AgentError::CreationAborted),
                prepared = setup(agent.ctx.clone()) => prepared.map_err(AgentError::other)?,
            };
            if let Some(commit) = commit {
                commit().map_err(AgentError::other)?;
            }
        }
        lifecycle.assert_live()?;
        let subject: Arc<dyn Agent> = agent.clone();
        lifecycle.set_session_exit(self.sessions.enter(&agent.ctx, &agent.session)?);
        let owner_agent = self.registry.agent_for_scope(owner.scope());
        lifecycle.set_agent_exit(self.registry.enter(subject.clone(), owner_agent.as_ref())?);
        self.sessions.announce(&agent.session)?;
        lifecycle.assert_live()?;
        self.registry.announce(&subject)?;
        lifecycle.assert_live()?;
        agent.events.emit::<SessionStart, _>(source);
        lifecycle.assert_live()?;
        let handle_lifecycle = lifecycle.clone();
        Ok(AgentHandle::new(subject, move || {
            handle_lifecycle.dispose()
        }))
    }

    /// Starts one configured agent in the background; failures are reported unscoped.
    fn start_configured(self: &Arc<Self>, configured: ConfiguredAgent) {
        let Some(runtime) = self.runtime.clone() else {
            self.report_config_failure(
                &configured,
                None,
                "no tokio runtime to start the agent".into(),
            );
            return;
        };
        let inner = self.clone();
        runtime.spawn(async move {
            let options = AgentOptions {
                provider: configured.provider.clone(),
                model: configured.model.clone(),
                max_tokens: configured.max_tokens,
            };
            let owner = inner.ctx.clone();
            let has_persistence = inner.ctx.get::<dyn ResumeSource>().is_some();
            let (session_id, result) = if let Some(id) = &configured.resume_session_id {
                let id = SessionId::from(id.as_str());
                let mut resume = ResumeAgentOptions::new(id.clone());
                resume.agent_options = options;
                (id, inner.clone().resume(owner, resume).await)
            } else {
                let exact = configured
                    .session_id
                    .as_ref()
                    .map(|s| SessionId::from(s.as_str()));
                let id = exact.clone().unwrap_or_else(|| {
                    SessionId::new(format!(
                        "{}-session-{}",
                        configured.id,
                        uuid::Uuid::new_v4()
                    ))
                });
                let mut result = Err(AgentError::NoPersistence);
                let mut try_create = true;
                if exact.is_some() && has_persistence {
                    let mut resume = ResumeAgentOptions::new(id.clone());
                    resume.agent_options = options.clone();
                    result = inner.clone().resume(owner.clone(), resume).await;
                    try_create = matches!(&result, Err(e) if is_not_stored(e));
                }
                if try_create {
                    let create = CreateAgentOptions {
                        session_id: Some(id.clone()),
                        meta: dsh_agent::SessionMeta {
                            cwd: configured.cwd.clone(),
                            ..Default::default()
                        },
                        agent_options: options,
                        ..Default::default()
                    };
                    result = inner.clone().create(owner, create).await;
                }
                (id, result)
            };
            if let Err(error) = result {
                inner.report_config_failure(&configured, Some(session_id), error.to_string());
            }
        });
    }

    fn report_config_failure(
        &self,
        configured: &ConfiguredAgent,
        session_id: Option<SessionId>,
        error: String,
    ) {
        if !self.accepting.load(Ordering::SeqCst) {
            return; // suppressed after teardown
        }
        self.ctx.emit::<ConfigStartFailed>(
            None,
            &ConfigStartFailure {
                config_id: configured.id.clone(),
                session_id,
                error,
            },
        );
    }
}

fn is_not_stored(error: &AgentError) -> bool {
    match error {
        AgentError::Other {
            source: Some(source),
            ..
        } => matches!(
            source.downcast_ref::<ResumeError>(),
            Some(ResumeError::NotFound { .. })
        ),
        _ => false,
    }
}

/// Mounts [`AgentLoop`] from a composition once its five services exist.
#[derive(Debug)]
pub struct AgentLoopPlugin;

impl Plugin for AgentLoopPlugin {
    const NAME: &'static str = "agent-loop";
    type Config = AgentLoopConfig;

    fn requires() -> Vec<ServiceName> {
        vec![
            ServiceName::of::<AgentRegistry>(),
            ServiceName::of::<SessionStore>(),
            ServiceName::of::<LlmRuntime>(),
            ServiceName::of::<ToolRuntime>(),
            ServiceName::of::<SystemPrompt>(),
        ]
    }

    fn apply(ctx: &Context, config: AgentLoopConfig) -> Result<(), BoxError> {
        AgentLoop::install(ctx, config)?;
        Ok(())
    }
}
