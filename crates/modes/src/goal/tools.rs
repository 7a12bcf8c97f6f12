//! `get_goal`, `create_goal` and `update_goal`: the model's hands on the goal domain, with
//! the original's schemas, authority rules and error codes.
//!
//! Authority, checked on every call: the caller is the exact live agent, running, and the
//! current initiator, inside an open turn. `create_goal` and `update_goal`'s `edit`, `pause`
//! and `resume` need a *direct human* turn (a root agent whose turn holds a person's
//! message); `complete` and `blocked` also accept the *goal round* of the current goal.
//! Unlike the original, a delegated session (a subagent, continuable or not) never has
//! direct-human authority: its first prompt comes from its parent, not from a person.

use super::domain::{BlockReason, GoalError, GoalPhase, GoalRef, GoalView};
use super::fold::{GoalRoundSource, GOAL_SOURCE_KIND};
use super::prompt::wrapup_text;
use super::service::Goals;
use dsh_agent::{current_initiator, Agent, AgentRegistry, AgentStatus};
use dsh_protocol::{ContentBlock, Message, MessageSource, Role};
use dsh_session::{EventData, SessionEvent, SessionOrigin};
use dsh_tools::{ToolExecution, ToolFailure, TypedTool};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The plugin name of the wrap-up notice's source.
pub const WRAPUP_PLUGIN: &str = "tool-goal";
/// The longest notice summary (the original's `CONTEXT_SUMMARY_MAX_CHARS`).
const SUMMARY_MAX: usize = 120;

const GET_DESCRIPTION: &str = "Read the current same-session goal, including its exact \
id/revision, objective, phase, completed continuation rounds, round limit, blocker reason when \
present, and whether another continuation is armed. Call this before updating a goal.";

const CREATE_DESCRIPTION: &str = "Create one persisted same-session completion goal when the \
current direct human request is a long-running objective that should continue across autonomous \
goal rounds. You may infer that intent without requiring the user to say \"create a goal\". Do \
not use this for trivial single-turn work. Execution rejects non-human and subagent authority.";

const UPDATE_DESCRIPTION: &str = "Update the exact current goal revision. edit, pause, and \
resume require a direct top-level human request. During an automatic continuation of the current \
goal, complete and blocked are also allowed. blocked is rejected before the configured minimum \
round count; the model remains responsible for judging that the same condition persisted across \
those rounds and must explain it in blocked_reason.";

fn failure(code: &str, message: impl Into<String>) -> ToolFailure {
    ToolFailure::coded("HarnessError", code, message)
}

fn domain(error: GoalError) -> ToolFailure {
    ToolFailure::coded("GoalError", error.code(), error.to_string())
}

fn value(view: Option<GoalView>) -> Value {
    view.map_or_else(|| json!({"goal": null}), |v| v.tool_value())
}

/// How a call is allowed to change the goal.
enum Authority {
    DirectHuman,
    GoalRound(GoalView),
}

/// The authenticated caller and the events of its open turn (after `turn/start`).
struct Execution {
    agent: Arc<dyn Agent>,
    turn: Vec<Arc<SessionEvent>>,
}

fn execution(exec: &ToolExecution) -> Result<Execution, ToolFailure> {
    let caller = exec.caller().ok_or_else(|| {
        failure(
            "GOAL_TOOL_AGENT_REQUIRED",
            "goal tools require a calling agent",
        )
    })?;
    let agent = caller.agent().clone();
    let same = |other: &Arc<dyn Agent>| std::ptr::addr_eq(Arc::as_ptr(other), Arc::as_ptr(&agent));
    let live = caller
        .registry()
        .and_then(|registry| registry.get(agent.id()))
        .is_some_and(|found| same(&found));
    let initiating = current_initiator().is_some_and(|initiator| same(&initiator));
    if !live || agent.status() != AgentStatus::Running || !initiating {
        return Err(failure(
            "GOAL_TOOL_DRIVER_REQUIRED",
            "goal tools require the exact live calling agent inside its active driver",
        ));
    }
    let turn = open_turn(&agent)?;
    Ok(Execution { agent, turn })
}

