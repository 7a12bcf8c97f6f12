//! The whole agent core on one fresh kernel, driven by a scripted model.
//!
//! [`Harness::builder`] mounts the core plugins the way a composition would (sessions, llm,
//! system prompt, tools, agents, agent loop), registers a [`ScriptedAdapter`] on the route
//! [`PROVIDER`], installs the [`RequestReconstructionCheck`] and the chosen [test
//! tools](TestTool). Tests then create agents, drive them, and end with
//! [`Harness::finish`], which waits until every agent is idle and runs the session-log
//! invariant checkers over every log and the reconstruction check over every request — so
//! every loop test checks the invariants, whatever else it asserts.
//!
//! Besides the fixed [test tools](TestTool), a test composes its own with [`ScriptedTool`];
//! [`Recording`] hears live events (and, optionally, the extension points of a turn);
//! [`RequestGate`] parks model requests; [`MemorySource`] stands in for the store on resume.
//!
//! ```
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! use dsh_agent::Agent;
//! use dsh_testkit::harness::{msg, Harness};
//! use dsh_testkit::scripted::text_response;
//!
//! let h = Harness::builder().script([text_response("hello").into()]).build();
//! let agent = h.create_agent().await.agent().clone();
//! agent.followup(msg("hi")).unwrap();
//! agent.when_idle().await;
//! assert_eq!(h.adapter().calls(), 1);
//! h.finish().await;
//! # });
//! ```

mod record;
mod resume;
mod tools;

pub use record::{Recording, RequestGate};
pub use resume::MemorySource;
pub use tools::{ScriptedTool, TestTool, ToolProbe, TEST_TOOL_FAILED};

use crate::checks::assert_log_ok;
use crate::normalize::log_json;
use crate::recon::RequestReconstructionCheck;
use crate::scripted::{ScriptEntry, ScriptedAdapter};
use dsh_agent::{
    Agent, AgentError, AgentHandle, AgentOptions, AgentRegistry, AgentsConfig, AgentsPlugin,
    CreateAgentOptions, ResumeAgentOptions, ResumeSource,
};
use dsh_agent_loop::{AgentLoop, AgentLoopConfig, AgentLoopPlugin};
use dsh_kernel::{BoxError, Context, Fiber};
use dsh_llm::{LlmPlugin, LlmPluginConfig, LlmRuntime};
use dsh_prompt::{SystemPrompt, SystemPromptConfig, SystemPromptPlugin};
use dsh_protocol::{Message, MessageId, SessionId};
use dsh_session::{Session, SessionStore, SessionsPlugin};
use dsh_tools::{Tool, ToolRuntime, ToolsConfig, ToolsPlugin};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The provider route the scripted adapter serves.
pub const PROVIDER: &str = "scripted";
/// The model every harness agent asks for.
pub const MODEL: &str = "scripted-model";

/// How long [`Harness::finish`] waits for an agent to become idle, and [`until`] for its
/// condition, before failing the test (a hang guard, not a timing assertion).
const IDLE_GUARD: Duration = Duration::from_secs(30);

/// A user message with the readable, stable id `m-<text>`.
pub fn msg(text: &str) -> Message {
    let mut message = Message::user_text(text);
    message.id = MessageId::from(format!("m-{text}"));
    message
}

/// [`msg`] as it appears in a log or a request.
pub fn msg_json(text: &str) -> Value {
    json!({"id": format!("m-{text}"), "role": "user",
        "content": [{"type": "text", "text": text}], "source": {"kind": "user"}})
}

/// Options of a harness agent: the scripted route and [`MODEL`].
pub fn agent_options() -> AgentOptions {
    AgentOptions::new(PROVIDER, MODEL)
}

/// Queues [`msg`]`(text)` as a follow-up and waits until the agent is idle again.
#[allow(clippy::panic)] // test fixture
pub async fn run_followup(agent: &Arc<dyn Agent>, text: &str) {
    if let Err(error) = agent.followup(msg(text)) {
        panic!("follow-up {text:?} was refused: {error}");
    }
    agent.when_idle().await;
}

