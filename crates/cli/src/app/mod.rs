//! Boot: from [`Settings`] to a running plugin composition that can create and resume agents.
//!
//! [`Runtime::boot`] checks everything that can be checked up front (the workspace, the model
//! route's API key), fills in the configs of the rows computed from the settings
//! ([`boot_composition`]), mounts the composition with `dsh_kernel::mount` (which validates
//! every row before applying any), and then checks that the parts every agent needs are
//! there. Nothing starts half-configured.
//!
//! Surfaces (`dsh run`, the terminal UI) then create or resume agents through the runtime
//! and render from [`Runtime::subscribe`]; they never reach into the loop. Each agent's setup
//! registers its session's tool environment in the agent's scope, where the built-in tools
//! find it, and a new session gets the workspace instructions and its starting safety records
//! ([`agent`]).
//!
//! Boot must run inside a tokio runtime: the agent loop keeps a handle to it.

mod agent;
mod error;
mod identity;
mod lookup;
mod rows;
mod store;
mod temp;

pub use agent::{AgentStart, ResumeChange};
pub use error::AppError;
pub use identity::{anonymous_user_id, anonymous_user_id_without_waiting, ANONYMOUS_USER_ID_FILE};
pub use lookup::{find_session, latest_session, sessions_of};
pub use rows::{
    approval_config, attachments_root, boot_composition, boot_composition_with_user_id,
    builtin_tools_config, canonical_workspace, check_credentials, derive_skills_row,
    fill_hooks_row, fill_mcp_row, hooks_config, model_info, openai_config, plugin_table,
    project_root, register_event_types, sessions_root, skills_config, workspace_notices,
    EVENT_TYPES,
};
pub use store::{open_files, open_postgres, open_store, OpenedStore};

use crate::config::{self, Settings};
use crate::persona::{register_host_variables, HostFacts};
use dsh_agent::{
    Agent, AgentHandle, AgentRegistry, CreateAgentOptions, ResumeAgentOptions, SessionMeta,
};
use dsh_kernel::{Context, Disposer};
use dsh_llm::LlmRuntime;
use dsh_llm_openai::EnvSource;
use dsh_prompt::SystemPrompt;
use dsh_protocol::SessionId;
use dsh_session::{SessionEvent, SessionEventPublished, SessionStore};
use dsh_store::SessionPersistence;
use dsh_tools_builtin::sandbox::SandboxNotice;
use dsh_tools_builtin::{Approvals, SandboxMode, SandboxProbe, ToolEnv, ToolEnvs};
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to boot, besides the settings.
#[derive(Clone, Debug)]
pub struct BootOptions {
    /// The workspace: sessions are recorded under it and tools work in it.
    pub cwd: PathBuf,
    /// The environment as this process saw it at start; model adapters look keys up here
    /// and commands start from it. Values are OS strings: a variable that is not UTF-8
    /// (`OLDPWD` after visiting such a directory, say) is handed to commands intact, and only
    /// a variable dsh itself reads as text must be UTF-8 ([`AppError::EnvNotUnicode`]).
    pub env: BTreeMap<OsString, OsString>,
}

impl BootOptions {
    /// The process's working directory and environment.
    pub fn from_process(cwd: Option<PathBuf>) -> Result<Self, AppError> {
        let cwd = match cwd {
            Some(cwd) => cwd,
            None => std::env::current_dir().map_err(|source| AppError::Workspace {
                path: PathBuf::from("."),
                source,
            })?,
        };
        Ok(Self {
            cwd,
            env: std::env::vars_os().collect(),
        })
    }
}

/// The model adapters' view of the boot environment: a variable is there only as text.
/// Boot has already refused a non-UTF-8 value of the variable the active route reads.
struct TextEnv(Arc<BTreeMap<OsString, OsString>>);

impl dsh_llm_openai::EnvLookup for TextEnv {
    fn get(&self, name: &str) -> Option<String> {
        self.0
            .get(OsStr::new(name))
            .and_then(|value| value.to_str())
            .map(str::to_owned)
    }
}

/// Refuses an API key variable of the active route that is set but is not UTF-8: read as
/// text it would look unset, and the model would refuse a request without a word about why.
fn check_key_text(settings: &Settings, env: &BTreeMap<OsString, OsString>) -> Result<(), AppError> {
    let Some(var) = settings
        .active_provider()
        .and_then(|p| p.api_key_env.value.as_ref())
    else {
        return Ok(());
    };
    match env.get(OsStr::new(var)) {
        Some(value) if value.to_str().is_none() => Err(AppError::EnvNotUnicode {
            var: var.clone(),
            why: format!(
                "it holds the API key of provider route `{}`",
                settings.model.provider.value
            ),
        }),
        _ => Ok(()),
    }
}