/// The events after the last `turn/start`, which must not be closed.
fn open_turn(agent: &Arc<dyn Agent>) -> Result<Vec<Arc<SessionEvent>>, ToolFailure> {
    let session = agent.session();
    let mut seq = session.len();
    while seq > 0 {
        seq -= 1;
        let Some(event) = session.event(seq) else {
            break;
        };
        match event.data {
            EventData::TurnEnd(_) => break,
            EventData::TurnStart(_) => return Ok(session.events_from(seq + 1)),
            _ => {}
        }
    }
    Err(failure(
        "GOAL_TOOL_DRIVER_REQUIRED",
        "goal tools require an open model turn",
    ))
}

fn user_messages(turn: &[Arc<SessionEvent>]) -> impl Iterator<Item = &Message> {
    turn.iter().filter_map(|e| match &e.data {
        EventData::UserMessage(m) => Some(m.as_ref()),
        _ => None,
    })
}

fn has_direct_human(registry: Option<Arc<AgentRegistry>>, execution: &Execution) -> bool {
    let agent = &execution.agent;
    let is_root = registry.is_some_and(|r| {
        r.roots()
            .iter()
            .any(|root| std::ptr::addr_eq(Arc::as_ptr(root), Arc::as_ptr(agent)))
    });
    let delegated = agent.session().header().origin == Some(SessionOrigin::Subagent)
        || agent.session().header().delegation_depth.unwrap_or(0) > 0;
    is_root
        && !delegated
        && user_messages(&execution.turn).any(|m| matches!(m.source, MessageSource::User { .. }))
}

fn require_direct_human(exec: &ToolExecution, execution: &Execution) -> Result<(), ToolFailure> {
    let registry = exec.caller().and_then(|c| c.registry());
    if has_direct_human(registry, execution) {
        return Ok(());
    }
    Err(failure(
        "GOAL_TOOL_AUTHORITY_REQUIRED",
        "this goal operation requires a direct human turn on a top-level agent",
    ))
}

fn completion_authority(
    goals: &Goals,
    exec: &ToolExecution,
    execution: &Execution,
) -> Result<Authority, ToolFailure> {
    let registry = exec.caller().and_then(|c| c.registry());
    if has_direct_human(registry, execution) {
        return Ok(Authority::DirectHuman);
    }
    let goal = goals.get(&execution.agent).map_err(domain)?;
    if let Some(goal) = goal {
        let matching = user_messages(&execution.turn).any(|m| {
            GoalRoundSource::of(m).ok().flatten().is_some_and(|s| {
                s.goal_id == goal.goal.id
                    && s.revision == goal.goal.revision
                    && s.round == goal.rounds_started
            })
        });
        if matching {
            return Ok(Authority::GoalRound(goal));
        }
    }
    Err(failure(
        "GOAL_TOOL_AUTHORITY_REQUIRED",
        "complete and blocked require a direct human turn or the current goal round",
    ))
}

/// `get_goal`.
pub struct GetGoalTool(pub Arc<Goals>);

#[derive(Deserialize)]
pub struct NoArgs {}

