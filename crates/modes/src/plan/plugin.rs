//! The `plan-mode` row: the [`PlanMode`] service, the `plan:policy` section, the step
//! boundary that logs a selection, the refusal guard and `exit_plan_mode`.

use super::refusal::refusal;
use super::state::PlanMode;
use super::tool::ExitPlanMode;
use dsh_agent::{AgentRegistry, PreStep, PreStepDecision};
use dsh_kernel::{BoxError, Context, Plugin, ServiceName};
use dsh_prompt::{PromptText, Section, SystemPrompt};
use dsh_session::SessionDisposed;
use dsh_tools::{PreExecute, PreExecuteDecision, ToolRuntime, Typed};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// The policy section's name.
pub const PLAN_SECTION: &str = "plan:policy";
/// Where it sits among the sections.
pub const PLAN_SECTION_ORDER: f64 = 50.0;

/// The shipped plan guidance (the original's points, in this project's words).
pub const PLAN_POLICY: &str = "\
You are in plan mode. You stay in it until exit_plan_mode succeeds or the user switches the \
session mode. While planning, a request to implement something means: plan its \
implementation. The user agreeing in conversation, or answering a question you asked, \
approves nothing and does not end plan mode: fold what they decided into the plan and submit \
it with exit_plan_mode.

Explore first, without changing anything: read files, search, inspect, and run read-only \
commands so the plan rests on the repository as it is. Do not write or edit files, change \
configuration, run formatters or generators that rewrite tracked files, commit, or otherwise \
carry out the plan; such calls are refused while plan mode is on. Prefer the functions and \
patterns the code already has over new machinery.

The tools you see are the same in both modes so the request stays cacheable; these rules \
override any tool description that invites changes. Do not use todo_write to track planning: \
it tracks implementation after a plan is approved.

Find out what inspection can tell you. Use ask_user_question only for choices that belong to \
the user, or an ambiguity that reading the code cannot settle.

Make the plan decision-complete: the goal and how success is judged; the changes grouped by \
subsystem; changes to public APIs, schemas and data flow; edge cases, failure modes, tests and \
acceptance criteria; and every assumption. Keep it short enough to review and precise enough \
that another engineer could carry it out without making design decisions.

When it is ready, call exit_plan_mode with the complete plan in markdown, starting with a # \
title, as the only and last tool call of that response. It shows the plan to the user for \
approval; implementation starts only in a later step, after approval. Do not paste the plan as \
a plain reply and do not ask \"should I proceed?\" in prose or with ask_user_question. If the \
user keeps planning, work their feedback in and present the plan again. If the review cannot \
happen, stay in plan mode and tell the user; do not start implementing.";

/// The `plan-mode` row's config.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PlanModeConfig {
    /// The guidance rendered as the `plan:policy` section while plan mode is on.
    pub section: String,
}

impl Default for PlanModeConfig {
    fn default() -> Self {
        Self {
            section: PLAN_POLICY.to_owned(),
        }
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct PlanModePlugin;

impl Plugin for PlanModePlugin {
    const NAME: &'static str = "plan-mode";
    type Config = PlanModeConfig;

    fn requires() -> Vec<ServiceName> {
        vec![
            ServiceName::of::<ToolRuntime>(),
            ServiceName::of::<SystemPrompt>(),
        ]
    }

    fn apply(ctx: &Context, config: PlanModeConfig) -> Result<(), BoxError> {
        if config.section.trim().is_empty() {
            return Err("plan-mode needs a non-empty `section`".into());
        }
        let tools = ctx.require::<ToolRuntime>()?;
        let prompt = ctx.require::<SystemPrompt>()?;
        let plan = Arc::new(PlanMode::new());
        ctx.provide(plan.clone())?.forget();
        tools
            .register(ctx, Typed::arc(ExitPlanMode::new(plan.clone())))?
            .forget();

        let (lookup, state, text) = (ctx.clone(), plan.clone(), config.section);
        let section = PromptText::dynamic(move |assembly| {
            let agent = lookup
                .get::<AgentRegistry>()
                .and_then(|r| r.agent_for_scope(assembly.scope.as_ref()));
            match agent {
                Some(agent) if state.state(agent.session()).in_force() => text.clone(),
                _ => String::new(),
            }
        });
        prompt
            .section(ctx, Section::new(PLAN_SECTION, PLAN_SECTION_ORDER, section))?
            .forget();

        let boundary = plan.clone();
        ctx.on_waterfall::<PreStep, _, _>(move |args, next| {
            let plan = boundary.clone();
            async move {
                let decision = next.run().await?;
                let PreStepDecision::Enter(mut messages) = decision else {
                    return Ok(decision);
                };
                if !args.signal.is_aborted() {
                    if let Some(notice) = plan.at_boundary(args.agent.session()) {
                        messages.push(Arc::new(notice));
                    }
                }
                Ok(PreStepDecision::Enter(messages))
            }
        })?
        .forget();

        let guard = plan.clone();
        ctx.on_waterfall::<PreExecute, _, _>(move |args, next| {
            let exec = args.exec.clone();
            let refused = exec.caller().and_then(|caller| {
                let state = guard.state(caller.session());
                (state.active || state.pending == Some(true))
                    .then(|| refusal(exec.name(), exec.arguments()))
                    .flatten()
            });
            async move {
                match refused {
                    Some(reason) => Ok(PreExecuteDecision::Deny { reason }),
                    None => next.run().await,
                }
            }
        })?
        .forget();

        ctx.on::<SessionDisposed>(move |session| {
            plan.forget(session.id());
            Ok(())
        })?
        .forget();
        Ok(())
    }
}