/// What agent setups share.
pub(crate) struct Boot {
    settings: Arc<Settings>,
    workspace: PathBuf,
    /// This process's temp area, locked while the boot lives.
    temp_root: temp::TempRoot,
    base_env: Vec<(OsString, OsString)>,
    secrets: Vec<String>,
    model_accepts_images: bool,
    /// Where each agent's tool environment is registered; absent when the `tools-builtin`
    /// row is not mounted (no built-in tools to run).
    envs: Option<Arc<ToolEnvs>>,
    approvals: Option<Arc<Approvals>>,
}

/// A mounted composition: the context every plugin lives on, and the way to agents.
pub struct Runtime {
    root: Context,
    boot: Arc<Boot>,
    agents: Arc<AgentRegistry>,
    sessions: Arc<SessionStore>,
    /// The start-up sweep of dead runs' temp areas, if it was started.
    sweep: Option<std::thread::JoinHandle<()>>,
    /// The first run's anonymous id being written behind the boot, if it is.
    id_writer: Option<std::thread::JoinHandle<()>>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("workspace", &self.boot.workspace)
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Checks, mounts and verifies; see the module docs.
    pub fn boot(settings: Settings, options: BootOptions) -> Result<Runtime, AppError> {
        Self::boot_with_mcp(settings, options, Vec::new())
    }

    /// [`boot`](Self::boot) with MCP servers besides the configured ones (an ACP client's
    /// `mcpServers`); a same-named configured server is replaced.
    pub fn boot_with_mcp(
        settings: Settings,
        options: BootOptions,
        extra_mcp: Vec<crate::mcp_config::McpServer>,
    ) -> Result<Runtime, AppError> {
        register_event_types().map_err(AppError::EventTypes)?;
        let workspace = canonical_workspace(&options.cwd)?;
        check_credentials(&settings)?;
        check_key_text(&settings, &options.env)?;
        let (user_id, id_writer) = anonymous_user_id_without_waiting(&settings.home.value);
        let mut composition = boot_composition_with_user_id(&settings, user_id);
        let trust = crate::trust::TrustDecision::for_workspace(&settings.home.value, &workspace);
        let mut mcp = crate::mcp_config::resolve(&settings, &workspace, trust, &options.env);
        if !extra_mcp.is_empty() {
            mcp.servers
                .retain(|s| !extra_mcp.iter().any(|extra| extra.name == s.name));
            mcp.servers.splice(0..0, extra_mcp);
        }
        fill_mcp_row(&mut composition, &mcp);
        let home = options.env.get(OsStr::new("HOME")).map(Path::new);
        fill_hooks_row(&mut composition, &hooks_config(&settings, &workspace, home));
        let user_home = options
            .env
            .get(OsStr::new("HOME"))
            .filter(|home| !home.is_empty())
            .map(PathBuf::from);
        derive_skills_row(
            &mut composition,
            &settings,
            &workspace,
            user_home.as_deref(),
        );
        let temp_root = temp::create_temp_root()?;
        let sweep = temp::spawn_sweep(std::env::temp_dir());

        let root = Context::root();
        let env = Arc::new(options.env);
        let lookup: Arc<dyn dsh_llm_openai::EnvLookup> = Arc::new(TextEnv(env.clone()));
        root.provide(Arc::new(EnvSource(lookup)))
            .map_err(AppError::Mount)?
            .forget();
        let mounted = dsh_kernel::mount(&root, &plugin_table(), &composition);
        if let Err(error) = mounted {
            root.fiber().dispose();
            let _ = std::fs::remove_dir_all(&temp_root.path);
            temp::finish_sweep(sweep);
            temp::finish_sweep(id_writer);
            return Err(store::explain_mount_error(&settings, error));
        }
        let temp_path = temp_root.path.clone();
        let runtime = Self::assemble(root.clone(), settings, workspace, temp_root, &env);
        match runtime {
            Ok(mut runtime) => {
                runtime.sweep = sweep;
                runtime.id_writer = id_writer;
                Ok(runtime)
            }
            Err(error) => {
                root.fiber().dispose();
                let _ = std::fs::remove_dir_all(&temp_path);
                temp::finish_sweep(sweep);
                temp::finish_sweep(id_writer);
                Err(error)
            }
        }
    }

