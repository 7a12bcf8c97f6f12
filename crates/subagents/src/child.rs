//! Child composition, shared by every way a child starts: its depth, header, seed, delegated
//! policy and scoped world (tool environment, runtime context, persona, tool filter, the
//! `report` tool of a continuable child, the one-shot descriptor).

use crate::descriptor::{
    fold_descriptor, SubagentDescriptor, SubagentMode, SUBAGENT_DESCRIPTOR_VERSION,
};
use crate::error::SubagentError;
use crate::service::Inner;
use crate::tools::report::{Report, REPORT_SECTION, REPORT_SECTION_TEXT};
use dsh_agent::{
    Agent, AgentSetup, CreateAgentOptions, PreStep, SessionMeta, SessionStart, SessionStartSource,
};
use dsh_kernel::{BoxError, Context};
use dsh_prompt::{ContextEntry, Section, SystemPrompt, PERSONA_SECTION};
use dsh_protocol::SessionId;
use dsh_session::{AppendOptions, EventData, PluginEvent, Session, SessionEvent, SessionOrigin};
use dsh_tools::{Restriction, ToolRuntime, Typed};
use dsh_tools_builtin::approval::events::fold_session_safety;
use dsh_tools_builtin::{Approvals, SandboxMode, ToolEnvs};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The runtime-context entry every child reads (after the sandbox and approval entries).
pub const DELEGATION_CONTEXT: &str = "subagent:delegation";
const DELEGATION_CONTEXT_ORDER: f64 = 120.0;
const DELEGATION_TEXT: &str = "You are a subagent: another agent started you to do one task, \
and no person is watching this conversation. Your sandbox and tools are fixed for you; any \
request for approval or for more access is refused automatically. When a limit stops you, do \
not retry: say what you could not do and why in your result, so the agent that started you can \
decide.";

/// How a child's history begins.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// An empty conversation.
    Spawn,
    /// Seeded with the parent's completed turns.
    Fork,
}

impl Provider {
    pub fn name(self) -> &'static str {
        match self {
            Self::Spawn => "spawn",
            Self::Fork => "fork",
        }
    }
}

/// The delegation depth of an agent: its header's (a monotone floor), 0 for a top agent.
pub fn depth_of(agent: &dyn Agent) -> u64 {
    agent.session().header().delegation_depth.unwrap_or(0)
}

/// Whether `agent` works for another agent rather than for a person: a delegated child (its
/// header's `origin` or depth says so), or any agent another live agent owns. Guards that
/// must only let a person through (asking the user, approving a plan, creating a goal)
/// refuse such callers; every child this crate starts passes both tests.
pub fn is_delegated(agent: &dyn Agent, registry: Option<&dsh_agent::AgentRegistry>) -> bool {
    let header = agent.session().header();
    if header.origin == Some(SessionOrigin::Subagent) || header.delegation_depth.unwrap_or(0) > 0 {
        return true;
    }
    registry.is_some_and(|r| {
        !r.roots().iter().any(|root| root.id() == agent.id()) && r.get(agent.id()).is_some()
    })
}

/// Everything decided about a child before anything is created.
pub(crate) struct ChildPlan {
    pub id: SessionId,
    pub provider: Provider,
    pub depth: u64,
    pub descriptor: SubagentDescriptor,
    /// The inherited prefix (fork only).
    pub prefix: Vec<Arc<SessionEvent>>,
    /// The parent's sandbox mode, when it has a tool environment.
    pub sandbox: Option<SandboxMode>,
    pub parent: Arc<dyn Agent>,
}

/// The seq-ordered events of `session` through its last `turn/end` (nothing of the turn in
/// flight, nothing before the first completed turn).
pub(crate) fn completed_prefix(session: &Session) -> Vec<Arc<SessionEvent>> {
    let events = session.events();
    let end = events
        .iter()
        .rposition(|e| matches!(e.data, EventData::TurnEnd(_)));
    match end {
        Some(end) => events[..=end].to_vec(),
        None => Vec::new(),
    }
}

