//! `dsh` with no command: the interactive terminal UI over a booted [`Runtime`], on a new
//! session or, with `--resume ID` / `--continue`, on a stored one.
//!
//! [`AppDriver`] is the application side of the UI's [`AgentDriver`] seam. It owns the
//! agent of the session on screen and starts it only when the first prompt is sent (so
//! opening and leaving `dsh` writes no empty session), forwards that session's events into
//! the UI, switches sessions for `/resume`, `/fork` and `/clear`, and switches models and
//! permission presets.

use super::{exit, GlobalArgs, Opening};
use crate::app::{
    find_session, latest_session, sessions_of, AgentStart, AppError, BootOptions, Runtime,
};
use crate::config::{load, Env, Settings, Source};
use crate::tui::history::HistoryFile;
use crate::tui::interactive::{
    run_terminal, AgentDriver, AgentListing, AgentTranscript, Answers, CurrentModel, DriverError,
    Input, OpenedHow, OpenedSession, SessionListing, TuiAnswerer,
};
use crate::tui::ContextFill;
use dsh_agent::{
    install_model_selection, AbortSignal, Agent, AgentCancelCause, AgentHandle, CancelOptions,
    ModelSelection, ModelSelectionRef,
};
use dsh_compaction::{CompactionEngine, MeterService};
use dsh_kernel::Disposer;
use dsh_llm::LlmRuntime;
use dsh_protocol::{LlmCallConfig, Message, SessionId};
use dsh_store::SessionPersistence;
use dsh_tools_builtin::approval::events::{fold_session_safety, log_sandbox_mode, SafetyFold};
use dsh_tools_builtin::{PermissionPreset, SandboxMode, SessionSafety};
use futures_util::future::BoxFuture;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::mpsc;

mod agent_driver;
mod feeds;
mod goal;
mod input_features;
use feeds::{
    spawn_agent_count, spawn_child_list, spawn_job_count, spawn_mcp_notices, spawn_sandbox_notice,
    watch_commands,
};

/// Runs the interactive UI, on the session `opening` names, when stdin and stdout are a
/// terminal; otherwise prints the help and returns the usage status, as a bare `dsh` in a
/// script should.
pub(super) fn run(global: &GlobalArgs, opening: &Opening, env: &dyn Env) -> anyhow::Result<u8> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        let help = <super::Cli as clap::CommandFactory>::command().render_help();
        eprint!("{help}");
        return Ok(exit::USAGE);
    }
    let settings = load(env, &global.overrides())?;
    crate::tui::theme::set(crate::tui::theme::Theme::choose(
        settings.ui.theme.value,
        |name| env.get(name).map(|v| v.to_string_lossy().into_owned()),
    ));
    let options = BootOptions::from_process(global.cwd.clone())?;
    ask_workspace_trust(&settings, &options, env)?;
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    tokio.block_on(interactive(settings, options, opening, env))
}

/// Asks once, before the UI starts, whether to trust a workspace that brings configuration
/// that would run programs. "Yes" goes into the trust list; "no" holds for this session only
/// (nothing is written, so the next start asks again).
fn ask_workspace_trust(
    settings: &Settings,
    options: &BootOptions,
    env: &dyn Env,
) -> anyhow::Result<()> {
    let Ok(workspace) = crate::app::canonical_workspace(&options.cwd) else {
        return Ok(()); // boot reports it
    };
    let home = &settings.home.value;
    if crate::trust::is_trusted(home, &workspace) {
        return Ok(());
    }
    let project = crate::trust::ProjectConfig::scan(&workspace, env);
    if project.is_empty() {
        return Ok(());
    }
    let prompt = crate::tui::TrustPrompt {
        workspace: workspace.display().to_string(),
        files: project.file_names(&workspace),
        would_run: project.would_run(),
    };
    if crate::tui::interactive::ask_trust(&prompt)? {
        crate::trust::grant(home, &workspace)?;
    }
    Ok(())
}

