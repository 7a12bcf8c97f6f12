//! `GoalPlugin` (row `goal`): the [`Goals`] and [`GoalDriver`] services, the three goal
//! tools, the `tool:goal` policy section, and the driver's listeners.

use super::driver::GoalDriver;
use super::prompt::{policy_section, GOAL_SECTION, GOAL_SECTION_ORDER};
use super::service::{GoalChanged, Goals};
use super::tools::{CreateGoalTool, GetGoalTool, UpdateGoalTool};
use dsh_agent::{
    AgentDisposed, AgentErrorEvent, AgentStatus, AgentStatusChanged, InboxClaimed, InboxDiscarded,
    InboxInserted, PreStep, SessionStart,
};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_prompt::{Section, SystemPrompt};
use dsh_protocol::SessionId;
use dsh_session::{SessionDisposed, SessionEventPublished};
use dsh_tools::{ToolRuntime, Typed};
use serde::Deserialize;
use std::sync::Arc;

/// The plugin's configuration (`null`/`{}` = the defaults below).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct GoalConfig {
    /// The round cap of a goal created without one (256).
    pub default_max_goal_rounds: u64,
    /// Goal rounds a goal round must have run before it may report `blocked` (3).
    pub blocked_after_consecutive_rounds: u64,
}

impl Default for GoalConfig {
    fn default() -> Self {
        Self {
            default_max_goal_rounds: 256,
            blocked_after_consecutive_rounds: 3,
        }
    }
}

/// Why a configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum GoalConfigError {
    #[error("goal: {field} must be a positive safe integer")]
    NotPositive { field: &'static str },
}

/// Mounts goals: see the module docs.
#[derive(Debug)]
pub struct GoalPlugin;

impl Plugin for GoalPlugin {
    const NAME: &'static str = "goal";
    type Config = GoalConfig;

    fn requires() -> Vec<ServiceName> {
        vec![ServiceName::of::<ToolRuntime>()]
    }

    fn apply(ctx: &Context, config: GoalConfig) -> Result<(), BoxError> {
        if config.blocked_after_consecutive_rounds == 0 {
            return Err(GoalConfigError::NotPositive {
                field: "blockedAfterConsecutiveRounds",
            }
            .into());
        }
        let goals = Arc::new(
            Goals::new(ctx.clone(), config.default_max_goal_rounds).map_err(|_| {
                GoalConfigError::NotPositive {
                    field: "defaultMaxGoalRounds",
                }
            })?,
        );
        let driver = GoalDriver::new(ctx.clone(), goals.clone());
        ctx.provide(goals.clone())?.forget();
        ctx.provide(driver.clone())?.forget();
        let tools = ctx.require::<ToolRuntime>()?;
        tools
            .register(ctx, Typed::arc(GetGoalTool(goals.clone())))?
            .forget();
        tools
            .register(ctx, Typed::arc(CreateGoalTool(goals.clone())))?
            .forget();
        tools
            .register(
                ctx,
                Typed::arc(UpdateGoalTool {
                    goals: goals.clone(),
                    blocked_after: config.blocked_after_consecutive_rounds,
                }),
            )?
            .forget();
        if let Some(prompt) = ctx.get::<SystemPrompt>() {
            let text = policy_section(config.blocked_after_consecutive_rounds);
            prompt
                .section(ctx, Section::new(GOAL_SECTION, GOAL_SECTION_ORDER, text))?
                .forget();
        }
        listen(ctx, &driver)?;
        let forget = goals.clone();
        ctx.on::<SessionDisposed>(move |session| {
            forget.forget(session.id());
            Ok(())
        })?
        .forget();
        Ok(())
    }
}

fn listen(ctx: &Context, driver: &Arc<GoalDriver>) -> Result<(), BoxError> {
    let d = driver.clone();
    ctx.on::<AgentStatusChanged>(move |event| {
        if event.data == AgentStatus::Idle {
            d.on_idle(&event.agent);
        }
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<GoalChanged>(move |event| {
        d.request_drive(&event.agent);
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<InboxInserted>(move |event| {
        d.on_inserted(event.agent.id(), &event.data);
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<InboxClaimed>(move |event| {
        d.on_inbox(event.agent.id(), &event.data.message, true);
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<InboxDiscarded>(move |event| {
        d.on_inbox(event.agent.id(), &event.data, false);
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<SessionEventPublished>(move |published| {
        d.on_event(published.session.id(), &published.event);
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<SessionStart>(move |event| {
        d.on_session_start(event.agent.id());
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<AgentErrorEvent>(move |event| {
        d.on_error(event.agent.id());
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on::<AgentDisposed>(move |event| {
        let id: &SessionId = event.agent.id();
        d.forget(id);
        Ok(())
    })?
    .forget();
    let d = driver.clone();
    ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
        let driver = d.clone();
        async move { driver.pre_step(&args, next.run()).await }
    })?
    .forget();
    Ok(())
}