    fn assemble(
        root: Context,
        settings: Settings,
        workspace: PathBuf,
        temp_root: temp::TempRoot,
        env: &BTreeMap<OsString, OsString>,
    ) -> Result<Runtime, AppError> {
        let missing = |service, row| AppError::MissingPart { service, row };
        let agents = root
            .get::<AgentRegistry>()
            .ok_or(missing("agent registry", config::AGENTS_ROW))?;
        if !agents.has_factory() {
            return Err(missing("agent loop", config::AGENT_LOOP_ROW));
        }
        let sessions = root
            .get::<SessionStore>()
            .ok_or(missing("session store", config::SESSIONS_ROW))?;
        let llm = root
            .get::<LlmRuntime>()
            .ok_or(missing("model runtime", config::LLM_ROW))?;
        let route = settings.model.provider.value.clone();
        if !llm.routes().contains(&route) {
            return Err(AppError::RouteUnavailable { route });
        }
        if let Some(prompt) = root.get::<SystemPrompt>() {
            // Registration fails only on a duplicate name, which a patched composition could
            // cause; the persona then renders those variables empty, which is not fatal.
            if let Ok(disposers) = register_host_variables(&prompt, &root, HostFacts::detect()) {
                disposers.into_iter().for_each(Disposer::forget);
            }
        }
        let secrets = settings
            .active_provider()
            .and_then(|p| p.api_key_env.value.as_ref())
            .and_then(|var| env.get(OsStr::new(var)))
            .and_then(|key| key.to_str())
            .filter(|key| !key.is_empty())
            .map(str::to_owned)
            .into_iter()
            .collect();
        let model_accepts_images = settings.active_provider().is_some_and(|provider| {
            provider.models.iter().map(|m| &m.value).any(|m| {
                m.id == settings.model.model.value
                    && m.input
                        .as_ref()
                        .is_some_and(|input| input.contains(&dsh_llm::Modality::Image))
            })
        });
        let boot = Boot {
            workspace,
            temp_root,
            base_env: env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            secrets,
            model_accepts_images,
            envs: root.get::<ToolEnvs>(),
            approvals: root.get::<Approvals>(),
            settings: Arc::new(settings),
        };
        Ok(Runtime {
            root,
            boot: Arc::new(boot),
            agents,
            sessions,
            sweep: None,
            id_writer: None,
        })
    }

    pub fn settings(&self) -> &Settings {
        &self.boot.settings
    }

    /// The canonical workspace directory.
    pub fn workspace(&self) -> &Path {
        &self.boot.workspace
    }

    /// The root context every plugin is mounted on.
    pub fn ctx(&self) -> &Context {
        &self.root
    }

    pub fn agents(&self) -> &Arc<AgentRegistry> {
        &self.agents
    }

    pub fn sessions(&self) -> &Arc<SessionStore> {
        &self.sessions
    }

    /// The approval service, when the `approval` row is mounted. Surfaces that can ask a
    /// person install their answerer on it; without one, calls needing approval are refused.
    /// Skills and custom commands, when the `skills` row is mounted.
    pub fn skills(&self) -> Option<Arc<dsh_skills::Skills>> {
        self.root.get::<dsh_skills::Skills>()
    }

    pub fn approvals(&self) -> Option<Arc<Approvals>> {
        self.boot.approvals.clone()
    }