async fn interactive(
    settings: Settings,
    options: BootOptions,
    opening: &Opening,
    env: &dyn Env,
) -> anyhow::Result<u8> {
    let runtime = Arc::new(Runtime::boot(settings, options)?);
    let stored = match stored_session(&runtime, opening) {
        Ok(stored) => stored,
        Err(error) => {
            shutdown(runtime);
            return Err(error.into());
        }
    };
    let (sender, inputs) = mpsc::unbounded_channel();
    let answers = Answers::new();
    let approvals = runtime.approvals();
    if let Some(approvals) = &approvals {
        let answerer = TuiAnswerer::new(sender.clone(), answers.clone());
        approvals.set_answerer(Some(Arc::new(answerer)));
    }
    spawn_sandbox_notice(runtime.settings(), sender.clone());
    spawn_job_count(&runtime, sender.clone());
    spawn_agent_count(&runtime, sender.clone());
    spawn_child_list(&runtime, sender.clone());
    spawn_mcp_notices(&runtime, sender.clone());
    if let Some(skills) = runtime.skills() {
        tokio::spawn(watch_commands(skills, sender.clone()));
    }
    // Skipped MCP files or servers, and project files left untrusted: said once.
    let notices = crate::app::workspace_notices(runtime.settings(), runtime.workspace(), env);
    if !notices.is_empty() {
        let lines = notices
            .iter()
            .map(|n| n.strip_prefix("dsh: ").unwrap_or(n).to_owned())
            .collect();
        let _ = sender.send(Input::Notice(lines));
    }
    // Hook files that could not be read or had bad entries: the same lines `dsh run` prints.
    let hook_notices = runtime.hook_notices();
    if !hook_notices.is_empty() {
        let _ = sender.send(Input::Notice(hook_notices));
    }
    let driver = Arc::new(AppDriver::new(runtime.clone(), sender.clone()));
    // Questions from the model (and plan reviews) come to this UI while it runs.
    let questions = super::plan_ui::register_questions(&runtime, &driver.questions, &sender);
    let first = match stored {
        None => Ok(driver.opened_new()),
        Some(id) => driver.open_stored(id).await.map_err(anyhow::Error::from),
    };
    let result = match first {
        Ok(first) => run_terminal(driver.clone(), answers, sender, inputs, first)
            .await
            .map_err(anyhow::Error::from),
        Err(error) => Err(error),
    };
    if let Some(approvals) = &approvals {
        approvals.set_answerer(None);
    }
    drop(questions);
    drop(driver);
    shutdown(runtime);
    result?;
    Ok(exit::SUCCESS)
}

/// The stored session `--resume` or `--continue` names, checked before the UI starts (a
/// wrong id is a usage error, like `dsh run --resume`'s).
fn stored_session(runtime: &Runtime, opening: &Opening) -> Result<Option<SessionId>, AppError> {
    if *opening == Opening::New {
        return Ok(None);
    }
    let persistence = runtime.persistence().ok_or(AppError::MissingPart {
        service: "session store",
        row: crate::config::PERSISTENCE_ROW,
    })?;
    let summary = match opening {
        Opening::Resume(query) => find_session(&*persistence, query)?,
        _ => latest_session(&*persistence, runtime.workspace())?,
    };
    Ok(Some(SessionId::new(summary.id)))
}

/// Shuts the runtime down once nothing else holds it.
fn shutdown(runtime: Arc<Runtime>) {
    if let Ok(runtime) = Arc::try_unwrap(runtime) {
        runtime.shutdown();
    }
}

/// The agent of the session on screen, once started.
struct Live {
    handle: AgentHandle,
    subscription: Disposer,
}

impl Live {
    fn agent(&self) -> &Arc<dyn Agent> {
        self.handle.agent()
    }

    async fn close(self) {
        // The loop flushes the session before disposal completes.
        self.handle.dispose().await;
        self.subscription.dispose();
    }
}

struct Current {
    id: SessionId,
    live: Option<Live>,
    /// A preset chosen before the agent started; applied when it does.
    preset: Option<PermissionPreset>,
}

/// The application side of the UI. See the module docs.
pub struct AppDriver {
    runtime: Arc<Runtime>,
    inputs: mpsc::UnboundedSender<Input>,
    /// Shared by every agent this UI starts, so a `/model` choice survives `/clear`.
    selection: Arc<ModelSelectionRef>,
    current: Mutex<Current>,
    /// The context window of the model last asked about, so measuring the context after
    /// every burst of events does not resolve the model again.
    window: Mutex<Option<ModelWindow>>,
    /// Stops the running `!command`, if one runs.
    shell_cancel: Mutex<Option<tokio_util::sync::CancellationToken>>,
    /// Where question cards (`ask_user_question`, the plan review) are answered.
    questions: crate::tui::interactive::QuestionSlots,
}