/// Resolves once `done` holds, checking it again each millisecond; fails the test after a
/// generous guard. For conditions no event announces (an agent gone from the registry);
/// prefer the adapter's, probe's and gate's waits where one fits.
#[allow(clippy::panic)] // test fixture
pub async fn until(mut done: impl FnMut() -> bool) {
    let polled = async {
        while !done() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    };
    if tokio::time::timeout(IDLE_GUARD, polled).await.is_err() {
        panic!("condition not reached");
    }
}

/// Configures a [`Harness`].
#[derive(Default)]
pub struct HarnessBuilder {
    script: Vec<ScriptEntry>,
    adapter: Option<ScriptedAdapter>,
    tools: Vec<TestTool>,
    scripted_tools: Vec<ScriptedTool>,
    custom_tools: Vec<Arc<dyn Tool>>,
    loop_config: AgentLoopConfig,
    prompt: Option<SystemPromptConfig>,
}

impl std::fmt::Debug for HarnessBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HarnessBuilder")
            .field("script", &self.script)
            .field("tools", &self.tools)
            .field("scripted_tools", &self.scripted_tools)
            .field("loop_config", &self.loop_config)
            .finish_non_exhaustive()
    }
}

impl HarnessBuilder {
    /// Script entries, one per model call (more can be pushed later on the adapter).
    pub fn script(mut self, entries: impl IntoIterator<Item = ScriptEntry>) -> Self {
        self.script.extend(entries);
        self
    }

    /// Uses `adapter` (e.g. with model facts set) instead of a plain one; script entries
    /// given with [`script`](Self::script) are pushed onto it.
    pub fn adapter(mut self, adapter: ScriptedAdapter) -> Self {
        self.adapter = Some(adapter);
        self
    }

    /// Registers these test tools globally, in this order.
    pub fn tools(mut self, tools: impl IntoIterator<Item = TestTool>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Registers scripted tools globally, reporting to the harness probe (after the test
    /// tools, in this order).
    pub fn scripted_tools(mut self, tools: impl IntoIterator<Item = ScriptedTool>) -> Self {
        self.scripted_tools.extend(tools);
        self
    }

    /// Registers a tool of the test's own globally (after the test and scripted tools).
    pub fn custom_tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.custom_tools.push(tool);
        self
    }

    /// The agent-loop plugin's whole config (default: the plugin's defaults). Configured
    /// agents start when the loop mounts; [`finish`](Harness::finish) checks them too.
    pub fn loop_config(mut self, config: AgentLoopConfig) -> Self {
        self.loop_config = config;
        self
    }

    /// The loop's `maxParallelToolCalls`.
    pub fn max_parallel(mut self, n: u64) -> Self {
        self.loop_config.max_parallel_tool_calls = Some(n);
        self
    }

    /// The system-prompt plugin's config (default: the plugin's defaults).
    pub fn prompt(mut self, config: SystemPromptConfig) -> Self {
        self.prompt = Some(config);
        self
    }

    /// Mounts everything; must run inside a tokio runtime. Panics when mounting fails
    /// (a fixture that cannot be built is a failed test).
    #[allow(clippy::panic)] // test fixture: failing loudly is its job
    #[track_caller]
    pub fn build(self) -> Harness {
        match self.try_build() {
            Ok(harness) => harness,
            Err(error) => panic!("could not mount the agent core: {error}"),
        }
    }

    /// Like [`build`](Self::build), returning the error.
    pub fn try_build(self) -> Result<Harness, BoxError> {
        let ctx = Context::root();
        ctx.plugin::<SessionsPlugin>(())?;
        ctx.plugin::<LlmPlugin>(LlmPluginConfig::default())?;
        ctx.plugin::<SystemPromptPlugin>(self.prompt.unwrap_or_default())?;
        ctx.plugin::<ToolsPlugin>(ToolsConfig::default())?;
        ctx.plugin::<AgentsPlugin>(AgentsConfig::default())?;
        let recon = RequestReconstructionCheck::install(&ctx)?;
        let loop_fiber = ctx.plugin::<AgentLoopPlugin>(self.loop_config)?;
        let llm = ctx.require::<LlmRuntime>()?;
        let adapter = Arc::new(self.adapter.unwrap_or_else(|| ScriptedAdapter::new([])));
        for entry in self.script {
            adapter.push(entry);
        }
        // Dropping the handle keeps the registration; it is owned by the root fiber.
        drop(adapter.register(&ctx, &llm, PROVIDER)?);
        let tools = ctx.require::<ToolRuntime>()?;
        let probe = ToolProbe::new();
        for kind in self.tools {
            tools.register(&ctx, kind.build(&probe))?.forget();
        }
        for tool in self.scripted_tools {
            tools.register(&ctx, tool.build(&probe))?.forget();
        }
        for tool in self.custom_tools {
            tools.register(&ctx, tool)?.forget();
        }
        Ok(Harness {
            registry: ctx.require::<AgentRegistry>()?,
            sessions: ctx.require::<SessionStore>()?,
            prompt: ctx.require::<SystemPrompt>()?,
            agent_loop: ctx.require::<AgentLoop>()?,
            ctx,
            llm,
            tools,
            adapter,
            recon,
            probe,
            loop_fiber,
            agents: Mutex::default(),
            extra_sessions: Mutex::default(),
            next_id: Mutex::new(1),
        })
    }
}

/// The mounted agent core. See the [module docs](self).
pub struct Harness {
    ctx: Context,
    registry: Arc<AgentRegistry>,
    sessions: Arc<SessionStore>,
    llm: Arc<LlmRuntime>,
    tools: Arc<ToolRuntime>,
    prompt: Arc<SystemPrompt>,
    agent_loop: Arc<AgentLoop>,
    loop_fiber: Fiber,
    adapter: Arc<ScriptedAdapter>,
    recon: RequestReconstructionCheck,
    probe: ToolProbe,
    agents: Mutex<Vec<AgentHandle>>,
    extra_sessions: Mutex<Vec<Session>>,
    next_id: Mutex<u64>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("agents", &lock(&self.agents).len())
            .field("adapter", &self.adapter)
            .finish_non_exhaustive()
    }
}