    /// Problems found in the hook files (file, line, key and what was skipped), for a
    /// surface to show once; empty when the `hooks` row is not mounted.
    pub fn hook_notices(&self) -> Vec<String> {
        self.root
            .get::<dsh_hooks::Hooks>()
            .map(|hooks| hooks.notices().iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }

    /// The session store's backend, when persistence is mounted.
    /// The delegation service, when the `subagents` row is mounted.
    pub fn subagents(&self) -> Option<Arc<dsh_subagents::Subagents>> {
        self.root.get::<dsh_subagents::Subagents>()
    }

    pub fn persistence(&self) -> Option<Arc<dyn SessionPersistence>> {
        self.root.get::<dyn SessionPersistence>()
    }

    /// A fresh session id in the original's shape (`session-<uuid>`).
    pub fn new_session_id() -> SessionId {
        SessionId::new(format!("session-{}", uuid::Uuid::new_v4()))
    }

    /// The agent options the settings choose (provider route and model).
    pub fn agent_options(&self) -> dsh_agent::AgentOptions {
        let settings = self.settings();
        dsh_agent::AgentOptions::new(
            settings.model.provider.value.clone(),
            settings.model.model.value.clone(),
        )
    }

    /// Creates and publishes a new agent working in the workspace.
    pub async fn create_agent(&self, start: AgentStart) -> Result<AgentHandle, AppError> {
        self.create_agent_with(start, self.agent_options()).await
    }

    /// [`create_agent`](Self::create_agent) with other agent options (the SDK runtime's
    /// `initialize` may choose the model and output cap).
    pub async fn create_agent_with(
        &self,
        start: AgentStart,
        agent_options: dsh_agent::AgentOptions,
    ) -> Result<AgentHandle, AppError> {
        let id = start
            .session_id
            .clone()
            .unwrap_or_else(Self::new_session_id);
        let options = CreateAgentOptions {
            session_id: Some(id.clone()),
            meta: SessionMeta {
                cwd: Some(dsh_store::recorded_cwd(&self.boot.workspace)),
                delegation_depth: Some(0),
                ..SessionMeta::default()
            },
            agent_options,
            setup: Some(self.boot.agent_setup(id, start)),
            ..CreateAgentOptions::default()
        };
        Ok(self.agents.create(&self.root, options).await?)
    }

    /// Loads a stored session (repairing a crashed tail) and publishes an agent driving it.
    pub async fn resume_agent(
        &self,
        id: SessionId,
        start: AgentStart,
    ) -> Result<AgentHandle, AppError> {
        self.resume_agent_with(id, start, self.agent_options())
            .await
    }

    /// [`resume_agent`](Self::resume_agent) with other agent options.
    pub async fn resume_agent_with(
        &self,
        id: SessionId,
        start: AgentStart,
        agent_options: dsh_agent::AgentOptions,
    ) -> Result<AgentHandle, AppError> {
        let mut options = ResumeAgentOptions::new(id.clone());
        options.agent_options = agent_options;
        options.setup = Some(self.boot.agent_setup(id, start));
        Ok(self.agents.resume(&self.root, options).await?)
    }

    /// The environment `agent`'s built-in tools run in, if the `tools-builtin` row is mounted.
    pub fn tool_env(&self, agent: &dyn Agent) -> Option<ToolEnv> {
        self.boot.envs.as_ref()?.resolve(Some(agent.scope_key()))
    }

    /// The environment session `id`'s built-in tools would run in under `mode`, before any
    /// agent runs it (the TUI's `!command` on a session without a prompt yet); `None` when
    /// the `tools-builtin` row is not mounted.
    pub fn session_tool_env(
        &self,
        id: &SessionId,
        mode: SandboxMode,
    ) -> Result<Option<ToolEnv>, dsh_kernel::BoxError> {
        if self.boot.envs.is_none() {
            return Ok(None);
        }
        self.boot.tool_env(id, mode).map(Some)
    }

    /// Runs `agent`'s built-in tools under `mode` from its next call, without restarting it.
    /// Only the tools change: logging the new mode (a `permission/preset` or `sandbox/mode`
    /// event) is the caller's.
    /// An agent without an environment (disposed, or no `tools-builtin` row) is left alone.
    pub fn set_sandbox_mode(
        &self,
        agent: &dyn Agent,
        mode: SandboxMode,
    ) -> Result<(), dsh_kernel::KernelError> {
        self.boot.set_sandbox_mode(agent, mode)
    }

    /// Calls `listener` with every event appended to session `id`, in seq order, right after
    /// it is committed. The listener runs on the appending task: keep it short.
    pub fn subscribe(
        &self,
        id: SessionId,
        listener: impl Fn(&Arc<SessionEvent>) + Send + Sync + 'static,
    ) -> Result<Disposer, AppError> {
        self.root
            .on::<SessionEventPublished>(move |published| {
                if published.session.id() == &id {
                    listener(&published.event);
                }
                Ok(())
            })
            .map_err(AppError::Mount)
    }

    /// What the kernel cannot confine in the configured sandbox mode, if anything. Probes the
    /// kernel on first use (it forks a short-lived shell), so call it off the hot path.
    pub fn sandbox_notice(&self) -> Option<SandboxNotice> {
        let mode = self.settings().sandbox.mode.value;
        if mode == SandboxMode::DangerFullAccess {
            return None;
        }
        SandboxProbe::current().notice(mode)
    }

    /// Unloads every plugin (agents still alive are disposed and sessions flushed) and
    /// removes the private temp directory.
    pub fn shutdown(self) {
        self.root.fiber().dispose();
        let _ = std::fs::remove_dir_all(&self.boot.temp_root.path);
        temp::finish_sweep(self.sweep);
        temp::finish_sweep(self.id_writer);
    }
}

#[cfg(test)]
mod tests;