/// What the model runtime says about one route's model window.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ModelWindow {
    provider: String,
    model: String,
    window: Option<u64>,
    /// The window is a default for a model nothing describes (shown as a guess).
    guessed: bool,
}

impl AppDriver {
    pub fn new(runtime: Arc<Runtime>, inputs: mpsc::UnboundedSender<Input>) -> Self {
        Self {
            runtime,
            inputs,
            selection: Arc::new(ModelSelectionRef::new(None)),
            current: Mutex::new(Current {
                id: Runtime::new_session_id(),
                live: None,
                preset: None,
            }),
            window: Mutex::new(None),
            shell_cancel: Mutex::new(None),
            questions: crate::tui::interactive::QuestionSlots::new(),
        }
    }

    /// The context window of the model in use, as the model runtime resolves it for the
    /// route (the same answer the agent loop gets), and whether that window is a default
    /// guess (from the settings' model entry); `None` when it is unknown or the model does
    /// not resolve.
    async fn model_window(&self) -> Option<(u64, bool)> {
        let CurrentModel {
            provider, model, ..
        } = self.model();
        let known = self
            .window
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(known) = known.filter(|w| w.provider == provider && w.model == model) {
            return known.window.map(|window| (window, known.guessed));
        }
        let llm = self.runtime.ctx().get::<LlmRuntime>()?;
        let config = LlmCallConfig {
            provider: provider.clone(),
            model: model.clone(),
            ..LlmCallConfig::default()
        };
        let window = match llm
            .prepare_call(config, &tokio_util::sync::CancellationToken::new())
            .await
        {
            Ok(call) => call.context_window(),
            Err(error) => {
                tracing::debug!(%error, "the model's context window is unknown");
                None
            }
        };
        let guessed = crate::app::model_info(self.runtime.settings(), &provider, &model)
            .is_some_and(|info| info.context_window_guessed());
        *self.window.lock().unwrap_or_else(PoisonError::into_inner) = Some(ModelWindow {
            provider,
            model,
            window,
            guessed,
        });
        window.map(|window| (window, guessed))
    }