use dsh_kernel::sync::lock;

impl Harness {
    pub fn builder() -> HarnessBuilder {
        HarnessBuilder::default()
    }

    /// The root context (unscoped: its listeners hear every agent).
    pub fn ctx(&self) -> &Context {
        &self.ctx
    }

    pub fn adapter(&self) -> &Arc<ScriptedAdapter> {
        &self.adapter
    }

    pub fn registry(&self) -> &Arc<AgentRegistry> {
        &self.registry
    }

    pub fn sessions(&self) -> &Arc<SessionStore> {
        &self.sessions
    }

    pub fn llm(&self) -> &Arc<LlmRuntime> {
        &self.llm
    }

    pub fn tools(&self) -> &Arc<ToolRuntime> {
        &self.tools
    }

    pub fn prompt(&self) -> &Arc<SystemPrompt> {
        &self.prompt
    }

    pub fn agent_loop(&self) -> &Arc<AgentLoop> {
        &self.agent_loop
    }

    /// The fiber the agent-loop plugin lives on (dispose it to unload the loop).
    pub fn loop_fiber(&self) -> &Fiber {
        &self.loop_fiber
    }

    pub fn recon(&self) -> &RequestReconstructionCheck {
        &self.recon
    }

    /// What the test tools did.
    pub fn probe(&self) -> &ToolProbe {
        &self.probe
    }

    /// Starts recording live events (see [`Recording`]).
    #[allow(clippy::panic)] // test fixture
    pub fn record(&self) -> Recording {
        Recording::install(&self.ctx)
            .unwrap_or_else(|e| panic!("could not install the recording: {e}"))
    }

    /// Starts recording live events and the extension points of each turn (see
    /// [`Recording::install_with_hooks`]).
    #[allow(clippy::panic)] // test fixture
    pub fn record_with_hooks(&self) -> Recording {
        Recording::install_with_hooks(&self.ctx)
            .unwrap_or_else(|e| panic!("could not install the recording: {e}"))
    }

    /// Provides a fresh [`MemorySource`] as the `dyn ResumeSource` service (owned by the
    /// root fiber), so agents can be resumed from logs the test saved.
    #[allow(clippy::panic)] // test fixture
    pub fn mount_memory_source(&self) -> Arc<MemorySource> {
        let source = Arc::new(MemorySource::default());
        match self.ctx.provide::<dyn ResumeSource>(source.clone()) {
            Ok(disposer) => disposer.forget(),
            Err(e) => panic!("could not provide the memory source: {e}"),
        }
        source
    }

