//! `SubagentsPlugin` (composition row `subagents`): provides the [`Subagents`] service,
//! registers the delegation and control tools and the `tool:subagent` section globally, and
//! listens for what moves children: a parent's cancelled turn, a person's message (which
//! refills the wake budget), a child leaving the registry.

use crate::config::SubagentsConfig;
use crate::service::Subagents;
use crate::tools::control::{InterruptAgent, ListAgents, SendMessage};
use crate::tools::delegate::{
    Delegate, SUBAGENT_SECTION, SUBAGENT_SECTION_ORDER, SUBAGENT_SECTION_TEXT,
};
use dsh_agent::{AgentDisposed, AgentRegistry, InboxClaimed, SessionStart, SessionStartSource};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_prompt::{Section, SystemPrompt};
use dsh_protocol::MessageSource;
use dsh_session::{EventData, SessionEventPublished, TurnEndReason};
use dsh_tools::{ToolRuntime, Typed};
use std::sync::Arc;

/// Mounts delegation.
#[derive(Debug)]
pub struct SubagentsPlugin;

impl Plugin for SubagentsPlugin {
    const NAME: &'static str = "subagents";
    type Config = SubagentsConfig;

    fn requires() -> Vec<ServiceName> {
        vec![
            ServiceName::of::<AgentRegistry>(),
            ServiceName::of::<ToolRuntime>(),
        ]
    }

    fn apply(ctx: &Context, config: SubagentsConfig) -> Result<(), BoxError> {
        Subagents::install(ctx, config)?;
        Ok(())
    }
}

impl Subagents {
    /// Creates the service on `ctx`, registers its tools and listeners there, and provides
    /// it; everything unwinds with `ctx`'s fiber.
    pub fn install(ctx: &Context, config: SubagentsConfig) -> Result<Arc<Subagents>, BoxError> {
        config.validate()?;
        if let Some(jobs) = ctx.get::<dsh_jobs::JobRegistry>() {
            let shared = jobs.max_consecutive_wakes();
            let own = config.max_consecutive_wakes;
            if own != crate::config::DEFAULT_MAX_CONSECUTIVE_WAKES && own != shared {
                return Err(format!(
                    "subagents: maxConsecutiveWakes ({own}) differs from the jobs row's \
                     ({shared}); jobs and children share one wake budget per agent, so set it \
                     on the jobs row"
                )
                .into());
            }
        }
        let service = Arc::new(Subagents::new(ctx, config));
        let weak = Arc::downgrade(&service.inner);
        let tools = ctx.require::<ToolRuntime>()?;
        tools
            .register(ctx, Typed::arc(Delegate::spawn(weak.clone())))?
            .forget();
        tools
            .register(ctx, Typed::arc(Delegate::fork(weak.clone())))?
            .forget();
        tools
            .register(ctx, Typed::arc(SendMessage::new(weak.clone())))?
            .forget();
        tools
            .register(ctx, Typed::arc(InterruptAgent::new(weak.clone())))?
            .forget();
        tools
            .register(ctx, Typed::arc(ListAgents::new(weak.clone())))?
            .forget();
        if let Some(prompt) = ctx.get::<SystemPrompt>() {
            prompt
                .section(
                    ctx,
                    Section::new(
                        SUBAGENT_SECTION,
                        SUBAGENT_SECTION_ORDER,
                        SUBAGENT_SECTION_TEXT,
                    ),
                )?
                .forget();
        }
        let inner = weak.clone();
        ctx.on::<SessionEventPublished>(move |published| {
            let aborted = matches!(&published.event.data,
                EventData::TurnEnd(end) if matches!(end.reason, TurnEndReason::Aborted { .. }));
            if aborted {
                if let Some(inner) = inner.upgrade() {
                    inner.cancel_children_of(published.session.id());
                }
            }
            Ok(())
        })?
        .forget();
        let inner = weak.clone();
        ctx.on::<InboxClaimed>(move |claimed| {
            if matches!(claimed.data.message.source, MessageSource::User { .. }) {
                if let Some(inner) = inner.upgrade() {
                    inner.reset_wakes(claimed.agent.id());
                }
            }
            Ok(())
        })?
        .forget();
        let inner = weak.clone();
        ctx.on::<SessionStart>(move |event| {
            if event.data == SessionStartSource::Resume {
                if let Some(inner) = inner.upgrade() {
                    crate::recovery::on_resume(&inner, &event.agent)?;
                }
            }
            Ok(())
        })?
        .forget();
        let inner = weak;
        ctx.on::<AgentDisposed>(move |disposed| {
            if let Some(inner) = inner.upgrade() {
                let id = disposed.agent.id();
                let mut state = inner.state();
                if let Some(record) = state.children.iter_mut().find(|c| c.id == *id) {
                    record.handle = None;
                }
            }
            Ok(())
        })?
        .forget();
        if let Some(jobs) = ctx.get::<dsh_jobs::JobRegistry>() {
            jobs.register_alias(
                ctx,
                Arc::new(crate::background::ChildAlias(Arc::downgrade(
                    &service.inner,
                ))),
            )?
            .forget();
        }
        ctx.provide(service.clone())?.forget();
        Ok(service)
    }
}