/// Decides the child of `parent`; refuses past the depth cap before anything exists.
pub(crate) fn plan(
    inner: &Inner,
    parent: &Arc<dyn Agent>,
    provider: Provider,
    mode: SubagentMode,
    label: &str,
) -> Result<ChildPlan, SubagentError> {
    let depth = depth_of(parent.as_ref()) + 1;
    let max = inner.config.max_depth;
    if depth > max {
        return Err(SubagentError::Depth { depth, max });
    }
    let options = parent.options();
    let continuable = mode == SubagentMode::Continuable;
    let descriptor = SubagentDescriptor {
        version: SUBAGENT_DESCRIPTOR_VERSION,
        mode,
        provider: provider.name().to_owned(),
        label: Some(label.to_owned()),
        agent_provider: options.provider.clone().filter(|_| continuable),
        agent_model: options.model.clone().filter(|_| continuable),
        persona: inner.config.persona.clone().filter(|_| continuable),
        tool_filter: inner.config.tool_filter.clone().filter(|_| continuable),
    };
    let prefix = match provider {
        Provider::Spawn => Vec::new(),
        Provider::Fork => completed_prefix(parent.session()),
    };
    let sandbox = inner
        .ctx
        .get::<ToolEnvs>()
        .and_then(|envs| envs.resolve(Some(parent.scope_key())))
        .map(|env| env.sandbox().mode());
    Ok(ChildPlan {
        id: SessionId::new(uuid::Uuid::new_v4().to_string()),
        provider,
        depth,
        descriptor,
        prefix,
        sandbox,
        parent: parent.clone(),
    })
}

/// The descriptor as the seed event that follows `prefix`.
fn descriptor_event(
    descriptor: &SubagentDescriptor,
    seq: u64,
    time: u64,
) -> Result<Arc<SessionEvent>, SubagentError> {
    let data = EventData::plugin(descriptor).map_err(|e| SubagentError::Setup(e.to_string()))?;
    Ok(Arc::new(SessionEvent {
        seq,
        time,
        data,
        ignorable: false,
        surface_op: None,
        source_event_seqs: None,
    }))
}

/// The creation options of a planned child.
pub(crate) fn create_options(
    inner: &Arc<Inner>,
    plan: &ChildPlan,
) -> Result<CreateAgentOptions, SubagentError> {
    let parent = plan.parent.session();
    let prefix_len = plan.prefix.len() as u64;
    let mut seed = plan.prefix.clone();
    let continuable = plan.descriptor.mode == SubagentMode::Continuable;
    if continuable {
        seed.push(descriptor_event(
            &plan.descriptor,
            prefix_len,
            (parent.clock())(),
        )?);
    }
    Ok(CreateAgentOptions {
        session_id: Some(plan.id.clone()),
        seed: (!seed.is_empty()).then_some(seed),
        meta: SessionMeta {
            cwd: parent.header().cwd.clone(),
            parent_session: Some(parent.id().clone()),
            seed_length: (prefix_len > 0).then_some(prefix_len),
            origin: Some(SessionOrigin::Subagent),
            delegation_depth: Some(plan.depth),
            agent_preset: None,
        },
        agent_options: plan.parent.options().clone(),
        setup: Some(setup(inner.clone(), plan, true)),
        cancel: None,
    })
}

/// The setup of a child's scope. `fresh` is false for a cold resume: its delegated policy
/// is in its log already, and its descriptor too.
pub(crate) fn setup(inner: Arc<Inner>, plan: &ChildPlan, fresh: bool) -> AgentSetup {
    let id = plan.id.clone();
    let parent = plan.parent.clone();
    let sandbox = plan.sandbox;
    let descriptor = plan.descriptor.clone();
    Box::new(move |ctx: Context| {
        Box::pin(async move {
            compose(&inner, &ctx, &id, &parent, sandbox, &descriptor, fresh)?;
            Ok(None)
        })
    })
}