impl TypedTool for GetGoalTool {
    type Args = NoArgs;
    type Output = Value;
    fn name(&self) -> &str {
        "get_goal"
    }
    fn description(&self) -> String {
        GET_DESCRIPTION.into()
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    async fn execute(&self, _args: NoArgs, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let execution = execution(exec)?;
        Ok(value(self.0.get(&execution.agent).map_err(domain)?))
    }
}

/// `create_goal`.
pub struct CreateGoalTool(pub Arc<Goals>);

#[derive(Deserialize)]
pub struct CreateArgs {
    objective: String,
    #[serde(default)]
    max_goal_rounds: Option<f64>,
}

/// A model-supplied round cap: a positive whole number (0 counts as omitted where the
/// original treats it as a filler).
fn round_cap(value: f64) -> Result<u64, ToolFailure> {
    if value.fract() != 0.0 || !(1.0..=9_007_199_254_740_991.0).contains(&value) {
        return Err(domain(GoalError::InvalidMaxRounds));
    }
    Ok(value as u64)
}

impl TypedTool for CreateGoalTool {
    type Args = CreateArgs;
    type Output = Value;
    fn name(&self) -> &str {
        "create_goal"
    }
    fn description(&self) -> String {
        CREATE_DESCRIPTION.into()
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "objective": {"type": "string", "description": "The concrete completion objective inferred from the direct human request."},
                "max_goal_rounds": {"type": "number", "description": "Optional positive safe-integer limit on automatic continuation rounds."}
            },
            "required": ["objective"]
        })
    }
    async fn execute(&self, args: CreateArgs, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let execution = execution(exec)?;
        require_direct_human(exec, &execution)?;
        let max = args.max_goal_rounds.map(round_cap).transpose()?;
        let view = self
            .0
            .create(&execution.agent, &args.objective, max)
            .map_err(domain)?;
        Ok(view.tool_value())
    }
}

/// `update_goal`.
pub struct UpdateGoalTool {
    pub goals: Arc<Goals>,
    /// Goal rounds needed before a goal round may report `blocked` (3).
    pub blocked_after: u64,
}

#[derive(Deserialize)]
pub struct UpdateArgs {
    goal_id: String,
    revision: f64,
    action: UpdateAction,
    #[serde(default)]
    objective: Option<String>,
    #[serde(default)]
    max_goal_rounds: Option<f64>,
    #[serde(default)]
    blocked_reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateAction {
    Edit,
    Pause,
    Resume,
    Complete,
    Blocked,
}

impl UpdateAction {
    fn as_str(self) -> &'static str {
        match self {
            Self::Edit => "edit",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Complete => "complete",
            Self::Blocked => "blocked",
        }
    }
}

fn invalid(message: &str) -> ToolFailure {
    failure("GOAL_TOOL_INVALID_UPDATE", message)
}

/// `""` is a filler: the same as omitted.
fn text(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|t| !t.is_empty())
}

/// `0` is a filler: the same as omitted.
fn cap(value: Option<f64>) -> Option<f64> {
    value.filter(|v| *v != 0.0)
}

impl UpdateGoalTool {
    async fn update(&self, args: UpdateArgs, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        let execution = execution(exec)?;
        let goals = &self.goals;
        let id_ok = !args.goal_id.is_empty() && args.goal_id.trim() == args.goal_id;
        let revision_ok = args.revision.fract() == 0.0
            && args.revision >= 1.0
            && args.revision <= 9_007_199_254_740_991.0;
        if !id_ok || !revision_ok {
            return Err(invalid(
                "goal_id must be non-empty and revision must be a positive safe integer",
            ));
        }
        let reference = GoalRef {
            id: args.goal_id.clone(),
            revision: args.revision as u64,
        };
        let objective = text(&args.objective);
        let max = cap(args.max_goal_rounds);
        let reason = text(&args.blocked_reason);
        let agent = &execution.agent;
        match args.action {
            UpdateAction::Edit => {
                require_direct_human(exec, &execution)?;
                if reason.is_some() {
                    return Err(invalid("blocked_reason is valid only with action blocked"));
                }
                let max = max.map(round_cap).transpose()?;
                let view = goals
                    .edit(agent, &reference, objective, max)
                    .map_err(domain)?;
                Ok(view.tool_value())
            }
            UpdateAction::Pause | UpdateAction::Resume => {
                require_direct_human(exec, &execution)?;
                if objective.is_some() || max.is_some() || reason.is_some() {
                    return Err(invalid(
                        "objective and max_goal_rounds are valid only with action edit; blocked_reason is valid only with action blocked",
                    ));
                }
                let view = if args.action == UpdateAction::Pause {
                    goals.pause(agent, &reference)
                } else {
                    goals.resume(agent, &reference)
                };
                Ok(view.map_err(domain)?.tool_value())
            }
            UpdateAction::Complete | UpdateAction::Blocked => {
                let authority = completion_authority(goals, exec, &execution)?;
                if objective.is_some() || max.is_some() {
                    return Err(invalid(
                        "objective and max_goal_rounds are valid only with action edit",
                    ));
                }
                if args.action == UpdateAction::Complete && reason.is_some() {
                    return Err(invalid("blocked_reason is valid only with action blocked"));
                }
                let blocked_reason = args.blocked_reason.as_deref().unwrap_or("").trim();
                if args.action == UpdateAction::Blocked && blocked_reason.is_empty() {
                    return Err(invalid("blocked_reason is required with action blocked"));
                }
                if let (UpdateAction::Blocked, Authority::GoalRound(goal)) =
                    (args.action, &authority)
                {
                    if goal.rounds_started < self.blocked_after {
                        return Err(failure(
                            "GOAL_TOOL_BLOCK_THRESHOLD",
                            format!(
                                "blocked requires at least {} consecutive goal rounds; current round is {}",
                                self.blocked_after, goal.rounds_started
                            ),
                        ));
                    }
                }
                let view = if args.action == UpdateAction::Complete {
                    goals.complete(agent, &reference)
                } else {
                    let reason = BlockReason {
                        code: "model-reported".into(),
                        message: blocked_reason.to_owned(),
                    };
                    goals.block(agent, &reference, reason)
                }
                .map_err(domain)?;
                if matches!(authority, Authority::GoalRound(_)) {
                    let blocked = (view.goal.phase == GoalPhase::Blocked).then_some(blocked_reason);
                    exec.defer_context(wrapup_message(
                        args.action.as_str(),
                        &view.goal.objective,
                        blocked,
                    ));
                }
                Ok(view.tool_value())
            }
        }
    }
}

