//! What every agent gets before it is published: its session's tool environment (registered
//! in the agent's scope, where the built-in tools look it up), the workspace instructions and
//! safety records of a new session, the sandbox mode of a resumed one, and an optional cap on
//! model requests per turn.

use super::Boot;
use crate::config::Source;
use crate::instructions::Instructions;
use dsh_agent::{
    Agent, AgentEvent, AgentSetup, PreStep, PreStepDecision, SessionStart, SessionStartSource,
};
use dsh_kernel::{BoxError, Context, KernelError};
use dsh_protocol::SessionId;
use dsh_tools_builtin::approval::events::{fold_session_safety, log_sandbox_mode};
use dsh_tools_builtin::{
    PermissionPreset, SandboxMode, SessionFacts, SessionSafety, ToolEnv, WebFetchConfig,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Per-agent choices of the caller.
#[derive(Clone, Debug, Default)]
pub struct AgentStart {
    /// The session id of a new agent; generated when `None`. Ignored by resume.
    pub session_id: Option<SessionId>,
    /// Refuse to start model request number `max_steps + 1` of a turn (the turn ends
    /// `blocked`).
    pub max_steps: Option<u64>,
    /// Set when the step cap stopped a turn.
    pub step_cap_hit: Option<Arc<AtomicBool>>,
}

/// Whether this run's person chose the value (a flag or an env var), so it also applies to
/// a resumed session instead of the one its log records.
fn chosen_now(source: Source) -> bool {
    matches!(source, Source::Flag { .. } | Source::Env { .. })
}

impl Boot {
    /// The session's tool environment under `mode`.
    fn tool_env(&self, id: &SessionId, mode: SandboxMode) -> Result<ToolEnv, BoxError> {
        let settings = &self.settings;
        let mut builder = ToolEnv::builder(&self.workspace)
            .temp_dir(self.temp_root.path.join(id.as_str()))
            .sandbox_mode(mode)
            .base_env(self.base_env.clone())
            .facts(SessionFacts {
                session_id: Some(id.as_str().to_owned()),
                dsh_home: Some(settings.home.value.clone()),
            })
            .model_accepts_images(self.model_accepts_images)
            .web_fetch(WebFetchConfig {
                enabled: settings.tools.is_enabled("web_fetch"),
                allow_private_addresses: settings.tools.web_fetch_allow_private.value,
            });
        for secret in &self.secrets {
            builder = builder.secret(secret.clone());
        }
        Ok(builder.build()?)
    }

    fn safety(&self) -> SessionSafety {
        let mode = self.settings.sandbox.mode.value;
        SessionSafety {
            preset: PermissionPreset::for_sandbox(mode),
            sandbox: mode,
            policy: self.settings.approval.policy.value,
        }
    }

    /// Switches the sandbox mode of `agent`'s tool environment, if it has one and the mode
    /// differs; the agent's next tool call runs under it. Logging the change is the caller's.
    pub(crate) fn set_sandbox_mode(
        &self,
        agent: &dyn Agent,
        mode: SandboxMode,
    ) -> Result<(), KernelError> {
        let Some(envs) = &self.envs else {
            return Ok(());
        };
        let Some(env) = envs.resolve(Some(agent.scope_key())) else {
            return Ok(());
        };
        if env.sandbox().mode() != mode {
            // Replaces the agent's registration; it still unwinds with the agent.
            envs.set(agent.ctx(), env.with_sandbox_mode(mode))?.forget();
        }
        Ok(())
    }

    /// Runs at `agent/session-start`, once per published lifecycle.
    fn session_started(&self, event: &AgentEvent<SessionStartSource>) -> Result<(), BoxError> {
        let agent = &event.agent;
        let session = agent.session();
        match event.data {
            SessionStartSource::Startup => {
                if let Some(approvals) = &self.approvals {
                    approvals.start_session(session, &self.safety())?;
                }
                // Only a new session gets the instructions: a resumed one has them logged.
                let instructions = Instructions::load(&self.settings.home.value, &self.workspace);
                if let Some(message) = instructions.to_message() {
                    agent.inject(message)?;
                }
            }
            SessionStartSource::Resume => {
                let recorded = fold_session_safety(&session.events());
                let settings = &self.settings;
                let wanted = settings.sandbox.mode.value;
                let mode = match recorded.sandbox {
                    Some(mode) if !chosen_now(settings.sandbox.mode.source) => mode,
                    Some(mode) if mode == wanted => mode,
                    _ => {
                        log_sandbox_mode(session, wanted)?;
                        wanted
                    }
                };
                self.set_sandbox_mode(agent.as_ref(), mode)?;
                if let Some(approvals) = &self.approvals {
                    if chosen_now(settings.approval.policy.source) {
                        approvals.set_policy(session, settings.approval.policy.value)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The setup callback for one agent driving session `id`.
    pub(crate) fn agent_setup(self: &Arc<Self>, id: SessionId, start: AgentStart) -> AgentSetup {
        let boot = self.clone();
        Box::new(move |ctx: Context| {
            Box::pin(async move {
                if let Some(envs) = &boot.envs {
                    // A resumed session may switch it to its recorded mode at session start.
                    let env = boot.tool_env(&id, boot.settings.sandbox.mode.value)?;
                    envs.set(&ctx, env)?.forget();
                }
                let listener = boot.clone();
                ctx.on::<SessionStart>(move |event| listener.session_started(event))?
                    .forget();
                if let Some(max) = start.max_steps {
                    let hit = start.step_cap_hit.clone();
                    ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
                        let over = args.data.step > max;
                        let hit = hit.clone();
                        async move {
                            if over {
                                if let Some(hit) = hit {
                                    hit.store(true, Ordering::SeqCst);
                                }
                                return Ok(PreStepDecision::Reject);
                            }
                            next.run().await
                        }
                    })?
                    .forget();
                }
                Ok(None)
            })
        })
    }
}
