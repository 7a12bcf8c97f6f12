//! What every agent gets before it is published: its session's tool environment (registered
//! in the agent's scope, where the built-in tools look it up), the workspace instructions and
//! safety records of a new session, the sandbox mode and approval policy of a resumed one,
//! and an optional cap on model requests per turn.
//!
//! A resumed session keeps its recorded sandbox mode and policy only when they are not wider
//! than what this run would choose (see [`resumed_safety`]): resuming must never quietly
//! give a session more than the person running dsh now asked for.

use super::Boot;
use crate::config::Source;
use crate::config::{Settings, Sourced};
use crate::instructions::Instructions;
use dsh_agent::{
    Agent, AgentEvent, AgentSetup, PreStep, PreStepDecision, SessionStart, SessionStartSource,
};
use dsh_kernel::{BoxError, Context, KernelError};
use dsh_protocol::SessionId;
use dsh_tools_builtin::approval::escalation::sandbox_reach;
use dsh_tools_builtin::approval::events::{fold_session_safety, log_sandbox_mode, SafetyFold};
use dsh_tools_builtin::{
    ApprovalPolicy, PermissionPreset, SandboxMode, SessionFacts, SessionSafety, ToolEnv,
    WebFetchConfig,
};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

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
    /// Filled, on resume, with each safety knob the session now runs under differently from
    /// what its log recorded (the surface tells the person).
    pub resume_changes: Option<Arc<Mutex<Vec<ResumeChange>>>>,
}

/// A safety knob a resumed session runs under differently from what its log recorded. The
/// change is also logged (`sandbox/mode`, `approval/policy`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumeChange {
    /// `sandbox` or `approval policy`.
    pub knob: &'static str,
    pub recorded: String,
    pub now: String,
    /// The flag or variable of this run that chose `now`; `None` when `recorded` was wider
    /// than this run allows.
    pub chosen_by: Option<String>,
    /// The flag that keeps `recorded` when given again.
    pub keep_with: String,
}

impl fmt::Display for ResumeChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            knob,
            recorded,
            now,
            ..
        } = self;
        match &self.chosen_by {
            Some(source) => write!(
                f,
                "the resumed session was recorded with {knob} \"{recorded}\"; this run's \
                 {source} chooses \"{now}\""
            ),
            None => write!(
                f,
                "the resumed session was recorded with {knob} \"{recorded}\", wider than this \
                 run's \"{now}\", so it runs under \"{now}\" (give {} again to keep it)",
                self.keep_with
            ),
        }
    }
}

/// What a resumed session runs under, and what differs from its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ResumedSafety {
    pub sandbox: SandboxMode,
    pub policy: ApprovalPolicy,
    /// The sandbox mode is to be logged (it differs from the log, or the log has none).
    pub log_sandbox: bool,
    pub changes: Vec<ResumeChange>,
}

/// One knob of a resumed session: the recorded value unless this run chose another with a
/// flag or an environment variable, or the recorded one is wider than this run's.
fn resume_knob<T: Copy + PartialEq + fmt::Display>(
    knob: &'static str,
    recorded: Option<T>,
    run: &Sourced<T>,
    wider: impl Fn(T, T) -> bool,
    keep_with: impl Fn(T) -> String,
) -> (T, Option<ResumeChange>) {
    let Some(recorded) = recorded else {
        return (run.value, None);
    };
    let chosen_by = chosen_now(run.source).then(|| run.source.to_string());
    if recorded == run.value || (chosen_by.is_none() && !wider(recorded, run.value)) {
        return (recorded, None);
    }
    let change = ResumeChange {
        knob,
        recorded: recorded.to_string(),
        now: run.value.to_string(),
        chosen_by,
        keep_with: keep_with(recorded),
    };
    (run.value, Some(change))
}

/// The sandbox mode and approval policy a session resumed by this run gets (see the module
/// docs), from what its log `recorded`.
pub(crate) fn resumed_safety(recorded: &SafetyFold, settings: &Settings) -> ResumedSafety {
    let (sandbox, sandbox_change) = resume_knob(
        "sandbox",
        recorded.sandbox,
        &settings.sandbox.mode,
        |a, b| sandbox_reach(a) > sandbox_reach(b),
        |mode| format!("--sandbox {mode}"),
    );
    let (policy, policy_change) = resume_knob(
        "approval policy",
        recorded.policy,
        &settings.approval.policy,
        |a, b| a.openness() > b.openness(),
        |policy| format!("--approval {policy}"),
    );
    ResumedSafety {
        sandbox,
        policy,
        log_sandbox: recorded.sandbox != Some(sandbox),
        changes: sandbox_change.into_iter().chain(policy_change).collect(),
    }
}

/// Whether this run's person chose the value (a flag or an env var), so it also applies to
/// a resumed session instead of the one its log records.
fn chosen_now(source: Source) -> bool {
    matches!(source, Source::Flag { .. } | Source::Env { .. })
}

impl Boot {
    /// The session's tool environment under `mode`.
    pub(super) fn tool_env(&self, id: &SessionId, mode: SandboxMode) -> Result<ToolEnv, BoxError> {
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
    fn session_started(
        &self,
        event: &AgentEvent<SessionStartSource>,
        changes: Option<&Mutex<Vec<ResumeChange>>>,
    ) -> Result<(), BoxError> {
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
                let resumed = resumed_safety(&recorded, &self.settings);
                if resumed.log_sandbox {
                    log_sandbox_mode(session, resumed.sandbox)?;
                }
                self.set_sandbox_mode(agent.as_ref(), resumed.sandbox)?;
                if let Some(approvals) = &self.approvals {
                    // Logs `approval/policy` only when it differs from the log's.
                    approvals.set_policy(session, resumed.policy)?;
                }
                if let Some(sink) = changes {
                    sink.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .extend(resumed.changes);
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
                let changes = start.resume_changes.clone();
                ctx.on::<SessionStart>(move |event| {
                    listener.session_started(event, changes.as_deref())
                })?
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