/// The next-step notice after a goal round's `complete` or `blocked`: the turn runs one more
/// step, in which the model writes its closing message.
pub fn wrapup_message(action: &str, objective: &str, blocked_reason: Option<&str>) -> Message {
    let summary = format!("{action}: {objective}");
    let summary = if summary.chars().count() <= SUMMARY_MAX {
        summary
    } else {
        let mut cut: String = summary.chars().take(SUMMARY_MAX - 1).collect();
        cut.push('…');
        cut
    };
    let mut extra = Map::new();
    extra.insert("form".into(), json!("notice"));
    extra.insert("summary".into(), json!(summary));
    Message::new(
        Role::User,
        vec![ContentBlock::text(wrapup_text(objective, blocked_reason))],
        MessageSource::Plugin {
            plugin: WRAPUP_PLUGIN.into(),
            extra,
        },
    )
}

impl TypedTool for UpdateGoalTool {
    type Args = UpdateArgs;
    type Output = Value;
    fn name(&self) -> &str {
        "update_goal"
    }
    fn description(&self) -> String {
        UPDATE_DESCRIPTION.into()
    }
    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "goal_id": {"type": "string", "description": "Exact id returned by get_goal."},
                "revision": {"type": "number", "description": "Exact positive revision returned by get_goal."},
                "action": {"type": "string", "description": "edit | pause | resume | complete | blocked",
                    "enum": ["edit", "pause", "resume", "complete", "blocked"]},
                "objective": {"type": "string", "description": "Replacement objective; valid only with action edit."},
                "max_goal_rounds": {"type": "number", "description": "Replacement cap; valid only with action edit."},
                "blocked_reason": {"type": "string", "description": "Concrete blocking condition; required only with action blocked."}
            },
            "required": ["goal_id", "revision", "action"]
        })
    }
    async fn execute(&self, args: UpdateArgs, exec: &ToolExecution) -> Result<Value, ToolFailure> {
        self.update(args, exec).await
    }
}

/// Whether `message` is a goal-round prompt (any round).
pub fn is_goal_round(message: &Message) -> bool {
    matches!(&message.source, MessageSource::Other(map)
        if map.get("kind").and_then(Value::as_str) == Some(GOAL_SOURCE_KIND))
}