    fn current(&self) -> MutexGuard<'_, Current> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live_agent(&self) -> Option<Arc<dyn Agent>> {
        self.current()
            .live
            .as_ref()
            .map(|live| live.agent().clone())
    }

    /// Resumes the stored session `id` (`dsh --resume`, `dsh --continue`) as the one the UI
    /// opens with.
    pub async fn open_stored(&self, id: SessionId) -> Result<OpenedSession, DriverError> {
        self.reopen(id, OpenedHow::Resumed).await
    }

    /// The (not yet started) session the UI opens with.
    pub fn opened_new(&self) -> OpenedSession {
        let id = self.current().id.clone();
        self.opened(id, OpenedHow::New, Vec::new())
    }

    fn opened(
        &self,
        id: SessionId,
        how: OpenedHow,
        events: Vec<Arc<dsh_session::SessionEvent>>,
    ) -> OpenedSession {
        let model = self.model();
        let context_window =
            crate::app::model_info(self.runtime.settings(), &model.provider, &model.model)
                .and_then(|info| info.context_window);
        OpenedSession {
            id,
            how,
            events,
            provider: model.provider,
            model: model.model,
            context_window,
        }
    }

    /// Subscribes to `id`'s events, then creates (or resumes) its agent.
    async fn start(&self, id: SessionId, resume: bool) -> Result<Live, DriverError> {
        let inputs = self.inputs.clone();
        let session = id.clone();
        let subscription = self
            .runtime
            .subscribe(id.clone(), move |event| {
                let _ = inputs.send(Input::Session {
                    session: session.clone(),
                    event: event.clone(),
                });
            })
            .map_err(DriverError::failed)?;
        let changes = Arc::new(Mutex::new(Vec::new()));
        let start = AgentStart {
            session_id: Some(id.clone()),
            resume_changes: Some(changes.clone()),
            ..AgentStart::default()
        };
        let handle = if resume {
            self.runtime.resume_agent(id, start).await
        } else {
            self.runtime.create_agent(start).await
        };
        let handle = match handle {
            Ok(handle) => handle,
            Err(error) => {
                subscription.dispose();
                return Err(DriverError::failed(error));
            }
        };
        let notes: Vec<String> = changes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|change| format!("note: {change}"))
            .collect();
        if !notes.is_empty() {
            let _ = self.inputs.send(Input::Notice(notes));
        }
        match install_model_selection(handle.agent().ctx(), self.selection.clone()) {
            // They unwind with the agent.
            Ok(disposers) => disposers.into_iter().for_each(Disposer::forget),
            Err(error) => tracing::warn!(%error, "model switching is unavailable for this agent"),
        }
        Ok(Live {
            handle,
            subscription,
        })
    }

    /// The current agent, started on first use.
    async fn agent(&self) -> Result<Arc<dyn Agent>, DriverError> {
        if let Some(agent) = self.live_agent() {
            return Ok(agent);
        }
        let id = self.current().id.clone();
        let live = self.start(id, false).await?;
        let agent = live.agent().clone();
        let preset = {
            let mut current = self.current();
            current.live = Some(live);
            current.preset.take()
        };
        if let Some(preset) = preset {
            self.switch_preset(&agent, preset)?;
        }
        Ok(agent)
    }

    /// Logs and adopts `preset` on a live, idle agent: the approval policy, and the sandbox
    /// mode of its tools from their next call (a mode this run pins with a flag or an env var
    /// stays in force, and the log says so).
    fn switch_preset(
        &self,
        agent: &Arc<dyn Agent>,
        preset: PermissionPreset,
    ) -> Result<(), DriverError> {
        self.apply_preset(agent, preset)?;
        let mode = match self.pinned_sandbox() {
            Some(pinned) if pinned != preset.sandbox_mode() => {
                log_sandbox_mode(agent.session(), pinned).map_err(DriverError::failed)?;
                pinned
            }
            _ => preset.sandbox_mode(),
        };
        self.runtime
            .set_sandbox_mode(agent.as_ref(), mode)
            .map_err(DriverError::failed)
    }

    /// Makes `live` (driving `id`) the session on screen and closes the previous one.
    async fn switch(&self, id: SessionId, live: Option<Live>) {
        let previous = {
            let mut current = self.current();
            current.id = id;
            current.preset = None;
            std::mem::replace(&mut current.live, live)
        };
        if let Some(previous) = previous {
            previous.close().await;
        }
    }

    fn persistence(&self) -> Result<Arc<dyn SessionPersistence>, DriverError> {
        self.runtime.persistence().ok_or_else(|| {
            DriverError::Unsupported("sessions are not stored in this configuration".into())
        })
    }

    fn ensure_idle(&self) -> Result<(), DriverError> {
        match self.live_agent() {
            Some(agent) if agent.status() == dsh_agent::AgentStatus::Running => {
                Err(DriverError::Busy)
            }
            _ => Ok(()),
        }
    }

    /// Logs the preset with its sandbox mode and policy, and adopts the policy.
    fn apply_preset(
        &self,
        agent: &Arc<dyn Agent>,
        preset: PermissionPreset,
    ) -> Result<(), DriverError> {
        let approvals = self.runtime.approvals().ok_or_else(|| {
            DriverError::Unsupported("approval is not configured in this composition".into())
        })?;
        approvals
            .start_session(agent.session(), &SessionSafety::from_preset(preset))
            .map_err(DriverError::failed)
    }

    /// The sandbox mode this run pins with a flag or an environment variable, if any.
    fn pinned_sandbox(&self) -> Option<SandboxMode> {
        let mode = &self.runtime.settings().sandbox.mode;
        matches!(mode.source, Source::Flag { .. } | Source::Env { .. }).then_some(mode.value)
    }

    async fn reopen(&self, id: SessionId, how: OpenedHow) -> Result<OpenedSession, DriverError> {
        let live = self.start(id.clone(), true).await?;
        let events = live.agent().session().events().to_vec();
        self.switch(id.clone(), Some(live)).await;
        Ok(self.opened(id, how, events))
    }
}

/// The preset a session's log says it runs under: the last one chosen, unless its sandbox
/// mode changed since (a pinned mode, a resume under narrower settings), when the preset
/// named after the mode in force.
pub(super) fn current_preset(fold: &SafetyFold) -> Option<PermissionPreset> {
    match (fold.preset, fold.sandbox) {
        (Some(preset), Some(mode)) if preset.sandbox_mode() != mode => {
            Some(PermissionPreset::for_sandbox(mode))
        }
        (preset, mode) => preset.or(mode.map(PermissionPreset::for_sandbox)),
    }
}

pub(super) fn default_preset(settings: &Settings) -> PermissionPreset {
    PermissionPreset::for_sandbox(settings.sandbox.mode.value)
}