fn compose(
    inner: &Arc<Inner>,
    ctx: &Context,
    id: &SessionId,
    parent: &Arc<dyn Agent>,
    sandbox: Option<SandboxMode>,
    descriptor: &SubagentDescriptor,
    fresh: bool,
) -> Result<(), BoxError> {
    // The tool environment: the parent's, as this child's session.
    if let Some(envs) = inner.ctx.get::<ToolEnvs>() {
        if let Some(env) = envs.resolve(Some(parent.scope_key())) {
            envs.set(ctx, env.for_child_session(id.as_str()))?.forget();
        }
    }
    // The delegated policy, written into the child's own log once it exists.
    let has_approvals = inner.ctx.get::<Approvals>().is_some();
    let envs = inner.ctx.get::<ToolEnvs>();
    ctx.on::<SessionStart>(move |event| {
        let session = event.agent.session();
        match event.data {
            SessionStartSource::Startup if fresh => {
                log_delegated_policy(session, sandbox, has_approvals)?;
            }
            SessionStartSource::Resume => {
                // A resumed child runs under the sandbox its log recorded.
                let recorded = fold_session_safety(&session.events()).sandbox;
                if let (Some(envs), Some(mode)) = (&envs, recorded) {
                    if let Some(env) = envs.resolve(Some(event.agent.scope_key())) {
                        if env.sandbox().mode() != mode {
                            envs.set(event.agent.ctx(), env.with_sandbox_mode(mode))?
                                .forget();
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    })?
    .forget();
    if let Some(prompt) = inner.ctx.get::<SystemPrompt>() {
        prompt
            .context(
                ctx,
                ContextEntry::new(
                    DELEGATION_CONTEXT,
                    DELEGATION_CONTEXT_ORDER,
                    DELEGATION_TEXT,
                ),
            )?
            .forget();
        if descriptor.mode == SubagentMode::Continuable {
            prompt
                .section(
                    ctx,
                    Section::new(REPORT_SECTION, 117.0, REPORT_SECTION_TEXT),
                )?
                .forget();
        }
    }
    if fresh {
        shape(inner, ctx, descriptor)?;
    } else {
        // A cold resume: the persona and tool filter the child was started with are in its
        // own descriptor, which is known once its log is loaded (before its first step).
        let inner = inner.clone();
        let placeholder = descriptor.clone();
        ctx.on::<SessionStart>(move |event| {
            let session = event.agent.session();
            let seeded = session.header().seed_length.unwrap_or(0) as usize;
            let events = session.events();
            let stored = match fold_descriptor(events.get(seeded..).unwrap_or_default()) {
                Some(Ok(stored)) => stored,
                _ => placeholder.clone(),
            };
            shape(&inner, event.agent.ctx(), &stored)
        })?
        .forget();
    }
    if let Some(tools) = inner.ctx.get::<ToolRuntime>() {
        if descriptor.mode == SubagentMode::Continuable {
            let report = Report::new(Arc::downgrade(inner));
            tools.register(ctx, Typed::arc(report))?.forget();
        }
    }
    if descriptor.mode == SubagentMode::OneShot && fresh {
        // Inside the first turn, before its first step.
        let written = Arc::new(AtomicBool::new(false));
        let descriptor = descriptor.clone();
        ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
            let first = !written.swap(true, Ordering::SeqCst);
            let result = if first {
                args.agent
                    .session()
                    .append_typed(&descriptor)
                    .map(|_| ())
                    .map_err(BoxError::from)
            } else {
                Ok(())
            };
            async move {
                result?;
                next.run().await
            }
        })?
        .forget();
    }
    Ok(())
}

/// The persona and tool filter `descriptor` records (the configured ones where it has none).
fn shape(
    inner: &Arc<Inner>,
    ctx: &Context,
    descriptor: &SubagentDescriptor,
) -> Result<(), BoxError> {
    if let Some(prompt) = inner.ctx.get::<SystemPrompt>() {
        if let Some(persona) = &descriptor.persona.clone().or(inner.config.persona.clone()) {
            prompt
                .section(ctx, Section::new(PERSONA_SECTION, 0.0, persona.clone()))?
                .forget();
        }
    }
    if let Some(tools) = inner.ctx.get::<ToolRuntime>() {
        let filter = descriptor
            .tool_filter
            .clone()
            .or(inner.config.tool_filter.clone());
        if let Some(filter) = filter {
            tools
                .restrict(
                    ctx,
                    Restriction {
                        allow: filter.allow,
                        deny: filter.deny,
                    },
                )?
                .forget();
        }
    }
    Ok(())
}

/// `sandbox/mode` and `approval/policy` with `source: delegation`, the original's shape.
fn log_delegated_policy(
    session: &Session,
    sandbox: Option<SandboxMode>,
    has_approvals: bool,
) -> Result<(), BoxError> {
    use dsh_tools_builtin::approval::events::{ApprovalPolicySet, SandboxModeSet};
    if let Some(mode) = sandbox {
        session.append(
            EventData::other(
                SandboxModeSet::TYPE,
                json!({"mode": mode, "source": "delegation"}),
            ),
            AppendOptions::log_only(),
        )?;
    }
    if has_approvals {
        session.append(
            EventData::other(
                ApprovalPolicySet::TYPE,
                json!({"policy": "never", "source": "delegation"}),
            ),
            AppendOptions::log_only(),
        )?;
    }
    Ok(())
}