    /// Parks model requests until released (see [`RequestGate`]).
    #[allow(clippy::panic)] // test fixture
    pub fn gate_requests(&self) -> RequestGate {
        RequestGate::install(&self.ctx)
            .unwrap_or_else(|e| panic!("could not install the request gate: {e}"))
    }

    /// Creates agent `agent-<n>` on the scripted route, owned by the root context.
    pub async fn create_agent(&self) -> AgentHandle {
        let id = {
            let mut next = lock(&self.next_id);
            let id = format!("agent-{next}");
            *next += 1;
            id
        };
        self.create_agent_named(&id).await
    }

    /// Creates agent `id` on the scripted route.
    #[allow(clippy::panic)] // test fixture
    pub async fn create_agent_named(&self, id: &str) -> AgentHandle {
        let options = CreateAgentOptions {
            session_id: Some(SessionId::from(id)),
            agent_options: agent_options(),
            ..Default::default()
        };
        self.create_agent_with(options)
            .await
            .unwrap_or_else(|e| panic!("could not create agent {id}: {e}"))
    }

    /// Creates an agent with exactly `options` (owned by the root context) and tracks it
    /// for [`finish`](Self::finish).
    pub async fn create_agent_with(
        &self,
        options: CreateAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        let handle = self.registry.create(&self.ctx, options).await?;
        self.track(handle.clone());
        Ok(handle)
    }

    /// Resumes a session (needs a `dyn ResumeSource` service) and tracks the agent.
    pub async fn resume_agent(
        &self,
        options: ResumeAgentOptions,
    ) -> Result<AgentHandle, AgentError> {
        let handle = self.registry.resume(&self.ctx, options).await?;
        self.track(handle.clone());
        Ok(handle)
    }

    /// Tracks an agent created elsewhere so [`finish`](Self::finish) checks its log.
    pub fn track(&self, handle: AgentHandle) {
        lock(&self.agents).push(handle);
    }

    /// Tracks a session built by hand so [`finish`](Self::finish) checks its log.
    pub fn track_session(&self, session: Session) {
        lock(&self.extra_sessions).push(session);
    }

    /// The first agent created.
    #[allow(clippy::panic)] // test fixture
    #[track_caller]
    pub fn handle(&self) -> AgentHandle {
        match lock(&self.agents).first() {
            Some(handle) => handle.clone(),
            None => panic!("the harness has no agent yet; call create_agent first"),
        }
    }

    /// The first agent created.
    #[track_caller]
    pub fn agent(&self) -> Arc<dyn Agent> {
        self.handle().agent().clone()
    }

    /// The first agent's session.
    #[track_caller]
    pub fn session(&self) -> Session {
        self.agent().session().clone()
    }

    /// The first agent's log as stable JSON (see [`log_json`]).
    #[track_caller]
    pub fn log_json(&self) -> Value {
        log_json(&self.session().events())
    }

    /// Waits until every agent is idle, then checks every log with
    /// [`assert_log_ok`] and every model request with the
    /// reconstruction check. Panics on the first problem.
    ///
    /// "Every agent" is each tracked one (also when disposed since) and each agent still in
    /// the registry (created by a listener, a configured agent of the loop, a child).
    #[allow(clippy::panic)] // an assertion helper: failing loudly is its job
    pub async fn finish(self) {
        let mut agents: Vec<Arc<dyn Agent>> = lock(&self.agents)
            .iter()
            .map(|h| h.agent().clone())
            .collect();
        for agent in self.registry.list() {
            if !agents
                .iter()
                .any(|known| std::ptr::addr_eq(Arc::as_ptr(known), Arc::as_ptr(&agent)))
            {
                agents.push(agent);
            }
        }
        for agent in &agents {
            if tokio::time::timeout(IDLE_GUARD, agent.when_idle())
                .await
                .is_err()
            {
                panic!("agent {} never became idle", agent.id());
            }
        }
        for agent in &agents {
            assert_log_ok(&agent.session().events());
        }
        for session in lock(&self.extra_sessions).iter() {
            assert_log_ok(&session.events());
        }
        self.recon.assert_clean();
    }
}
